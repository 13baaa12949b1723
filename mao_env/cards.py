"""Mao cards, phrases, bit layout, the action layout and text helpers (no Numba kernels here).

Card types: 52 suited cards plus one joker type (a deck holds two jokers of that one type), so a
card set fits a uint64 with bits 0..52. The issue text says "54 card types"; 52 + one joker type
is 53, and a deck has 54 *cards*. Bit ``suit * 13 + rank - 1``::

    bit:   0   1   2 ..  9  10  11  12 | 13 .. 25 | 26 .. 38 | 39 .. 51 | 52
    card: AC  2C  3C .. 10C JC  QC  KC | AD .. KD | AH .. KH | AS .. KS | JK
          ---------- Clubs ----------- | Diamonds |  Hearts  |  Spades  | Joker

The joker is the nine of diamonds for every game purpose: ``CARD_RANK``/``CARD_SUIT`` give it
rank 9 and suit diamonds, and every predicate mask that holds 9D also holds JK.

Action layout (``N_ACTIONS`` ids)::

    0..52                play card type i
    53                   draw (with a pending seven chain: take the chain's penalty cards)
    54..54+P-1           say phrase p (P = N_PHRASES)
    54+P                 end the turn (the Mao Master judges it now, or a call window opens)
    55+P..55+P+C-1       (calls="players", call window) call reason c (C = N_CALL_REASONS)
    55+P+C               (call window) no more calls
    56+P+C               (call window) point of order
    57+P+C..57+P+C+R-1   (round winner) add library rule r as the new secret rule
"""

from __future__ import annotations

import numpy as np

N_CARD_TYPES = 53
JOKER = 52
CARDS_PER_DECK = 54
MAX_PLAYERS = 8
MAX_DECKS = 3
MAX_CARDS = MAX_DECKS * CARDS_PER_DECK
HAND_SIZE = 5
PENALTY_CARDS = 1
MAO_PENALTY_CARDS = 3

SUIT_LETTERS = "CDHS"
SUIT_NAMES = ("clubs", "diamonds", "hearts", "spades")
CLUBS, DIAMONDS, HEARTS, SPADES = 0, 1, 2, 3
RANK_LABELS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
RANK_WORDS = (
    "ace",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "jack",
    "queen",
    "king",
)
ACE, SEVEN, EIGHT, NINE, JACK = 1, 7, 8, 9, 11

CARD_NAMES: tuple[str, ...] = (*(f"{r}{s}" for s in SUIT_LETTERS for r in RANK_LABELS), "JK")
CARD_ID: dict[str, int] = {name: i for i, name in enumerate(CARD_NAMES)}
# Effective rank (1..13) and suit of every card type; the joker counts as the nine of diamonds.
CARD_RANK = np.array([r for _ in range(4) for r in range(1, 14)] + [NINE], dtype=np.int64)
CARD_SUIT = np.array([s for s in range(4) for _ in range(13)] + [DIAMONDS], dtype=np.int64)
NINE_OF_DIAMONDS = DIAMONDS * 13 + NINE - 1


def _mask_of(predicate) -> np.uint64:
    """The set of card types (joker included as 9D) whose (rank, suit) satisfies ``predicate``."""
    value = 0
    for card in range(N_CARD_TYPES):
        if predicate(int(CARD_RANK[card]), int(CARD_SUIT[card])):
            value |= 1 << card
    return np.uint64(value)


ALL_CARDS = np.uint64((1 << N_CARD_TYPES) - 1)
RANK_MASK = np.array([_mask_of(lambda r, s, k=k: r == k) for k in range(14)], dtype=np.uint64)
SUIT_MASK = np.array([_mask_of(lambda r, s, k=k: s == k) for k in range(4)], dtype=np.uint64)
RED_MASK = SUIT_MASK[DIAMONDS] | SUIT_MASK[HEARTS]
BLACK_MASK = SUIT_MASK[CLUBS] | SUIT_MASK[SPADES]
# RANK_ABOVE[r]: cards of rank strictly above r (ace low), RANK_BELOW[r]: strictly below.
RANK_ABOVE = np.array([_mask_of(lambda r, s, k=k: r > k) for k in range(14)], dtype=np.uint64)
RANK_BELOW = np.array([_mask_of(lambda r, s, k=k: r < k) for k in range(15)], dtype=np.uint64)

