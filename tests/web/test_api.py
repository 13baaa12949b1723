"""The web app's API: the server keeps the authority and the page sees only its own seat.

Hidden information: every JSON response during a whole Madiao hand and a Mao game is scanned for
the cards of the other seats' hands (and their face-down cards), and for the secret rules the
human did not author; the scanner itself is checked to catch the full table.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from madiao_env import cards as madiao_cards
from mao_env import rules as mao_rules
from tests.web.conftest import LOCAL_BASE_URL, import_or_require

JSON_HEADERS = {"Content-Type": "application/json"}
TOKEN = re.compile(r"[^0-9A-Za-z\u4e00-\u9fff]+")


def strings_of(data: Any) -> list[str]:
    """Every string (keys too) anywhere in a JSON value."""
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for key, value in data.items() for s in (*strings_of(key), *strings_of(value))]
    if isinstance(data, (list, tuple)):
        return [s for item in data for s in strings_of(item)]
    return []


def tokens_of(data: Any) -> set[str]:
    return {token for text in strings_of(data) for token in TOKEN.split(text) if token}


def madiao_leaks(data: Any, forbidden: set[str]) -> set[str]:
    """Cards of ``forbidden`` named in ``data`` by short or Chinese name."""
    chinese = {madiao_cards.CARD_CHINESE[madiao_cards.CARD_ID[name]]: name for name in forbidden}
    tokens = tokens_of(data)
    return (tokens & forbidden) | {chinese[t] for t in tokens & set(chinese)}


def madiao_hidden(game) -> set[str]:
    """What the human must not see now: other seats' hands and face-down cards."""
    table = game.env.table()
    hidden = {name for seat, hand in enumerate(table["hands"]) if seat != game.seat for name in hand}
    hidden |= {name for seat, name, face_up, _ in table["history"] if seat != game.seat and not face_up}
    return hidden


def server_game(client, key: str):
    return client.app.state.store.get(key).item


def start(client, **params) -> dict:
    response = client.post("/api/games", json=params)
    assert response.status_code == 200, response.text
    return response.json()


def first_legal_madiao(view: dict) -> str:
    return view["legal"][0]


def move(client, data: dict, action: str):
    """The person's move ``action`` against the version of the view in ``data``."""
    body = {"action": action, "version": data["view"]["version"]}
    return client.post(f"/api/games/{data['id']}/move", json=body)


def upload(client, record: str):
    return client.post("/api/replays", content=record, headers=JSON_HEADERS)


def test_scanner_catches_the_full_table(client):
    data = start(client, game="madiao", seat=0, seed=1)
    game = server_game(client, data["id"])
    hidden = madiao_hidden(game)
    assert hidden
    assert madiao_leaks(game.env.table(), hidden) == hidden
    assert madiao_leaks({"log": ["Seat 2: play 9S (九索)."]}, {"9S"}) == {"9S"}
    assert madiao_leaks({"x": [{"chinese": "九索"}]}, {"9S"}) == {"9S"}


@pytest.mark.parametrize("seat", [0, 2])
def test_madiao_hand_never_shows_another_seats_cards(client, seat):
    data = start(client, game="madiao", seat=seat, seed=11 + seat)
    game = server_game(client, data["id"])
    responses = 0
    own_seen = False
    while True:
        view = data["view"]
        own = {card["name"] for card in view["hand"]}
        assert own == set(game.env.table()["hands"][seat])
        own_seen |= bool(own & tokens_of(data))
        assert madiao_leaks(data, madiao_hidden(game)) == set()
        responses += 1
        if view["over"]:
            break
        response = move(client, data, first_legal_madiao(view))
        assert response.status_code == 200, response.text
        data = response.json()
        assert client.get(f"/api/games/{data['id']}").json() == data
    assert own_seen and responses >= 8
    assert data["view"]["settlements"][-1]["rules"]
    assert sum(data["view"]["settlements"][-1]["payoffs"]) == pytest.approx(0)


def mao_choice(view: dict, rng) -> str:
    legal = view["legal"]
    plays = [a for a in legal if a.startswith("play")]
    if plays:
        return plays[int(rng.integers(len(plays)))]
    for wanted in ("draw", "say last-card", "say mao"):
        if wanted in legal and (wanted == "draw" or rng.random() < 0.8):
            return wanted
    rules = [a for a in legal if a.startswith("rule")]
    if rules:
        return rules[0]
    return "end" if "end" in legal else legal[int(rng.integers(len(legal)))]


