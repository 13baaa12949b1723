"""``cardgame_core.files``: writers of one file at the same time each leave a whole file."""

from __future__ import annotations

import json
import threading

from cardgame_core.files import atomic_write_bytes, atomic_write_text


def test_writers_of_one_file_at_once_never_fail_and_leave_a_whole_file(tmp_path):
    path = tmp_path / "result.json"
    failures: list[BaseException] = []
    start = threading.Barrier(8)

    def write(writer: int) -> None:
        start.wait()
        try:
            for round_ in range(300):
                text = json.dumps({"writer": writer, "round": round_, "padding": "x" * 4096})
                if round_ % 2:
                    atomic_write_text(path, text)
                else:
                    atomic_write_bytes(path, text.encode())
        except BaseException as error:  # recorded: an exception in a thread would pass unseen
            failures.append(error)

    threads = [threading.Thread(target=write, args=(writer,)) for writer in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert json.loads(path.read_text())["round"] == 299  # one writer's last file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temporary file left