# ---- phrases -------------------------------------------------------------------------------
PHRASES: tuple[str, ...] = (
    "Have a nice day",
    "Penalty card",
    "Thank you",
    "<name of the card>",
    "That's the badger",
    "Last card",
    "Mao",
    "Clubs",
    "Diamonds",
    "Hearts",
    "Spades",
    "That's the rabbit",
    "That's the hedgehog",
    "That's the fox",
    "All hail the chairman",
    "Pass",
)
N_PHRASES = len(PHRASES)
NICE_DAY, PENALTY_CARD, THANK_YOU, CARD_NAME, BADGER, LAST_CARD, MAO = range(7)
SUIT_PHRASE_0 = 7  # phrases 7..10 name the suits clubs..spades
RABBIT, HEDGEHOG, FOX, CHAIRMAN = 11, 12, 13, 14
PASS = 15  # allowed after a draw (the seed: "Usually saying 'pass' is allowed at this point")
PHRASE_KEYS: tuple[str, ...] = (
    "nice-day",
    "penalty-card",
    "thank-you",
    "card-name",
    "badger",
    "last-card",
    "mao",
    "clubs",
    "diamonds",
    "hearts",
    "spades",
    "rabbit",
    "hedgehog",
    "fox",
    "chairman",
    "pass",
)

# ---- actions -------------------------------------------------------------------------------
PLAY_0 = 0
DRAW = N_CARD_TYPES
SAY_0 = DRAW + 1
END_TURN = SAY_0 + N_PHRASES
# Call reasons (the Master's calls, numbered as the observation's ``calls`` bits in mao_env.layout):
# 0..N_PHRASES-1 failure to say phrase p, then bad card, talking, Mao in vain.
CALL_REASON_BAD_CARD = N_PHRASES
CALL_REASON_TALKING = N_PHRASES + 1
CALL_REASON_MAO = N_PHRASES + 2
N_CALL_REASONS = N_PHRASES + 3
CALL_0 = END_TURN + 1
NO_CALL = CALL_0 + N_CALL_REASONS
POINT_OF_ORDER = NO_CALL + 1
CHOOSE_RULE_0 = POINT_OF_ORDER + 1


def card_name(card: int) -> str:
    """Short name of a card type: ``"9D"``, ``"10S"``, ``"QH"``, ``"JK"``."""
    if isinstance(card, bool) or not isinstance(card, (int, np.integer)) or not 0 <= card < N_CARD_TYPES:
        raise ValueError(f"card type must be an integer 0..{N_CARD_TYPES - 1}, got {card!r}")
    return CARD_NAMES[int(card)]


def long_card_name(card: int) -> str:
    """What a player says for "the name of the card": ``"nine of spades"``, ``"joker"``."""
    if card == JOKER:
        return "joker"
    return f"{RANK_WORDS[CARD_RANK[card] - 1]} of {SUIT_NAMES[CARD_SUIT[card]]}"


def card_id(name: str) -> int:
    """The card type of a short name (case-insensitive; ``"T"`` is accepted for ten)."""
    if not isinstance(name, str):
        raise TypeError(f"card name must be a string, got {type(name).__name__} {name!r}")
    key = name.strip().upper()
    if len(key) == 2 and key[0] == "T":
        key = "10" + key[1]
    if key not in CARD_ID:
        raise ValueError(f"unknown card name {name!r}; expected e.g. '9D', '10S', 'QH', 'JK'")
    return CARD_ID[key]


def phrase_id(text: str) -> int:
    """The phrase id of a phrase key (``"last-card"``) or its text (``"Last card"``), case-insensitive."""
    if not isinstance(text, str):
        raise TypeError(f"phrase must be a string, got {type(text).__name__} {text!r}")
    key = text.strip().lower()
    for index, (phrase_key, phrase) in enumerate(zip(PHRASE_KEYS, PHRASES, strict=True)):
        if key in (phrase_key, phrase.lower()):
            return index
    raise ValueError(f"unknown phrase {text!r}; known phrases: {', '.join(PHRASE_KEYS)}")