def test_mao_game_never_shows_other_hands_or_rules_not_authored(client):
    import numpy as np

    rng = np.random.default_rng(0)
    data = start(client, game="mao", seat=1, players=3, rounds=4, hand_size=2, seed=3, agents="base")
    game = server_game(client, data["id"])
    checks = others_rules_checked = cards_checked = 0
    while True:
        view = data["view"]
        # The rule choice offers every library rule the seat does not know to be in force, whoever
        # made the rules in force (checked below): naming a rule there gives nothing away.
        shown = data | {"view": {k: v for k, v in view.items() if k not in ("legal", "rule_choices")}}
        text = json.dumps(shown, ensure_ascii=False)
        assert view["hand"] == sorted(game.env.hand(1), key=view["hand"].index)
        assert sorted(view["hand"]) == sorted(game.env.hand(1))
        public = {a.split()[1] for a in game.actions if a.startswith("play")} | {game.env.top_card()}
        hidden = {c for s in range(3) if s != 1 for c in game.env.hand(s)} - set(view["hand"]) - public
        assert tokens_of(data) & hidden == set()
        cards_checked += bool(hidden)
        authored = {r for r, a in game.env.active_rules() if a == 1}
        assert {r["rule"] for r in view["my_rules"]} == authored
        known = authored | set(game.env.refused_rules(1))  # refused to seat 1: it knows them
        if view["rule_choices"]:
            offered = {f"rule {r}" for r in range(mao_rules.N_RULES) if r not in known}
            assert set(view["rule_choices"]) == offered
        for rule, author in game.env.active_rules():
            if author != 1 and rule not in known:
                others_rules_checked += 1
                assert mao_rules.RULE_DESCRIPTIONS[rule] not in text
                assert not re.search(rf"\brule {rule}\b", text)
        checks += 1
        if view["over"]:
            break
        response = move(client, data, mao_choice(view, rng))
        assert response.status_code == 200, response.text
        data = response.json()
    # The checks above ran on something to hide: cards in other hands and others' rules.
    assert checks > 5 and cards_checked > 5 and others_rules_checked > 0


def test_mao_rule_choice_offers_the_library_and_tells_a_refusal_to_the_proposer():
    from madiao_mao_web.mao.live import MaoGame
    from mao_env import core as mao_core

    game = MaoGame(seat=0, players=4, rounds=2, agents="base", seed=0)
    # Seat 0 (the person) is about to win; rules 3 and 30 are seat 1's and seat 2's.
    hands = {0: ["9H"], 1: ["2D", "3D", "4D", "5D"], 2: ["2H", "3H", "4H", "6H"], 3: ["2C", "3C", "4C", "6C"]}
    game.env.reset(seed=0, options={"hands": hands, "pile": ["5H"], "rules": [(3, 1), (30, 2)]})
    game._events_seen = int(game.env._state.scalars[0, mao_core.S_N_EVENTS])
    for move in ("play 9H", "say mao", "end"):
        game.move(move, game.version)
    every_rule = {f"rule {rule}" for rule in range(mao_rules.N_RULES)}
    assert set(game.view()["rule_choices"]) == every_rule  # nothing tells which are in force
    game.move("rule 30", game.version)
    view = game.view()
    rule_30 = mao_rules.RULE_DESCRIPTIONS[30]
    refusal = {"kind": "rule", "seat": 0, "who": "You", "rule": rule_30, "refused": True}
    assert view["turns"][-1] == refusal
    said = f'You propose “{rule_30}”. Mao Master: "That rule is already in force." (choose another)'
    assert view["frames"][-1]["text"] == said
    assert view["refused_rules"] == [{"rule": 30, "description": mao_rules.RULE_DESCRIPTIONS[30]}]
    assert set(view["rule_choices"]) == every_rule - {"rule 30"} and view["to_act"] == 0
    game.move("rule 7", game.version)
    assert game.env.active_rules() == [(3, 1), (30, 2), (7, 0)]
    assert [turn for turn in game.view()["turns"] if turn["kind"] == "rule"][-2:] == [
        refusal,
        refusal | {"rule": mao_rules.RULE_DESCRIPTIONS[7], "refused": False},
    ]


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"action": "play ZZ", "version": 0}, 400, "unknown card name"),
        ({"action": 12, "version": 0}, 400, "must be a string"),
        ({"action": "dance", "version": 0}, 400, "cannot read action"),
        ({"move": "pass", "version": 0}, 400, "action"),
        ({"action": "pass"}, 400, "version"),
        ({"action": "pass", "version": "0"}, 400, "version"),
        ({"action": "pass", "version": 7}, 409, "version 7"),
        ("not json", 400, "not valid JSON"),
    ],
)
def test_malformed_move_is_a_4xx_and_changes_nothing(client, body, status, words):
    data = start(client, game="madiao", seat=0, seed=4)
    before = client.get(f"/api/games/{data['id']}").json()
    content = body if isinstance(body, str) else json.dumps(body)
    response = client.post(f"/api/games/{data['id']}/move", content=content, headers=JSON_HEADERS)
    assert response.status_code == status
    assert words in response.json()["detail"]
    assert client.get(f"/api/games/{data['id']}").json() == before


