"""Hand-worked Madiao scenarios: one per rule and payment line of the design doc.

Every test sets the deal, plays the cards by text and compares the settlement with lines worked out
by hand (rule, payer, payee, stakes). Seats: banker 0 unless said; scripts are explained in
``conftest.py`` (``"0:2S 1:5S"``: seat 0 leads 2S, seat 1 captures with 5S, the others slough).
"""

from __future__ import annotations

import numpy as np
import pytest

from cardgame_core.aec import IllegalActionError
from madiao_env import cards, madiao_v0
from tests.madiao.conftest import (
    finish_randomly,
    make_env,
    payoffs,
    play_script,
    settlement,
    step_text,
)

A = cards.text_to_action

# ----------------------------------------------------------------------------- deal helpers

_INTERLEAVED = [
    name
    for rank in range(11)
    for suit in range(4)
    if rank < cards.SUIT_SIZE[suit]
    for name in [cards.CARD_NAMES[cards.SUIT_FIRST_BIT[suit] + rank]]
]
_STOCK_FIRST = ["0C", "9S", "9M", "10000T", "1000T", "100T", "9C", "HC", "8S", "8M", "90T", "80T"]


def fill_deal(fixed: dict[int, list[str]]) -> tuple[list[list[str]], list[str]]:
    """Hands with the given cards per seat, the rest filled with mixed low cards; stock = the rest.

    High cards not named go to the stock first, so an unnamed card never makes a meld by accident.
    """
    used = {c for hand in fixed.values() for c in hand}
    stock = [c for c in _STOCK_FIRST if c not in used][:8]
    pool = [c for c in _INTERLEAVED if c not in used and c not in stock]
    hands = []
    for seat in range(4):
        hand = list(fixed.get(seat, []))
        while len(hand) < 8:
            hand.append(pool.pop(0))
        hands.append(hand)
    stock += pool
    assert len(stock) == 8
    return hands, stock


def reset_with(env, fixed, *, banker=0, first=0, seed=0):
    hands, stock = fill_deal(fixed)
    env.reset(seed=seed, options={"hands": hands, "stock": stock, "banker": banker, "first": first})
    return hands, stock


def lines_of_rule(env, rule):
    return [line for line in settlement(env) if line[0] == rule]


# ----------------------------------------------------------------------------- melds


@pytest.mark.parametrize(
    ("fixed", "holder", "stakes", "payers"),
    [
        # 10000T 9M 9S 0C: 4; 100T's holder (seat 2) pays nothing.
        ({0: ["10000T", "9M", "9S", "0C", "2S", "3S", "2M", "3M"], 2: ["100T"]}, 0, 4, [1, 3]),
        # With 100T as well: 5 from everyone.
        ({0: ["10000T", "100T", "9M", "9S", "0C", "2S", "3S", "2M"]}, 0, 5, [1, 2, 3]),
        # Flush (strings): 4; 100T with seat 3.
        ({1: [f"{n}S" for n in range(1, 9)], 3: ["100T"]}, 1, 4, [0, 2]),
        # Flush of tens without 100T: 4 (100T's holder, seat 0, exempt).
        ({2: [f"{n}0T" for n in range(2, 10)], 0: ["100T"]}, 2, 4, [1, 3]),
        # Flush of tens holding 100T: 5.
        ({2: [f"{n}0T" for n in range(3, 10)] + ["100T"]}, 2, 5, [0, 1, 3]),
        # Eight red cards (this hand also holds 10000T 9M 9S 0C: only the highest meld counts): 6.
        ({3: ["10000T", "1000T", "20T", "9M", "1M", "9S", "1S", "0C"], 1: ["100T"]}, 3, 6, [0, 2]),
        # Eight red cards holding 100T: 7.
        ({0: ["10000T", "1000T", "100T", "20T", "9M", "9S", "0C", "9C"]}, 0, 7, [1, 2, 3]),
        # Exactly 10000T 20T 9M 1M 9S 1S 0C 9C: 8 (it holds the four lowest too: the meld comes first).
        ({1: ["10000T", "20T", "9M", "1M", "9S", "1S", "0C", "9C"], 0: ["100T"]}, 1, 8, [2, 3]),
    ],
)
def test_meld_pays_its_stakes_and_exempts_the_hundred_myriad_holder(fixed, holder, stakes, payers):
    env = make_env()
    reset_with(env, fixed, banker=3 if holder != 3 else 2)
    table = env.table()
    # The meld ended the deal at once; the env dealt again with the holder as banker, and the
    # episode still starts at hand 0 (the meld is paid with hand 0's settlement).
    assert table["hand_number"] == 0
    assert table["banker"] == holder
    finish_randomly(env)
    assert lines_of_rule(env, "meld") == sorted(("meld", p, holder, float(stakes)) for p in payers)


