"""The web app's modes through its API: versioned moves, Madiao matches, the Mao players' calls
variant, watched games, replaying a finished game, and the words a view is written in."""

from __future__ import annotations

import json

import pytest

from madiao_env import payments
from madiao_mao_web.mao.live import MaoGame, mao_phrase_text, mao_reason_text
from mao_env import rules as mao_rules
from tests.web.test_api import madiao_hidden, madiao_leaks

pytestmark = pytest.mark.slow

JSON = {"Content-Type": "application/json"}


def new_game(client, **body):
    response = client.post("/api/games", json=body)
    assert response.status_code == 200, response.text
    return response.json()["id"], response.json()["view"]


def play(client, key: str, view: dict, choose=None, check=None, limit: int = 600) -> dict:
    """Move with the first legal move (or ``choose(view)``) until the game is over, calling
    ``check(view)`` on every view; the last view."""
    for _ in range(limit):
        if check:
            check(view)
        if view["over"]:
            return view
        action = choose(view) if choose else view["legal"][0]
        response = client.post(f"/api/games/{key}/move", json={"action": action, "version": view["version"]})
        assert response.status_code == 200, response.text
        view = response.json()["view"]
    raise AssertionError("the game did not end")


def test_a_move_made_on_a_stale_version_is_409_and_changes_nothing(client):
    key, view = new_game(client, game="madiao", seed=21)
    assert view["version"] == 0
    first = client.post(f"/api/games/{key}/move", json={"action": view["legal"][0], "version": 0})
    assert first.status_code == 200 and first.json()["view"]["version"] == 1
    after = first.json()["view"]
    # The same request sent again (a double click, a retry): refused, nothing played.
    again = client.post(f"/api/games/{key}/move", json={"action": after["legal"][0], "version": 0})
    assert again.status_code == 409 and "version" in again.json()["detail"]
    now = client.get(f"/api/games/{key}").json()["view"]
    assert now["version"] == 1 and now["hand"] == after["hand"] and now["log"] == after["log"]


@pytest.mark.parametrize(
    "extra", [{"version": "1"}, {"version": True}, {"version": 1.5}, {"version": 0, "seat": 1}]
)
def test_a_version_is_an_integer_and_nothing_else_is_sent(client, extra):
    key, view = new_game(client, game="madiao", seed=21)
    response = client.post(f"/api/games/{key}/move", json={"action": view["legal"][0], **extra})
    assert response.status_code == 400
    assert client.get(f"/api/games/{key}").json()["view"]["version"] == 0


def mao_chooser(call_once: list[int] | None = None):
    """A simple Mao player: a card if it may, else draw; "Last card" and "Mao" when its hand says
    so; in a call window it calls "Bad card" once (noting the seat judged), then passes."""
    said: set[str] = set()

    def choose(view):
        legal = view["legal"]
        if view["call_choices"]:
            if call_once is not None and not call_once and "call bad-card" in legal:
                call_once.append(view["judged_turn"]["seat"])
                return "call bad-card"
            return "no call"
        plays = [a for a in legal if a.startswith("play ")]
        if plays:
            return plays[0]
        if "draw" in legal:
            return "draw"
        phrase = {1: "last-card", 0: "mao"}.get(len(view["hand"]))
        if phrase and f"say {phrase}" in legal and phrase not in said:
            said.add(phrase)
            return f"say {phrase}"
        said.clear()
        return "end"

    return choose


def test_a_madiao_match_makes_every_seat_banker_and_keeps_every_hand(client):
    key, view = new_game(client, game="madiao", seed=21, match="1")
    assert view["mode"] == "match"
    game = client.app.state.store.get(key).item
    seen: set[str] = set()  # cards the person saw held or played face up earlier in the match
    checked = []

    def no_leak(view):
        seen.update(card["name"] for card in view["hand"])
        for frame in view["frames"]:
            seen.update(p["card"]["name"] for p in frame["trick"]["plays"] if p["face_up"])
        hidden = madiao_hidden(game) - seen
        assert madiao_leaks(view, hidden) == set()
        checked.append(bool(hidden))

    view = play(client, key, view, check=no_leak)
    assert sum(checked) > 20
    settled = view["settlements"]
    assert {hand["banker"] for hand in settled} == {0, 1, 2, 3}
    assert [hand["hand_number"] for hand in settled] == list(range(len(settled)))
    totals = [sum(hand["payoffs"][s] for hand in settled) for s in range(4)]
    assert view["totals"] == pytest.approx(totals) and sum(view["totals"]) == pytest.approx(0)
    for hand in settled:
        assert hand["rules"]
        for rule in hand["rules"]:
            assert rule["rule"] in payments.RULE_NAMES
            assert all(p["stakes"] > 0 and p["payer"] != p["payee"] for p in rule["payments"])
    assert view["to_act"] is None and view["legal"] == []
    assert "settled: you" in " ".join(view["log"])


