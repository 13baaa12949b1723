"""Set deals for Madiao: the ``reset(options={...})`` scenario of the AEC env, and the deck orders
that the real dealing procedure turns into given hands and stock.

:func:`read_scenario` checks every key and turns names into ids without touching the env or its
random stream, so that a ``reset`` that raises changes nothing. The keys are documented in the
``madiao_env.env`` docstring; :func:`deck_orders` also serves search, which deals many sampled
hands at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from madiao_env import cards

SCENARIO_KEYS = {"hands", "stock", "banker", "first", "deck"}


def check_seat(value: Any, what: str) -> int:
    """``value`` as a seat number 0..3 (``TypeError``/``ValueError`` naming ``what`` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be a seat number 0..3, got {type(value).__name__} {value!r}")
    if not 0 <= int(value) < cards.N_SEATS:
        raise ValueError(f"{what} must be a seat number 0..3, got {value!r}")
    return int(value)


def _card_list(value: Any, length: int, what: str) -> list[int]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{what} must be a list of {length} card names, got {value!r}")
    if len(value) != length:
        raise ValueError(f"{what} must hold {length} cards, got {len(value)}: {list(value)!r}")
    return [cards.card_id(name) for name in value]


def _check_distinct(ids: list[int], what: str) -> None:
    seen: set[int] = set()
    for card in ids:
        if card in seen:
            raise ValueError(f"{what}: card {cards.CARD_NAMES[card]} appears more than once")
        seen.add(card)


def deck_dealing(hands_and_stock: tuple[list[list[int]], list[int]], first: int) -> np.ndarray:
    """The deck order (int8[40]) that the dealing procedure from ``first`` turns into these hands
    (card ids by seat) and stock (card ids, upcard first)."""
    hand_ids, stock_ids = hands_and_stock
    return deck_orders(np.asarray(hand_ids)[None], np.asarray(stock_ids)[None], first)[0]


def deck_orders(hand_ids: np.ndarray, stock_ids: np.ndarray, first: int) -> np.ndarray:
    """Deck orders (int8 ``[N, 40]``, top to bottom) that the dealing procedure from seat ``first``
    turns into ``hand_ids`` (``[N, 4, 8]`` card ids by seat, any order within a hand) and
    ``stock_ids`` (``[N, 8]``, upcard first): the ``madiao_env.env`` docstring's procedure, for many deals
    at once."""
    decks = np.empty((hand_ids.shape[0], cards.N_CARDS), dtype=np.int8)
    for k in range(4):  # a batch of four to each seat in play order from the first seat
        decks[:, 4 * k : 4 * k + 4] = hand_ids[:, (first + k) % 4, :4]
    for j in range(16):  # then single cards round the table
        decks[:, 16 + j] = hand_ids[:, (first + j) % 4, 4 + j // 4]
    decks[:, cards.N_CARDS - cards.STOCK_SIZE :] = stock_ids[:, ::-1]  # the upcard at the bottom
    return decks


def read_scenario(
    options: dict | None,
) -> tuple[np.ndarray, int, int | None, tuple[list[list[int]], list[int]] | None]:
    """Validated reset options, without drawing from the RNG: (deck int8[40] or -1s for a
    random deal, first seat or -1, banker or None, (hands, stock) card ids of the "hands"
    option or None; its deck is laid out once banker and first seat are known)."""
    deck = np.full(cards.N_CARDS, -1, dtype=np.int8)
    if options is None:
        return deck, -1, None, None
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    # pettingzoo.test.api_test probes ``reset(options={"options": 1})``: that one key is ignored.
    unknown = set(options) - SCENARIO_KEYS - {"options"}
    if unknown:
        raise ValueError(f"unknown reset option(s) {sorted(unknown)}; valid: {sorted(SCENARIO_KEYS)}")
    banker = check_seat(options["banker"], "banker") if "banker" in options else None
    if "deck" in options:
        if {"hands", "stock", "first"} & set(options):
            raise ValueError("option 'deck' cannot be combined with 'hands', 'stock' or 'first'")
        ids = _card_list(options["deck"], cards.N_CARDS, "deck")
        _check_distinct(ids, "deck")
        return np.array(ids, dtype=np.int8), -1, banker, None
    if "hands" not in options:
        if "stock" in options or "first" in options:
            raise ValueError("options 'stock' and 'first' need 'hands' as well")
        return deck, -1, banker, None
    if "stock" not in options:
        raise ValueError("option 'hands' needs 'stock' (8 names, upcard first) as well")
    hands = options["hands"]
    if isinstance(hands, str) or not isinstance(hands, (list, tuple)) or len(hands) != 4:
        raise ValueError(f"hands must be a list of 4 hands (one per seat), got {hands!r}")
    hand_ids = [_card_list(hand, cards.HAND_SIZE, f"hands[{seat}]") for seat, hand in enumerate(hands)]
    stock_ids = _card_list(options["stock"], cards.STOCK_SIZE, "stock")
    _check_distinct([c for hand in hand_ids for c in hand] + stock_ids, "hands and stock")
    first = check_seat(options["first"], "first") if "first" in options else -1
    deck[39] = stock_ids[0]  # the cut card, for the first seat when it is not given
    return deck, first, banker, (hand_ids, stock_ids)