def test_higher_meld_pays_out_over_a_lower_one():
    # Seat 1: flush of cash (4); seat 2: eight red cards with 100T (7), later in deal order.
    fixed = {
        1: ["7C", "6C", "5C", "4C", "3C", "2C", "1C", "HC"],
        2: ["10000T", "1000T", "100T", "20T", "9M", "9S", "0C", "9C"],
    }
    env = make_env()
    reset_with(env, fixed, banker=0, first=0)
    assert env.table()["banker"] == 2
    finish_randomly(env)
    assert lines_of_rule(env, "meld") == [("meld", 0, 2, 7.0), ("meld", 1, 2, 7.0), ("meld", 3, 2, 7.0)]


@pytest.mark.parametrize(("first", "winner"), [(0, 1), (2, 3), (3, 3), (1, 1)])
def test_equal_melds_go_to_the_first_in_deal_order(first, winner):
    # Seat 1: flush of cash; seat 3: flush of strings; both 4 stakes; 100T lies in the stock.
    fixed = {1: ["7C", "6C", "5C", "4C", "3C", "2C", "1C", "HC"], 3: [f"{n}S" for n in range(1, 9)]}
    env = make_env()
    reset_with(env, fixed, banker=0, first=first)
    assert env.table()["banker"] == winner
    finish_randomly(env)
    expected = sorted(("meld", p, winner, 4.0) for p in range(4) if p != winner)
    assert lines_of_rule(env, "meld") == expected


# ----------------------------------------------------------------------------- four lowest


@pytest.mark.parametrize("stake", [1.0, 2.5])
def test_four_lowest_paid_by_everyone_then_new_deal_and_banker(stake):
    # Seat 2 holds 20T 1M 1S 9C; seat 0 holds 100T and still pays (no exemption here).
    fixed = {2: ["20T", "1M", "1S", "9C", "2S", "3M", "4C", "30T"], 0: ["100T"]}
    env = make_env(stake=stake)
    hands, _ = reset_with(env, fixed, banker=1)
    table = env.table()
    assert table["hand_number"] == 0  # the same hand, dealt again
    assert [sorted(h, key=cards.card_id) for h in hands] != table["hands"]
    finish_randomly(env)
    assert [line for line in lines_of_rule(env, "four_lowest") if line[2] == 2] == [
        ("four_lowest", 0, 2, stake),
        ("four_lowest", 1, 2, stake),
        ("four_lowest", 3, 2, stake),
    ]
    assert sum(payoffs(env)) == pytest.approx(0.0)


def test_four_lowest_redraws_the_banker_from_the_seed():
    fixed = {2: ["20T", "1M", "1S", "9C", "2S", "3M", "4C", "30T"]}
    bankers = set()
    for seed in range(12):
        env = make_env()
        reset_with(env, fixed, banker=1, seed=seed)
        bankers.add(env.table()["banker"])
    assert len(bankers) > 1  # not always the old banker: the banker is drawn again


# ----------------------------------------------------------------------------- redeal


REDEAL_FIXED = {1: ["1S", "2S", "3S", "4S", "5S"], 3: ["2M", "3M", "4M", "5M", "6M"]}