@pytest.mark.parametrize("game_name", ["madiao", "mao"])
def test_illegal_move_names_the_legal_ones_and_changes_nothing(client, game_name):
    params = {"game": game_name, "seat": 0, "seed": 5}
    data = start(client, **params)
    game = server_game(client, data["id"])
    legal = set(data["view"]["legal"])
    if game_name == "madiao":
        candidates = [madiao_cards.action_to_text(a) for a in range(madiao_cards.N_ACTIONS)]
    else:
        candidates = [game.env.describe_action(a) for a in range(game.env.n_actions)]
    illegal = next(text for text in candidates if text not in legal)
    state = game.env.get_state()
    response = move(client, data, illegal)
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "illegal move" in detail and data["view"]["legal"][0] in detail
    assert client.get(f"/api/games/{data['id']}").json() == data
    after = game.env.get_state()
    arrays = state.get("arrays")
    if isinstance(arrays, dict):
        assert all((arrays[k] == after["arrays"][k]).all() for k in arrays)
    else:
        assert all((a == b).all() for a, b in zip(arrays, after["arrays"], strict=True))


def test_move_after_the_end_is_409(client):
    data = start(client, game="madiao", seat=0, seed=6)
    while not data["view"]["over"]:
        data = move(client, data, data["view"]["legal"][0]).json()
    response = move(client, data, "pass")
    assert response.status_code == 409 and "over" in response.json()["detail"]


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"game": "chess"}, "game must be"),
        ({"game": "madiao", "seat": 7}, "seat"),
        ({"game": "madiao", "seat": "x"}, "seat"),
        ({"game": "madiao", "agents": "nobody"}, "agents"),
        ({"game": "madiao", "agents": "model:/etc/passwd"}, "agents"),
        ({"game": "madiao", "agents": "random,greedy"}, "agents"),
        ({"game": "madiao", "players": 5}, "unknown parameter"),
        ({"game": "mao", "players": 9}, "players"),
        ({"game": "mao", "players": 3, "seat": 3}, "seat"),
        ({"game": "mao", "hand_size": 0}, "hand_size"),
        ({"game": "mao", "rounds": "many"}, "rounds"),
    ],
)
def test_bad_new_game_parameters_are_400_naming_the_parameter(client, params, words):
    response = client.post("/api/games", json=params)
    assert response.status_code == 400
    assert words in response.json()["detail"]
    assert len(client.app.state.store) == 0


@pytest.mark.parametrize("game", ["madiao", "mao"])
def test_an_agent_this_install_cannot_load_is_400_naming_it(client, game, monkeypatch):
    """As on an install without the train extra, where the policies cannot load."""

    def without_torch(*args, **kwargs):
        raise ImportError("No module named 'torch'")

    monkeypatch.setattr("madiao_mao.agents.registry.make_agent", without_torch)
    monkeypatch.setattr("madiao_mao_web.games.make_agent", without_torch)
    response = client.post("/api/games", json={"game": game, "agents": "model"})
    assert response.status_code == 400
    assert (
        "'model' cannot be loaded here (No module named 'torch'); install the train extra"
        in response.json()["detail"]
    )
    assert len(client.app.state.store) == 0


def test_two_games_are_isolated(client):
    first = start(client, game="madiao", seat=0, seed=8)
    second = start(client, game="madiao", seat=0, seed=8)
    assert first["id"] != second["id"]
    assert first["view"] == second["view"]  # the same deal, two separate games
    moved = move(client, first, first["view"]["legal"][0]).json()
    assert moved["view"] != first["view"]
    assert client.get(f"/api/games/{second['id']}").json() == second
    assert client.get("/api/games/not-a-game-id").status_code == 404