def test_a_madiao_hand_view_marks_the_suit_led_and_the_winning_card(client):
    key, view = new_game(client, game="madiao", seed=21, seat=2)
    trick = view["trick"]
    assert trick["led_suit"] == "Strings" and trick["winning_seat"] == 3
    assert [p["winning"] for p in trick["plays"]] == [True, False, False]
    assert [f["text"] for f in view["frames"]][1] == "Seat 3 (heuristic) leads 八索 8S."
    view = play(client, key, view)
    assert view["last_trick"]["number"] == 8
    assert view["last_trick"]["winner"] in range(4)


def test_the_mao_players_calls_variant_takes_the_persons_calls(client):
    key, view = new_game(
        client, game="mao", players=3, seat=0, rounds=1, hand_size=3, seed=4, calls="players"
    )
    assert view["calls_by"] == "players"
    calls_made: list[int] = []
    chooser = mao_chooser(calls_made)

    def choose(view):
        if view["call_choices"]:
            assert {"no call", "point of order"} <= set(view["legal"])
            assert {c["action"]: c["label"] for c in view["call_choices"]}["call talking"] == "Talking"
        return chooser(view)

    view = play(client, key, view, choose)
    assert calls_made
    mine = [c for turn in view["turns"] if turn["kind"] == "turn" for c in turn["calls"] if c["caller"] == 0]
    assert mine and mine[0]["said"] == "Bad card"
    assert mine[0]["cards"] == 1 and mine[0]["seat"] == (0 if mine[0]["bad_call"] else calls_made[0])
    # Results in cards and rounds, consistent with the env's rewards (1 a round, -0.1 a card).
    game = client.app.state.store.get(key).item
    for seat in range(3):
        expected = view["rounds_won"][seat] - 0.1 * view["penalty_cards"][seat]
        assert game.returns[seat] == pytest.approx(expected)
    assert "<name of the card>" not in json.dumps(view)


def test_the_rules_in_words_come_from_the_rule_definitions(client):
    texts = client.get("/api/rules").json()
    assert [(r["rule"], r["name"], r["explanation"]) for r in texts["madiao"]["payments"]] == list(
        zip(payments.RULE_NAMES, payments.SPOKEN_NAMES, payments.EXPLANATIONS, strict=True)
    )
    families = texts["mao"]["families"]
    assert [(f["title"], f["explanation"]) for f in families] == list(
        zip(mao_rules.FAMILY_TITLES, mao_rules.FAMILY_EXPLANATIONS, strict=True)
    )
    rules = texts["mao"]["rules"]
    assert [r["action"] for r in rules] == [f"rule {n}" for n in range(mao_rules.N_RULES)]
    assert [r["family"] for r in rules] == mao_rules.RULE_FAMILY.tolist()
    assert [r["description"] for r in rules] == list(mao_rules.RULE_DESCRIPTIONS)


def test_the_mao_rule_choice_offers_the_winners_legal_rules():
    game = MaoGame(seat=0, players=3, rounds=2, hand_size=2, seed=18)
    choose = mao_chooser()
    for _ in range(40):
        view = game.view()
        if view["rule_choices"]:
            break
        game.move(choose(view), game.version)
    assert view["rule_choices"] == [a for a in view["legal"] if a.startswith("rule ")]
    assert len(view["rule_choices"]) >= mao_rules.N_RULES - 1
    # The library's words are not in the view: /api/rules has them, once.
    assert not any(description in json.dumps(view) for description in mao_rules.RULE_DESCRIPTIONS)


