"""Players' calls, "pass" after a draw and the forgotten "Mao", worked by hand from the rules text
(``docs/mao-rules.md``, "Players' calls variant") against the plain-Python reference."""

from __future__ import annotations

import numpy as np
import pytest

from mao_env import cards
from mao_env.reference import RefGame

BAD = cards.CALL_REASON_BAD_CARD
TALKING = cards.CALL_REASON_TALKING
MAO_IN_VAIN = cards.CALL_REASON_MAO


def table(
    hands: dict[int, list[str]],
    pile: list[str],
    *,
    stack: list[str] | None = None,
    rules: list[tuple[int, int]] | None = None,
    calls: str = "players",
    forgotten_mao_cards: int = 3,
    talking: bool = True,
    current: int = 0,
    n_rounds: int = 2,
) -> RefGame:
    """A reference game at a hand-written table (seats 0..len(hands)-1, rule_choice "fixed")."""
    n_players = len(hands)
    counts = [[0] * cards.N_CARD_TYPES for _ in range(cards.MAX_PLAYERS)]
    for seat, names in hands.items():
        for name in names:
            counts[seat][cards.card_id(name)] += 1
    stack_ids = [cards.card_id(n) for n in (stack or ["2C", "3C", "4C", "5C", "6C", "8C"])]
    game = RefGame(
        n_players=n_players,
        hands=counts,
        stack=stack_ids[::-1],  # the first listed is drawn first
        pile=[cards.card_id(n) for n in pile],
        rng=12345,
        rules=list(rules or []),
        queue=[],
        options={
            "n_decks": 2,
            "thank_you": False,
            "talking": talking,
            "seven_turn_ends": False,
            "max_sub_actions": 18,
            "n_rounds": n_rounds,
            "rule_choice": "fixed",
            "cambridge": False,
            "calls": calls,
            "forgotten_mao_cards": forgotten_mao_cards,
        },
    )
    game.start_turn(current)
    return game


def act(game: RefGame, *texts: str) -> list[tuple]:
    """Apply actions given as text, each legal in the physical mask; returns all calls made."""
    made = []
    for text in texts:
        action = cards.text_to_action(text, 45)
        assert action in game.legal(by_rules=False), f"{text!r} is not physically possible now"
        game.apply(action)
        made += game.calls
    return made


def held(game: RefGame, seat: int) -> list[str]:
    return sorted(cards.CARD_NAMES[c] for c in range(cards.N_CARD_TYPES) for _ in range(game.hands[seat][c]))


def top(game: RefGame) -> str:
    return cards.CARD_NAMES[game.pile[-1]]


FOUR = {0: ["9C", "KD", "QD"], 1: ["2H", "3H"], 2: ["4H", "5D"], 3: ["6D", "8D"]}


# ---- timing ------------------------------------------------------------------------------------
def test_the_call_window_opens_after_end_turn_and_visits_the_other_seats_in_seat_order():
    game = table(dict(FOUR), ["5H"], current=2)
    act(game, "draw", "end")
    assert (game.phase, game.mover) == ("call", 2)
    seen = []
    while game.phase == "call":
        seen.append(game.current)
        act(game, "no call")
    assert seen == [3, 0, 1]  # from the seat after the mover, wrapping, the mover never calls
    assert (game.phase, game.current) == ("start", 3)


# ---- correct call, bad call, unpunished offence ------------------------------------------------
def test_a_correct_bad_card_call_takes_the_card_back_and_penalises_the_mover():
    game = table(dict(FOUR), ["5H"], stack=["7C", "8C"])
    act(game, "play 9C", "end")  # 9C on 5H: neither suit nor rank
    assert act(game, "call bad-card") == [("bad card", -1, 1, -1, 0, 1)]  # announced at once
    physical = game.legal(by_rules=False)
    assert cards.CALL_0 + BAD not in physical  # a reason is called once per window
    act(game, "no call", "no call", "no call")
    assert game.last_cards == [1, 0, 0, 0]  # the cards move when the turn is settled
    assert held(game, 0) == ["7C", "9C", "KD", "QD"]  # the card back and the penalty card
    assert top(game) == "5H"
    assert (game.phase, game.current) == ("start", 1)


def test_a_bad_call_costs_the_caller_one_card_and_the_card_stays():
    game = table({0: ["9H", "KD", "QD"], 1: ["2C", "3C"], 2: ["4C", "5C"]}, ["5H"], stack=["7C", "8C"])
    act(game, "play 9H", "end")  # a good card, nothing to say
    assert act(game, "call bad-card") == [("bad call", BAD, 1, -1, 1, 1)]
    act(game, "call talking")  # nothing was said: another bad call, another card
    act(game, "no call", "no call")
    assert game.last_cards == [0, 2, 0]
    assert held(game, 1) == ["2C", "3C", "7C", "8C"]
    assert top(game) == "9H" and held(game, 0) == ["KD", "QD"]


