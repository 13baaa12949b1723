"""The web app attacked as a stranger would: the server's trust boundary (loopback only, bounded).

What a live game can reveal (nothing but its seat's view, on every route, at every moment, for
every seat, in every mode: a Mao game with the Master's or the players' calls, a Madiao match;
no watched game, record or replay of its deal while it is played; a rule choice that tells
nothing of the other seats' rules), what an upload may cost (a 20,000-action, 8-seat Mao record
against a real uvicorn server in a subprocess: its memory and latency), which requests are read
at all (JSON bodies, same-origin, allowed ``Host`` names, a real Chromium page on another
origin), that a burst of new games cannot lock a person (or a watcher stepping) out, that odd
numbers, deep nesting and huge texts are 4xx with a short answer, that a stale or double-sent
move plays nothing, and a bounded fuzz of every route. Every server a test starts (a thread or a
subprocess) is stopped by its handle.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import LOCAL_BASE_URL, import_or_require, require, serving_in_thread
from tests.web.test_api import madiao_hidden, madiao_leaks, mao_choice, tokens_of

REPO_ROOT = Path(__file__).resolve().parents[2]
JSON_HEADERS = {"Content-Type": "application/json"}
BIG_RECORD_PLAYERS = 8
BIG_RECORD_ACTIONS = 20_000
MAX_ECHOED_BYTES = 2_500  # a refusal's whole response: the detail is cut at 2,000 characters


@pytest.fixture
def fresh_client():
    """A TestClient on an app with a small store and a clock the test moves."""
    import_or_require("fastapi")
    from fastapi.testclient import TestClient

    from madiao_mao_web.app import create_app
    from madiao_mao_web.store import GameStore

    now = [0.0]
    store = GameStore(max_games=6, max_replays=3, keep_moved_seconds=300, clock=lambda: now[0])
    with TestClient(create_app(store), base_url=LOCAL_BASE_URL) as test_client:
        test_client.now = now
        yield test_client


def start(client, **params) -> dict:
    response = client.post("/api/games", json=params)
    assert response.status_code == 200, response.text
    return response.json()


def move(client, data: dict, action: str, version: int | None = None):
    body = {"action": action, "version": data["view"]["version"] if version is None else version}
    return client.post(f"/api/games/{data['id']}/move", json=body)


def upload(client, record: Any):
    content = record if isinstance(record, (str, bytes)) else json.dumps(record)
    return client.post("/api/replays", content=content, headers=JSON_HEADERS)


def small_mao_record(**changes: Any) -> dict[str, Any]:
    """A 3-seat Mao record of no actions, with ``changes``."""
    record = {"game": "mao", "format": 1, "env_kwargs": {"n_players": 3}, "seed": 1, "options": None,
              "seats": ["a", "b", "c"], "actions": []}  # fmt: skip
    return record | changes


def random_mao_record(n_players: int, n_actions: int, seed: int) -> dict[str, Any]:
    """A Mao record of ``n_actions`` random legal actions (the game never ends before them)."""
    import numpy as np

    from mao_env.env import raw_env
    from mao_env.records import make_record

    env = raw_env(n_players, num_rounds=10_000, max_steps=10 * n_actions)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    actions = []
    while len(actions) < n_actions:
        legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
        action = int(rng.choice(legal))
        actions.append(env.describe_action(action))
        env.step(action)
    return make_record(env, seed=seed, options=None, seats=["random"] * n_players, actions=actions)


# ----------------------------------------------------------------------------- a real server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_request(
    port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


class ServerProcess:
    """``python -m madiao_mao_web`` on 127.0.0.1 in a subprocess, its memory read from /proc."""

    def __init__(self, log_path: Path) -> None:
        self.port = _free_port()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
        self.log = log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "madiao_mao_web", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}")
            with contextlib.suppress(OSError):
                if http_request(self.port, "GET", "/")[0] == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError("the server did not answer in time")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS in /proc")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        self.log.close()


#: Ports tried before the server fixture gives up.
SERVER_ATTEMPTS = 5


def start_server(folder: Path) -> ServerProcess:
    """A ready server, its log in ``folder``. The port is free when picked, but another process can
    take it before the server binds it (a connection's ephemeral port, with the suite's other
    worker busy): the server then exits, saying the address is in use, and another port is tried."""
    for attempt in range(SERVER_ATTEMPTS):
        server = ServerProcess(folder / f"server-{attempt}.log")
        try:
            server.wait_ready()
            return server
        except RuntimeError:
            server.stop()
            if "address already in use" not in (folder / f"server-{attempt}.log").read_text():
                raise
    raise RuntimeError(f"no free port held for the server in {SERVER_ATTEMPTS} attempts")


@pytest.fixture(scope="module")
def server_process(tmp_path_factory) -> Iterator[ServerProcess]:
    import_or_require("uvicorn")
    require(Path("/proc/self/status").exists(), "the server's memory is read from /proc (Linux)")
    server = start_server(tmp_path_factory.mktemp("server"))
    try:
        yield server
    finally:
        server.stop()


def test_the_server_fixture_tries_another_port_when_its_port_was_taken(tmp_path, monkeypatch):
    import_or_require("uvicorn")
    free_port = _free_port
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # held, as a connection's port is: bound, not listening
        taken_port = taken.getsockname()[1]
        ports = iter([taken_port])
        monkeypatch.setattr(sys.modules[__name__], "_free_port", lambda: next(ports, None) or free_port())
        server = start_server(tmp_path)
    try:
        assert server.port != taken_port
        assert "address already in use" in (tmp_path / "server-0.log").read_text()
        assert http_request(server.port, "GET", "/")[0] == 200
    finally:
        server.stop()


# ----------------------------------------------------------------------------- a live game's secrets


def test_every_api_route_is_examined_here(client):
    """A new route fails this test until what it can reveal is examined below."""
    routes = {
        (route.path, method)
        for route in client.app.routes
        if route.path.startswith("/api/")
        for method in getattr(route, "methods", ())
    }
    assert routes == {
        ("/api/games", "POST"),
        ("/api/games/{key}", "GET"),
        ("/api/games/{key}/move", "POST"),
        ("/api/games/{key}/step", "POST"),
        ("/api/games/{key}/record", "GET"),
        ("/api/games/{key}/replay", "POST"),
        ("/api/rules", "GET"),
        ("/api/replays", "POST"),
        ("/api/replays/{key}", "GET"),
    }


def answers_on_every_route(client, data: dict, twin: dict) -> list:
    """What every route answers about the live game of ``data`` with a person's seat (the view
    last), and a watched game of its deal (``twin``: its new-game options)."""
    key, version = data["id"], data["view"]["version"]
    answers = [
        client.get(f"/api/games/{key}/record"),
        client.get(f"/api/replays/{key}"),
        client.get(f"/api/replays/{key}?step=0&view=all"),
        client.post(f"/api/games/{key}/replay", json={}),
        client.post(f"/api/games/{key}/step", json={"version": version}),  # a person's game is never stepped
        client.post("/api/games", json=twin | {"watch": True}),
        client.get(f"/api/games/{key}"),
    ]
    statuses = [answer.status_code for answer in answers]
    assert statuses == [409 if data["view"]["game"] == "mao" else 404, 404, 404, 409, 400, 409, 200]
    assert "still being played" in answers[5].json()["detail"]
    view = answers[-1].json()["view"]
    assert answers[-1].json() == data  # the refusals changed nothing
    # No full table: no hands but the person's, in the view or in any frame of it.
    assert view.get("hands") is None and all(frame.get("hands") is None for frame in view["frames"])
    assert len(client.app.state.store) == 1  # no watched twin, no replay was added
    return answers


@pytest.mark.parametrize(("seat", "calls"), [(0, "master"), (1, "master"), (2, "master"), (0, "players")])
def test_a_live_mao_game_shows_each_seat_its_view_only_on_every_route(client, seat, calls):
    import numpy as np

    from madiao_mao_web.games import rule_texts
    from mao_env import rules as mao_rules
    from mao_env.records import make_record

    rng = np.random.default_rng(seat)
    options = {"game": "mao", "players": 3, "rounds": 2, "hand_size": 2, "seed": 40 + seat, "calls": calls}
    data = start(client, seat=seat, **options)
    key = data["id"]
    game = client.app.state.store.get(key).item
    moments = call_windows = 0
    while not data["view"]["over"]:
        hidden_cards = {c for s in range(3) if s != seat for c in game.env.hand(s)} - set(game.env.hand(seat))
        hidden_cards -= {a.split()[1] for a in game.actions if a.startswith("play")} | {game.env.top_card()}
        known = {rule for rule, author in game.env.active_rules() if author == seat}
        known |= set(game.env.refused_rules(seat))  # refused to this seat: it knows they are in force
        others_rules = [rule for rule, _ in game.env.active_rules() if rule not in known]
        answers = answers_on_every_route(client, data, options)
        # The record a seat could write itself (it chose the seed, saw the public moves) does not
        # replay while the game is live: no full table of it exists on this server.
        own_record = make_record(game.env, seed=game.seed, options=game.options, seats=game.seat_names,
                                 actions=game.actions)  # fmt: skip
        answers.append(upload(client, own_record))
        assert answers[-1].status_code == 409 and "still being played" in answers[-1].json()["detail"]
        # The rules in words are the library's, the same whatever the game (not scanned).
        assert client.get("/api/rules").json() == rule_texts()
        view = data["view"]
        if view["rule_choices"]:  # the library less what this seat knows: nothing of the others' rules
            offered = {f"rule {rule}" for rule in range(mao_rules.N_RULES) if rule not in known}
            assert set(view["rule_choices"]) == offered
        call_windows += view["in_call_window"]
        for answer in answers:
            shown = answer.json()
            if "view" in shown:  # the offered rules are checked above: naming one tells nothing
                shown = {k: v for k, v in shown["view"].items() if k not in ("legal", "rule_choices")}
            text = json.dumps(shown, ensure_ascii=False)
            assert tokens_of(shown) & hidden_cards == set()
            for rule in others_rules:
                assert mao_rules.RULE_DESCRIPTIONS[rule] not in text
                assert not re.search(rf"\brule {rule}\b", text)
        assert len(client.app.state.store) == 1  # the refused upload added nothing
        moments += 1
        data = move(client, data, mao_choice(data["view"], rng)).json()
    assert moments > 3 and (call_windows > 0) == (calls == "players")
    record = client.get(f"/api/games/{key}/record")  # over: the record, its replay, its watched twin
    assert record.status_code == 200 and record.json()["seed"] == 40 + seat
    assert upload(client, record.text).status_code == 200
    assert client.post(f"/api/games/{key}/replay", json={}).status_code == 200
    assert client.post("/api/games", json=options | {"watch": True}).status_code == 200


def test_a_live_madiao_match_shows_the_person_their_view_only_on_every_route(client):
    options = {"game": "madiao", "match": True, "seed": 31}
    data = start(client, seat=1, **options)
    game = client.app.state.store.get(data["id"]).item
    seen: set[str] = set()  # cards the person held or saw face up (or turned up) earlier in the match
    moments = hidden_checked = 0
    while not data["view"]["over"]:
        view = data["view"]
        seen.update(card["name"] for card in view["hand"])
        for table in [view, *view["frames"]]:
            seen.update(play["card"]["name"] for play in table["trick"]["plays"] if play["face_up"])
            seen.update([table["upcard"]["name"]] if table["upcard"] else [])
        hidden = madiao_hidden(game) - seen
        for answer in answers_on_every_route(client, data, options):
            assert madiao_leaks(answer.json(), hidden) == set()
        hidden_checked += bool(hidden)
        moments += 1
        data = move(client, data, data["view"]["legal"][0]).json()
    assert moments > 20 and hidden_checked > 20
    assert {hand["banker"] for hand in data["view"]["settlements"]} == {0, 1, 2, 3}
    assert client.post(f"/api/games/{data['id']}/replay", json={}).status_code == 200


def test_a_watched_game_and_a_played_game_of_one_deal_are_never_live_together(fresh_client):
    client = fresh_client
    watched = start(client, game="mao", watch=True, players=3, hand_size=2, rounds=1, seed=8)
    assert all(watched["view"]["hands"])  # a spectator of agents: every hand open, by design
    # A person cannot sit down at a deal that is being shown with every hand open...
    seated = client.post("/api/games", json={"game": "mao", "seat": 0, "players": 3, "seed": 8})
    assert seated.status_code == 409 and "watched game" in seated.json()["detail"]
    # ...but may at another table size (another deal), and at this one once the watched game ends.
    other = start(client, game="mao", seat=0, players=4, seed=8)
    assert "hands" not in other["view"]
    view = watched["view"]
    while not view["over"]:
        step = {"version": view["version"]}
        view = client.post(f"/api/games/{watched['id']}/step", json=step).json()["view"]
    assert start(client, game="mao", seat=0, players=3, seed=8)["view"].get("hands") is None
    # A finished game's replay and record wait for a live game of its deal with a person's seat.
    finished = start(client, game="madiao", seat=0, seed=5)
    while not finished["view"]["over"]:
        finished = move(client, finished, finished["view"]["legal"][0]).json()
    live = start(client, game="madiao", seat=2, seed=5)
    refused = client.post(f"/api/games/{finished['id']}/replay", json={})
    assert refused.status_code == 409 and "same deal" in refused.json()["detail"]
    while not live["view"]["over"]:
        live = move(client, live, live["view"]["legal"][0]).json()
    assert client.post(f"/api/games/{finished['id']}/replay", json={}).status_code == 200


def rule_choice_game(rules_in_force: list[tuple[int, int]], proposals: list[str] | None = None):
    """A 4-seat Mao game where the next winner is about to choose a rule: the person (seat 0) if
    ``proposals`` is None, else seat 1, an agent proposing ``proposals`` in turn (then the first
    legal move), after the person's "draw" and "end"."""
    import numpy as np

    from madiao_mao_web.mao.live import MaoGame
    from mao_env import core as mao_core

    class Proposer:
        def __init__(self, env) -> None:
            self.env = env
            self.script = ["play 9H", "say mao", "end", *(proposals or [])]

        def reset(self) -> None: ...

        def act(self, observation, action_mask) -> int:
            action = self.env.action_from_text(self.script.pop(0)) if self.script else -1
            return action if action >= 0 and action_mask[action] else int(np.flatnonzero(action_mask)[0])

    game = MaoGame(seat=0, players=4, rounds=2, agents="base", seed=0)
    winner = 0 if proposals is None else 1
    suits = ["D", "H", "C", "S"]
    hands = {s: [f"{rank}{suits[s]}" for rank in "2346"] for s in range(4)} | {winner: ["9H"]}
    game.env.reset(seed=0, options={"hands": hands, "pile": ["5H"], "rules": rules_in_force})
    game._events_seen = int(game.env._state.scalars[0, mao_core.S_N_EVENTS])
    game.agents[1] = Proposer(game.env)
    moves = ["play 9H", "say mao", "end"] if winner == 0 else ["draw", "end"]
    for text in moves:
        game.move(text, game.version)
    return game