@pytest.mark.parametrize(("first", "order"), [(2, [3, 1]), (0, [1, 3]), (1, [1, 3]), (3, [3, 1])])
def test_redeal_offered_only_to_eligible_seats_in_deal_order(first, order):
    env = madiao_v0.raw_env()
    reset_with(env, REDEAL_FIXED, banker=0, first=first)
    for seat in order:
        table = env.table()
        assert (table["phase"], table["to_act"]) == ("redeal", seat)
        mask = env.observe(f"player_{seat}")["action_mask"]
        assert np.flatnonzero(mask).tolist() == [cards.ACTION_REDEAL, cards.ACTION_PASS]
        step_text(env, seat, "pass")
    table = env.table()
    assert (table["phase"], table["to_act"], table["redeals"]) == ("play", first, 0)


def test_redeal_keeps_the_banker_and_deals_again():
    env = madiao_v0.raw_env()
    hands, _ = reset_with(env, REDEAL_FIXED, banker=2, first=0)
    step_text(env, 1, "redeal")
    table = env.table()
    assert table["redeals"] == 1 and table["banker"] == 2 and table["hand_number"] == 0
    assert table["hands"] != [sorted(h, key=cards.card_id) for h in hands]


@pytest.mark.parametrize("cap", [0, 1])
def test_max_redeals_cap_stops_the_offers(cap):
    env = madiao_v0.raw_env(max_redeals=cap)
    reset_with(env, REDEAL_FIXED, banker=2, first=0)
    for _ in range(cap):
        step_text(env, env.table()["to_act"], "redeal")
    table = env.table()
    assert table["redeals"] == cap
    assert table["phase"] == "play"  # nobody is asked once the cap is reached


def test_unlimited_redeals_keep_asking():
    env = madiao_v0.raw_env()
    reset_with(env, REDEAL_FIXED, banker=2, first=0)
    step_text(env, 1, "redeal")
    # Redeal until a deal offers none; the counter counts every declared redeal.
    count = 1
    for _ in range(40):
        if env.table()["phase"] != "redeal":
            break
        env.step(cards.ACTION_REDEAL)
        count += 1
    assert env.table()["redeals"] == count


# ----------------------------------------------------------------------------- the cut


CUT_CASES = [
    ("4C", "dealer"),
    ("8S", "dealer"),
    ("40T", "dealer"),
    ("80T", "dealer"),
    ("3M", "banker"),
    ("7S", "banker"),
    ("70T", "banker"),
    ("2S", "shuffler"),
    ("6M", "shuffler"),
    ("20T", "shuffler"),
    ("60T", "shuffler"),
    ("1C", "opposite"),
    ("5M", "opposite"),
    ("9S", "opposite"),
    ("90T", "opposite"),
    ("0C", "opposite"),
    ("HC", "opposite"),
    ("100T", "opposite"),
    ("1000T", "opposite"),
    ("10000T", "opposite"),
]


@pytest.mark.parametrize(("cut", "role"), CUT_CASES)
def test_cut_card_picks_the_first_seat_and_the_deal_follows_the_procedure(cut, role):
    banker = 1
    seat_of_role = {"banker": 1, "dealer": 2, "opposite": 3, "shuffler": 0}
    shuffled = [cards.CARD_NAMES[i] for i in np.random.default_rng(5).permutation(cards.N_CARDS)]
    deck = [c for c in shuffled if c != cut] + [cut]
    env = make_env()
    env.reset(seed=0, options={"deck": deck, "banker": banker})
    table = env.table()
    first = seat_of_role[role]
    assert table["first"] == first
    assert table["stock"] == deck[32:][::-1]
    assert table["stock"][0] == cut
    for k in range(4):
        seat = (first + k) % 4
        expected = deck[4 * k : 4 * k + 4] + [deck[16 + k + 4 * j] for j in range(4)]
        assert table["hands"][seat] == sorted(expected, key=cards.card_id)
    assert table["to_act"] == first  # no redeal offers here: the first seat dealt leads


# ----------------------------------------------------------------------------- play legality

LEGALITY = [
    "0:2S 1:5S 3:7S",
    "3:2M 2:~6S",
    "3:3M 0:4M",
    "0:30T",
    "0:40T 1:50T",
    "1:60T",
    "1:2C 2:1C",
    "2:4S 3:8S",
]