@pytest.mark.parametrize("reason", ["mao-in-vain", "failure mao"])
def test_a_bad_call_about_mao_costs_three_cards(reason):
    game = table({0: ["9H", "KD", "QD"], 1: ["2C"], 2: ["4C"]}, ["5H"], stack=["7C", "8C", "10C", "JC"])
    act(game, "play 9H", "end")
    assert act(game, f"call {reason}")[0][:3] == ("bad call", cards.call_reason_id(reason), 3)
    act(game, "no call", "no call")
    assert len(held(game, 1)) == 4


def test_an_offence_nobody_calls_goes_unpunished():
    game = table(dict(FOUR), ["5S"], stack=["7C"])
    act(game, "play 9C", "end")  # 9C on 5S: a bad card, and nobody calls it ...
    assert game.offences.keys() == {BAD}
    assert act(game, "no call", "no call", "no call") == []
    # ... so the card stays and the play carries on as normal: 9C is the top card, nothing taken.
    assert top(game) == "9C" and held(game, 0) == ["KD", "QD"]
    assert game.last_cards == [0, 0, 0, 0] and game.current == 1


def test_an_uncalled_bad_card_acts_as_a_good_one():
    game = table({0: ["AC", "KD"], 1: ["2H"], 2: ["4H"]}, ["5H"])
    act(game, "play AC", "end", "no call", "no call")  # a bad ace nobody calls still skips
    assert top(game) == "AC" and game.current == 2


def test_a_missing_phrase_is_called_with_its_rule_and_only_by_the_right_reason():
    # Secret rule 36 (author seat 1): "when playing hearts, say 'Hearts'".
    game = table(dict(FOUR), ["5H"], rules=[(36, 1)])
    act(game, "play QD", "end")  # a bad card, and no heart played: "Hearts" is not due
    assert set(game.offences) == {BAD}
    game = table({0: ["9H", "KD", "QD"], 1: ["2C"], 2: ["4C"]}, ["5H"], rules=[(36, 1)])
    act(game, "play 9H", "end")
    assert set(game.offences) == {cards.SUIT_PHRASE_0 + cards.HEARTS}
    assert sorted(game.legal(by_rules=True)) == [
        cards.CALL_0 + cards.SUIT_PHRASE_0 + cards.HEARTS,
        cards.NO_CALL,
        cards.POINT_OF_ORDER,
    ]
    assert act(game, "call failure hearts") == [("failure to say", 9, 1, 36, 0, 1)]


def test_talking_is_one_call_for_every_extra_phrase():
    game = table({0: ["9H", "KD", "QD"], 1: ["2C"], 2: ["4C"]}, ["5H"], stack=["7C", "8C"])
    act(game, "play 9H", "say rabbit", "say fox", "end", "no call")
    assert act(game, "call talking") == [
        ("talking", cards.RABBIT, 1, -1, 0, 2),
        ("talking", cards.FOX, 1, -1, 0, 2),
    ]
    act(game, "no call")
    assert game.last_cards == [2, 0, 0]


# ---- winning -----------------------------------------------------------------------------------
def test_a_flawed_winning_turn_nobody_calls_still_wins():
    game = table({0: ["5S"], 1: ["2C"], 2: ["4C"]}, ["5H"])
    act(game, "play 5S", "say mao", "end")  # the card's name is missing: Mao is said in vain
    assert game.offences.keys() == {cards.CARD_NAME, MAO_IN_VAIN}
    act(game, "no call", "no call")
    assert game.round_won == 0 and game.round == 1


def test_a_correct_call_spoils_the_win_and_mao_in_vain_can_be_called_too():
    game = table({0: ["5S"], 1: ["2C"], 2: ["4C"]}, ["5H"], stack=["7C", "8C", "10C", "JC", "QC"])
    act(game, "play 5S", "say mao", "end")
    assert act(game, "call failure card-name", "call mao-in-vain") == [
        ("failure to say", cards.CARD_NAME, 1, -1, 0, 1),
        ("mao", cards.MAO, 3, -1, 0, 1),
    ]
    act(game, "no call", "no call")
    assert game.round == 0 and held(game, 0) == ["10C", "7C", "8C", "JC"]
    assert top(game) == "5S"  # the card was good: it stays


# ---- point of order ----------------------------------------------------------------------------
def test_a_point_of_order_settles_the_calls_at_once_too_late_for_the_rest():
    game = table(dict(FOUR), ["5H"], stack=["7C", "8C"])
    act(game, "play 9C", "say rabbit", "end")
    act(game, "call talking")  # seat 1: correct
    act(game, "point of order")  # seat 1 again: the pause settles the turn
    assert game.phase == "start" and game.current == 1
    # "bad card" was never called: too late now, the card stays; talking's card stands.
    assert top(game) == "9C" and held(game, 0) == ["7C", "KD", "QD"]