def test_live_games_are_bounded_in_number_and_age():
    import_or_require("fastapi")
    from fastapi.testclient import TestClient

    from madiao_mao_web.app import create_app
    from madiao_mao_web.store import GameStore

    now = [0.0]
    store = GameStore(
        max_games=2, max_idle_seconds=60, max_age_seconds=600, keep_moved_seconds=30, clock=lambda: now[0]
    )
    client = TestClient(create_app(store), base_url=LOCAL_BASE_URL)
    first = start(client, game="madiao", seed=1)
    second = start(client, game="madiao", seed=2)
    now[0] = 1.0
    assert move(client, first, first["view"]["legal"][0]).status_code == 200
    assert move(client, second, second["view"]["legal"][0]).status_code == 200
    refused = client.post("/api/games", json={"game": "mao", "seed": 3})  # both moved 0 s ago
    assert refused.status_code == 503 and "played in the last 30 s" in refused.json()["detail"]
    assert len(store) == 2
    now[0] = 61.5  # both idle longer than allowed
    assert client.get(f"/api/games/{first['id']}").status_code == 404
    assert len(store) == 0
    kept = start(client, game="madiao", seed=4)
    statuses = []
    for minute in range(1, 12):  # used every 59 s (never idle too long), older than max_age at the end
        now[0] = 61.0 + 59 * minute
        statuses.append(client.get(f"/api/games/{kept['id']}").status_code)
    assert statuses == [200] * 10 + [404]


def test_store_rejects_bad_bounds():
    from madiao_mao_web.store import GameStore

    with pytest.raises(ValueError, match="max_games"):
        GameStore(max_games=0)
    with pytest.raises(ValueError, match="max_idle_seconds"):
        GameStore(max_idle_seconds=-1)


# ----------------------------------------------------------------------------- replays


@pytest.fixture(scope="module")
def match_record(tmp_path_factory) -> str:
    from madiao_mao.cli.main import main

    path = tmp_path_factory.mktemp("records") / "match.json"
    assert main(["match", "--seed", "3", "--record", str(path)]) == 0
    return path.read_text()


def test_madiao_replay_seat_view_hides_other_hands_and_sloughs(client, match_record):
    data = upload(client, match_record).json()
    key, n_steps = data["id"], data["n_steps"]
    assert n_steps == len(json.loads(match_record)["events"])
    hidden_checked = 0
    for step in range(0, n_steps + 1, 3):
        full = client.get(f"/api/replays/{key}?step={step}&view=all").json()["frame"]
        for seat in range(4):
            frame = client.get(f"/api/replays/{key}?step={step}&view={seat}").json()["frame"]
            hidden = {
                card["name"] for other, hand in enumerate(full["hands"]) if other != seat for card in hand
            }
            hidden |= {
                p["card"]["name"]
                for p in full["trick"]["plays"] + (full["last_trick"] or {"plays": []})["plays"]
                if not p["face_up"] and p["seat"] != seat
            }
            assert madiao_leaks(frame, hidden) == set()
            assert [h is None for h in frame["hands"]] == [s != seat for s in range(4)]
            hidden_checked += bool(hidden)
    assert hidden_checked > n_steps  # most frames had something to hide
    last = client.get(f"/api/replays/{key}?step={n_steps}&view=all").json()["frame"]
    assert last["settlement"]["rules"]


def test_mao_record_replays_through_the_env_and_in_the_app(client, tmp_path):
    from mao_env.records import read_record, record_game, replay, write_record

    record = record_game(["base", "bayes", "random"], seed=9, n_players=3, num_rounds=1)
    path = write_record(tmp_path / "mao.json", record)
    loaded = read_record(path)
    assert loaded == json.loads(json.dumps(record))
    envs = list(replay(loaded))
    assert len(envs) == len(record["actions"]) + 1
    assert envs[-1].terminations[envs[-1].agent_selection]
    data = upload(client, path.read_text()).json()
    assert data["game"] == "mao" and data["n_steps"] == len(record["actions"])
    frame = client.get(f"/api/replays/{data['id']}?step={data['n_steps']}&view=1").json()["frame"]
    assert frame["hands"] is None and frame["seat"] == 1
    assert frame["over"]
    everyone = client.get(f"/api/replays/{data['id']}?step=0&view=all").json()["frame"]
    assert [len(h) for h in everyone["hands"]] == everyone["hand_sizes"]
    assert not everyone["over"]


def test_mao_replay_seat_view_hides_other_hands_and_rules(client):
    from mao_env.records import record_game

    record = record_game(["base", "base", "base"], seed=1, n_players=3, num_rounds=3)
    data = upload(client, json.dumps(record)).json()
    key, n_steps = data["id"], data["n_steps"]
    others_rules_checked = 0
    for step in range(n_steps + 1):  # every step: a rule is chosen in one step only
        full = client.get(f"/api/replays/{key}?step={step}&view=all").json()["frame"]
        for seat in range(3):
            frame = client.get(f"/api/replays/{key}?step={step}&view={seat}").json()["frame"]
            text = json.dumps(frame)
            assert frame["hands"] is None and frame["hand"] == full["hands"][seat]
            for rule in full["rules"]:
                if rule["author"] != seat:
                    others_rules_checked += 1
                    assert rule["description"] not in text
                    assert not re.search(rf"\brule {rule['rule']}\b", text)
            assert {r["rule"] for r in frame["my_rules"]} == {
                r["rule"] for r in full["rules"] if r["author"] == seat
            }
    assert others_rules_checked > 0  # the game had secret rules to hide


