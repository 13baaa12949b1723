"""Issue 9 hardening of the command-line tools: game records taken from the env's own events,
one-line errors with exit code 2 for every bad invocation, benchmark output and warm-up, and
Mao in the terminal."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("madiao_env.madiao_v0")

from madiao_env import records
from madiao_mao.agents.base import RandomAgent
from madiao_mao.cli.main import main
from madiao_mao.training.madiao import matches as madiao_games
from tests.common.helpers import fill_placeholders, refusal

NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def _figures(out: str, title: str) -> dict[str, float]:
    """The last line of ``out`` starting with ``title`` (``totals by seat:``, ``final returns by
    agent:`` ...) as {label: figure}: ``seat 0 -1  seat 1 +2`` or ``heuristic -1  greedy +1``."""
    last = [line for line in out.splitlines() if line.strip().startswith(title)][-1]
    pairs = re.findall(rf"(\S+(?: \d)?) ({NUMBER})(?:\s|$)", last.split(":", 1)[1])
    return {label: float(figure) for label, figure in pairs}


def _totals_line(out: str) -> list[float]:
    by_seat = _figures(out, "totals by seat:")
    assert list(by_seat) == [f"seat {seat}" for seat in range(4)], by_seat
    return list(by_seat.values())


def _hands_settled(settlement: dict) -> list[int]:
    return settlement.get("hands_settled", [settlement["hand_number"]])


def _check_hand_order(events: list[dict]) -> None:
    """Between a deal and its settlement: no trick or all eight, and the eighth trick's winner
    comes right before the settlement (the last trick's plays before it)."""
    since_deal: list[dict] = []
    for event in events:
        if event["type"] == "deal":
            since_deal = []
        elif event["type"] == "settlement":
            tricks = [e for e in since_deal if e["type"] == "trick"]
            assert len(tricks) in (0, 8), [e["type"] for e in since_deal]
            if tricks:
                assert since_deal[-1]["type"] == "trick" and since_deal[-1]["trick"] == 7
                assert sum(since_deal[-1]["tricks_won"]) == 8
            since_deal = []
        else:
            since_deal.append(event)


def test_match_prints_each_settlement_once_and_totals_that_add_up(tmp_path, capsys):
    record_path = tmp_path / "match.json"
    assert main(["match", "--seed", "3", "--record", str(record_path)]) == 0
    out = capsys.readouterr().out
    record = records.read_record(record_path)
    events = record["events"]
    settlements = [e for e in events if e["type"] == "settlement"]
    dealt = {e["hand_number"] for e in events if e["type"] == "deal"}
    settled = [h for e in settlements for h in _hands_settled(e)]
    assert settled == sorted(set(settled)), "a hand settled twice"
    assert dealt <= set(settled)
    assert out.count("settlement:") == len(settlements)
    match_over = re.search(r"Match over after (\d+) hands", out)
    assert match_over and int(match_over.group(1)) == len(settled)
    payoff_sum = np.sum([e["payoffs"] for e in settlements], axis=0)
    np.testing.assert_allclose(_totals_line(out), payoff_sum)
    np.testing.assert_allclose(record["returns"], payoff_sum)
    _check_hand_order(events)


def test_recorded_matches_have_one_settlement_per_hand_and_the_returns_of_the_env():
    env = madiao_games.make_env(episode="match")
    seats = [RandomAgent(seed=s) for s in range(4)]
    for seed in range(30):
        printed: list[str] = []
        printer = records.EventPrinter(["a", "b", "c", "d"], printed.append)
        result = madiao_games.play_episode(env, seats, seed=seed, on_event=printer)
        settlements = result.hands()
        settled = [h for e in settlements for h in _hands_settled(e)]
        # Every hand of the match is settled exactly once: 0 .. the last hand's number.
        assert settled == list(range(settled[0], env.unwrapped.table()["hand_number"] + 1))
        assert printer.hands_played == len(settled)
        np.testing.assert_allclose(np.sum([e["payoffs"] for e in settlements], axis=0), result.returns)
        np.testing.assert_allclose(printer.totals, result.returns)
        _check_hand_order(result.events)


def test_replay_of_a_tournament_record_totals_each_agent_over_the_seats_it_held(tmp_path, capsys):
    """In an ``evaluate --record`` file the agents change seats hand by hand: the replay's totals
    by agent add each hand's payoff of the seat the agent held then; by seat they are labelled by
    seat only (they mix several agents' hands)."""
    record_path = tmp_path / "hands.json"
    argv = ["evaluate", "--agents", "heuristic", "greedy", "--deals", "2", "--seed", "0"]
    assert main([*argv, "--record", str(record_path)]) == 0
    capsys.readouterr()
    record = records.read_record(record_path)
    by_agent = dict.fromkeys(["heuristic", "greedy"], 0.0)
    seats = record["seats"]
    for event in record["events"]:
        if event["type"] == "deal":
            seats = event.get("seats", seats)
        elif event["type"] == "settlement":
            for seat, payoff in enumerate(event["payoffs"]):
                by_agent[seats[seat]] += payoff
    assert len({tuple(e["seats"]) for e in record["events"] if e["type"] == "deal"}) == 4  # rotated
    assert main(["replay", str(record_path)]) == 0
    out = capsys.readouterr().out
    assert _figures(out, "final returns by agent:") == pytest.approx(by_agent)
    assert _figures(out, "totals by agent:") == pytest.approx(by_agent)
    by_seat = _figures(out, "final returns by seat:")
    assert list(by_seat) == ["seat 0", "seat 1", "seat 2", "seat 3"]
    assert list(by_seat.values()) == pytest.approx(record["returns"])
    assert by_agent["heuristic"] != pytest.approx(record["returns"][0])  # seat 0 is not the agent


def test_evaluate_record_numbers_its_hands_and_names_each_rotation(tmp_path, capsys):
    record_path = tmp_path / "hands.json"
    argv = ["evaluate", "--agents", "greedy", "random", "--deals", "1", "--record", str(record_path)]
    assert main([*argv, "--record-hands", "3"]) == 0
    capsys.readouterr()
    record = records.read_record(record_path)
    deals = [e for e in record["events"] if e["type"] == "deal"]
    assert [e["hand_number"] for e in deals if not e.get("redeals")] == [0, 1, 2]
    # The agent under test moves seat by seat through the rotations.
    assert [e["seats"].index("greedy") for e in deals if not e.get("redeals")] == [0, 1, 2]
    assert main(["replay", str(record_path)]) == 0
    out = capsys.readouterr().out
    assert "=== Hand 1" in out and "=== Hand 2" in out and "=== Hand 3" in out


# ----------------------------------------------------------------------------- bad invocations


def _cli_main(argv):
    return main(argv)


def _mao_evaluation_main(argv):
    from madiao_mao.training.mao.evaluation import main as mao_main

    return mao_main(argv)


def _benchmarks_main(argv):
    from madiao_mao.benchmarks.__main__ import main as bench_main

    return bench_main(argv)


# (entry point, argv, words the one-line message must contain)
BAD_INVOCATIONS = [
    (_cli_main, [], "required"),
    (_cli_main, ["wizard"], "invalid choice"),
    (_cli_main, ["train", "--total-timesteps", "0"], "--total-timesteps"),
    (_cli_main, ["train", "--n-envs", "-1"], "--n-envs"),
    (_cli_main, ["train", "--seed", "-1"], "--seed"),
    (_cli_main, ["train", "--eval-every", "-5"], "--eval-every"),
    (_cli_main, ["train", "--game", "mao", "--mao.penalty-card-reward", "nan"], "--mao.penalty-card-reward"),
    (_cli_main, ["train", "--mao.rule-pool", "none"], "settings of the game mao"),
    (_cli_main, ["train", "--imitate", "wizard", "--runs-dir", "FOLDER"], "wizard"),
    (_cli_main, ["train", "--runs-dir", "FILE"], "--runs-dir"),
    (_cli_main, ["train", "--exp-name", "a/b", "--runs-dir", "FOLDER"], "exp_name"),
    (_cli_main, ["train", "--learning-rate", "2", "--runs-dir", "FOLDER"], "learning_rate"),
    (_cli_main, ["train", "--opponents", "everyone"], "--opponents"),
    (_cli_main, ["train", "--league-anchors", "wizard", "--runs-dir", "FOLDER"], "wizard"),
    (_cli_main, ["train", "--league-anchors", "model:MISSING", "--runs-dir", "FOLDER"], "no saved model"),
    (_cli_main, ["evaluate", "--deals", "0"], "--deals"),
    (_cli_main, ["evaluate", "--deals", "-3"], "--deals"),
    (_cli_main, ["evaluate", "--record-hands", "0", "--record", "FOLDER/r.json"], "--record-hands"),
    (_cli_main, ["evaluate", "--seed", "-3"], "--seed"),
    (_cli_main, ["evaluate", "--agents", "greedy"], "at least two"),
    (_cli_main, ["evaluate", "--agents", "greedy", "greedy"], "repeat"),
    (_cli_main, ["evaluate", "--agents", "wizard", "random"], "wizard"),
    (_cli_main, ["evaluate", "--agents", "greedy", "random", "--out", "FILE"], "--out"),
    (_cli_main, ["evaluate", "--agents", "greedy", "random", "--record", "FOLDER"], "--record"),
    (_cli_main, ["evaluate", "--agents", "greedy", "random", "--record", "UNDER_FILE"], "--record"),
    (_cli_main, ["evaluate", "--model", "MISSING"], "no saved model"),
    (_cli_main, ["evaluate", "--model", "CORRUPT"], "cannot load the model"),
    (_cli_main, ["evaluate", "--game", "mao", "--agents", "base", "model:CORRUPT"], "cannot load the model"),
    (_cli_main, ["evaluate", "--game", "mao", "--agents", "base", "bayes", "--out", "FILE"], "--out"),
    (_cli_main, ["evaluate", "--game", "mao", "--record", "FOLDER"], "--record"),
    (_cli_main, ["play", "--seat", "7"], "a seat is 0, 1, 2 or 3"),
    (_cli_main, ["play", "--seat", "-1"], "--seat"),
    (_cli_main, ["play", "--hands", "0"], "--hands"),
    (_cli_main, ["play", "--match", "--hands", "2"], "--hands"),
    (_cli_main, ["play", "--opponents", "random", "random"], "--opponents"),
    (_cli_main, ["play", "--opponents", "wizard"], "wizard"),
    (_cli_main, ["play", "--model", "CORRUPT"], "cannot load the model"),
    (_cli_main, ["play", "--record", "FOLDER"], "--record"),
    (_cli_main, ["play", "--players", "3"], "--players"),
    (_cli_main, ["play", "--game", "mao", "--seat", "4"], "--seat"),
    (_cli_main, ["play", "--game", "mao", "--players", "9"], "--players"),
    (_cli_main, ["play", "--game", "mao", "--match"], "--match"),
    (_cli_main, ["play", "--game", "mao", "--opponents", "heuristic"], "heuristic"),
    (_cli_main, ["play", "--game", "mao", "--opponents", "base", "base"], "--opponents"),
    (_cli_main, ["match", "--agents", "random", "random", "random", "wizard"], "wizard"),
    (_cli_main, ["match", "--agents", "random", "random"], "--agents"),
    (_cli_main, ["match", "--seed", "-2"], "--seed"),
    (_cli_main, ["match", "--record", "FOLDER"], "--record"),
    (
        _cli_main,
        ["match", "--model", "CORRUPT", "--agents", "model", "random", "random", "random"],
        "CORRUPT",
    ),
    (_cli_main, ["replay", "MISSING"], "no game record"),
    (_cli_main, ["replay", "FOLDER"], "no game record"),
    (_cli_main, ["replay", "NOT_JSON"], "not a JSON game record"),
    (_cli_main, ["replay", "OLD_FORMAT"], "format"),
    (_cli_main, ["replay", "BAD_EVENT"], "event 0"),
    (_mao_evaluation_main, ["--replicates", "-1"], "--replicates"),
    (_mao_evaluation_main, ["--turns", "0"], "--turns"),
    (_mao_evaluation_main, ["--seed", "-1"], "--seed"),
    (_mao_evaluation_main, ["--out", "FILE"], "--out"),
    (_mao_evaluation_main, ["--model", "MISSING"], "no saved model"),
    (_mao_evaluation_main, ["--model", "CORRUPT"], "cannot load the model"),
    (_benchmarks_main, ["--seconds", "0"], "--seconds"),
    (_benchmarks_main, ["--seconds", "nan"], "--seconds"),
    (_benchmarks_main, ["--only", "nonsense"], "nonsense"),
    (_benchmarks_main, ["--output", "FOLDER"], "--output"),
    (_benchmarks_main, ["--quick", "--output", "UNDER_FILE"], "--output"),
]


@pytest.mark.parametrize(
    ("entry", "argv", "named"),
    BAD_INVOCATIONS,
    ids=[f"{entry.__name__[1:-5]}:{' '.join(argv) or '(none)'}" for entry, argv, _ in BAD_INVOCATIONS],
)
def test_a_bad_invocation_is_one_line_and_status_2(entry, argv, named, paths, capsys, monkeypatch):
    # Nothing may start: a game or a training run would read stdin or take minutes.
    monkeypatch.setattr("builtins.input", lambda prompt="": pytest.fail("the game started"))
    argv = [fill_placeholders(word, paths) for word in argv]
    assert fill_placeholders(named, paths) in refusal(entry, argv, capsys).err


#: The ``python -m`` entry points of the training modules, each with a bad option and a bad value.
MODULE_ENTRY_POINTS = {
    "madiao_mao.training.mao.caller": (["fit", "--out", "c.json", "--bogus"], ["evaluate", "--seed", "-1"]),
    "madiao_mao.training.mao.evaluation": (["--bogus"], ["--episodes", "x"]),
    "madiao_mao.training.madiao.card_locations": (
        ["fit", "--out", "m.npz", "--bogus"],
        ["fit", "--out", "m.zip"],
    ),
    "madiao_mao.training.madiao.exploit": (["search-budgets", "samples=2", "--bogus"], ["search-budgets"]),
    "madiao_mao.training.madiao.inference_quality": (["--bogus"], ["--hands", "0"]),
    "madiao_mao.training.scorecard": (["pins", "--bogus"], ["table"]),
    "madiao_mao.benchmarks.batch_size": (["--game", "mao", "--bogus"], ["--game", "mao", "--sizes", "0"]),
}


@pytest.mark.parametrize("module", MODULE_ENTRY_POINTS)
def test_a_module_entry_point_refuses_a_bad_option_in_one_line(module, capsys):
    import importlib  # each module is imported by its own case: a failing import fails only it

    entry = importlib.import_module(module).main
    bad_option, bad_value = MODULE_ENTRY_POINTS[module]
    assert "--bogus" in refusal(entry, bad_option, capsys).err
    refusal(entry, bad_value, capsys)


def test_bench_passes_the_benchmarks_exit_status_through():
    import subprocess
    import sys
    from pathlib import Path

    result = subprocess.run(
        [sys.executable, "-m", "madiao_mao.cli.main", "bench", "--seconds", "-1"],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "--seconds" in result.stderr


def test_a_reader_that_stops_early_ends_replay_quietly(tmp_path):
    """`madiao-mao replay game.json | head`: the closed pipe ends the command without a traceback."""
    import subprocess
    import sys
    from pathlib import Path

    record = tmp_path / "match.json"
    assert main(["match", "--seed", "3", "--record", str(record)]) == 0
    replay = subprocess.Popen(
        [sys.executable, "-m", "madiao_mao.cli.main", "replay", str(record)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    replay.stdout.close()  # the reader is gone before the first line is written
    _, errors = replay.communicate(timeout=120)
    assert replay.returncode == 141, errors.decode()
    assert errors.decode() == ""


# ----------------------------------------------------------------------------- Mao in the terminal

HAND_LISTING = re.compile(r"^\W*player_\d+: (?:(?:10|[2-9AJQK])[CDHS]|JK)(?: |$)", re.MULTILINE)


def test_mao_in_the_terminal_plays_whole_rounds_shows_calls_and_no_other_hand(monkeypatch, capsys):
    import madiao_mao.training.mao.play as mao_play

    envs = []

    def recording_env(*args, **kwargs):
        envs.append(mao_play.make_mao_env.__wrapped__(*args, **kwargs))
        return envs[-1]

    recording_env.__wrapped__ = mao_play.make_mao_env
    monkeypatch.setattr(mao_play, "make_mao_env", recording_env)
    printed: list[str] = []
    answers = iter(["1", "end"] * 5000)  # the first listed move, then end the turn (or re-asked)

    def other_hands() -> list[str]:
        env = envs[0].unwrapped
        return [" ".join(env.hand(seat)) for seat in range(1, env.n_players) if len(env.hand(seat)) > 1]

    def read_line(prompt: str = "") -> str:
        chunk = capsys.readouterr().out
        printed.append(chunk)
        for hand in other_hands():
            assert hand not in chunk, f"another seat's hand {hand!r} was shown:\n{chunk}"
        return next(answers)

    monkeypatch.setattr("builtins.input", read_line)
    assert main(["play", "--game", "mao", "--seat", "0", "--seed", "3", "--rounds", "2"]) == 0
    printed.append(capsys.readouterr().out)
    out = "".join(printed)
    round_ends = re.findall(r"^  (?:You win|player_\d wins) the round\.$", out, re.MULTILINE)
    assert "Game over" in out and len(round_ends) == 2  # both rounds were played out
    assert '"Introducing a new rule." (secret)' in out or "You win the round." in out
    assert 'Mao Master to you: "' in out  # the calls on the person's own turns (a bad card here)
    assert "your hand (" in out and "Your move: [1]" in out
    assert not HAND_LISTING.search(out)
    assert not re.search(r"player_\d: rule \d", out)  # other seats' new rules stay secret


# ----------------------------------------------------------------------------- dependencies

#: Declared for what the project does without importing them itself.
USED_WITHOUT_IMPORT = {
    "tensorboard": "SB3 writes the TensorBoard event files through it",
    "tbb": "its runtime library is Numba's TBB threading layer (cardgame_core.vector._tbb_loadable)",
}


def test_every_runtime_and_train_dependency_is_imported_by_the_project():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["train"]]
    sources = "\n".join(
        path.read_text()
        for package in ("cardgame_core", "madiao_env", "mao_env", "agents", "training", "benchmarks")
        for path in (root / package).rglob("*.py")
    )
    for requirement in declared:
        name = re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0]
        module = name.lower().replace("-", "_")
        if module in USED_WITHOUT_IMPORT:
            continue
        assert re.search(rf"^\s*(?:from|import) {module}\b", sources, re.MULTILINE), (
            f"{name} is declared in pyproject.toml but never imported"
        )