def call_reason_key(reason: int) -> str:
    """Text key of a call reason: ``"failure last-card"``, ``"bad-card"``, ``"talking"``,
    ``"mao-in-vain"``."""
    if reason < N_PHRASES:
        return f"failure {PHRASE_KEYS[reason]}"
    return ("bad-card", "talking", "mao-in-vain")[reason - N_PHRASES]


def call_reason_id(text: str) -> int:
    """Inverse of :func:`call_reason_key` (case-insensitive; ``"failure Last card"`` is accepted)."""
    key = text.strip().lower()
    words = key.split(maxsplit=1)
    if len(words) == 2 and words[0] == "failure":
        return phrase_id(words[1])
    for reason in range(N_PHRASES, N_CALL_REASONS):
        if key == call_reason_key(reason):
            return reason
    raise ValueError(
        f"unknown call reason {text!r}; expected 'bad-card', 'talking', 'mao-in-vain' or 'failure <phrase>'"
    )


def n_decks_for(n_players: int) -> int:
    """One deck per three players, rounded up."""
    return (n_players + 2) // 3


def n_actions(n_rules: int) -> int:
    """Size of the action space for a library of ``n_rules`` rules."""
    return CHOOSE_RULE_0 + n_rules


def action_to_text(action: int, n_rules: int) -> str:
    """Text form of an action id: ``"play 9D"``, ``"draw"``, ``"say last-card"``, ``"end"``, ``"rule 12"``."""
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        raise TypeError(f"action must be an integer id, got {type(action).__name__} {action!r}")
    action = int(action)
    if PLAY_0 <= action < DRAW:
        return f"play {CARD_NAMES[action]}"
    if action == DRAW:
        return "draw"
    if SAY_0 <= action < END_TURN:
        return f"say {PHRASE_KEYS[action - SAY_0]}"
    if action == END_TURN:
        return "end"
    if CALL_0 <= action < NO_CALL:
        return f"call {call_reason_key(action - CALL_0)}"
    if action == NO_CALL:
        return "no call"
    if action == POINT_OF_ORDER:
        return "point of order"
    if CHOOSE_RULE_0 <= action < CHOOSE_RULE_0 + n_rules:
        return f"rule {action - CHOOSE_RULE_0}"
    raise ValueError(f"action {action} is out of range 0..{CHOOSE_RULE_0 + n_rules - 1}")


def text_to_action(text: str, n_rules: int) -> int:
    """Inverse of :func:`action_to_text` (also accepts "say Last card" and "end turn")."""
    if not isinstance(text, str):
        raise TypeError(f"action text must be a string, got {type(text).__name__} {text!r}")
    words = text.strip().split(maxsplit=1)
    verb = words[0].lower() if words else ""
    rest = words[1] if len(words) > 1 else ""
    if verb == "play" and rest:
        return PLAY_0 + card_id(rest)
    if verb == "draw" and not rest:
        return DRAW
    if verb == "say" and rest:
        return SAY_0 + phrase_id(rest)
    if verb == "end" and rest.lower() in ("", "turn"):
        return END_TURN
    if verb == "call" and rest:
        return CALL_0 + call_reason_id(rest)
    if verb == "no" and rest.lower() == "call":
        return NO_CALL
    if verb == "point" and rest.lower() == "of order":
        return POINT_OF_ORDER
    if verb == "rule" and rest.strip().isdigit():
        rule = int(rest)
        if not 0 <= rule < n_rules:
            raise ValueError(f"rule {rule} is out of range 0..{n_rules - 1}")
        return CHOOSE_RULE_0 + rule
    raise ValueError(
        f"cannot read action {text!r}; expected 'play 9D', 'draw', 'say last-card', 'end', "
        "'call bad-card', 'no call', 'point of order' or 'rule 12'"
    )
