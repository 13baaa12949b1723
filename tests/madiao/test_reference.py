"""Hand-worked scenarios on the plain-Python reference alone, checked against the rules text.

Each test sets a deal, plays a scripted hand and compares the settlement with lines worked out
by hand from the rules document. A script is one string per trick: ``"seat:card"`` plays face
up, ``"seat:card-"`` sloughs face down; the seat is asserted to be the one to act.
"""

from __future__ import annotations

from collections import Counter

import pytest

from madiao_env import cards
from madiao_env.reference import (
    PHASE_NEEDS_DEAL,
    PHASE_OVER,
    PHASE_PLAY,
    PHASE_REDEAL,
    Payment,
    ReferenceGame,
    ReferenceRuleError,
    deal_deck,
    first_seat_from_cut,
    meld_stakes,
)

C = cards.card_id
PLAY, SLOUGH, REDEAL, PASS = cards.ACTION_PLAY, cards.ACTION_SLOUGH, cards.ACTION_REDEAL, cards.ACTION_PASS


def hand(text: str) -> set[int]:
    return {C(name) for name in text.split()}


def new_game(seats: list[str], stock: str, banker: int, first: int, **variants) -> ReferenceGame:
    game = ReferenceGame(**variants)
    game.set_deal([text.split() for text in seats], stock.split(), banker, first)
    return game


def play_script(game: ReferenceGame, tricks: list[str]) -> None:
    for trick in tricks:
        for move in trick.split():
            seat_text, card_text = move.split(":")
            assert game.to_act == int(seat_text), f"{move}: seat {game.to_act} is to act"
            if card_text.endswith("-"):
                game.step(SLOUGH + C(card_text[:-1]))
            else:
                game.step(PLAY + C(card_text))


def lines(*triples: tuple[str, int, int, float]) -> Counter:
    return Counter(Payment(rule, payer, payee, float(stakes)) for rule, payer, payee, stakes in triples)


def each_pays(rule: str, payee: int, stakes: float, payers=(0, 1, 2, 3)) -> list:
    return [(rule, payer, payee, stakes) for payer in payers if payer != payee]


# --------------------------------------------------------------------------------------------
# Deal procedure
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cut", "banker", "first"),
    [
        ("4C", 0, 1),  # 4 -> dealer (banker + 1)
        ("80T", 2, 3),  # tens count as their digit: 8 -> dealer
        ("3S", 1, 1),  # 3 -> banker
        ("7M", 3, 3),  # 7 -> banker
        ("2C", 0, 3),  # 2 -> shuffler (banker + 3)
        ("60T", 1, 0),  # 6 -> shuffler
        ("1S", 0, 2),  # 1 -> opposite
        ("9C", 1, 3),  # 9 -> opposite
        ("HC", 2, 0),  # named cards -> opposite
        ("0C", 3, 1),
        ("100T", 0, 2),
        ("10000T", 1, 3),
    ],
)
def test_cut_card_picks_the_first_seat(cut: str, banker: int, first: int) -> None:
    assert first_seat_from_cut(C(cut), banker) == first


def test_deal_batches_of_four_then_singles_and_the_stock_upcard_first() -> None:
    deck = list(range(40))  # 9C 8C ... in id order, bottom card 10000T -> banker's opposite
    hands, stock, first = deal_deck(deck, banker=1)
    assert first == 3
    # seat 3 first: deck[0:4] then deck[16], deck[20], deck[24], deck[28]
    assert [cards.CARD_NAMES[c] for c in hands[3]] == ["9C", "8C", "7C", "6C", "6S", "1M", "5M", "9M"]
    assert [cards.CARD_NAMES[c] for c in hands[0]] == ["5C", "4C", "3C", "2C", "7S", "2M", "6M", "20T"]
    assert [cards.CARD_NAMES[c] for c in hands[1]] == ["1C", "HC", "0C", "1S", "8S", "3M", "7M", "30T"]
    assert [cards.CARD_NAMES[c] for c in hands[2]] == ["2S", "3S", "4S", "5S", "9S", "4M", "8M", "40T"]
    assert [cards.CARD_NAMES[c] for c in stock] == [
        "10000T", "1000T", "100T", "90T", "80T", "70T", "60T", "50T"
    ]  # fmt: skip


