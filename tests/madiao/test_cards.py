"""Card ids, names, bit layout and the action layout of ``madiao_env.cards``."""

from __future__ import annotations

import pytest

from madiao_env import cards


def test_forty_distinct_names_in_suit_order():
    assert len(cards.CARD_NAMES) == cards.N_CARDS == len(set(cards.CARD_NAMES))
    assert cards.CARD_NAMES[:11] == ("9C", "8C", "7C", "6C", "5C", "4C", "3C", "2C", "1C", "HC", "0C")
    assert cards.CARD_NAMES[-3:] == ("100T", "1000T", "10000T")


def test_suit_masks_partition_the_deck_and_higher_bit_is_stronger():
    union = 0
    for suit in range(4):
        mask = int(cards.SUIT_MASK[suit])
        assert union & mask == 0
        union |= mask
        members = cards.names_of(mask)
        assert all(cards.CARD_SUIT[cards.card_id(name)] == suit for name in members)
    assert union == int(cards.FULL_DECK_MASK)
    # Cash ranks in reverse: zero cash is the top, nine cash the bottom.
    assert cards.card_id("0C") > cards.card_id("HC") > cards.card_id("1C") > cards.card_id("9C")
    assert cards.card_id("10000T") > cards.card_id("1000T") > cards.card_id("100T") > cards.card_id("90T")


def test_special_card_sets():
    assert sorted(cards.names_of(cards.TOP_MASK)) == sorted(["0C", "9S", "9M", "10000T"])
    assert sorted(cards.names_of(cards.FOUR_LOWEST_MASK)) == sorted(["20T", "1M", "1S", "9C"])
    red = ["10000T", "1000T", "100T", "20T", "9M", "1M", "9S", "1S", "0C", "9C"]
    assert sorted(cards.names_of(cards.RED_MASK)) == sorted(red)


@pytest.mark.parametrize(
    ("name", "digit"),
    [("20T", 2), ("90T", 9), ("100T", 0), ("0C", 0), ("HC", 0), ("4C", 4), ("7S", 7), ("1M", 1)],
)
def test_cut_numbers(name, digit):
    assert cards.CUT_NUMBER[cards.card_id(name)] == digit


def test_names_round_trip_case_insensitive():
    for card, name in enumerate(cards.CARD_NAMES):
        assert cards.card_id(name) == card
        assert cards.card_id(name.lower()) == card
        assert cards.card_name(card) == name
    assert cards.names_of(cards.mask_of(["9S", "HC", "100T"])) == ["HC", "9S", "100T"]


@pytest.mark.parametrize("bad", ["10C", "", "XS", "1000", None, 3])
def test_unknown_card_names_raise_a_clear_error(bad):
    with pytest.raises(cards.UnknownCardError, match="card name"):
        cards.card_id(bad)


def test_action_text_round_trip():
    for action in range(cards.N_ACTIONS):
        assert cards.text_to_action(cards.action_to_text(action)) == action
    assert cards.text_to_action("play 9S") == cards.card_id("9S")
    assert cards.text_to_action("Slough 100t") == cards.N_CARDS + cards.card_id("100T")
    assert cards.text_to_action("redeal") == cards.ACTION_REDEAL == 80
    assert cards.text_to_action("pass") == cards.ACTION_PASS == 81


@pytest.mark.parametrize("bad", ["discard 9S", "play", "play 9Z", 5])
def test_bad_action_text_raises(bad):
    with pytest.raises(ValueError):
        cards.text_to_action(bad)


@pytest.mark.parametrize("bad", [-1, 82, 1.0, True])
def test_bad_action_id_raises(bad):
    with pytest.raises(ValueError, match="action id"):
        cards.action_to_text(bad)
