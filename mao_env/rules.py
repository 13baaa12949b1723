"""The secret-rule library: every rule a round winner can add, as a row of small integers, and
what each rule family and kind means (the named constants below are the one definition: the
kernel ``core._check_play``/``_end_turn``, the reference ``reference.RefGame``, the descriptions
:func:`describe_rule` and the Bayesian player's tables in ``madiao_mao.agents.mao.beliefs`` all use them).
The train/held-out split of the library (``HELD_OUT_RULES``, ``TRAINING_RULES``) is at the end.

A rule is ``(family, kind, pred_a, pred_b, param)``; ``pred_a``/``pred_b`` index ``PREDICATES``,
53-bit card-type masks (the joker is in every mask that holds the nine of diamonds). The core
evaluates a rule with a few AND/OR operations on the played card's bit and the top card's bit.

Families and kinds (``A`` = ``PREDICATE_MASKS[pred_a]``, ``B`` = ``PREDICATE_MASKS[pred_b]``):

- validity (a failed check is called "bad card"; valid = (suit match OR rank clause OR some
  WILD rule) AND NOT (some forbidding rule); the rank clause is "same rank as the top card"):

  - ``FORBID_ON``: a card in A may not be played on a card in B.
  - ``ONLY_AFTER``: on a card in B only a card in A may be played.
  - ``WILD``: a card in A may be played on anything (still subject to forbidding rules).
  - ``ALTERNATE_COLOUR``: a card not of the suit to follow (a rank match, a wild card) must be
    of the other colour than the top card.
  - ``RANK_ORDER``: a card not of the suit to follow must rank strictly above (``param=+1``) or
    below (``param=-1``) the top card, instead of matching its rank (ace low, joker = 9). This
    rule both forbids (same rank) and allows (any higher/lower card).

  Rules that would lock a round for good were left out: e.g. "red may not be played on red" (on
  a red top only the same rank in black could follow), or "colours must alternate" read strictly
  (with suit matching that leaves only rank matches).

- dynamics (effects of a validly played card in ``A & B``; no call is made):
  ``SKIP`` the next player, ``REVERSE`` the direction, ``DRAW`` (the next player takes ``param``
  cards), ``AGAIN`` (the same player takes another turn).

- speech (a missing phrase is called "failure to say 'P'", ``P = param``):
  ``SAY_ON_PLAY`` when validly playing a card in ``A & B``; ``SAY_ON_DRAW`` when drawing a card
  (not the seven chain's penalty); ``SAY_ON_TOP`` when validly playing onto a card in ``A & B``.
"""

from __future__ import annotations

import numpy as np

from mao_env import cards

VALIDITY, DYNAMICS, SPEECH = 0, 1, 2
FORBID_ON, ONLY_AFTER, WILD, ALTERNATE_COLOUR, RANK_ORDER = 0, 1, 2, 3, 4
SKIP, REVERSE, DRAW, AGAIN = 0, 1, 2, 3
SAY_ON_PLAY, SAY_ON_DRAW, SAY_ON_TOP = 0, 1, 2
RULE_WIDTH = 5
R_FAMILY, R_KIND, R_PRED_A, R_PRED_B, R_PARAM = range(RULE_WIDTH)

_RANK_PLURALS = ("aces", "twos", "threes", "fours", "fives", "sixes", "sevens", "eights", "nines",
                 "tens", "jacks", "queens", "kings")  # fmt: skip
_predicates: list[tuple[str, np.uint64]] = [("any card", cards.ALL_CARDS)]
_predicates += [(_RANK_PLURALS[r - 1], cards.RANK_MASK[r]) for r in range(1, 14)]
_predicates += [(cards.SUIT_NAMES[s], cards.SUIT_MASK[s]) for s in range(4)]
_predicates += [
    ("red cards", cards.RED_MASK),
    ("black cards", cards.BLACK_MASK),
    # The seed's "odd-numbered cards": number cards only. Counting A, J, K as odd and Q as even
    # would make "odd may not be played on even" a trap: once an even card is on top only even
    # cards could follow, forever, and nobody holding an odd card could ever go out.
    ("odd number cards (3-9)", np.uint64(sum(int(cards.RANK_MASK[r]) for r in (3, 5, 7, 9)))),
    ("even number cards (2-10)", np.uint64(sum(int(cards.RANK_MASK[r]) for r in (2, 4, 6, 8, 10)))),
    ("face cards", cards.RANK_MASK[11] | cards.RANK_MASK[12] | cards.RANK_MASK[13]),
    ("number cards (2-10)", np.uint64(sum(int(cards.RANK_MASK[r]) for r in range(2, 11)))),
    ("low cards (A-6)", cards.RANK_BELOW[7]),
    ("high cards (8-K)", cards.RANK_ABOVE[7]),
    ("the joker", np.uint64(1 << cards.JOKER)),
]
PREDICATE_NAMES: tuple[str, ...] = tuple(name for name, _ in _predicates)
PREDICATE_MASKS = np.array([mask for _, mask in _predicates], dtype=np.uint64)
PRED: dict[str, int] = {name: i for i, name in enumerate(PREDICATE_NAMES)}
ANY = PRED["any card"]


def _p(name: str) -> int:
    return PRED[name]