def test_the_rule_choice_tells_the_winner_nothing_of_the_other_seats_rules():
    from madiao_mao_web.games import MoveError

    views, errors = [], []
    for rules in ([], [(3, 1), (30, 2)], [(7, 3), (3, 2), (44, 1)]):
        game = rule_choice_game(rules)
        views.append(game.view())
        with pytest.raises(MoveError) as refused:
            game.move("play 2D", game.version)  # an illegal move's error lists the legal moves
        errors.append(str(refused.value))
    # Whatever the others' rules, the same view (the whole library offered) and the same error.
    assert views[0] == views[1] == views[2]
    assert len(views[0]["rule_choices"]) == 45 and errors[0] == errors[1] == errors[2]


def test_another_seats_refused_proposal_is_not_seen_by_the_person():
    refused = rule_choice_game([(30, 2)], proposals=["rule 30", "rule 7"])
    accepted = rule_choice_game([(30, 2)], proposals=["rule 7"])
    assert refused.env.refused_rules(1) == [30] and accepted.env.refused_rules(1) == []
    assert refused.env.active_rules() == accepted.env.active_rules() == [(30, 2), (7, 1)]
    # The same view, frames and version: the person does not even learn a proposal was refused.
    assert refused.view() == accepted.view()
    assert sum(turn["kind"] == "rule" for turn in refused.view()["turns"]) == 1


