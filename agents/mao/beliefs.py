"""What a Mao player can know, in numpy: its observation parsed, and the judge's verdict on a turn
under many hypothetical secret-rule sets at once.

A *hypothesis* is a set of active library rules, one row of a 0/1 matrix ``H`` (``N x R``, R the
library size). The rule tables below are built once from ``mao_env.rules`` (the integer rule rows
and predicate masks, i.e. public knowledge of the library) and follow the Mao Master's reading in
``docs/mao-rules.md``: a card is good if (suit match OR rank clause OR some wild rule) AND NOT some
forbidding rule; speech rules add required phrases; the base phrases (nice day, card name, badger,
last card, Mao, penalty card) come from the base rules. :func:`judge_turn` returns, per hypothesis,
whether the card is good, which phrases are required, excused and allowed — everything the call
depends on — so one function serves the base-rules player (one empty hypothesis), the oracle (the
true rule set) and the Bayesian player (its whole posterior).

Nothing here reads the env's hidden state: :func:`parse_observation` reads one seat's observation
vector, piece by piece by name (:mod:`mao_env.layout`; the table is in the ``mao_env.env`` docstring).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mao_env import cards, core, layout
from mao_env import rules as library
from mao_env.reference import (  # the one Mao Master's judgement, shared with the reference
    base_card_phrases,
    judge_phrases,
    mao_is_due,
    missing_phrases,
    talking_phrases,
)

N_RULES = library.N_RULES
N_PHRASES = cards.N_PHRASES
RANK = cards.CARD_RANK
SUIT = cards.CARD_SUIT
IS_RED = np.array([bool((int(cards.RED_MASK) >> c) & 1) for c in range(cards.N_CARD_TYPES)])
#: Phrases a judgement of another seat's turn cannot settle: whether "Last card" or "Mao" was due
#: depends on that seat's hand size, which the observer does not follow between its own turns.
HAND_SIZE_PHRASES = (1 << cards.LAST_CARD) | (1 << cards.MAO)

# ---- the library as tables ------------------------------------------------------------------
_table = library.RULE_TABLE
_family = _table[:, library.R_FAMILY]
_kind = _table[:, library.R_KIND]
_param = _table[:, library.R_PARAM]


def _membership(column: int) -> np.ndarray:
    masks = library.PREDICATE_MASKS[_table[:, column]]
    return np.array(
        [[bool((int(mask) >> c) & 1) for c in range(cards.N_CARD_TYPES)] for mask in masks], dtype=bool
    )


_in_a = _membership(library.R_PRED_A)  # [R, card]
_in_b = _membership(library.R_PRED_B)
_in_both = _in_a & _in_b
_validity = _family == library.VALIDITY
_speech = _family == library.SPEECH
_dynamics = _family == library.DYNAMICS

#: WILD[r, card]: rule r lets ``card`` go on anything.
WILD = (_validity & (_kind == library.WILD))[:, None] & _in_a
#: FORBID[r, card, top]: rule r forbids ``card`` on ``top`` (FORBID_ON and ONLY_AFTER).
FORBID = (
    (_validity & (_kind == library.FORBID_ON))[:, None, None] & _in_a[:, :, None] & _in_b[:, None, :]
) | ((_validity & (_kind == library.ONLY_AFTER))[:, None, None] & _in_b[:, None, :] & ~_in_a[:, :, None])
#: ALTERNATE_COLOUR rules: forbid a same-colour card that is off the suit to follow.
ALTERNATE = _validity & (_kind == library.ALTERNATE_COLOUR)
#: RANK_ORDER rules replace "same rank" by "ranks above/below the top card".
ORDER = _validity & (_kind == library.RANK_ORDER)
ORDER_OK = (
    np.where(
        (_param > 0)[:, None, None],
        RANK[None, :, None] > RANK[None, None, :],
        RANK[None, :, None] < RANK[None, None, :],
    )
    & ORDER[:, None, None]
)
#: SAY_TRIGGER[r, card, top]: speech rule r requires its phrase for a good play of card on top.
SAY_TRIGGER = ((_speech & (_kind == library.SAY_ON_PLAY))[:, None, None] & _in_both[:, :, None]) | (
    (_speech & (_kind == library.SAY_ON_TOP))[:, None, None] & _in_both[:, None, :]
)
#: SAY_ON_DRAW rules (their phrase is required when the seat draws a card).
SAY_DRAW = _speech & (_kind == library.SAY_ON_DRAW)
#: PHRASE_OF[r, p]: speech rule r's phrase is p.
PHRASE_OF = _speech[:, None] & (_param[:, None] == np.arange(N_PHRASES)[None, :])
# [R, P]: the phrase each SAY_ON_DRAW rule asks of a seat that drew (float32 for the product).
_SAY_DRAW_PHRASES = (SAY_DRAW[:, None] & PHRASE_OF).astype(np.float32)
#: FORCED[r, card]: cards the next seat takes after a good play of ``card`` (dynamics DRAW rules).
FORCED = np.where((_dynamics & (_kind == library.DRAW))[:, None] & _in_both, _param[:, None], 0).astype(
    np.float32
)


def bits_to_row(bits: int) -> np.ndarray:
    """A phrase bit set as a bool row of length ``N_PHRASES``."""
    return np.array([(bits >> p) & 1 for p in range(N_PHRASES)], dtype=bool)


ALL_PHRASES = (1 << N_PHRASES) - 1
# Phrase p's bit value, as float32: sums of distinct values stay below 2**15, exact in float32, and
# a float matrix product is much faster than an integer one.
_PHRASE_VALUES = (1 << np.arange(N_PHRASES)).astype(np.float32)


def rows_to_bits(rows: np.ndarray) -> np.ndarray:
    """Bool phrase rows ``[N, P]`` as int64 bit sets ``[N]``."""
    return (rows.astype(np.float32) @ _PHRASE_VALUES).astype(np.int64)


# Every phrase bit set as a bool row (32768 x 15): a look-up beats shifting bits on every call.
_ROW_OF_BITS = ((np.arange(ALL_PHRASES + 1)[:, None] >> np.arange(N_PHRASES)) & 1).astype(bool)
_ROW_OF_BITS.flags.writeable = False


def bits_to_rows(bits: np.ndarray) -> np.ndarray:
    """int64 phrase bit sets ``[N]`` as bool rows ``[N, P]`` (a fresh array)."""
    return _ROW_OF_BITS[bits]


def hypotheses_from_sets(rule_sets: list[list[int]] | list[set[int]]) -> np.ndarray:
    """The 0/1 float32 matrix of the given rule sets (one row each)."""
    matrix = np.zeros((len(rule_sets), N_RULES), dtype=np.float32)
    for row, rule_set in enumerate(rule_sets):
        for rule in rule_set:
            matrix[row, int(rule)] = 1.0
    return matrix


# ---- the judge on many hypotheses -------------------------------------------------------------
def play_validity(
    hypotheses: np.ndarray, card: int, top: int, suit_to_follow: int, pending_seven: int
) -> np.ndarray:
    """Whether ``card`` is a good play on ``top`` under each hypothesis (bool ``[N]``)."""
    return plays_validity(hypotheses, np.array([card]), top, suit_to_follow, pending_seven)[:, 0]


_WILD_F = WILD.astype(np.float32)
_HAS_ORDER_F = ORDER.astype(np.float32)


def plays_validity_reference(
    hypotheses: np.ndarray, played: np.ndarray, top: int, suit_to_follow: int, pending_seven: int
) -> np.ndarray:
    """The readable reference of :func:`plays_validity` (the same booleans, bool ``[N, C]``), rule
    family by rule family."""
    played = np.asarray(played, dtype=np.int64)
    suit_match = SUIT[played] == suit_to_follow  # [C]
    rank_match = RANK[played] == RANK[top]
    same_colour_off_suit = ~suit_match & (IS_RED[played] == IS_RED[top])
    forbidding = FORBID[:, played, top] | (ALTERNATE[:, None] & same_colour_off_suit[None, :])  # [R, C]
    wild = hypotheses @ _WILD_F[:, played] > 0  # [N, C]
    forbidden = hypotheses @ forbidding.astype(np.float32) > 0
    has_order = (hypotheses @ _HAS_ORDER_F > 0)[:, None]
    order_fails = hypotheses @ (ORDER[:, None] & ~ORDER_OK[:, played, top]).astype(np.float32) > 0
    rank_clause = np.where(has_order, ~order_fails, rank_match[None, :])
    valid = (suit_match[None, :] | rank_clause | wild) & ~forbidden
    if pending_seven > 0:
        valid &= (RANK[played] == cards.SEVEN)[None, :]  # only a seven answers a pending chain
    return valid


@functools.lru_cache(maxsize=1024)  # a few hundred (top, suit) contexts exist
def _validity_table(top: int, suit_to_follow: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For one (top card, suit to follow): the rule columns of :func:`plays_validity_reference` for
    every card at once, ``[R, 3 * 53 + 1]`` float32 (wild, forbidding, rank-order failure per card,
    then "has a rank order"), and per card whether it follows suit, matches the top's rank and is a
    seven. Built once per context (a game sees few): the per-decision work is then one product."""
    every = np.arange(cards.N_CARD_TYPES)
    suit_match = SUIT[every] == suit_to_follow
    same_colour_off_suit = ~suit_match & (IS_RED[every] == IS_RED[top])
    forbidding = FORBID[:, every, top] | (ALTERNATE[:, None] & same_colour_off_suit[None, :])
    order_fails = ORDER[:, None] & ~ORDER_OK[:, every, top]
    columns = np.concatenate([WILD, forbidding, order_fails, ORDER[:, None]], axis=1).astype(np.float32)
    columns.flags.writeable = False
    return columns, suit_match, RANK[every] == RANK[top], RANK[every] == cards.SEVEN