# The library, in families; ``(kind, pred_a, pred_b, param)`` per rule.
_VALIDITY = [
    (FORBID_ON, _p("odd number cards (3-9)"), _p("even number cards (2-10)"), 0),
    (FORBID_ON, _p("even number cards (2-10)"), _p("odd number cards (3-9)"), 0),
    (FORBID_ON, _p("face cards"), _p("face cards"), 0),
    (FORBID_ON, _p("hearts"), _p("spades"), 0),
    (FORBID_ON, _p("spades"), _p("hearts"), 0),
    (FORBID_ON, _p("clubs"), _p("diamonds"), 0),
    (FORBID_ON, _p("low cards (A-6)"), _p("face cards"), 0),
    (FORBID_ON, _p("face cards"), _p("low cards (A-6)"), 0),
    (FORBID_ON, _p("number cards (2-10)"), _p("aces"), 0),
    (FORBID_ON, _p("hearts"), _p("diamonds"), 0),
    (ONLY_AFTER, _p("red cards"), _p("kings"), 0),
    (ONLY_AFTER, _p("odd number cards (3-9)"), _p("queens"), 0),
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
    (SAY_ON_PLAY, _p("fours"), ANY, cards.RABBIT),
    (SAY_ON_PLAY, _p("queens"), ANY, cards.HEDGEHOG),
    (SAY_ON_PLAY, _p("threes"), ANY, cards.FOX),
    (SAY_ON_PLAY, _p("kings"), _p("hearts"), cards.CHAIRMAN),
    (SAY_ON_PLAY, _p("hearts"), ANY, cards.SUIT_PHRASE_0 + cards.HEARTS),
    (SAY_ON_PLAY, _p("clubs"), _p("face cards"), cards.SUIT_PHRASE_0 + cards.CLUBS),
    (SAY_ON_PLAY, _p("nines"), ANY, cards.BADGER),
    (SAY_ON_PLAY, _p("twos"), ANY, cards.CARD_NAME),
    (SAY_ON_DRAW, ANY, ANY, cards.RABBIT),
    (SAY_ON_DRAW, ANY, ANY, cards.CHAIRMAN),
    (SAY_ON_TOP, _p("kings"), ANY, cards.FOX),
    (SAY_ON_TOP, _p("queens"), ANY, cards.HEDGEHOG),
    (SAY_ON_TOP, _p("the joker"), ANY, cards.RABBIT),
]

RULE_TABLE = np.array(
    [(VALIDITY, *row) for row in _VALIDITY]
    + [(DYNAMICS, *row) for row in _DYNAMICS]
    + [(SPEECH, *row) for row in _SPEECH],
    dtype=np.int64,
)
N_RULES = RULE_TABLE.shape[0]
# What the core's kernels read: the rule rows with the predicates resolved to their 53-bit masks,
# ``(family, kind, set_a, set_b, param)``. Kernels get it as an argument, never as a global, so
# editing the library can never leave a stale on-disk compiled kernel behind.
LIBRARY = RULE_TABLE.copy()
LIBRARY[:, R_PRED_A] = PREDICATE_MASKS[RULE_TABLE[:, R_PRED_A]].astype(np.int64)
LIBRARY[:, R_PRED_B] = PREDICATE_MASKS[RULE_TABLE[:, R_PRED_B]].astype(np.int64)
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
            return "a card not of the suit to follow must be of the other colour than the top card"
        direction = "higher" if param > 0 else "lower"
        return f"a card not of the suit to follow must rank {direction} than the top card (not the same)"
    if family == DYNAMICS:
        what = _cards(a, b)
        if kind == SKIP:
            return f"playing {what} skips the next player"
        if kind == REVERSE:
            return f"playing {what} reverses the direction"
        if kind == DRAW:
            return f"playing {what} makes the next player take {param} card{'s' if param > 1 else ''}"
        return f"playing {what} gives the same player another turn"
    phrase = cards.PHRASES[param]
    if kind == SAY_ON_PLAY:
        return f"when playing {_cards(a, b)}, say '{phrase}'"
    if kind == SAY_ON_DRAW:
        return f"when drawing a card, say '{phrase}'"
    return f"when playing onto {_cards(a, b)}, say '{phrase}'"


RULE_DESCRIPTIONS: tuple[str, ...] = tuple(describe_rule(r) for r in range(N_RULES))
RULE_FAMILY = RULE_TABLE[:, R_FAMILY].copy()
#: Each family in plain words, by family id: a title and what breaking or meeting such a rule
#: brings (the web app groups the rule choice by family with these).
FAMILY_TITLES = ("Which cards may be played", "What a card does", "What to say")
FAMILY_EXPLANATIONS = (
    "A card that breaks one is called 'Bad card': it is taken back and one penalty card given.",
    "Playing such a card skips a player, reverses the direction, makes someone take cards or "
    "gives another turn; nobody is called for it.",
    "A phrase to say at a given moment; forgetting it is called 'Failure to say ...' (one penalty card).",
)


def rules_of_family(family: int) -> list[int]:
    """Library ids of one family (``VALIDITY``, ``DYNAMICS`` or ``SPEECH``)."""
    return [int(r) for r in np.flatnonzero(family == RULE_FAMILY)]


#: Rules whose violation draws a call (validity and speech); dynamics rules never do.
DISCOVERABLE_RULES: tuple[int, ...] = tuple(rules_of_family(VALIDITY) + rules_of_family(SPEECH))
#: Rules a learned Mao policy never meets in training (every fourth violable rule: validity and
#: speech rules of several kinds), to measure what it learned about learning rules.
HELD_OUT_RULES: tuple[int, ...] = DISCOVERABLE_RULES[1::4]
#: The rules training episodes start with (one drawn per episode): the rest of the library.
TRAINING_RULES: tuple[int, ...] = tuple(r for r in range(N_RULES) if r not in HELD_OUT_RULES)