def test_a_madiao_game_has_no_record_route(client):
    data = start(client, game="madiao", seat=0, seed=3)
    assert client.get(f"/api/games/{data['id']}/record").status_code == 404
    assert client.get(f"/api/replays/{data['id']}").status_code == 404


# ----------------------------------------------------------------------------- upload costs


@pytest.mark.slow
def test_a_20000_action_8_seat_mao_upload_costs_little_memory_and_time(server_process):
    """Before the checkpointed replays, one such upload took the server from 185 to 1,983 MB and
    131 s (45 s of CPU); see the closing figures printed here."""
    record = random_mao_record(BIG_RECORD_PLAYERS, BIG_RECORD_ACTIONS, seed=0)
    body = json.dumps(record).encode()
    assert len(record["actions"]) == BIG_RECORD_ACTIONS and len(body) < 300_000
    port = server_process.port
    before = server_process.rss_mb()
    latencies, sizes = [], []
    for _ in range(3):
        started = time.perf_counter()
        status, _, answer = http_request(port, "POST", "/api/replays", body, JSON_HEADERS)
        latencies.append(time.perf_counter() - started)
        assert status == 200, answer[:300]
        sizes.append(server_process.rss_mb())
    replay = json.loads(answer)
    assert replay["n_steps"] == BIG_RECORD_ACTIONS and len(replay["seats"]) == BIG_RECORD_PLAYERS
    frame_latencies = []
    for step, view in ((BIG_RECORD_ACTIONS, "all"), (12_345, "3"), (12_346, "3"), (7, "all"), (19_999, "7")):
        started = time.perf_counter()
        status, _, answer = http_request(port, "GET", f"/api/replays/{replay['id']}?step={step}&view={view}")
        frame_latencies.append(time.perf_counter() - started)
        assert status == 200
        frame = json.loads(answer)["frame"]
        assert frame["step"] == step and (frame["hands"] is None) == (view != "all")
    print(
        f"\n20,000-action 8-seat Mao upload: RSS {before:.0f} MB -> {sizes} MB after 3 uploads; "
        f"upload latency {[round(t, 2) for t in latencies]} s; frames {max(frame_latencies):.3f} s at most"
    )
    assert sizes[-1] - before < 250  # was +1,800 MB for one upload
    assert sizes[-1] - sizes[0] < 60  # later uploads cost little: no per-step snapshot kept
    assert max(latencies) < 20  # was 131 s on this 2-core machine
    assert max(frame_latencies) < 3


