"""The secret-rule library: every rule a round winner can add, as a row of small integers.

A rule is ``(family, kind, pred_a, pred_b, param)``; ``pred_a``/``pred_b`` index ``PREDICATES``,
53-bit card-type masks (the joker is in every mask that holds the nine of diamonds). The core
evaluates a rule with a few AND/OR operations on the played card's bit and the top card's bit.

Families and kinds (``A`` = ``PREDICATE_MASKS[pred_a]``, ``B`` = ``PREDICATE_MASKS[pred_b]``):

- validity (a failed check is called "bad card"; validity = (base match OR some wild rule)
  AND NOT (some forbidding rule)):

  - ``FORBID_ON``: a card in A may not be played on a card in B.
  - ``ONLY_AFTER``: on a card in B only a card in A may be played.
  - ``WILD``: a card in A may be played on anything (still subject to forbidding rules).
  - ``ALTERNATE_COLOUR``: the card's colour must differ from the top card's.
  - ``RANK_ORDER``: unless of the same suit, the card must rank strictly above (``param=+1``) or
    below (``param=-1``) the top card (ace low, joker = 9).

- dynamics (effects of a validly played card in ``A & B``; no call is made):
  ``SKIP`` the next player, ``REVERSE`` the direction, ``DRAW`` (the next player takes ``param``
  cards), ``AGAIN`` (the same player takes another turn).

- speech (a missing phrase is called "failure to say 'P'", ``P = param``):
  ``SAY_ON_PLAY`` when validly playing a card in ``A & B``; ``SAY_ON_DRAW`` when drawing a card
  (not the seven chain's penalty); ``SAY_ON_TOP`` when validly playing onto a card in ``A & B``.
"""

from __future__ import annotations

import numpy as np

from mao_env import cards as C

VALIDITY, DYNAMICS, SPEECH = 0, 1, 2
FAMILY_NAMES = ("validity", "dynamics", "speech")
FORBID_ON, ONLY_AFTER, WILD, ALTERNATE_COLOUR, RANK_ORDER = 0, 1, 2, 3, 4
SKIP, REVERSE, DRAW, AGAIN = 0, 1, 2, 3
SAY_ON_PLAY, SAY_ON_DRAW, SAY_ON_TOP = 0, 1, 2
RULE_WIDTH = 5
R_FAMILY, R_KIND, R_PRED_A, R_PRED_B, R_PARAM = range(RULE_WIDTH)

_RANK_PLURALS = ("aces", "twos", "threes", "fours", "fives", "sixes", "sevens", "eights", "nines",
                 "tens", "jacks", "queens", "kings")  # fmt: skip
_predicates: list[tuple[str, np.uint64]] = [("any card", C.ALL_CARDS)]
_predicates += [(_RANK_PLURALS[r - 1], C.RANK_MASK[r]) for r in range(1, 14)]
_predicates += [(C.SUIT_NAMES[s], C.SUIT_MASK[s]) for s in range(4)]
_predicates += [
    ("red cards", C.RED_MASK),
    ("black cards", C.BLACK_MASK),
    ("odd cards", np.uint64(sum(int(C.RANK_MASK[r]) for r in range(1, 14, 2)))),
    ("even cards", np.uint64(sum(int(C.RANK_MASK[r]) for r in range(2, 14, 2)))),
    ("face cards", C.RANK_MASK[11] | C.RANK_MASK[12] | C.RANK_MASK[13]),
    ("number cards (2-10)", np.uint64(sum(int(C.RANK_MASK[r]) for r in range(2, 11)))),
    ("low cards (A-6)", C.RANK_BELOW[7]),
    ("high cards (8-K)", C.RANK_ABOVE[7]),
    ("the joker", np.uint64(1 << C.JOKER)),
]
PREDICATE_NAMES: tuple[str, ...] = tuple(name for name, _ in _predicates)
PREDICATE_MASKS = np.array([mask for _, mask in _predicates], dtype=np.uint64)
PRED: dict[str, int] = {name: i for i, name in enumerate(PREDICATE_NAMES)}
ANY = PRED["any card"]


def _p(name: str) -> int:
    return PRED[name]