def test_leader_may_lead_any_card_face_up_and_not_slough():
    env = play_script(LEGALITY, stop_before=0)
    mask = env.observe("player_0")["action_mask"]
    hand = env.table()["hands"][0]
    assert sorted(np.flatnonzero(mask)) == sorted(cards.card_id(c) for c in hand)


def test_follower_captures_only_above_the_best_face_up_card_of_the_suit_led():
    env = play_script(LEGALITY, stop_before=2)  # 2S led, 5S captured; seat 2 holds 4S and 6S
    hand = env.table()["hands"][2]
    assert {"4S", "6S"} <= set(hand)
    mask = env.observe("player_2")["action_mask"]
    face_up = {cards.CARD_NAMES[a] for a in np.flatnonzero(mask[: cards.N_CARDS])}
    sloughs = {cards.CARD_NAMES[a] for a in np.flatnonzero(mask[cards.N_CARDS : 2 * cards.N_CARDS])}
    assert face_up == {c for c in hand if c.endswith("S") and cards.card_id(c) > cards.card_id("5S")}
    assert "4S" not in face_up and "6S" in face_up
    assert sloughs == set(hand)  # sloughing a card that could capture is allowed
    assert not mask[cards.ACTION_REDEAL] and not mask[cards.ACTION_PASS]
    with pytest.raises(IllegalActionError, match="play 4S"):
        env.step(A("play 4S"))


def test_highest_face_up_card_of_the_suit_led_wins_and_leads_next():
    env = play_script(LEGALITY, stop_before=4)
    table = env.table()
    assert table["tricks_won"] == [0, 0, 0, 1]  # 7S beat 5S; seat 2's slough did not matter
    assert table["to_act"] == 3 and table["trick_number"] == 1


def test_mask_is_zero_off_turn():
    env = play_script(LEGALITY, stop_before=1)
    for seat in (0, 2, 3):
        assert not env.observe(f"player_{seat}")["action_mask"].any()


# ----------------------------------------------------------------------------- face-up discard

DISCARD = [
    "0:2S 1:10000T",  # seat 1 discards 10000T face up: it does not win (another suit)
    "0:3S 1:4S",
    "1:2M 0:3C",  # the banker discards 3C face up
    "1:3M 2:4M",
    "2:30T",
    "2:40T 3:50T",
    "3:60T",
    "3:2C 0:1C",
]


def test_face_up_discard_is_illegal_by_default():
    env = play_script(DISCARD, stop_before=1)
    assert not env.observe("player_1")["action_mask"][A("play 10000T")]
    with pytest.raises(IllegalActionError, match=r"play 10000T"):
        env.step(A("play 10000T"))


def test_face_up_discard_variant_costs_two_stakes():
    env = play_script(DISCARD, face_up_discard=True)
    assert env.table()["tricks_won"] == [2, 2, 2, 2]  # 10000T face up in a strings trick won nothing
    assert settlement(env) == [
        ("face_up_discard", 0, 1, 2.0),
        ("face_up_discard", 0, 2, 2.0),
        ("face_up_discard", 0, 3, 2.0),
        ("face_up_discard", 1, 0, 2.0),
    ]
    assert payoffs(env) == [-4.0, 0.0, 2.0, 2.0]


# ----------------------------------------------------------------------------- trick count, slam

TRICKS_3_1_2_2 = [
    "0:2S",
    "0:3S",
    "0:4S 1:5S",
    "1:2M 2:3M",
    "2:4M",
    "2:30T 3:40T",
    "3:50T",
    "3:2C 0:1C",
]

LAST_TRICK = [
    "0:2S",
    "0:3S 2:4S",
    "2:2M",
    "2:3M 3:4M",
    "3:30T",
    "3:40T",
    "3:50T 0:60T 1:~70T",  # seat 1 (no trick yet) may still capture here: not the last trick
    "0:2C 1:~HC 2:1C",  # seat 1 holds HC, above 2C, but with no trick it can only slough
]