def test_replays_are_bounded_in_length_and_time(fresh_client, monkeypatch):
    from madiao_mao_web import replays

    long_record = small_mao_record(actions=["draw"] * (replays.MAX_REPLAY_STEPS + 1))
    answer = upload(fresh_client, long_record)
    assert answer.status_code == 422 and "at most 20000" in answer.json()["detail"]
    monkeypatch.setattr(replays, "MAX_BUILD_SECONDS", 0.0)
    from mao_env.records import record_game

    answer = upload(fresh_client, record_game(["random"] * 3, seed=2, n_players=3))
    assert answer.status_code == 422 and "too long to replay" in answer.json()["detail"]
    assert len(fresh_client.app.state.store) == 0


def test_bodies_over_the_limit_are_413_without_being_read_whole(server_process):
    from madiao_mao_web.app import MAX_BODY_BYTES

    big = b'{"game": "madiao", "x": "' + b"a" * MAX_BODY_BYTES + b'"}'
    status, _, answer = http_request(server_process.port, "POST", "/api/replays", big, JSON_HEADERS)
    assert status == 413 and len(answer) < MAX_ECHOED_BYTES

    def chunks():  # no Content-Length: the limit applies while reading
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b"a" * 65536

    connection = http.client.HTTPConnection("127.0.0.1", server_process.port, timeout=60)
    try:
        connection.request("POST", "/api/games", body=chunks(), headers=JSON_HEADERS, encode_chunked=True)
        response = connection.getresponse()
        assert response.status == 413 and "larger than" in json.loads(response.read())["detail"]
    finally:
        connection.close()


def test_checkpointed_mao_frames_equal_a_step_by_step_replay(monkeypatch):
    import numpy as np

    from madiao_mao_web import replays
    from madiao_mao_web.mao.live import mao_seat_view
    from madiao_mao_web.mao.replay import MaoReplay
    from mao_env import cards as mao_cards
    from mao_env.records import record_game, replay

    monkeypatch.setattr(replays, "CHECKPOINT_STRIDE", 16)  # many checkpoints in a short game
    record = json.loads(
        json.dumps(record_game(["base", "random", "base"], seed=5, n_players=3, num_rounds=2))
    )
    seen = MaoReplay(record)
    assert seen.n_steps == len(record["actions"]) > 64
    reference = {}
    for step, env in enumerate(replay(record)):
        reference[step] = (
            [mao_seat_view(env, seat, record["seats"]) for seat in range(3)],
            [sorted(env.hand(s), key=mao_cards.CARD_ID.__getitem__) for s in range(3)],
            sorted(env.active_rules()),
        )
    rng = np.random.default_rng(0)
    order = [*rng.permutation(seen.n_steps + 1)[:80], seen.n_steps, 0, 17, 16, 15, 31, 32]
    for step in map(int, order):
        views, hands, rules = reference[step]
        everything = seen.frame(step, None)
        assert everything["hands"] == hands
        assert sorted((r["rule"], r["author"]) for r in everything["rules"]) == rules
        for seat in range(3):
            frame = seen.frame(step, seat)
            assert {key: frame[key] for key in views[seat]} == views[seat]


def test_checkpointed_madiao_frames_equal_frames_kept_for_every_step(monkeypatch, tmp_path):
    from madiao_mao.cli.main import main
    from madiao_mao_web import replays
    from madiao_mao_web.madiao.replay import MadiaoReplay

    path = tmp_path / "match.json"
    assert main(["match", "--seed", "4", "--record", str(path)]) == 0
    record = replays.load_record(json.loads(path.read_text()))
    seen = MadiaoReplay(record)
    monkeypatch.setattr(replays, "CHECKPOINT_STRIDE", 1)  # every step's table kept: the old way
    every_step = MadiaoReplay(record)
    monkeypatch.undo()
    for step in [*range(seen.n_steps, -1, -7), 0, seen.n_steps, 129, 128, 127]:
        for seat in (None, 0, 3):
            assert seen.frame(step, seat) == every_step.frame(step, seat)


# ----------------------------------------------------------------------------- who may ask


@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "json"]
)
def test_bodies_are_read_only_as_application_json(fresh_client, content_type):
    data = start(fresh_client, game="madiao", seat=0, seed=1)
    watched = start(fresh_client, game="madiao", watch=True, seed=2)
    headers = {"Content-Type": content_type} if content_type else {}
    body = {"action": data["view"]["legal"][0], "version": 0}
    for path, content in (
        ("/api/games", json.dumps({"game": "madiao"})),
        (f"/api/games/{data['id']}/move", json.dumps(body)),
        (f"/api/games/{watched['id']}/step", json.dumps({"version": 0})),
        (f"/api/games/{data['id']}/replay", "{}"),
        (f"/api/games/{data['id']}/replay", ""),  # no body is no exception
        ("/api/replays", json.dumps({"game": "madiao"})),
    ):
        answer = fresh_client.post(path, content=content, headers=headers)
        assert answer.status_code == 415 and "application/json" in answer.json()["detail"]
    assert fresh_client.get(f"/api/games/{data['id']}").json() == data
    assert fresh_client.get(f"/api/games/{watched['id']}").json() == watched
    assert len(fresh_client.app.state.store) == 2
    charset = {"Content-Type": "application/json; charset=utf-8"}
    moved = fresh_client.post(f"/api/games/{data['id']}/move", content=json.dumps(body), headers=charset)
    assert moved.status_code == 200


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Sec-Fetch-Site": "cross-site"}, 403),
        ({"Sec-Fetch-Site": "same-site"}, 403),  # another port of localhost
        ({"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, 403),  # a form POSTed across
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "http://localhost:9999"}, 403),
        ({"Origin": "null"}, 403),
        ({"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}, 200),
        ({"Sec-Fetch-Site": "none"}, 200),
        ({}, 200),  # not a browser acting for another site (curl, a script)
    ],
)
def test_requests_a_browser_sends_for_another_site_are_403(fresh_client, headers, status):
    answer = fresh_client.post("/api/games", json={"game": "madiao", "seed": 1}, headers=headers)
    assert answer.status_code == status
    assert len(fresh_client.app.state.store) == (status == 200)
    if status == 403:
        assert "refused" in answer.json()["detail"]