# The library, in families; ``(kind, pred_a, pred_b, param)`` per rule.
_VALIDITY = [
    (FORBID_ON, _p("odd cards"), _p("even cards"), 0),
    (FORBID_ON, _p("even cards"), _p("odd cards"), 0),
    (FORBID_ON, _p("face cards"), _p("face cards"), 0),
    (FORBID_ON, _p("hearts"), _p("spades"), 0),
    (FORBID_ON, _p("spades"), _p("hearts"), 0),
    (FORBID_ON, _p("clubs"), _p("diamonds"), 0),
    (FORBID_ON, _p("low cards (A-6)"), _p("high cards (8-K)"), 0),
    (FORBID_ON, _p("high cards (8-K)"), _p("low cards (A-6)"), 0),
    (FORBID_ON, _p("number cards (2-10)"), _p("face cards"), 0),
    (FORBID_ON, _p("red cards"), _p("red cards"), 0),
    (ONLY_AFTER, _p("red cards"), _p("kings"), 0),
    (ONLY_AFTER, _p("odd cards"), _p("queens"), 0),
    (ONLY_AFTER, _p("face cards"), _p("twos"), 0),
    (WILD, _p("queens"), ANY, 0),
    (WILD, _p("threes"), ANY, 0),
    (WILD, _p("the joker"), ANY, 0),
    (ALTERNATE_COLOUR, ANY, ANY, 0),
    (RANK_ORDER, ANY, ANY, 1),
    (RANK_ORDER, ANY, ANY, -1),
]
_DYNAMICS = [
    (SKIP, _p("twos"), ANY, 0),
    (SKIP, _p("kings"), ANY, 0),
    (SKIP, _p("tens"), ANY, 0),
    (SKIP, _p("the joker"), ANY, 0),
    (REVERSE, _p("queens"), ANY, 0),
    (REVERSE, _p("threes"), ANY, 0),
    (REVERSE, _p("nines"), ANY, 0),
    (DRAW, _p("twos"), ANY, 2),
    (DRAW, _p("sixes"), ANY, 1),
    (DRAW, _p("kings"), _p("hearts"), 3),
    (AGAIN, _p("fours"), ANY, 0),
    (AGAIN, _p("tens"), _p("red cards"), 0),
    (AGAIN, _p("kings"), _p("black cards"), 0),
]
_SPEECH = [
    (SAY_ON_PLAY, _p("fours"), ANY, C.RABBIT),
    (SAY_ON_PLAY, _p("queens"), ANY, C.HEDGEHOG),
    (SAY_ON_PLAY, _p("threes"), ANY, C.FOX),
    (SAY_ON_PLAY, _p("kings"), _p("hearts"), C.CHAIRMAN),
    (SAY_ON_PLAY, _p("hearts"), ANY, C.SUIT_PHRASE_0 + C.HEARTS),
    (SAY_ON_PLAY, _p("clubs"), _p("face cards"), C.SUIT_PHRASE_0 + C.CLUBS),
    (SAY_ON_PLAY, _p("nines"), ANY, C.BADGER),
    (SAY_ON_PLAY, _p("twos"), ANY, C.CARD_NAME),
    (SAY_ON_DRAW, ANY, ANY, C.RABBIT),
    (SAY_ON_DRAW, ANY, ANY, C.CHAIRMAN),
    (SAY_ON_TOP, _p("kings"), ANY, C.FOX),
    (SAY_ON_TOP, _p("queens"), ANY, C.HEDGEHOG),
    (SAY_ON_TOP, _p("the joker"), ANY, C.RABBIT),
]

RULE_TABLE = np.array(
    [(VALIDITY, *row) for row in _VALIDITY]
    + [(DYNAMICS, *row) for row in _DYNAMICS]
    + [(SPEECH, *row) for row in _SPEECH],
    dtype=np.int64,
)
N_RULES = RULE_TABLE.shape[0]
# Event records hold the rules behind a turn's calls as one int64 bit set.
assert N_RULES <= 63, "the library must fit an int64 bit set"
#: Active rules per game (a round winner cannot add a rule once this many are active).
MAX_ACTIVE_RULES = 32


def _cards(pred_a: int, pred_b: int) -> str:
    if pred_b == ANY:
        return PREDICATE_NAMES[pred_a]
    return f"{PREDICATE_NAMES[pred_a]} that are {PREDICATE_NAMES[pred_b]}"


def describe_rule(rule: int) -> str:
    """A human description of library rule ``rule`` (what its author knows)."""
    if isinstance(rule, bool) or not isinstance(rule, (int, np.integer)) or not 0 <= rule < N_RULES:
        raise ValueError(f"rule must be an integer 0..{N_RULES - 1}, got {rule!r}")
    family, kind, a, b, param = (int(x) for x in RULE_TABLE[rule])
    pa, pb = PREDICATE_NAMES[a], PREDICATE_NAMES[b]
    if family == VALIDITY:
        if kind == FORBID_ON:
            return f"{pa} may not be played on {pb}"
        if kind == ONLY_AFTER:
            return f"on {pb} only {pa} may be played"
        if kind == WILD:
            return f"{pa} may be played on anything"
        if kind == ALTERNATE_COLOUR:
            return "colours must alternate"
        return f"unless of the same suit, a card must rank {'higher' if param > 0 else 'lower'} than the top card"
    if family == DYNAMICS:
        what = _cards(a, b)
        if kind == SKIP:
            return f"{what} skip the next player"
        if kind == REVERSE:
            return f"{what} reverse the direction"
        if kind == DRAW:
            return f"{what} make the next player take {param} card{'s' if param > 1 else ''}"
        return f"{what} give their player another turn"
    phrase = C.PHRASES[param]
    if kind == SAY_ON_PLAY:
        return f"when playing {_cards(a, b)}, say '{phrase}'"
    if kind == SAY_ON_DRAW:
        return f"when drawing a card, say '{phrase}'"
    return f"when playing onto {_cards(a, b)}, say '{phrase}'"


RULE_DESCRIPTIONS: tuple[str, ...] = tuple(describe_rule(r) for r in range(N_RULES))
RULE_FAMILY = RULE_TABLE[:, R_FAMILY].copy()


def rules_of_family(family: int) -> list[int]:
    """Library ids of one family (``VALIDITY``, ``DYNAMICS`` or ``SPEECH``)."""
    return [int(r) for r in np.flatnonzero(family == RULE_FAMILY)]