def test_mao_web_game_record_replays_to_the_same_table(client):
    import numpy as np

    from mao_env.records import replay

    rng = np.random.default_rng(2)
    data = start(client, game="mao", seat=0, players=3, rounds=1, hand_size=2, seed=12)
    game = server_game(client, data["id"])
    while not data["view"]["over"]:
        live = client.get(f"/api/games/{data['id']}/record")  # the seed, every hand: not while live
        assert live.status_code == 409 and "still being played" in live.json()["detail"]
        data = move(client, data, mao_choice(data["view"], rng)).json()
    record = client.get(f"/api/games/{data['id']}/record").json()
    env = list(replay(record))[-1]  # the one env, after every action
    assert [env.hand(s) for s in range(3)] == [game.env.hand(s) for s in range(3)]
    assert env.top_card() == game.env.top_card()


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{", "the record is not valid JSON"),
        ('{"game": "chess"}', "not a game record"),
        ('{"game": "madiao", "format": 99, "seats": [], "events": []}', "format"),
        ('{"game": "mao", "format": 1, "env_kwargs": {"n_players": 99}, "seed": 1, "options": null, '
         '"seats": ["a"], "actions": []}', "n_players"),
        ('{"game": "mao", "format": 1, "env_kwargs": {"n_players": 3}, "seed": 1, "options": null, '
         '"seats": ["a", "b", "c"], "actions": ["play QQ"]}', "action 0"),
    ],
)  # fmt: skip
def test_bad_record_is_400_with_the_reason(client, content, words):
    response = upload(client, content)
    assert response.status_code == 400
    assert words in response.json()["detail"]
    assert len(client.app.state.store) == 0


def test_replay_frame_parameters_are_checked(client, match_record):
    key = upload(client, match_record).json()["id"]
    for query, words in (
        ("step=-1", "step"),
        ("step=abc", "step"),
        ("step=100000", "step"),
        ("view=9", "view"),
    ):
        response = client.get(f"/api/replays/{key}?{query}")
        assert response.status_code == 400 and words in response.json()["detail"]


def test_pages_and_static_files_are_served(client):
    for path in ("/", "/play/madiao", "/play/mao", "/replay"):
        response = client.get(path)
        assert response.status_code == 200 and 'src="/static/app.js"' in response.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/favicon.ico").status_code == 200


def test_serve_binds_to_localhost_by_default(monkeypatch):
    from madiao_mao.cli import main as cli

    calls = []
    monkeypatch.setattr(
        "madiao_mao_web.app.serve", lambda host, port, allow_hosts: calls.append((host, port, allow_hosts))
    )
    assert cli.main(["serve"]) == 0
    assert cli.main(["serve", "--host", "0.0.0.0", "--port", "8123", "--allow-host", "box.lan"]) == 0
    assert calls == [("127.0.0.1", 8000, []), ("0.0.0.0", 8123, ["box.lan"])]
    assert cli.main(["serve", "--port", "0"]) == 2  # one line, before the app starts


def test_the_home_page_names_every_agent_of_each_game(client):
    from madiao_mao.agents.registry import agent_names

    page = client.get("/").text
    for game in ("madiao", "mao"):
        listed = re.search(rf'<span data-agents="{game}">([^<]*)</span>', page)
        assert listed is not None and listed.group(1).split(", ") == list(agent_names(game))


def test_a_mao_game_against_the_pretrained_model(client):
    import numpy as np

    pytest.importorskip("sb3_contrib")
    from madiao_mao.agents.learned import LearnedPolicyAgent

    rng = np.random.default_rng(1)
    data = start(client, game="mao", seat=0, players=4, rounds=1, seed=5, agents="model")
    game = server_game(client, data["id"])
    assert all(isinstance(game.agents[seat], LearnedPolicyAgent) for seat in (1, 2, 3))
    own_moves = 0
    while not data["view"]["over"]:
        response = move(client, data, mao_choice(data["view"], rng))
        assert response.status_code == 200, response.text
        data = response.json()
        own_moves += 1
    # The model's seats moved too (the env raises on an illegal action), cards played among them.
    assert len(game.actions) > own_moves
    assert sum(action.startswith("play") for action in game.actions) > 0