def test_the_new_routes_refuse_another_site_too(fresh_client):
    watched = start(fresh_client, game="madiao", watch=True, seed=4)
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        answers = [
            fresh_client.post(f"/api/games/{watched['id']}/step", json={"version": 0}, headers=headers),
            fresh_client.post(f"/api/games/{watched['id']}/replay", json={}, headers=headers),
            fresh_client.get("/api/rules", headers=headers),
        ]
        assert [answer.status_code for answer in answers] == [403] * 3
    assert fresh_client.get(f"/api/games/{watched['id']}").json() == watched


def test_a_link_from_another_site_still_opens_the_page(fresh_client):
    navigation = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Origin": "http://x.example"}
    assert fresh_client.get("/play/madiao?seed=3", headers=navigation).status_code == 200
    fetch = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
    assert fresh_client.get("/api/games/anything", headers=fetch).status_code == 403


def test_a_chromium_page_on_another_origin_cannot_create_games(browser):
    from madiao_mao_web.app import create_app
    from madiao_mao_web.store import GameStore

    store = GameStore()
    with serving_in_thread(create_app(store)) as url:
        port = url.rsplit(":", 1)[1]
        context = browser.new_context()
        try:
            page = context.new_page()
            # localhost and 127.0.0.1 are different sites to the browser: this page is "another
            # origin" that knows where the app listens.
            page.goto(f"http://localhost:{port}/")
            outcome = page.evaluate(
                """async (target) => {
                    const body = JSON.stringify({game: "madiao"});
                    const results = [];
                    for (const init of [
                        {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body},
                        {method: "POST", mode: "no-cors", body},
                        {method: "POST", headers: {"Content-Type": "application/json"}, body},
                    ]) {
                        try { results.push((await fetch(target + "/api/games", init)).type); }
                        catch (error) { results.push("refused: " + error.message); }
                    }
                    return results;
                }""",
                url,
            )
            assert len(outcome) == 3
            assert len(store) == 0
            # The same request from the app's own page works: the refusal above was the guard's.
            page.goto(f"{url}/")
            status = page.evaluate(
                """async () => (await fetch("/api/games", {
                    method: "POST",
                    headers: {"Content-Type": "application/json"},
                    body: JSON.stringify({game: "madiao"}),
                })).status"""
            )
            assert status == 200 and len(store) == 1
        finally:
            context.close()


def test_only_allowed_host_names_are_answered(fresh_client):
    from fastapi.testclient import TestClient

    from madiao_mao_web.app import create_app
    from madiao_mao_web.security import allowed_hosts

    for host, status in (
        ("evil.example", 400),  # a DNS-rebinding page's name, pointed at 127.0.0.1
        ("localhost:8000", 200),
        ("127.0.0.1:8000", 200),
        ("[::1]:8000", 200),
        ("box.lan", 400),
    ):
        assert fresh_client.get("/", headers={"Host": host}).status_code == status, host
    lan = TestClient(create_app(hosts=allowed_hosts("0.0.0.0", ["Box.lan"])), base_url="http://box.lan")
    assert lan.get("/").status_code == 200
    assert lan.get("/", headers={"Host": "0.0.0.0"}).status_code == 400
    assert "[::1]" in allowed_hosts("::1") and "10.0.0.5" in allowed_hosts("10.0.0.5")
    for bad in ("*", "a/b", "evil.example:80", ""):
        with pytest.raises(ValueError):
            allowed_hosts("127.0.0.1", [bad])


def test_serve_refuses_a_bad_allowed_host_in_one_line(capsys):
    from madiao_mao.cli import main as cli
    from madiao_mao_web.__main__ import main as web_main

    assert cli.main(["serve", "--port", "8765", "--allow-host", "a/b"]) == 2
    assert "not a host name" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        web_main(["--allow-host", "*.example"])
    assert exited.value.code == 2


def test_every_response_carries_the_security_headers(fresh_client):
    from madiao_mao_web.app import MAX_BODY_BYTES

    data = start(fresh_client, game="madiao", seed=2)
    answers = [
        fresh_client.get("/"),
        fresh_client.get("/static/app.js"),
        fresh_client.get("/static/style.css"),
        fresh_client.get("/favicon.ico"),
        fresh_client.get("/no/such/page"),
        fresh_client.get(f"/api/games/{data['id']}"),
        fresh_client.get("/api/games/unknown"),
        fresh_client.put("/api/games"),
        fresh_client.post("/api/games", content="{}", headers={"Content-Type": "text/plain"}),
        fresh_client.post("/api/games", content="x" * (MAX_BODY_BYTES + 1), headers=JSON_HEADERS),
        fresh_client.get("/", headers={"Host": "evil.example"}),
        fresh_client.post("/api/games", json={"game": "madiao"}, headers={"Origin": "http://evil.example"}),
    ]
    assert sorted({a.status_code for a in answers}) == [200, 400, 403, 404, 405, 413, 415]
    for answer in answers:
        policy = answer.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"
        assert answer.headers["x-frame-options"] == "DENY"
    assert answers[5].headers["cache-control"] == "no-store"