def test_trick_count_one_two_three():
    env = play_script(TRICKS_3_1_2_2)
    assert env.table()["tricks_won"] == [3, 1, 2, 2]
    assert "100T" in env.table()["stock"]  # no Hundred Myriad line: it lies in the stock
    assert settlement(env) == [("trick_count", 1, 0, 1.0)]
    assert payoffs(env) == [1.0, -1.0, 0.0, 0.0]


def test_trick_count_zero_and_three_and_the_last_trick_rule():
    env = play_script(LAST_TRICK, stop_before=26)
    assert env.table()["tricks_won"][1] == 0
    assert env.observe("player_1")["action_mask"][A("play 70T")]  # trick 7: capture allowed
    env = play_script(LAST_TRICK, stop_before=29)
    mask = env.observe("player_1")["action_mask"]
    assert not mask[A("play HC")] and mask[A("slough HC")]
    with pytest.raises(IllegalActionError, match="play HC"):
        env.step(A("play HC"))
    env = play_script(LAST_TRICK, stop_before=30)
    assert env.observe("player_2")["action_mask"][A("play 1C")]  # seat 2 has tricks: may capture
    env = play_script(LAST_TRICK)
    assert env.table()["tricks_won"] == [2, 0, 3, 3]
    assert settlement(env) == [
        ("trick_count", 0, 2, 1.0),
        ("trick_count", 0, 3, 1.0),
        ("trick_count", 1, 0, 1.0),
    ]


def test_banker_slam():
    env = play_script(["0:2S", "0:3S", "0:4S", "0:5S", "0:2M", "0:3M", "0:4M", "0:7M"])
    assert settlement(env) == [("slam", 1, 0, 8.0), ("slam", 2, 0, 8.0), ("slam", 3, 0, 8.0)]
    assert payoffs(env) == [24.0, -8.0, -8.0, -8.0]


def test_player_slam_and_the_others_still_pay_the_trick_count():
    env = play_script(["1:2S", "1:3S", "1:4S", "1:5S", "1:2M", "1:3M", "1:4M", "1:7M"])
    assert settlement(env) == [
        ("slam", 0, 1, 8.0),
        ("trick_count", 2, 0, 1.0),
        ("trick_count", 3, 0, 1.0),
    ]


# ----------------------------------------------------------------------------- boss card

BOSS = [
    "0:9M",  # the banker wins with a top card
    "0:2S",
    "0:3S 1:9S",  # seat 1 wins with a top card
    "1:2M",
    "1:3M 2:4M",
    "2:30T",
    "2:2C 3:0C",  # seat 3 wins with a top card but ends with one trick: no boss payment
    "3:50T 2:60T",
]


def test_boss_card_paid_only_at_the_minimum_and_by_each_player_for_the_banker():
    env = play_script(BOSS)
    assert env.table()["tricks_won"] == [2, 2, 3, 1]
    assert settlement(env) == [
        ("boss_card", 0, 1, 1.0),
        ("boss_card", 1, 0, 1.0),
        ("boss_card", 2, 0, 1.0),
        ("boss_card", 3, 0, 1.0),
        ("trick_count", 0, 2, 1.0),
        ("trick_count", 3, 0, 1.0),
    ]


PROMOTION = ["0:2S", "0:3S 1:8S", "1:2M", "1:3M 2:4M", "2:30T", "2:40T 3:50T", "3:60T", "3:2C 0:1C"]


def test_upcard_top_card_promotes_the_second_highest():
    env = play_script(PROMOTION, upcard="9S")
    assert env.table()["tricks_won"] == [2, 2, 2, 2]
    assert settlement(env) == [("boss_card", 0, 1, 1.0)]


def test_no_promotion_when_the_upcard_is_not_a_top_card():
    env = play_script(PROMOTION, upcard="5M", stock_extra=["9S"])
    assert settlement(env) == []
    assert payoffs(env) == [0.0, 0.0, 0.0, 0.0]


# ----------------------------------------------------------------------------- Hundred Myriad