def test_a_point_of_order_from_the_first_caller_leaves_the_turn_unpunished():
    game = table(dict(FOUR), ["5H"], stack=["7C"])
    act(game, "play 9C", "end")
    assert act(game, "point of order") == []
    assert game.phase == "start" and top(game) == "9C" and game.last_cards == [0, 0, 0, 0]


# ---- "pass" after a draw -----------------------------------------------------------------------
def test_pass_after_a_draw_is_not_talking_but_is_talking_after_a_play():
    game = table({0: ["9H", "KD"], 1: ["2C"], 2: ["4C"]}, ["5H"], stack=["7C", "8C"], calls="master")
    act(game, "draw")
    assert cards.SAY_0 + cards.PASS in game.legal(by_rules=False)
    assert act(game, "say pass", "end") == []
    game = table({0: ["9H", "KD", "QD"], 1: ["2C"], 2: ["4C"]}, ["5H"], stack=["7C", "8C"], calls="master")
    assert act(game, "play 9H", "say pass", "end") == [("talking", cards.PASS, 1, -1, 0, -1)]


def test_the_rules_mask_offers_pass_after_a_draw_only():
    game = table({0: ["9H", "KD"], 1: ["2C"], 2: ["4C"]}, ["5H"], stack=["7C", "8C"])
    act(game, "draw")
    assert game.legal(by_rules=True) == [cards.SAY_0 + cards.PASS, cards.END_TURN]
    act(game, "say pass", "end")
    assert game.offences == {}
    assert act(game, "call talking")[0][:2] == ("bad call", TALKING)


# ---- the forgotten "Mao" -----------------------------------------------------------------------
@pytest.mark.parametrize(("forgotten", "expected"), [(3, 3), (1, 1)])
def test_a_forgotten_mao_costs_three_cards_by_default(forgotten, expected):
    game = table({0: ["9H"], 1: ["2C"], 2: ["4C"]}, ["5H"], calls="master", forgotten_mao_cards=forgotten)
    assert act(game, "play 9H", "end") == [("failure to say", cards.MAO, expected, -1, 0, -1)]
    assert len(held(game, 0)) == expected and game.round == 0


def test_a_forgotten_mao_called_by_a_player_costs_three_cards():
    game = table({0: ["9H"], 1: ["2C"], 2: ["4C"]}, ["5H"])
    act(game, "play 9H", "end", "no call")
    assert act(game, "call failure mao") == [("failure to say", cards.MAO, 3, -1, 0, 2)]
    act(game, "no call")
    assert len(held(game, 0)) == 3


def test_a_forgotten_mao_nobody_calls_leaves_an_empty_hand_and_no_win():
    game = table({0: ["9H"], 1: ["2C"], 2: ["4C"]}, ["5H"])
    act(game, "play 9H", "end", "no call", "no call")
    assert game.round == 0 and held(game, 0) == [] and game.current == 1
    act(game, "draw", "end", "no call", "no call", "draw", "end", "no call", "no call")
    assert game.legal(by_rules=False) == [cards.DRAW]  # seat 0 holds nothing: it can only draw


# ---- the two call modes agree when every fault is called ----------------------------------------
def _master_and_players(seed: int, n_players: int, rules: list[int]) -> None:
    rng = np.random.default_rng(seed)
    games = []
    for calls in ("master", "players"):
        game = RefGame(
            n_players=n_players,
            hands=[[0] * cards.N_CARD_TYPES for _ in range(cards.MAX_PLAYERS)],
            stack=[],
            pile=[],
            rng=seed,
            rules=[(r, -1) for r in rules],
            queue=[],
            options={"n_decks": (n_players + 2) // 3, "thank_you": False, "talking": True,
                     "seven_turn_ends": False, "max_sub_actions": 18, "n_rounds": 3,
                     "rule_choice": "sampled", "cambridge": False, "calls": calls,
                     "forgotten_mao_cards": 3},
        )  # fmt: skip
        game.deal(0)
        games.append(game)
    master, players = games
    for _ in range(400):
        if master.phase == "over":
            break
        action = int(rng.choice(master.legal(by_rules=rng.random() < 0.5)))
        master.apply(action)
        players.apply(action)
        if players.phase == "call":
            # The first caller calls every fault, everyone else passes.
            expected_calls = [c[:5] for c in master.calls]
            made = []
            for reason in list(players.offences):
                players.apply(cards.CALL_0 + reason)
                made += [c[:5] for c in players.calls]
            while players.phase == "call":
                players.apply(cards.NO_CALL)
            assert made == expected_calls
        for name in ("hands", "stack", "pile", "rng", "rules", "current", "direction", "named_suit",
                     "pending_seven", "round", "phase"):  # fmt: skip
            assert getattr(master, name) == getattr(players, name), name


@pytest.mark.parametrize("seed", range(6))
def test_calling_every_fault_gives_the_masters_game(seed):
    _master_and_players(seed, 3 + seed % 4, [36, 12, 40, 20][: seed % 5])