def plays_validity(
    hypotheses: np.ndarray, played: np.ndarray, top: int, suit_to_follow: int, pending_seven: int
) -> np.ndarray:
    """Whether each card of ``played`` is a good play on ``top`` under each hypothesis (bool
    ``[N, C]``): the suit to follow, or the rank clause (the top card's rank, or a rank-order
    rule's order), or a wild rule, and no forbidding rule (an alternate-colour rule forbids a
    same-colour card off the suit); with a seven chain pending, only a seven.

    The same booleans as :func:`plays_validity_reference` (the test suite checks it) from one
    product with a cached table: each column counts a hypothesis's rules (0/1 values, an exact
    integer in float32 whatever the order of the sum), read only as "more than none"."""
    played = np.asarray(played, dtype=np.int64)
    n_cards = cards.N_CARD_TYPES
    columns, suit_match, rank_match, seven = _validity_table(int(top), int(suit_to_follow))
    picked = np.concatenate([played, played + n_cards, played + 2 * n_cards, [3 * n_cards]])
    counts = hypotheses @ columns[:, picked] > 0  # [N, 3C + 1]
    n_played = played.size
    wild = counts[:, :n_played]
    forbidden = counts[:, n_played : 2 * n_played]
    order_fails = counts[:, 2 * n_played : 3 * n_played]
    has_order = counts[:, 3 * n_played :]
    rank_clause = np.where(has_order, ~order_fails, rank_match[played][None, :])
    valid = (suit_match[played][None, :] | rank_clause | wild) & ~forbidden
    if pending_seven > 0:
        valid &= seven[played][None, :]  # only a seven answers a pending chain
    return valid