HUNDRED_CASES = {
    "consolation_sloughed": (
        ["0:2S 1:~100T", "0:3S 1:4S", "1:2M 2:3M", "2:30T", "2:40T 3:50T", "3:60T", "3:2C 0:1C", "0:3C"],
        [("hundred_myriad", 0, 1, 1.0), ("trick_count", 1, 0, 1.0)],
    ),
    "consolation_even_after_winning_with_it": (
        ["0:2S", "0:30T 1:100T", "1:2M 2:3M", "2:3S", "2:4S 3:5S", "3:6S", "3:2C 0:1C", "0:3C"],
        [("hundred_myriad", 0, 1, 1.0), ("trick_count", 1, 0, 1.0)],
    ),
    "tier_two_sloughed": (
        ["0:2S 1:~100T", "0:3S 1:4S", "1:2M", "1:3M 2:4M", "2:30T", "2:40T 3:50T", "3:60T", "3:2C 0:1C"],
        [("hundred_myriad", 0, 1, 2.0)],
    ),
    "tier_two_captured": (
        [
            "0:2S",
            "0:3S 1:4S",
            "1:100T 2:1000T",
            "2:2M 1:4M",
            "1:3C 2:2C",
            "2:30T 3:40T",
            "3:50T",
            "3:60T 0:70T",
        ],
        [("hundred_myriad", 0, 1, 2.0)],
    ),
    "tier_three": (
        ["0:2S", "0:3S 1:4S", "1:100T", "1:2M", "1:3M 2:4M", "2:30T", "2:40T 3:50T", "3:2C 0:1C"],
        [("hundred_myriad", 0, 1, 3.0), ("trick_count", 0, 1, 1.0), ("trick_count", 3, 0, 1.0)],
    ),
    "two_tricks_player": (
        ["0:2S", "0:3S 1:4S", "1:100T", "1:2M 2:3M", "2:30T", "2:40T 3:50T", "3:60T", "3:2C 0:1C"],
        [
            ("hundred_myriad", 0, 1, 3.0),
            ("two_tricks_hundred_myriad", 2, 1, 1.0),
            ("two_tricks_hundred_myriad", 3, 1, 1.0),
        ],
    ),
    "banker_under_minimum": (
        ["0:100T", "0:2S 1:3S", "1:2M", "1:3M 2:4M", "2:30T", "2:40T 3:50T", "3:60T", "3:2C 1:1C"],
        [
            ("hundred_myriad", 1, 0, 1.0),
            ("hundred_myriad", 2, 0, 1.0),
            ("hundred_myriad", 3, 0, 1.0),
            ("trick_count", 0, 1, 1.0),
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(HUNDRED_CASES))
def test_hundred_myriad_tiers(case):
    script, expected = HUNDRED_CASES[case]
    env = play_script(script)
    assert settlement(env) == sorted(expected)
    assert sum(payoffs(env)) == 0.0


BANKER_TWO_TRICKS = ["0:100T", "0:2S", "0:3S 1:4S", "1:2M", "1:3M 2:4M", "2:30T", "2:40T 3:50T", "3:60T"]
BANKER_THREE_TRICKS = ["0:100T", "0:2S", "0:3S", "0:4S 1:5S", "1:2M", "1:3M 3:4M", "3:30T 2:40T", "2:50T"]


def test_banker_two_tricks_with_hundred_myriad_stays_banker():
    env = play_script(BANKER_TWO_TRICKS, episode="match")
    assert settlement(env) == [
        ("hundred_myriad", 1, 0, 3.0),
        ("hundred_myriad", 2, 0, 3.0),
        ("hundred_myriad", 3, 0, 3.0),
    ]
    table = env.table()
    assert table["hand_number"] == 1 and table["banker"] == 0


def test_banker_rotates_to_the_dealer_otherwise():
    env = play_script(BANKER_THREE_TRICKS, episode="match")
    assert settlement(env) == [
        ("hundred_myriad", 1, 0, 3.0),
        ("hundred_myriad", 2, 0, 3.0),
        ("hundred_myriad", 3, 0, 3.0),
        ("trick_count", 3, 0, 1.0),
    ]
    table = env.table()
    assert table["hand_number"] == 1 and table["banker"] == 1


# ----------------------------------------------------------------------------- honours

HONOURS = ["0:2S", "0:3S 2:4S", "2:10000T", "2:1000T", "2:100T", "2:{last}", "2:2M 3:3M", "3:2C 0:1C"]


def test_honours_three():
    env = play_script([t.format(last="HC") for t in HONOURS])
    assert env.table()["tricks_won"] == [2, 0, 5, 1]
    assert settlement(env) == [
        ("boss_card", 0, 2, 1.0),  # 10000T
        ("honours", 0, 2, 3.0),
        ("hundred_myriad", 0, 2, 3.0),
        ("trick_count", 0, 2, 1.0),
        ("trick_count", 1, 0, 1.0),
        ("trick_count", 3, 0, 1.0),
    ]


def test_honours_four_instead_of_three():
    env = play_script([t.format(last="0C") for t in HONOURS])
    assert settlement(env) == [
        ("boss_card", 0, 2, 2.0),  # 10000T and 0C
        ("honours", 0, 2, 4.0),
        ("hundred_myriad", 0, 2, 3.0),
        ("trick_count", 0, 2, 1.0),
        ("trick_count", 1, 0, 1.0),
        ("trick_count", 3, 0, 1.0),
    ]


# ----------------------------------------------------------------------------- stock check

STOCK_FACE_UP = [
    "0:2S",
    "0:3S 1:4S",
    "1:2M 3:{card}",
    "3:30T",
    "3:40T 2:50T",
    "2:60T",
    "2:2C 0:1C",
    "0:3C 1:HC",
]
STOCK_SLOUGHED = [
    "0:2S",
    "0:3S 1:4S",
    "1:2M 3:~8M",
    "1:30T 3:40T",
    "3:50T",
    "3:60T 2:70T",
    "2:2C",
    "2:3C 0:1C",
]


def test_stock_check_second_highest_played_face_up_pays_each_other_seat():
    env = play_script([t.format(card="8M") for t in STOCK_FACE_UP], exposed="9M")
    assert env.table()["tricks_won"] == [2, 2, 2, 2]
    assert settlement(env) == [
        ("stock_check", 3, 0, 1.0),
        ("stock_check", 3, 1, 1.0),
        ("stock_check", 3, 2, 1.0),
    ]


def test_stock_check_nothing_when_sloughed():
    env = play_script(STOCK_SLOUGHED, exposed="9M")
    assert env.table()["tricks_won"] == [2, 2, 2, 2]
    assert settlement(env) == []


def test_stock_check_nothing_when_in_the_stock():
    env = play_script([t.format(card="7M") for t in STOCK_FACE_UP], exposed="9M", stock_extra=["8M"])
    assert settlement(env) == []


def test_stock_check_uses_the_named_top_card_without_promotion():
    # Upcard 9M makes 8M the myriads' boss card, but the exposed 8M is not a top card as named:
    # the 7M played face up costs nothing.
    env = play_script([t.format(card="7M") for t in STOCK_FACE_UP], upcard="9M", exposed="8M")
    assert settlement(env) == []


# ----------------------------------------------------------------------------- match


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_match_ends_after_every_seat_has_been_banker(seed):
    env = madiao_v0.raw_env(episode="match")
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    bankers_played: list[int] = []
    totals = np.zeros(4)
    while env.agents and not env.terminations[env.agent_selection]:
        table = env.table()
        if table["phase"] == "play" and table["trick_number"] == 0 and not table["history"]:
            bankers_played.append(table["banker"])
        env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
        totals += [env.rewards.get(f"player_{s}", 0.0) for s in range(4)]
    assert set(bankers_played) == {0, 1, 2, 3}
    # The match ended in the first hand whose banker completed the set.
    assert len(set(bankers_played[:-1])) == 3 and bankers_played[-1] not in bankers_played[:-1]
    assert totals.sum() == pytest.approx(0.0)
