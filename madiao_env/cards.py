"""Madiao cards, bit layout, names and the action layout (no Numba kernels here).

Bit layout of a card set (a uint64; bit i set = card i in the set). Within a suit a higher bit is
a stronger card, so the best card of a suit in a set is its highest set bit::

    bit:   0   1   2   3   4   5   6   7   8   9  10 | 11 .. 19 | 20 .. 28 | 29 .. 36   37    38    39
    card: 9C  8C  7C  6C  5C  4C  3C  2C  1C  HC  0C | 1S .. 9S | 1M .. 9M | 20T..90T 100T 1000T 10000T
          ---------------- Cash (reversed) --------- | Strings  | Myriads  | ------------ Tens --------

Action layout (82 ids)::

    0..39   play card i face up (lead, or capture)
    40..79  slough card i-40 face down
    80      declare a redeal (holder of five or more cards of one suit, before the first trick)
    81      pass (decline the redeal)
"""

from __future__ import annotations

import numpy as np

from cardgame_core.bits import mask_from_ids

N_CARDS = 40
N_SEATS = 4
HAND_SIZE = 8
STOCK_SIZE = 8
N_TRICKS = 8

SUIT_CASH, SUIT_STRINGS, SUIT_MYRIADS, SUIT_TENS = 0, 1, 2, 3
SUIT_LETTERS = "CSMT"
SUIT_NAMES = ("Cash", "Strings", "Myriads", "Tens of myriads")
SUIT_FIRST_BIT = np.array([0, 11, 20, 29], dtype=np.int64)
SUIT_SIZE = np.array([11, 9, 9, 11], dtype=np.int64)

# Short names, lowest to highest within each suit; the index is the card id.
CARD_NAMES: tuple[str, ...] = (
    *("9C", "8C", "7C", "6C", "5C", "4C", "3C", "2C", "1C", "HC", "0C"),
    *(f"{n}S" for n in range(1, 10)),
    *(f"{n}M" for n in range(1, 10)),
    *(f"{n}T" for n in (20, 30, 40, 50, 60, 70, 80, 90, 100, 1000, 10000)),
)
_CASH_CHINESE = ("九文", "八文", "七文", "六文", "五文", "四文", "三文", "二文", "一文", "半文", "空文")
_NUMERALS = "一二三四五六七八九"
CARD_CHINESE: tuple[str, ...] = (
    _CASH_CHINESE
    + tuple(f"{_NUMERALS[n - 1]}索" for n in range(1, 10))
    + tuple(f"{_NUMERALS[n - 1]}萬" for n in range(1, 10))
    + tuple(f"{_NUMERALS[n - 1]}十萬" for n in range(2, 10))
    + ("百萬", "千萬", "萬萬")
)
CARD_ID: dict[str, int] = {name: i for i, name in enumerate(CARD_NAMES)}

CARD_SUIT = np.array([s for s in range(4) for _ in range(SUIT_SIZE[s])], dtype=np.int64)
SUIT_MASK = np.array(
    [((1 << int(SUIT_SIZE[s])) - 1) << int(SUIT_FIRST_BIT[s]) for s in range(4)], dtype=np.uint64
)
# The number printed on a card, used by the cut: tens count as their tens digit (20T -> 2);
# 0C, HC, 100T, 1000T, 10000T have no digit 1..9 that picks a seat and are listed apart.
CUT_NUMBER = np.array(
    [
        *(9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0),  # cash
        *range(1, 10),  # strings
        *range(1, 10),  # myriads
        *(2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0),  # tens
    ],
    dtype=np.int64,
)


def _mask(*names: str) -> np.uint64:
    value = 0
    for name in names:
        value |= 1 << CARD_ID[name]
    return np.uint64(value)


HUNDRED_MYRIAD = CARD_ID["100T"]
THOUSAND_MYRIAD = CARD_ID["1000T"]
MYRIAD_MYRIAD = CARD_ID["10000T"]
ZERO_CASH = CARD_ID["0C"]
RED_MASK = _mask("10000T", "1000T", "100T", "20T", "9M", "1M", "9S", "1S", "0C", "9C")
TOP_MASK = _mask("0C", "9S", "9M", "10000T")
FOUR_LOWEST_MASK = _mask("20T", "1M", "1S", "9C")
FULL_DECK_MASK = np.uint64((1 << N_CARDS) - 1)

# Actions.
ACTION_PLAY = 0
ACTION_SLOUGH = N_CARDS
ACTION_REDEAL = 2 * N_CARDS
ACTION_PASS = 2 * N_CARDS + 1
N_ACTIONS = 2 * N_CARDS + 2


class UnknownCardError(ValueError):
    """A card name that is not one of the 40 short names."""


def card_id(name: str) -> int:
    """The id of a card from its short name ("9S", "100T", "HC"); case-insensitive."""
    if not isinstance(name, str):
        raise UnknownCardError(f"card name must be a string, got {type(name).__name__} {name!r}")
    key = name.strip().upper()
    if key not in CARD_ID:
        raise UnknownCardError(f"unknown card name {name!r}; valid names are {', '.join(CARD_NAMES)}")
    return CARD_ID[key]


def card_name(card: int) -> str:
    """The short name of a card id (0..39)."""
    if isinstance(card, bool) or not isinstance(card, (int, np.integer)) or not 0 <= card < N_CARDS:
        raise UnknownCardError(f"card id must be an integer 0..{N_CARDS - 1}, got {card!r}")
    return CARD_NAMES[int(card)]


def mask_of(names) -> int:
    """The card set (Python int) of an iterable of short names."""
    return mask_from_ids(card_id(name) for name in names)


def names_of(mask: int) -> list[str]:
    """Short names of the cards in a set, in id order."""
    mask = int(mask)
    return [CARD_NAMES[i] for i in range(N_CARDS) if mask >> i & 1]


def action_to_text(action: int) -> str:
    """ "play 9S", "slough 9S", "redeal" or "pass" for an action id."""
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= action < N_ACTIONS:
        raise ValueError(f"action id must be an integer 0..{N_ACTIONS - 1}, got {action!r}")
    action = int(action)
    if action < ACTION_SLOUGH:
        return f"play {CARD_NAMES[action]}"
    if action < ACTION_REDEAL:
        return f"slough {CARD_NAMES[action - ACTION_SLOUGH]}"
    return "redeal" if action == ACTION_REDEAL else "pass"


def text_to_action(text: str) -> int:
    """The action id of "play 9S", "slough 9S", "redeal" or "pass" (case-insensitive)."""
    if not isinstance(text, str):
        raise ValueError(f"action text must be a string, got {type(text).__name__} {text!r}")
    original = text.strip().split()  # the card name is quoted as typed in an error
    words = [word.lower() for word in original]
    if words == ["redeal"]:
        return ACTION_REDEAL
    if words == ["pass"]:
        return ACTION_PASS
    if len(words) == 2 and words[0] in ("play", "slough"):
        card = card_id(original[1])
        return card + (ACTION_PLAY if words[0] == "play" else ACTION_SLOUGH)
    raise ValueError(
        f"cannot read action {text!r}; expected 'play <card>', 'slough <card>', 'redeal' or 'pass'"
    )