def forced_cards(hypotheses: np.ndarray, card: int) -> np.ndarray:
    """Cards the next seat must take after a good play of ``card`` (float ``[N]``)."""
    return hypotheses @ FORCED[:, card]


@dataclass
class Judgement:
    """The Mao Master's view of one turn under N hypotheses (rows) — see :func:`judge_turn`.
    The phrase sets are kept as int64 bit sets ``[N]`` (what the shared judge speaks) and read as
    bool rows ``[N, P]`` through ``required``, ``excused`` and ``allowed``."""

    valid: np.ndarray  # bool [N]
    required_bits: np.ndarray  # int64 [N]
    excused_bits: np.ndarray  # int64 [N]
    allowed_bits: np.ndarray  # int64 [N]

    @functools.cached_property
    def required(self) -> np.ndarray:
        return bits_to_rows(self.required_bits)

    @functools.cached_property
    def excused(self) -> np.ndarray:
        return bits_to_rows(self.excused_bits)

    @functools.cached_property
    def allowed(self) -> np.ndarray:
        return bits_to_rows(self.allowed_bits)

    def missing(self, said: int) -> np.ndarray:
        """Required phrases not said, Mao aside (bool ``[N, P]``)."""
        return bits_to_rows(missing_phrases(self.required_bits, said))

    def talking(self, said: int) -> np.ndarray:
        """Phrases said that nothing required, excused or allowed, Mao aside (bool ``[N, P]``)."""
        return bits_to_rows(talking_phrases(said, self.required_bits, self.excused_bits, self.allowed_bits))