def test_the_page_runs_under_its_policy():
    """No inline script, style or handler: the policy allows only the app's own files (the
    browser tests then prove the page logs no policy violation while playing)."""
    static = REPO_ROOT / "madiao_mao_web" / "static"
    page = (static / "index.html").read_text()
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", page, flags=re.S)
    assert scripts and all('src="/static/' in attributes and not body.strip() for attributes, body in scripts)
    assert not re.search(r"<style\b|\sstyle=|\son[a-z]+=|javascript:", page, flags=re.I)
    script = (static / "app.js").read_text()
    assert not re.search(r"\beval\(|new Function|setAttribute\(\s*[\"']style", script)


# ----------------------------------------------------------------------------- a burst of games


def test_a_burst_of_creates_cannot_lock_out_a_player(fresh_client):
    client, store = fresh_client, fresh_client.app.state.store
    player = start(client, game="madiao", seat=0, seed=11)
    client.now[0] = 10.0
    player = move(client, player, player["view"]["legal"][0]).json()
    burst = []
    for index in range(5 * store.max_games):  # five times the store, without moving
        client.now[0] = 20.0 + index
        answer = client.post("/api/games", json={"game": "madiao", "seed": index})
        burst.append(answer.status_code)
    assert burst == [200] * len(burst)
    assert len(store) == store.max_games
    # The person who had moved keeps the game and goes on; a newcomer can create and play.
    assert client.get(f"/api/games/{player['id']}").json() == player
    assert move(client, player, player["view"]["legal"][0]).status_code == 200
    newcomer = start(client, game="mao", seat=0, players=3, hand_size=3, seed=5)
    for _ in range(3):
        newcomer = move(client, newcomer, newcomer["view"]["legal"][0]).json()
    assert newcomer["view"]["version"] == 3


def test_finished_games_go_first_and_a_recently_moved_game_stays(fresh_client):
    client, store = fresh_client, fresh_client.app.state.store
    finished = start(client, game="madiao", seat=0, seed=12)
    while not finished["view"]["over"]:
        finished = move(client, finished, finished["view"]["legal"][0]).json()
    client.now[0] = 1000.0  # the finished game was last moved long ago
    games = [start(client, game="madiao", seed=s) for s in range(store.max_games - 1)]
    client.now[0] = 1001.0
    assert client.get(f"/api/games/{finished['id']}").status_code == 200  # used after the others
    games.append(start(client, game="madiao", seed=99))
    assert client.get(f"/api/games/{finished['id']}").status_code == 404  # finished: first to go
    assert all(client.get(f"/api/games/{g['id']}").status_code == 200 for g in games)
    for index, game in enumerate(games):  # every game moved now: nothing may be evicted
        client.now[0] = 1002.0 + index
        assert move(client, game, game["view"]["legal"][0]).status_code == 200
    refused = client.post("/api/games", json={"game": "madiao"})
    assert refused.status_code == 503 and "try again" in refused.json()["detail"]
    client.now[0] = 1002.0 + store.keep_moved_seconds + 1  # the first moved game is no longer kept
    assert client.post("/api/games", json={"game": "madiao"}).status_code == 200
    assert client.get(f"/api/games/{games[0]['id']}").status_code == 404


def test_replays_are_kept_apart_and_evict_each_other_only(fresh_client, tmp_path):
    from mao_env.records import record_game

    client, store = fresh_client, fresh_client.app.state.store
    games = [start(client, game="madiao", seed=s) for s in range(store.max_games)]
    record = json.dumps(record_game(["random"] * 3, seed=3, n_players=3))
    replays = [upload(client, record).json()["id"] for _ in range(store.max_replays + 2)]
    assert all(client.get(f"/api/games/{g['id']}").status_code == 200 for g in games)
    assert [client.get(f"/api/replays/{key}").status_code for key in replays] == [404] * 2 + [200] * 3
    assert len(store) == store.max_games + store.max_replays


def test_a_stepped_watched_game_is_kept_and_a_games_replays_count_as_replays(fresh_client):
    client, store = fresh_client, fresh_client.app.state.store
    watched = start(client, game="madiao", watch=True, seed=11)
    idle_watched = start(client, game="madiao", watch=True, seed=12)
    client.now[0] = 10.0
    stepped = client.post(f"/api/games/{watched['id']}/step", json={"version": 0})
    assert stepped.status_code == 200
    for index in range(3 * store.max_games):  # a burst: the watched game stepped a moment ago stays
        client.now[0] = 20.0 + index
        assert client.post("/api/games", json={"game": "madiao", "seed": 100 + index}).status_code == 200
    assert client.get(f"/api/games/{watched['id']}").json() == stepped.json()
    assert client.get(f"/api/games/{idle_watched['id']}").status_code == 404  # never stepped: evicted
    finished = start(client, game="madiao", seat=0, seed=13)
    while not finished["view"]["over"]:
        finished = move(client, finished, finished["view"]["legal"][0]).json()
    games_before = len(store)
    path = f"/api/games/{finished['id']}/replay"
    replays = [client.post(path, json={}) for _ in range(store.max_replays + 2)]
    assert [answer.status_code for answer in replays] == [200] * len(replays)
    assert len(store) == games_before + store.max_replays  # the replays evicted each other only
    assert client.get(f"/api/games/{finished['id']}").status_code == 200


# ----------------------------------------------------------------------------- odd input


DEEP = 100_000
ODD_GAME_BODIES = [
    '{"game": "madiao", "seed": Infinity}',
    '{"game": "madiao", "seed": -Infinity}',
    '{"game": "madiao", "seed": NaN}',
    '{"game": "madiao", "seed": 1e400}',
    '{"game": "madiao", "seed": -1e400}',
    '{"game": "madiao", "seed": 1e308}',
    '{"game": "madiao", "seed": 3.5}',
    '{"game": "madiao", "seed": ' + "9" * 5000 + "}",
    '{"game": "madiao", "seed": -' + "9" * 5000 + "}",
    '{"game": "madiao", "seed": "' + "9" * 5000 + '"}',
    "[" * DEEP + "]" * DEEP,
    '{"a": ' * DEEP + "1" + "}" * DEEP,
    '{"game": "madiao", "agents": ' + "[" * 40 + "]" * 40 + "}",
    '{"game": "madiao", "seat": "\u0663"}',  # Arabic-Indic three
    '{"game": "madiao", "seat": "\uff13"}',  # fullwidth three
    '{"game": "madiao", "seat": "3_0"}',
    '{"game": "madiao", "seat": " 1"}',
    '{"game": "madiao", "seat": "+1"}',
    '{"game": "madiao", "seat": true}',
    '{"game": "madiao", "seat": [1]}',
    '{"game": "mao", "players": "\u0664"}',
    '"\ud800"',
    "\xff",
]