# --------------------------------------------------------------------------------------------
# Promotion by the upcard, the last-trick rule, the stock check
# --------------------------------------------------------------------------------------------

PROMOTION_SEATS = [
    "1S 2S 3S 4S 6M 7M 8M 9M",
    "8S 7S 1C 2C 3C 40T 50T 60T",
    "HC 5M 4M 3M 2M 6C 7C 8C",
    "5S 6S 1M 4C 5C 9C 20T 30T",
]
PROMOTION_SCRIPT = [
    "1:8S 2:8C- 3:9C- 0:1S-",
    "1:7S 2:7C- 3:5C- 0:2S-",
    "1:1C 2:HC 3:4C- 0:3S-",
    "2:5M 3:1M- 0:4S- 1:2C-",
    "2:4M 3:5S- 0:6M- 1:3C-",
    "2:3M 3:6S- 0:7M- 1:40T-",
    "2:6C 3:20T- 0:8M- 1:50T-",
    "2:2M 3:30T- 0:9M- 1:60T-",
]


def test_upcard_top_card_promotes_the_second_highest_to_boss() -> None:
    game = new_game(PROMOTION_SEATS, "9S 70T 0C 80T 90T 100T 1000T 10000T", banker=0, first=1)
    assert game.phase == PHASE_PLAY and game.to_act == 1
    play_script(game, PROMOTION_SCRIPT)
    assert game.tricks_won() == [0, 2, 6, 0]
    # 8S counts as the Strings' top card since 9S is the upcard; seat 1 made the minimum.
    assert Counter(game.settlement()) == lines(
        ("trick_count", 0, 2, 1), ("trick_count", 3, 0, 1), ("boss_card", 0, 1, 1)
    )
    assert game.payoffs() == [-1.0, 1.0, 1.0, -1.0]
    assert game.next_banker() == 1


def test_without_promotion_no_boss_but_the_stock_check_catches_the_face_up_second_highest() -> None:
    # 9S is now the second stock card: no promotion, and the stock check exposes it; seat 1 led
    # 8S face up, so seat 1 pays each other player 1.
    game = new_game(PROMOTION_SEATS, "70T 9S 0C 80T 90T 100T 1000T 10000T", banker=0, first=1)
    play_script(game, PROMOTION_SCRIPT)
    assert Counter(game.settlement()) == lines(
        ("trick_count", 0, 2, 1),
        ("trick_count", 3, 0, 1),
        *[("stock_check", 1, other, 1) for other in (0, 2, 3)],
    )
    assert game.payoffs() == [1.0, -3.0, 2.0, 0.0]


def test_last_trick_player_without_a_trick_may_only_slough() -> None:
    game = new_game(PROMOTION_SEATS, "9S 70T 0C 80T 90T 100T 1000T 10000T", banker=0, first=1)
    play_script(game, PROMOTION_SCRIPT[:5])
    play_script(game, ["2:3M 3:6S-"])
    # Trick 6: seat 0 (no trick yet) may still capture 3M.
    assert game.legal_actions() == {PLAY + C(n) for n in ("7M", "8M", "9M")} | {
        SLOUGH + C(n) for n in ("7M", "8M", "9M")
    }
    play_script(game, ["0:7M- 1:40T-", "2:6C 3:20T- 0:8M- 1:50T-", "2:2M 3:30T-"])
    # Trick 8: seat 0 won none of the first seven, so 9M cannot capture 2M.
    assert game.legal_actions() == {SLOUGH + C("9M")}
    with pytest.raises(ReferenceRuleError, match="not legal"):
        game.step(PLAY + C("9M"))


def test_follower_may_capture_only_higher_of_the_suit_led_and_may_always_slough() -> None:
    game = new_game(PROMOTION_SEATS, "9S 70T 0C 80T 90T 100T 1000T 10000T", banker=0, first=1)
    play_script(game, ["1:8S"])
    # Seat 2 holds no Strings: sloughs only (Cash and Myriads never capture a Strings lead).
    assert game.legal_actions() == {SLOUGH + c for c in hand(PROMOTION_SEATS[2])}
    play_script(game, ["2:8C- 3:9C- 0:1S-", "1:1C"])
    # Seat 2 may capture 1C with HC only; cash ranks in reverse, so 6C/7C/8C are lower.
    assert game.legal_actions() & set(range(PLAY, SLOUGH)) == {PLAY + C("HC")}