def judge_turn(
    hypotheses: np.ndarray,
    *,
    top: int,
    suit_to_follow: int,
    pending_seven: int,
    played: int,
    drew: bool,
    took_seven: int,
    first_suit: int,
    hand_after: int | None,
    valid: np.ndarray | None = None,
    thank_you: bool = False,
) -> Judgement:
    """Valid / required / excused / allowed phrases of a turn under each hypothesis, judged by the
    reference's :func:`~mao_env.reference.judge_phrases` (the core's ``_turn_requirements``).
    ``hand_after`` None: unknown (no "Last card"/"Mao" is derived); ``valid`` overrides the
    validity (a judged event's observed verdict)."""
    n = hypotheses.shape[0]
    # The phrases a card and a draw ask for: one bit set per hypothesis, or one int for all.
    card_bits: np.ndarray | int = 0
    draw_bits: np.ndarray | int = 0
    if played >= 0:
        if valid is None:
            valid = play_validity(hypotheses, played, top, suit_to_follow, pending_seven)
        card_bits = base_card_phrases(played)
        triggering = SAY_TRIGGER[:, played, top]  # [R]: speech rules this play would trigger
        if triggering.any():
            said_by_rules = hypotheses @ (triggering[:, None] & PHRASE_OF).astype(np.float32) > 0
            card_bits = rows_to_bits(said_by_rules) | card_bits
    else:
        valid = np.zeros(n, dtype=bool)
    if drew:
        draw_bits = rows_to_bits(hypotheses @ _SAY_DRAW_PHRASES > 0)
    valid = np.asarray(valid, dtype=bool)
    # Hypotheses differ only in the verdict and in the phrases their speech rules ask a card or a
    # draw for, and the judge only ORs those phrases into its answer (each piece of it is "what it
    # is without them" plus them, masked: the test suite checks this). So per verdict (good card or
    # bad) three calls of the shared judge, with none of those phrases and with all of either,
    # judge every hypothesis at once.
    turn = (played, first_suit, took_seven, pending_seven, thank_you, drew, hand_after)

    def judged(probes: tuple[tuple[int, int, int], ...]) -> list:  # required, excused, allowed
        plain, via_card, via_draw = probes
        return [plain[k] | (card_bits & via_card[k]) | (draw_bits & via_draw[k]) for k in range(3)]

    if n and valid.all() == valid.any():  # one verdict for every hypothesis (the common case)
        pieces = judged(turn_probes(turn, bool(valid[0])))
    else:
        if_valid, if_not = judged(turn_probes(turn, True)), judged(turn_probes(turn, False))
        pieces = [np.where(valid, good, bad) for good, bad in zip(if_valid, if_not, strict=True)]
    return Judgement(valid, *(_per_row(bits, n) for bits in pieces))


def _per_row(bits: np.ndarray | int, n: int) -> np.ndarray:
    """Bit sets as an int64 array ``[n]`` (one int stands for every row)."""
    return bits if isinstance(bits, np.ndarray) else np.full(n, bits, dtype=np.int64)