@pytest.mark.parametrize("body", ODD_GAME_BODIES, ids=range(len(ODD_GAME_BODIES)))
def test_odd_numbers_and_nesting_are_4xx(fresh_client, body):
    from madiao_mao_web.app import MAX_REQUEST_BYTES

    content = body.encode("utf-8", "surrogatepass") if body != "\xff" else b"\xff"
    # A new game's options are short (413 beyond); a record may be long: its parser sees all.
    for path, status in (
        ("/api/games", 400 if len(content) <= MAX_REQUEST_BYTES else 413),
        ("/api/replays", 400),
    ):
        answer = fresh_client.post(path, content=content, headers=JSON_HEADERS)
        assert answer.status_code == status, (path, answer.text[:300])
        assert len(answer.content) < MAX_ECHOED_BYTES
    assert len(fresh_client.app.state.store) == 0


def test_odd_versions_and_steps_are_4xx_and_change_nothing(fresh_client):
    from mao_env.records import record_game

    data = start(fresh_client, game="madiao", seat=0, seed=7)
    watched = start(fresh_client, game="mao", watch=True, players=3, seed=7)
    action = data["view"]["legal"][0]
    for version, status in (
        ("Infinity", 400), ("1e400", 400), ("9" * 5000, 400), ("true", 400), ('"0"', 400), ("0.5", 400),
        ("null", 400), ("[0]", 400), ("-1", 409), (str(2**70), 409), ("1", 409),
    ):  # fmt: skip
        content = f'{{"action": "{action}", "version": {version}}}'
        answer = fresh_client.post(f"/api/games/{data['id']}/move", content=content, headers=JSON_HEADERS)
        assert answer.status_code == status, (version, answer.text[:200])
        content = f'{{"version": {version}}}'
        answer = fresh_client.post(f"/api/games/{watched['id']}/step", content=content, headers=JSON_HEADERS)
        assert answer.status_code == status, (version, answer.text[:200])
    nested = "[" * 40 + "]" * 40
    odd_steps = ("[]", "{}", '{"version": 0, "x": 1}', '{"action": "draw", "version": 0}', nested)
    for body in odd_steps:
        answer = fresh_client.post(f"/api/games/{watched['id']}/step", content=body, headers=JSON_HEADERS)
        assert answer.status_code == 400, body
    finished = start(fresh_client, game="madiao", seat=0, seed=8)
    while not finished["view"]["over"]:
        finished = move(fresh_client, finished, finished["view"]["legal"][0]).json()
    for body in ("[]", "null", '{"x": 1}', '{"version": 1e400}', nested):
        answer = fresh_client.post(f"/api/games/{finished['id']}/replay", content=body, headers=JSON_HEADERS)
        assert answer.status_code == 400, body
    assert fresh_client.get(f"/api/games/{data['id']}").json() == data
    assert fresh_client.get(f"/api/games/{watched['id']}").json() == watched
    assert len(fresh_client.app.state.store) == 3
    key = upload(fresh_client, record_game(["random"] * 3, seed=4, n_players=3)).json()["id"]
    for query in ("step=1e400", "step=\u0663", "step=" + "9" * 5000, "step=-0x1", "view=\u0663", "view=%201"):
        answer = fresh_client.get(f"/api/replays/{key}?{query}")
        assert answer.status_code == 400 and len(answer.content) < MAX_ECHOED_BYTES, query


def test_echoed_input_is_cut_short(fresh_client):
    from madiao_mao_web.app import MAX_BODY_BYTES, MAX_REQUEST_BYTES

    data = start(fresh_client, game="mao", seat=0, players=3, seed=8)
    long = "Q" * (MAX_REQUEST_BYTES - 100)  # as long as a move or a new game's options may be
    answers = [
        move(fresh_client, data, "play " + long),
        move(fresh_client, data, "rule \u0663"),  # non-ASCII digits are no rule number either
        fresh_client.post("/api/games", json={"game": "madiao", "agents": long}),
        fresh_client.post("/api/games", json={"game": "madiao", "seed": long}),
        fresh_client.post("/api/games", json={"game": "madiao", long: 1}),
        fresh_client.post("/api/games", json={"game": long}),
        upload(fresh_client, small_mao_record(seed="s" * 10**6)),
        upload(fresh_client, small_mao_record(actions=["play " + "Q" * 10**6])),
        fresh_client.post(f"/api/games/{data['id']}/step", json={"version": long}),
        fresh_client.post(f"/api/games/{data['id']}/replay", json={long: 1}),
    ]
    assert [a.status_code for a in answers] == [400] * len(answers)
    huge = move(fresh_client, data, "play " + "Q" * (MAX_BODY_BYTES - 100))  # a 4 MB action text
    assert huge.status_code == 413
    for route in ("step", "replay"):  # a short body only, as a move's
        too_long = {"version": "Q" * MAX_REQUEST_BYTES}
        assert fresh_client.post(f"/api/games/{data['id']}/{route}", json=too_long).status_code == 413
    for answer in [*answers, huge]:
        assert len(answer.content) < MAX_ECHOED_BYTES, answer.text[:200]
    assert fresh_client.get(f"/api/games/{data['id']}").json() == data


# ----------------------------------------------------------------------------- stale moves


