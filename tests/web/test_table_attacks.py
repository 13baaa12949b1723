"""Attacks on a live server (uvicorn on 127.0.0.1, in a thread) that issue 34 found getting through:
a watched game, replay or record at another table size or hand size showing a live game's hands;
a burst of one client locking every other out of new games and evicting a game whose person has
not moved yet; records the page cannot show accepted at upload; and a live watched game's record
handed out before its end. Clients at other addresses are other loopback addresses (127.0.0.2...),
as the server sees them: no header is trusted for who a client is.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.web import test_attacks
from tests.web.conftest import import_or_require, serving_in_thread

JSON_HEADERS = {"Content-Type": "application/json"}
server_process = test_attacks.server_process  # a fixture: the server in a subprocess


class Client:
    """JSON requests to the server at ``base`` from the loopback address ``address``."""

    def __init__(self, base: str, address: str = "127.0.0.1") -> None:
        self.port = int(base.rsplit(":", 1)[1])
        self.address = address

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        connection = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=120, source_address=(self.address, 0)
        )
        try:
            data = None if body is None else json.dumps(body).encode()
            connection.request(method, path, body=data, headers=JSON_HEADERS if body is not None else {})
            response = connection.getresponse()
            return response.status, json.loads(response.read() or b"null")
        finally:
            connection.close()

    def start(self, **options: Any) -> dict[str, Any]:
        status, data = self.request("POST", "/api/games", options)
        assert status == 200, data
        return data

    def move(self, data: dict[str, Any], action: str | None = None) -> tuple[int, Any]:
        view = data["view"]
        body = {"action": action or view["legal"][0], "version": view["version"]}
        return self.request("POST", f"/api/games/{data['id']}/move", body)

    def step_to_end(self, data: dict[str, Any]) -> dict[str, Any]:
        view = data["view"]
        while not view["over"]:
            status, answer = self.request(
                "POST", f"/api/games/{data['id']}/step", {"version": view["version"]}
            )
            assert status == 200, answer
            view = answer["view"]
        return view


def serve(store=None) -> Iterator[str]:
    import_or_require("fastapi")
    from madiao_mao_web.app import create_app

    with serving_in_thread(create_app(store)) as url:
        yield url


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    yield from serve()


# ----------------------------------------------------------------------------- 1. no twin deal


def test_no_table_size_hand_size_or_record_deals_a_twin_of_a_live_seated_mao_game(server):
    from mao_env.records import record_game

    client = Client(server)
    seated = client.start(game="mao", players=4, seat=0, agents="base", rounds=3, seed=4343)
    # 4, 5 and 6 players are dealt from one shuffle of two decks: a 5-seat table held the four
    # live hands; a 4-seat table with another hand size is dealt from that seed's cards too.
    for twin in (
        {"players": 5},
        {"players": 6},
        {"players": 4, "hand_size": 7},
        {"players": 5, "hand_size": 2},
    ):
        status, answer = client.request(
            "POST", "/api/games", {"game": "mao", "watch": True, "seed": 4343, **twin}
        )
        assert status == 409 and "same deal" in answer["detail"], (twin, status)
    for players in (5, 6):
        record = record_game(["random"] * players, seed=4343, n_players=players, num_rounds=1)
        status, answer = client.request(
            "POST", "/api/replays", record | {"actions": [], "returns": [0.0] * players}
        )
        assert status == 409 and "same deal" in answer["detail"], players
    # Another number of decks is another deal: watched while the seated game goes on.
    assert (
        client.request("POST", "/api/games", {"game": "mao", "watch": True, "players": 3, "seed": 4343})[0]
        == 200
    )
    status, view = client.request("GET", f"/api/games/{seated['id']}")
    assert status == 200 and view["view"].get("hands") is None


def test_a_seated_mao_game_is_refused_while_a_watched_game_of_its_cards_is_live(server):
    client = Client(server)
    client.start(game="mao", players=6, watch=True, seed=5151, hand_size=3, rounds=1)
    status, answer = client.request(
        "POST", "/api/games", {"game": "mao", "players": 4, "seat": 1, "seed": 5151}
    )
    assert status == 409 and "watched game" in answer["detail"]


# ----------------------------------------------------------------------------- 2, 3. a burst


BURST_GAMES = 36  # three times the store below: one create and one move each


def test_a_burst_of_one_client_locks_no_one_out_and_evicts_no_other_clients_game():
    from madiao_mao_web.store import GameStore

    store = GameStore(max_games=12, max_games_per_client=4)
    for base in serve(store):
        thinking = Client(base, "127.0.0.3").start(game="madiao", seat=0, seed=1, agents="random")
        player_client = Client(base, "127.0.0.4")
        playing = player_client.start(game="madiao", seat=0, seed=2, agents="random")
        status, playing = player_client.move(playing)
        assert status == 200
        attacker = Client(base, "127.0.0.2")
        started = time.monotonic()
        for index in range(BURST_GAMES):  # games never moved: the attacker's own make room
            status, _ = attacker.request(
                "POST", "/api/games", {"game": "madiao", "seed": 50 + index, "agents": "random"}
            )
            assert status == 200
        answers = []
        for index in range(BURST_GAMES):
            status, game = attacker.request(
                "POST", "/api/games", {"game": "madiao", "seat": 0, "seed": 100 + index, "agents": "random"}
            )
            answers.append(status)
            if status == 200:
                answers.append(attacker.move(game)[0])
        assert time.monotonic() - started < 240  # the bursts are bounded: 108 requests
        # The attacker holds its 4 games, all moved: its later creates are refused, to it alone.
        per_client = store.max_games_per_client
        assert answers == [200] * (2 * per_client) + [503] * (BURST_GAMES - per_client)
        # The game whose person has not moved yet is still there, the playing person goes on, and
        # a newcomer creates and plays.
        assert Client(base, "127.0.0.3").request("GET", f"/api/games/{thinking['id']}")[0] == 200
        assert player_client.move(playing)[0] == 200
        newcomer = Client(base, "127.0.0.5")
        status, game = newcomer.request(
            "POST", "/api/games", {"game": "madiao", "seat": 0, "seed": 7, "agents": "random"}
        )
        assert status == 200, game
        assert newcomer.move(game)[0] == 200
        assert len(store) <= 3 + store.max_games_per_client


def test_a_client_whose_games_were_all_moved_is_refused_alone():
    from madiao_mao_web.store import GameStore

    store = GameStore(max_games=6, max_games_per_client=2)
    for base in serve(store):
        attacker = Client(base, "127.0.0.2")
        for seed in range(2):
            assert attacker.move(attacker.start(game="madiao", seat=0, seed=seed, agents="random"))[0] == 200
        status, answer = attacker.request(
            "POST", "/api/games", {"game": "madiao", "seed": 9, "agents": "random"}
        )
        assert status == 503 and "your 2 live games" in answer["detail"]
        assert (
            Client(base, "127.0.0.3").request("POST", "/api/games", {"game": "madiao", "agents": "random"})[0]
            == 200
        )


# ----------------------------------------------------------------------------- 5. records the page reads


@pytest.fixture(scope="module")
def madiao_record() -> dict[str, Any]:
    from madiao_mao_web.madiao.live import MadiaoGame

    game = MadiaoGame(watch=True, seed=3, agents="random")
    while not game.over:
        game.step(game.version)
    return game.record()


def crafted_records(madiao_record: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """Records the page could not show, each with the words its refusal says."""
    index = next(i for i, event in enumerate(madiao_record["events"]) if event["type"] == "settlement")
    crafted = []
    for change, words in (
        ({"rule": "no_such_rule"}, "unknown payment rule"),
        ({"payer": 7}, "payer and payee are seats"),
    ):
        record = json.loads(json.dumps(madiao_record))
        line = {"rule": "meld", "payer": 0, "payee": 1, "stakes": 1.0}
        record["events"][index]["lines"].append(line | change)
        crafted.append((record, words))
    mao = {"game": "mao", "format": 1, "env_kwargs": {"n_players": 3}, "seed": None, "options": None,
           "seats": ["a", "b", "c"], "actions": []}  # fmt: skip
    for returns in ([1.0], ["1", 0, 0], [True, 0, 0], {"a": 1}):
        crafted.append((mao | {"returns": returns}, "'returns' must be a list of one number per seat"))
    return crafted


def test_records_the_page_could_not_show_are_refused_at_upload(server, madiao_record):
    client = Client(server)
    assert client.request("POST", "/api/replays", madiao_record)[0] == 200
    for record, words in crafted_records(madiao_record):
        status, answer = client.request("POST", "/api/replays", record)
        assert status == 400 and words in answer["detail"], (status, answer)


# ----------------------------------------------------------------------------- a live watched game's record


@pytest.mark.parametrize(
    ("options", "record_status"),
    [
        ({"game": "mao", "players": 3, "hand_size": 2, "rounds": 1, "seed": 61}, 200),
        ({"game": "madiao", "seed": 62, "agents": "random"}, 404),  # Madiao offers no record file
    ],
)
def test_a_live_watched_games_record_and_replay_wait_for_its_end(server, options, record_status):
    client = Client(server)
    watched = client.start(watch=True, **options)
    view = watched["view"]
    key = watched["id"]
    live_record = 409 if record_status == 200 else 404
    while not view["over"]:
        assert client.request("GET", f"/api/games/{key}/record")[0] == live_record
        status, answer = client.request("POST", f"/api/games/{key}/replay", {})
        assert status == 409 and "still being played" in answer["detail"]
        status, answer = client.request("POST", f"/api/games/{key}/step", {"version": view["version"]})
        view = answer["view"]
        if view["version"] > 40:  # enough moments checked: the rest of the game at once
            view = client.step_to_end({"id": key, "view": view})
    assert client.request("GET", f"/api/games/{key}/record")[0] == record_status
    assert client.request("POST", f"/api/games/{key}/replay", {})[0] == 200


# ----------------------------------------------------------------------------- 4. memory of model games


MODEL_GAMES = 3
MAX_MB_PER_MODEL_GAME = 25  # each held its own copy of the policy: about 80 MB (8-seat Mao), 290 MB (Madiao)


@pytest.mark.parametrize(
    "options",
    [
        {"game": "mao", "players": 8, "watch": True, "agents": "model", "rounds": 1},
        {"game": "madiao", "watch": True, "agents": "model"},
    ],
    ids=["mao", "madiao"],
)
def test_games_of_the_shipped_policy_share_one_copy_of_it(server_process, options):
    """A real server in a subprocess (its memory read from /proc): the first model game loads the
    shipped policy; the next ones add a few MB at most."""
    import_or_require("torch")
    base = f"http://127.0.0.1:{server_process.port}"
    client = Client(base)
    client.start(**options, seed=1)
    loaded = server_process.rss_mb()
    for seed in range(2, 2 + MODEL_GAMES):
        client.start(**options, seed=seed)
    assert (server_process.rss_mb() - loaded) / MODEL_GAMES < MAX_MB_PER_MODEL_GAME