@functools.lru_cache(maxsize=1 << 14)
def turn_probes(turn: tuple, valid: bool) -> tuple[tuple[int, int, int], ...]:
    """The shared judge's (required, excused, allowed) for one turn and verdict, with no card or
    draw phrases, with every card phrase and with every draw phrase (cached: a game repeats few
    turns)."""
    played, first_suit, took_seven, pending_seven, thank_you, drew, hand_after = turn
    return tuple(
        judge_phrases(
            played=played, valid=valid, card_phrases=card_phrases, first_suit=first_suit,
            took_seven=took_seven, pending_seven=pending_seven, thank_you=thank_you, drew=drew,
            draw_phrases=draw_phrases, hand_after=hand_after,
        )[:3]
        for card_phrases, draw_phrases in ((0, 0), (ALL_PHRASES, 0), (0, ALL_PHRASES))
    )  # fmt: skip


def mao_due(judgement: Judgement, said: int, hand_after: int, talking: bool = True) -> np.ndarray:
    """Whether "Mao" is due (a flawless winning turn) under each hypothesis, given the phrases said
    (:func:`mao_env.reference.mao_is_due`, elementwise)."""
    return mao_is_due(
        valid=judgement.valid,
        hand_after=hand_after,
        required=judgement.required_bits,
        allowed=judgement.allowed_bits,
        said=said,
        talking=talking,
    )


# ---- observation parsing (pieces read by name from mao_env.layout) ------------------------------
KIND_PLAY, KIND_BAD_CARD, KIND_DRAW, KIND_RULE_ADDED, KIND_CALL, KIND_POINT_OF_ORDER = (
    layout.KIND_PLAY,
    layout.KIND_BAD_CARD,
    layout.KIND_DRAW,
    layout.KIND_RULE_ADDED,
    layout.KIND_CALL,
    layout.KIND_POINT_OF_ORDER,
)
PHASE_START, PHASE_SPEAK, PHASE_CHOOSE, PHASE_CALL = (
    core.PH_START,
    core.PH_SPEAK,
    core.PH_CHOOSE_RULE,
    core.PH_CALL,
)
_STATE = layout.SLICES
_EVENT = layout.EVENT_SLICES


def _bits(values: np.ndarray) -> int:
    return int(sum(1 << i for i in np.flatnonzero(values > 0.5)))


@dataclass(frozen=True)
class PublicEvent:
    """One public event of the observation's history (seat relative to the observer)."""

    seat: int
    kind: int
    card: int  # -1 for draws and new rules
    phrases: int  # bit set
    call_bits: int  # failure to say p (bit p), then bad card, talking, Mao in vain
    bad_call_bits: int  # (players' calls) the reasons called wrongly, same numbering
    n_calls: int
    penalty_cards: int
    chain_cards: int
    forced_draw: int
    won: bool
    named_suit: int  # -1 if none

    @property
    def failure_bits(self) -> int:
        return self.call_bits & ((1 << N_PHRASES) - 1)

    @property
    def bad_card_called(self) -> bool:
        return bool((self.call_bits >> layout.CALL_BIT_BAD_CARD) & 1)

    @property
    def mao_in_vain(self) -> bool:
        return bool((self.call_bits >> layout.CALL_BIT_MAO) & 1)


def _one_hot(values: np.ndarray) -> int:
    """The index of a one-hot piece, -1 when it is all zero."""
    return int(np.argmax(values)) if values.max() > 0.5 else -1


def _count(values: np.ndarray) -> int:
    return int(np.rint(values[0]))


def parse_event(row: np.ndarray) -> PublicEvent:
    return PublicEvent(
        seat=int(np.argmax(row[_EVENT["seat"]])),
        kind=int(np.argmax(row[_EVENT["kind"]])),
        card=_one_hot(row[_EVENT["card"]]),
        phrases=_bits(row[_EVENT["phrases"]]),
        call_bits=_bits(row[_EVENT["calls"]]),
        bad_call_bits=_bits(row[_EVENT["bad_calls"]]),
        n_calls=_count(row[_EVENT["n_calls"]]),
        penalty_cards=_count(row[_EVENT["penalty_cards"]]),
        chain_cards=_count(row[_EVENT["chain_cards"]]),
        forced_draw=_count(row[_EVENT["forced_draw"]]),
        won=bool(row[_EVENT["won"]][0] > 0.5),
        named_suit=_one_hot(row[_EVENT["named_suit"]]),
    )