def moves_at_once(port: int, key: str, actions: list[str], version: int) -> list[tuple[int, bytes]]:
    """Each action sent by its own thread, all released together; (status, body) of each."""
    barrier = threading.Barrier(len(actions))
    results: list[tuple[int, bytes]] = [(0, b"")] * len(actions)

    def send(index: int) -> None:
        body = json.dumps({"action": actions[index], "version": version}).encode()
        barrier.wait()
        status, _, answer = http_request(port, "POST", f"/api/games/{key}/move", body, JSON_HEADERS)
        results[index] = (status, answer)

    threads = [threading.Thread(target=send, args=(index,)) for index in range(len(actions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_eight_concurrent_moves_against_one_version_play_once():
    import_or_require("fastapi")
    from madiao_mao_web.app import create_app
    from madiao_mao_web.store import GameStore

    store = GameStore()
    with serving_in_thread(create_app(store)) as url:
        port = int(url.rsplit(":", 1)[1])
        for trial in range(5):
            options = {"game": "mao", "players": 3, "hand_size": 10, "seed": 60 + trial}
            status, _, answer = http_request(
                port, "POST", "/api/games", json.dumps(options).encode(), JSON_HEADERS
            )
            assert status == 200
            data = json.loads(answer)
            game = store.get(data["id"]).item
            actions_before = len(game.actions)
            candidates = [a for a in data["view"]["legal"] if a.startswith(("play", "say"))][:8]
            assert len(set(candidates)) == 8
            results = moves_at_once(port, data["id"], candidates, version=0)
            statuses = sorted(status for status, _ in results)
            assert statuses == [200] + [409] * 7, (trial, statuses)
            played = next(json.loads(answer) for status, answer in results if status == 200)
            assert played["view"]["version"] == 1
            assert json.loads(http_request(port, "GET", f"/api/games/{data['id']}")[2]) == played
            # Exactly one move reached the env (a play or a phrase does not end the person's turn).
            assert len(game.actions) == actions_before + 1 and game.actions[-1] in candidates


def test_a_double_sent_move_plays_once(fresh_client):
    data = start(fresh_client, game="madiao", seat=0, seed=9)
    action = data["view"]["legal"][0]
    first = move(fresh_client, data, action)
    assert first.status_code == 200
    again = move(fresh_client, data, action)  # the same body, as a retry would send it
    assert again.status_code == 409 and "version 0" in again.json()["detail"]
    assert fresh_client.get(f"/api/games/{data['id']}").json() == first.json()


# ----------------------------------------------------------------------------- fuzz


def test_fuzzed_requests_are_never_5xx_and_refusals_change_nothing(fresh_client):
    import_or_require("hypothesis")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from mao_env.records import record_game

    client, store = fresh_client, fresh_client.app.state.store
    game = start(client, game="mao", seat=0, players=3, hand_size=3, seed=21)
    game = move(client, game, game["view"]["legal"][0]).json()  # moved: kept whatever else is created
    watched = start(client, game="mao", watch=True, players=3, hand_size=3, seed=22)
    watched = client.post(f"/api/games/{watched['id']}/step", json={"version": 0}).json()  # stepped: kept
    finished = start(client, game="madiao", seat=0, seed=23)
    while not finished["view"]["over"]:
        finished = move(client, finished, finished["view"]["legal"][0]).json()
    replay_id = upload(client, record_game(["random"] * 3, seed=6, n_players=3)).json()["id"]
    games = [game["id"], watched["id"], finished["id"]]
    ids = st.sampled_from([*games, replay_id, "", "..", "%2e%2e", "x" * 300, "\u0663", "a/b"])
    numbers = st.sampled_from(["Infinity", "NaN", "-0", "1e400", "9" * 5000, "1e-400", "0x10", "007", "1.0"])
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
    keys = st.sampled_from(
        ["game", "seat", "agents", "players", "rounds", "seed", "hand_size", "match", "calls", "watch",
         "action", "version", "actions", "seats", "format", "env_kwargs", "options", "x"]
    )  # fmt: skip
    values = st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5),
        max_leaves=12,
    )
    bodies = (
        values.map(lambda v: json.dumps(v).encode())
        | st.binary(max_size=64)
        | st.builds(
            lambda key, number: f'{{"{key}": {number}}}'.encode(),
            st.sampled_from(["seed", "seat", "version", "action", "players"]),
            numbers,
        )
        | st.integers(1, 3000).map(lambda depth: ("[" * depth + "]" * depth).encode())
        | st.sampled_from([b"{}", b'{"version": 1}', b'{"version": 2}', b'{"game": "mao", "watch": true}'])
    )
    content_types = st.sampled_from(["application/json", "text/plain", "", "application/json; x=y"])
    queries = st.dictionaries(
        st.sampled_from(["step", "view", "x"]), st.text(max_size=12) | numbers, max_size=2
    )

    @settings(max_examples=250, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(route=st.integers(0, 8), key=ids, body=bodies, content_type=content_types, query=queries)
    def one_request(route, key, body, content_type, query):
        entries = len(store)
        before = [client.get(f"/api/games/{key}").json() for key in games]
        headers = {"Content-Type": content_type} if content_type else {}
        if route == 0:
            answer = client.post("/api/games", content=body, headers=headers)
        elif route == 1:
            answer = client.post(f"/api/games/{key}/move", content=body, headers=headers)
        elif route == 2:
            answer = client.post("/api/replays", content=body, headers=headers)
        elif route == 3:
            answer = client.get(f"/api/replays/{key}", params=query)
        elif route == 4:
            answer = client.get(f"/api/games/{key}/record")
        elif route == 5:
            answer = client.post(f"/api/games/{key}/step", content=body, headers=headers)
        elif route == 6:
            answer = client.post(f"/api/games/{key}/replay", content=body, headers=headers)
        elif route == 7:
            answer = client.get("/api/rules", params=query)
        else:
            answer = client.get(f"/api/games/{key}", params=query)
        assert answer.status_code < 500, answer.text[:300]
        assert len(answer.content) < 200_000  # a view or a frame, never an echo of the body
        if answer.status_code >= 400:
            assert len(store) == entries
            assert [client.get(f"/api/games/{key}").json() for key in games] == before
        # Whatever was asked, the game with a person's seat shows no full table.
        assert client.get(f"/api/games/{game['id']}").json()["view"].get("hands") is None

    one_request()