# --------------------------------------------------------------------------------------------
# Hundred Myriad tiers and two tricks with the Hundred Myriad
# --------------------------------------------------------------------------------------------

HUNDRED_SEATS = [
    "1S 2S 3S 4S 6M 7M 8M 9M",
    "8S 7S 1C 2C 3C 40T 50T 100T",
    "HC 5M 4M 3M 2M 6C 7C 8C",
    "5S 6S 1M 4C 5C 9C 20T 30T",
]
HUNDRED_STOCK = "9S 70T 0C 80T 90T 60T 1000T 10000T"
SEAT_2_TAKES_THE_REST = [
    "2:5M 3:1M- 0:4S- 1:2C-",
    "2:4M 3:5S- 0:6M- 1:3C-",
    "2:3M 3:6S- 0:7M- 1:40T-",
    "2:6C 3:20T- 0:8M- 1:50T-",
    "2:2M 3:30T- 0:9M- 1:{last}-",
]


def test_player_winning_with_hundred_myriad_and_exactly_two_tricks() -> None:
    game = new_game(HUNDRED_SEATS, HUNDRED_STOCK, banker=0, first=1)
    rest = [t.replace("{last}", "7S") for t in SEAT_2_TAKES_THE_REST]
    play_script(game, ["1:8S 2:8C- 3:9C- 0:1S-", "1:100T 2:7C- 3:5C- 0:2S-", "1:1C 2:HC 3:4C- 0:3S-", *rest])
    assert game.tricks_won() == [0, 2, 6, 0]
    assert Counter(game.settlement()) == lines(
        ("hundred_myriad", 0, 1, 3),  # made the minimum and won a trick with 100T
        ("two_tricks_hundred_myriad", 2, 1, 1),
        ("two_tricks_hundred_myriad", 3, 1, 1),
        ("boss_card", 0, 1, 1),  # 8S promoted
        ("trick_count", 0, 2, 1),
        ("trick_count", 3, 0, 1),
    )
    assert sum(game.payoffs()) == 0.0
    assert game.next_banker() == 1


def test_hundred_myriad_sloughed_after_making_the_minimum_pays_two() -> None:
    game = new_game(HUNDRED_SEATS, HUNDRED_STOCK, banker=0, first=1)
    rest = [t.replace("{last}", "100T") for t in SEAT_2_TAKES_THE_REST]
    play_script(game, ["1:8S 2:8C- 3:9C- 0:1S-", "1:7S 2:7C- 3:5C- 0:2S-", "1:1C 2:HC 3:4C- 0:3S-", *rest])
    assert Counter(game.settlement()) == lines(
        ("hundred_myriad", 0, 1, 2),
        ("boss_card", 0, 1, 1),
        ("trick_count", 0, 2, 1),
        ("trick_count", 3, 0, 1),
    )


def test_hundred_myriad_consolation_even_after_winning_a_trick_with_it() -> None:
    game = new_game(HUNDRED_SEATS, HUNDRED_STOCK, banker=0, first=1)
    play_script(
        game,
        [
            "1:100T 2:8C- 3:9C- 0:1S-",
            "1:1C 2:HC 3:5C- 0:2S-",
            "2:7C 3:4C- 0:3S- 1:8S-",
            *[t.replace("{last}", "7S") for t in SEAT_2_TAKES_THE_REST],
        ],
    )
    assert game.tricks_won() == [0, 1, 7, 0]
    assert Counter(game.settlement()) == lines(
        ("hundred_myriad", 0, 1, 1),
        ("trick_count", 1, 0, 1),
        ("trick_count", 0, 2, 1),
        ("trick_count", 3, 0, 1),
    )