def parse_events(rows: list[np.ndarray]) -> list[PublicEvent]:
    """:func:`parse_event` of each of ``rows`` (event rows of one width), the pieces read for all
    rows at once (the same events: the test suite checks it)."""
    if not rows:
        return []
    block = np.stack(rows)

    def piece(name: str) -> np.ndarray:
        return block[:, _EVENT[name]]

    columns = {
        "seat": np.argmax(piece("seat"), axis=1),
        "kind": np.argmax(piece("kind"), axis=1),
        "card": _one_hots(piece("card")),
        "phrases": _bit_sets(piece("phrases")),
        "call_bits": _bit_sets(piece("calls")),
        "bad_call_bits": _bit_sets(piece("bad_calls")),
        "n_calls": _counts(piece("n_calls")),
        "penalty_cards": _counts(piece("penalty_cards")),
        "chain_cards": _counts(piece("chain_cards")),
        "forced_draw": _counts(piece("forced_draw")),
        "won": piece("won")[:, 0] > 0.5,
        "named_suit": _one_hots(piece("named_suit")),
    }
    # The columns are in the order of PublicEvent's fields, passed by position: no mapping per
    # event (the test of these events against parse_event's fails on a column out of order).
    return [PublicEvent(*values) for values in zip(*(v.tolist() for v in columns.values()), strict=True)]


def event_layout(obs_dim: int) -> tuple[int, int]:
    """(number of events K, features per event) of an observation of length ``obs_dim``."""
    rest = obs_dim - layout.OFF_EVENTS
    for width in (layout.event_width(False), layout.event_width(True)):
        if rest >= 0 and rest % width == 0 and rest // width <= core.EVENT_SLOTS:
            return rest // width, width
    raise ValueError(
        f"an observation of length {obs_dim} is not a Mao observation (expected "
        f"{layout.OFF_EVENTS} + K * {layout.event_width(False)} or K * {layout.event_width(True)})"
    )


_ZERO = np.float32(0.0)


@dataclass
class SeatView:
    """One seat's observation, decoded."""

    hand: np.ndarray  # int counts [53]
    top: int
    suit_to_follow: int
    direction: int
    pending_seven: int
    phase: int
    played: int
    drew: bool
    took_seven: int
    said: int
    mover: int  # (call window) relative seat whose turn is judged, -1 otherwise
    hand_sizes: np.ndarray  # by relative seat
    rounds: int
    n_active: int
    known: frozenset[int]  # rules it knows are in force: its own, and those refused to it
    event_rows: list[np.ndarray]  # raw event features, most recent first

    @property
    def hand_total(self) -> int:
        return int(self.hand.sum())

    @functools.cached_property
    def event_keys(self) -> list[bytes]:
        """Each of ``event_rows`` as bytes, equal exactly when the rows are (``np.array_equal``;
        -0.0 becomes 0.0 first, and an observation holds no NaN). A posterior lines each new
        event window up with the previous one by these: bytes compare without numpy's per-call
        cost, and each row's are made once."""
        return [(row + _ZERO).tobytes() for row in self.event_rows]

    @property
    def n_players(self) -> int:
        return max(2, int(np.count_nonzero(self.hand_sizes)))


def parse_observation(observation: np.ndarray) -> SeatView:
    """Decode a Mao observation vector (any ``n_events``, any reasons mode)."""
    obs = np.asarray(observation, dtype=np.float32)
    n_events, width = event_layout(obs.shape[0])
    phase = _one_hot(obs[_STATE["phase"]])
    rows = []
    for k in range(n_events):
        row = obs[layout.OFF_EVENTS + k * width : layout.OFF_EVENTS + (k + 1) * width]
        if row[layout.EV_PRESENT] < 0.5:
            break
        rows.append(row)
    return SeatView(
        hand=np.rint(obs[_STATE["hand"]]).astype(np.int64),
        top=int(np.argmax(obs[_STATE["top"]])),
        suit_to_follow=int(np.argmax(obs[_STATE["valid_suit"]])),
        direction=1 if obs[_STATE["direction"]][0] > 0.5 else -1,
        pending_seven=_count(obs[_STATE["pending_seven"]]),
        phase=phase if phase >= 0 else core.PH_OVER,
        played=_one_hot(obs[_STATE["played"]]),
        drew=bool(obs[_STATE["drew"]][0] > 0.5),
        took_seven=_count(obs[_STATE["took_seven"]]),
        said=_bits(obs[_STATE["said"]]),
        mover=_one_hot(obs[_STATE["mover"]]),
        hand_sizes=np.rint(obs[_STATE["hand_sizes"]]).astype(np.int64),
        rounds=_count(obs[_STATE["rounds"]]),
        n_active=_count(obs[_STATE["n_rules"]]),
        known=frozenset(int(r) for r in np.flatnonzero(obs[_STATE["known"]] > 0.5)),
        event_rows=rows,
    )