@pytest.mark.parametrize(
    "body",
    [{"game": "madiao", "seed": 3}, {"game": "mao", "players": 4, "rounds": 1, "hand_size": 3, "seed": 1}],
)
def test_a_watched_game_is_stepped_one_move_at_a_time_with_every_hand_open(client, body):
    key, view = new_game(client, watch=True, **body)
    assert view["seat"] is None and view["watch"] and view["legal"] == []
    assert all(len(hand) for hand in view["hands"])
    assert client.post(f"/api/games/{key}/move", json={"action": "draw", "version": 0}).status_code == 400
    steps = 0
    while not view["over"]:
        response = client.post(f"/api/games/{key}/step", json={"version": view["version"]})
        assert response.status_code == 200, response.text
        view = response.json()["view"]
        steps += 1
        assert view["version"] == steps and view["frames"]  # the move (and a trick, a deal it ended)
        assert steps < 2000
    assert client.post(f"/api/games/{key}/step", json={"version": view["version"]}).status_code == 409
    stale = client.post(f"/api/games/{key}/step", json={"version": 0})
    assert stale.status_code == 409


def test_a_watched_game_has_no_seat_and_a_played_one_is_not_stepped(client):
    response = client.post("/api/games", json={"game": "madiao", "watch": True, "seat": 0})
    assert response.status_code == 400 and "seat" in response.json()["detail"]
    key, view = new_game(client, game="madiao", seed=5)
    response = client.post(f"/api/games/{key}/step", json={"version": view["version"]})
    assert response.status_code == 400 and "watched" in response.json()["detail"]


@pytest.mark.parametrize(
    "body, words",
    [
        ({"game": "mao", "calls": "everyone"}, "calls"),
        ({"game": "madiao", "match": "maybe"}, "match"),
        ({"game": "mao", "watch": 2}, "watch"),
        ({"game": "madiao", "calls": "players"}, "unknown parameter"),
    ],
)
def test_bad_mode_parameters_are_400_naming_them(client, body, words):
    response = client.post("/api/games", json=body)
    assert response.status_code == 400 and words in response.json()["detail"]


@pytest.mark.parametrize("game", ["madiao", "mao"])
def test_the_game_just_played_is_replayed_once_it_is_over(client, game):
    options = {"seed": 7} if game == "madiao" else {"players": 3, "rounds": 1, "hand_size": 2, "seed": 7}
    key, view = new_game(client, game=game, **options)
    live = client.post(f"/api/games/{key}/replay", json={})
    assert live.status_code == 409 and "still being played" in live.json()["detail"]
    view = play(client, key, view)
    response = client.post(f"/api/games/{key}/replay", json={})
    assert response.status_code == 200, response.text
    replay = response.json()
    assert replay["game"] == game and replay["seats"][0] == "you"
    last = client.get(f"/api/replays/{replay['id']}?step={replay['n_steps']}").json()["frame"]
    if game == "madiao":
        assert last["totals"] == pytest.approx(view["totals"])
    else:
        assert last["hand_sizes"] == view["hand_sizes"] and last["over"]


def test_phrases_and_calls_are_written_out():
    assert mao_phrase_text("card-name", "9S") == "Nine of spades"
    assert mao_phrase_text("card-name", None) == "the name of the card"
    assert mao_phrase_text("last-card", "9S") == "Last card"
    assert mao_reason_text("failure card-name", "JK") == "Failure to say 'Joker'"
    assert mao_reason_text("bad-card", "JK") == "Bad card"
    assert mao_reason_text("mao-in-vain", None).startswith("Taking the name")


def test_the_card_of_the_turn_being_played_is_shown_until_the_turn_ends():
    game = MaoGame(seat=0, players=3, rounds=1, hand_size=3, seed=4)
    top = game.view()["top"]
    game.move("play 7C", game.version)
    view = game.view()
    assert view["open_turn"]["played"] == "7C" and view["top"] == top  # on the pile at the end
    assert "end" in view["legal"] and view["phrase_texts"]["card-name"] == "Seven of clubs"
    game.move("end", game.version)
    assert game.view()["open_turn"] is None