def test_banker_winning_with_hundred_myriad_and_two_tricks_collects_three_and_stays() -> None:
    game = new_game(HUNDRED_SEATS, HUNDRED_STOCK, banker=1, first=1)
    rest = [t.replace("{last}", "7S") for t in SEAT_2_TAKES_THE_REST]
    play_script(game, ["1:8S 2:8C- 3:9C- 0:1S-", "1:100T 2:7C- 3:5C- 0:2S-", "1:1C 2:HC 3:4C- 0:3S-", *rest])
    assert Counter(game.settlement()) == lines(
        *each_pays("hundred_myriad", 1, 3),
        *each_pays("boss_card", 1, 1),
        ("trick_count", 0, 1, 1),
        ("trick_count", 1, 2, 1),
        ("trick_count", 3, 1, 1),
    )
    assert game.next_banker() == 1


# --------------------------------------------------------------------------------------------
# Honours, slams
# --------------------------------------------------------------------------------------------

HONOURS_SEATS = [
    "10000T 1000T 100T 0C 8S 5M 2C 3C",
    "9S 7S 6S 30T 7M 6M 4C 5C",
    "5S 4S 3S 8M 4M 3M 6C 7C",
    "2S 1S 2M 1M 8C 9C 90T 80T",
]
HONOURS_STOCK = "20T 9M 40T 50T 60T 70T HC 1C"


def test_banker_slam_with_four_honours() -> None:
    game = new_game(HONOURS_SEATS, HONOURS_STOCK, banker=0, first=0)
    leads = HONOURS_SEATS[0].split()
    follows = [seat.split() for seat in HONOURS_SEATS[1:]]
    play_script(
        game,
        [f"0:{leads[k]} 1:{follows[0][k]}- 2:{follows[1][k]}- 3:{follows[2][k]}-" for k in range(8)],
    )
    assert game.tricks_won() == [8, 0, 0, 0]
    # 8M (second-highest Myriad; 9M exposed by the stock check) was sloughed: no stock check.
    assert Counter(game.settlement()) == lines(
        *each_pays("slam", 0, 8),  # instead of the trick count
        *each_pays("boss_card", 0, 1),  # 10000T
        *each_pays("boss_card", 0, 1),  # 0C
        *each_pays("hundred_myriad", 0, 3),
        *each_pays("honours", 0, 4),  # 10000T 1000T 100T and 0C
    )
    assert game.payoffs() == [51.0, -17.0, -17.0, -17.0]


def test_honours_without_zero_cash_pays_three() -> None:
    game = new_game(HONOURS_SEATS, HONOURS_STOCK, banker=0, first=0)
    play_script(
        game,
        [
            "0:10000T 1:4C- 2:6C- 3:8C-",
            "0:1000T 1:5C- 2:7C- 3:9C-",
            "0:100T 1:30T- 2:3M- 3:90T-",
            "0:8S 1:9S 2:3S- 3:2S-",
            "1:7S 2:4S- 3:1S- 0:0C-",
            "1:6S 2:5S- 3:2M- 0:5M-",
            "1:7M 2:4M- 3:1M- 0:2C-",
            "1:6M 2:8M- 3:80T- 0:3C-",
        ],
    )
    assert game.tricks_won() == [3, 5, 0, 0]
    assert Counter(game.settlement()) == lines(
        ("trick_count", 0, 1, 1),
        ("trick_count", 2, 0, 1),
        ("trick_count", 3, 0, 1),
        *each_pays("boss_card", 0, 1),  # banker's 10000T
        ("boss_card", 0, 1, 1),  # seat 1's 9S
        *each_pays("hundred_myriad", 0, 3),
        *each_pays("honours", 0, 3),
    )


def test_player_slam_and_the_others_still_pay_the_trick_count() -> None:
    game = new_game(HONOURS_SEATS, HONOURS_STOCK, banker=0, first=2)
    leads = HONOURS_SEATS[2].split()
    others = {seat: HONOURS_SEATS[seat].split() for seat in (0, 1, 3)}
    play_script(
        game,
        [f"2:{leads[k]} 3:{others[3][k]}- 0:{others[0][k]}- 1:{others[1][k]}-" for k in range(8)],
    )
    assert game.tricks_won() == [0, 0, 8, 0]
    assert Counter(game.settlement()) == lines(
        ("slam", 0, 2, 8),
        ("trick_count", 1, 0, 1),
        ("trick_count", 3, 0, 1),
        *each_pays("hundred_myriad", 0, 1),  # the banker's consolation, from each player
        *[("stock_check", 2, other, 1) for other in (0, 1, 3)],  # 8M led face up, 9M exposed
    )