def _one_hots(values: np.ndarray) -> np.ndarray:
    """:func:`_one_hot` of every row of ``values [M, width]``."""
    return np.where(values.max(axis=1) > 0.5, np.argmax(values, axis=1), -1)


def _counts(values: np.ndarray) -> np.ndarray:
    """:func:`_count` of every row of ``values [M, width]``."""
    return np.rint(values[:, 0]).astype(np.int64)


def _bit_sets(values: np.ndarray) -> np.ndarray:
    """:func:`_bits` of every row of ``values [M, width]`` (int64: widths stay below 63)."""
    return (values > 0.5).astype(np.int64) @ (np.int64(1) << np.arange(values.shape[1], dtype=np.int64))


def parse_observations(observations: np.ndarray, rows: np.ndarray) -> list[SeatView]:
    """:func:`parse_observation` of each of ``rows`` of ``observations [M, obs_dim]`` (float32),
    the pieces read for all rows at once. The views equal the one-row parser's (the test suite
    checks it); their event rows are views of ``observations``, as that parser's are of its row."""
    rows = np.asarray(rows, dtype=np.int64)
    if not rows.size:
        return []
    obs = observations[rows]
    n_events, width = event_layout(observations.shape[1])

    def piece(name: str) -> np.ndarray:
        return obs[:, _STATE[name]]

    phase = _one_hots(piece("phase"))
    events = obs[:, layout.OFF_EVENTS : layout.OFF_EVENTS + n_events * width].reshape(-1, n_events, width)
    # The one-row parser stops at the first event slot that is not present.
    absent = events[:, :, layout.EV_PRESENT] < 0.5
    n_present = np.where(absent.any(axis=1), np.argmax(absent, axis=1), n_events)
    columns = {
        "top": np.argmax(piece("top"), axis=1),
        "suit_to_follow": np.argmax(piece("valid_suit"), axis=1),
        "direction": np.where(piece("direction")[:, 0] > 0.5, 1, -1),
        "pending_seven": _counts(piece("pending_seven")),
        "phase": np.where(phase >= 0, phase, core.PH_OVER),
        "played": _one_hots(piece("played")),
        "drew": piece("drew")[:, 0] > 0.5,
        "took_seven": _counts(piece("took_seven")),
        "said": _bit_sets(piece("said")),
        "mover": _one_hots(piece("mover")),
        "rounds": _counts(piece("rounds")),
        "n_active": _counts(piece("n_rules")),
    }
    scalars = {name: values.tolist() for name, values in columns.items()}
    hands = np.rint(piece("hand")).astype(np.int64)
    hand_sizes = np.rint(piece("hand_sizes")).astype(np.int64)
    known_rows, known_rules = np.nonzero(piece("known") > 0.5)
    known = [frozenset()] * rows.size
    for index, rules in zip(*_split_by_row(known_rows, known_rules), strict=True):
        known[index] = frozenset(rules)
    # Every row's event keys (``SeatView.event_keys``) cut from one byte string: a slice of bytes
    # costs a tenth of a row's own ``tobytes``, and the bytes are the same.
    key_bytes = width * events.itemsize
    blob = (events + _ZERO).tobytes()
    views = []
    for index, (row, n_events_seen) in enumerate(zip(rows.tolist(), n_present.tolist(), strict=True)):
        source = observations[row]
        event_rows = [
            source[layout.OFF_EVENTS + k * width : layout.OFF_EVENTS + (k + 1) * width]
            for k in range(n_events_seen)
        ]
        view = SeatView(
            hand=hands[index],
            hand_sizes=hand_sizes[index],
            known=known[index],
            event_rows=event_rows,
            **{name: values[index] for name, values in scalars.items()},
        )
        start = index * n_events * key_bytes
        view.__dict__["event_keys"] = [
            blob[offset : offset + key_bytes]
            for offset in range(start, start + n_events_seen * key_bytes, key_bytes)
        ]
        views.append(view)
    return views