# --------------------------------------------------------------------------------------------
# Declarations: melds, four lowest, redeal
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cards_in_hand", "stakes"),
    [
        ("10000T 9M 9S 0C 1C 2S 3M 4C", 4),
        ("10000T 100T 9M 9S 0C 2S 3M 4C", 5),
        ("1S 2S 3S 4S 5S 6S 7S 8S", 4),
        ("20T 30T 40T 50T 60T 70T 80T 90T", 4),
        ("20T 30T 40T 50T 60T 70T 80T 100T", 5),
        ("10000T 1000T 20T 9M 1M 9S 1S 0C", 6),
        ("10000T 100T 20T 9M 1M 9S 1S 0C", 7),
        ("10000T 20T 9M 1M 9S 1S 0C 9C", 8),
        ("10000T 9M 9S 1C 2S 3M 4C 5C", 0),
    ],
)
def test_meld_table(cards_in_hand: str, stakes: int) -> None:
    assert meld_stakes(hand(cards_in_hand)) == stakes


MELD_SEATS = [
    "1S 2S 3S 4S 5S 6S 7S 8S",  # a flush of Strings: 4
    "1C 2C 3C 4C 5C 6C 7C 8C",  # a flush of Cash: 4
    "10000T 9M 9S 0C 20T 30T 40T 50T",  # 10000T 9M 9S 0C: 4
    "100T 1M 2M 3M 4M 5M 6M 9C",
]
MELD_STOCK = "7M 8M 60T 70T 80T 90T 1000T HC"


def test_equal_melds_first_in_deal_order_pays_out_and_the_hundred_myriad_holder_is_exempt() -> None:
    game = new_game(MELD_SEATS, MELD_STOCK, banker=0, first=2)
    assert game.phase == PHASE_OVER and game.to_act is None
    assert Counter(game.settlement()) == lines(("meld", 0, 2, 4), ("meld", 1, 2, 4))
    assert game.next_banker() == 2
    game = new_game(MELD_SEATS, MELD_STOCK, banker=2, first=0)
    # The banker holding 100T is exempt too; the banker pays a meld like anyone else.
    assert Counter(game.settlement()) == lines(("meld", 1, 0, 4), ("meld", 2, 0, 4))
    assert game.next_banker() == 0


def test_the_higher_meld_pays_out() -> None:
    seats = list(MELD_SEATS)
    seats[2], seats[3] = "10000T 9M 9S 0C 100T 30T 40T 50T", "20T 1M 2M 3M 4M 5M 6M 9C"
    game = new_game(seats, MELD_STOCK, banker=3, first=0)
    assert Counter(game.settlement()) == lines(*each_pays("meld", 2, 5))


FOUR_LOWEST_SEATS = [
    "2S 3S 4S 5S 2M 3M 4M 8C",
    "20T 1M 1S 9C 30T 40T 2C 3C",
    "100T 6S 7S 8S 5M 6M 7M 4C",
    "9S 9M 0C 1000T 5C 6C 7C HC",
]
FOUR_LOWEST_STOCK = "10000T 8M 50T 60T 70T 80T 90T 1C"


def test_four_lowest_pays_one_each_including_the_hundred_myriad_and_deals_again() -> None:
    game = new_game(FOUR_LOWEST_SEATS, FOUR_LOWEST_STOCK, banker=0, first=0)
    assert game.phase == PHASE_NEEDS_DEAL and game.legal_actions() == set()
    assert Counter(game.settlement()) == lines(*each_pays("four_lowest", 1, 1))
    # The new deal (a random one in the env) comes with a newly drawn banker; payments stay.
    game.set_deal([s.split() for s in HONOURS_SEATS], HONOURS_STOCK.split(), banker=3, first=3)
    assert game.phase == PHASE_PLAY and game.to_act == 3 and game.banker == 3
    assert Counter(game.settlement()) == lines(*each_pays("four_lowest", 1, 1))