def _split_by_row(row_of: np.ndarray, values: np.ndarray) -> tuple[list[int], list[list[int]]]:
    """``values`` grouped by ``row_of`` (sorted, as ``np.nonzero`` gives them): (rows, values)."""
    starts = np.flatnonzero(np.r_[True, row_of[1:] != row_of[:-1]]) if row_of.size else np.zeros(0, int)
    groups = np.split(values, starts[1:]) if row_of.size else []
    return row_of[starts].tolist(), [group.tolist() for group in groups]


def first_suit_said(said: int, played: int) -> int:
    """The suit a Jack's player named, read from the phrases said (the lowest suit phrase when
    several were said: the observation keeps the set, not the order)."""
    if played < 0 or RANK[played] != cards.JACK:
        return -1
    for suit in range(4):
        if (said >> (cards.SUIT_PHRASE_0 + suit)) & 1:
            return suit
    return -1


def own_turn_judgement(
    hypotheses: np.ndarray, view: SeatView, first_suit: int, thank_you: bool = False
) -> Judgement:
    """The judgement of the observer's own turn so far (everything is in its observation)."""
    return _judge_view(hypotheses, view, first_suit, view.hand_total, thank_you)


def _judge_view(
    hypotheses: np.ndarray, view: SeatView, first_suit: int, hand_after: int, thank_you: bool
) -> Judgement:
    """``judge_turn`` of the turn a seat's view shows (its own, or the one in a call window)."""
    return judge_turn(
        hypotheses,
        top=view.top,
        suit_to_follow=view.suit_to_follow,
        pending_seven=view.pending_seven,
        played=view.played,
        drew=view.drew,
        took_seven=view.took_seven,
        first_suit=first_suit,
        hand_after=hand_after,
        thank_you=thank_you,
    )


def predicted_calls(
    judgement: Judgement, said: int, played: int, hand_after: int, talking: bool = True
) -> np.ndarray:
    """Number of calls an own turn ended now would draw, per hypothesis (Mao included)."""
    calls = judgement.missing(said).sum(axis=1)
    if played >= 0:
        calls = calls + (~judgement.valid).astype(np.int64)
    if talking:
        calls = calls + judgement.talking(said).sum(axis=1)
    due = mao_due(judgement, said, hand_after, talking)
    said_mao = bool((said >> cards.MAO) & 1)
    return calls + (~due if said_mao else due).astype(np.int64)


def turn_faults(
    hypotheses: np.ndarray, view: SeatView, *, talking: bool = True, thank_you: bool = False
) -> np.ndarray:
    """In a call window: which call reasons the turn under judgement (in ``view``) deserves under
    each hypothesis, bool ``[N, N_CALL_REASONS]`` (the Master's faults: a bad card, each missing
    phrase, talking, "Mao" in vain or forgotten). The mover's hand size is in the view, so "Last
    card" and "Mao" are judged too."""
    hand_after = int(view.hand_sizes[view.mover])
    judgement = _judge_view(hypotheses, view, first_suit_said(view.said, view.played), hand_after, thank_you)
    faults = np.zeros((hypotheses.shape[0], cards.N_CALL_REASONS), dtype=bool)
    faults[:, : cards.N_PHRASES] = judgement.missing(view.said)
    if view.played >= 0:
        faults[:, cards.CALL_REASON_BAD_CARD] = ~judgement.valid
    if talking:
        faults[:, cards.CALL_REASON_TALKING] = judgement.talking(view.said).any(axis=1)
    due = mao_due(judgement, view.said, hand_after, talking)
    if (view.said >> cards.MAO) & 1:
        faults[:, cards.CALL_REASON_MAO] = ~due
    else:
        faults[:, cards.MAO] = due
    return faults