def test_a_meld_outranks_the_four_lowest() -> None:
    seats = [
        "10000T 20T 9M 1M 9S 1S 0C 9C",
        "2S 3S 4S 5S 2M 3M 4M 8C",
        "100T 6S 7S 8S 5M 6M 7M 4C",
        "30T 40T 1000T 5C 6C 7C HC 2C",
    ]
    game = new_game(seats, "3C 8M 50T 60T 70T 80T 90T 1C", banker=1, first=1)
    assert game.phase == PHASE_OVER
    assert Counter(game.settlement()) == lines(("meld", 1, 0, 8), ("meld", 3, 0, 8))


REDEAL_SEATS = [
    "1S 2S 3S 4S 5S 2M 3M 8C",  # five Strings
    "20T 30T 40T 50T 1000T 2C 3C 9C",  # five Tens
    "100T 6S 7S 8S 5M 6M 7M 4C",
    "9S 9M 0C 1M 5C 6C 7C 4M",
]
REDEAL_STOCK = "10000T 8M 60T 70T 80T 90T 1C HC"


def test_redeal_asks_eligible_players_in_deal_order_and_play_starts_when_all_pass() -> None:
    game = new_game(REDEAL_SEATS, REDEAL_STOCK, banker=2, first=1)
    assert game.phase == PHASE_REDEAL and game.to_act == 1
    assert game.legal_actions() == {REDEAL, PASS}
    game.step(PASS)
    assert game.phase == PHASE_REDEAL and game.to_act == 0  # deal order 1, 2, 3, 0
    game.step(PASS)
    assert game.phase == PHASE_PLAY and game.to_act == 1


def test_declared_redeal_keeps_the_banker_and_the_cap_stops_further_asking() -> None:
    game = new_game(REDEAL_SEATS, REDEAL_STOCK, banker=2, first=0, max_redeals=1)
    assert game.to_act == 0
    game.step(REDEAL)
    assert game.phase == PHASE_NEEDS_DEAL and game.redeals == 1
    with pytest.raises(ReferenceRuleError, match="banker"):
        game.set_deal([s.split() for s in REDEAL_SEATS], REDEAL_STOCK.split(), banker=1, first=0)
    game.set_deal([s.split() for s in REDEAL_SEATS], REDEAL_STOCK.split(), banker=2, first=0)
    assert game.phase == PHASE_PLAY and game.to_act == 0  # one redeal already: nobody is asked
    assert new_game(REDEAL_SEATS, REDEAL_STOCK, banker=2, first=0, max_redeals=0).phase == PHASE_PLAY


# --------------------------------------------------------------------------------------------
# Variants
# --------------------------------------------------------------------------------------------


def test_face_up_discard_variant_costs_two_to_the_banker_or_two_to_each_from_the_banker() -> None:
    game = new_game(PROMOTION_SEATS, "9S 70T 0C 80T 90T 100T 1000T 10000T", 0, 1, face_up_discard=True)
    play_script(game, ["1:8S"])
    assert game.legal_actions() == {PLAY + c for c in hand(PROMOTION_SEATS[2])} | {
        SLOUGH + c for c in hand(PROMOTION_SEATS[2])
    }
    script = [t.replace("2:8C-", "2:8C").replace("0:1S-", "0:1S") for t in PROMOTION_SCRIPT]
    play_script(game, [script[0][len("1:8S ") :], *script[1:]])
    assert game.tricks_won() == [0, 2, 6, 0]  # face-up discards never win
    assert Counter(game.settlement()) == lines(
        ("trick_count", 0, 2, 1),
        ("trick_count", 3, 0, 1),
        ("boss_card", 0, 1, 1),
        ("face_up_discard", 2, 0, 2),
        *[("face_up_discard", 0, other, 2) for other in (1, 2, 3)],
    )


def test_face_up_discard_is_illegal_by_default() -> None:
    game = new_game(PROMOTION_SEATS, "9S 70T 0C 80T 90T 100T 1000T 10000T", banker=0, first=1)
    play_script(game, ["1:8S"])
    with pytest.raises(ReferenceRuleError, match="not legal"):
        game.step(PLAY + C("8C"))


def test_stake_multiplies_payoffs_not_the_lines() -> None:
    game = new_game(MELD_SEATS, MELD_STOCK, banker=0, first=2, stake=2.5)
    assert game.payoffs() == [-10.0, -10.0, 20.0, 0.0]
