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
vector (layout in the ``mao_env.env`` module docstring).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mao_env import cards, core
from mao_env import rules as library

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
#: FORCED[r, card]: cards the next seat takes after a good play of ``card`` (dynamics DRAW rules).
FORCED = np.where((_dynamics & (_kind == library.DRAW))[:, None] & _in_both, _param[:, None], 0).astype(
    np.float32
)


def base_card_phrases(card: int) -> int:
    """Bit set of the phrases the base rules require for a good play of ``card``."""
    bits = 0
    if RANK[card] == cards.SEVEN:
        bits |= 1 << cards.NICE_DAY
    if card != cards.JOKER and SUIT[card] == cards.SPADES:
        bits |= 1 << cards.CARD_NAME
    if card in (cards.JOKER, cards.NINE_OF_DIAMONDS):
        bits |= 1 << cards.BADGER
    return bits


def bits_to_row(bits: int) -> np.ndarray:
    """A phrase bit set as a bool row of length ``N_PHRASES``."""
    return np.array([(bits >> p) & 1 for p in range(N_PHRASES)], dtype=bool)


_BASE_PHRASE_ROWS = np.array([bits_to_row(base_card_phrases(c)) for c in range(cards.N_CARD_TYPES)])


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
    n = hypotheses.shape[0]
    if pending_seven > 0 and RANK[card] != cards.SEVEN:
        return np.zeros(n, dtype=bool)  # only a seven answers a pending seven chain
    suit_match = SUIT[card] == suit_to_follow
    rank_match = RANK[card] == RANK[top]
    forbidding = FORBID[:, card, top].copy()
    if not suit_match and IS_RED[card] == IS_RED[top]:
        forbidding |= ALTERNATE
    wild = hypotheses @ WILD[:, card].astype(np.float32) > 0
    forbidden = hypotheses @ forbidding.astype(np.float32) > 0
    has_order = hypotheses @ ORDER.astype(np.float32) > 0
    order_fails = hypotheses @ (ORDER & ~ORDER_OK[:, card, top]).astype(np.float32) > 0
    rank_clause = np.where(has_order, ~order_fails, rank_match)
    return (suit_match | rank_clause | wild) & ~forbidden


def forced_cards(hypotheses: np.ndarray, card: int) -> np.ndarray:
    """Cards the next seat must take after a good play of ``card`` (float ``[N]``)."""
    return hypotheses @ FORCED[:, card]


@dataclass
class Judgement:
    """The Mao Master's view of one turn under N hypotheses (rows) — see :func:`judge_turn`."""

    valid: np.ndarray  # bool [N]
    required: np.ndarray  # bool [N, P]
    excused: np.ndarray  # bool [N, P]
    allowed: np.ndarray  # bool [N, P]

    def missing(self, said: int) -> np.ndarray:
        """Required phrases not said, Mao aside (bool ``[N, P]``)."""
        out = self.required & ~bits_to_row(said)[None, :]
        out[:, cards.MAO] = False
        return out

    def talking(self, said: int) -> np.ndarray:
        """Phrases said that nothing required, excused or allowed, Mao aside (bool ``[N, P]``)."""
        out = bits_to_row(said)[None, :] & ~self.required & ~self.excused & ~self.allowed
        out[:, cards.MAO] = False
        return out


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
    """Valid / required / excused / allowed phrases of a turn under each hypothesis, as the core's
    ``turn_requirements`` computes them. ``hand_after`` None: unknown (no "Last card"/"Mao" is
    derived); ``valid`` overrides the validity (a judged event's observed verdict)."""
    n = hypotheses.shape[0]
    required = np.zeros((n, N_PHRASES), dtype=bool)
    excused = np.zeros((n, N_PHRASES), dtype=bool)
    allowed = np.zeros((n, N_PHRASES), dtype=bool)
    if played >= 0:
        if valid is None:
            valid = play_validity(hypotheses, played, top, suit_to_follow, pending_seven)
        triggered = SAY_TRIGGER[:, played, top][:, None] & PHRASE_OF  # [R, P]
        phrases = (hypotheses @ triggered.astype(np.float32) > 0) | _BASE_PHRASE_ROWS[played][None, :]
        required |= phrases & valid[:, None]
        excused |= phrases & ~valid[:, None]
        if RANK[played] == cards.JACK and first_suit >= 0:
            suit_phrase = cards.SUIT_PHRASE_0 + first_suit
            allowed[valid, suit_phrase] = True
            excused[~valid, suit_phrase] = True
        if hand_after == 1:
            excused[~valid, cards.LAST_CARD] = True
    else:
        valid = np.zeros(n, dtype=bool)
    seven_phrase = cards.THANK_YOU if thank_you else cards.PENALTY_CARD
    if took_seven > 0:
        required[:, seven_phrase] = True
    elif pending_seven > 0:
        required[~valid, seven_phrase] = True
    if drew:
        required |= hypotheses @ (SAY_DRAW[:, None] & PHRASE_OF).astype(np.float32) > 0
    if hand_after == 1:
        if played < 0:
            required[:, cards.LAST_CARD] = True
        else:
            required[valid, cards.LAST_CARD] = True
    return Judgement(valid, required, excused, allowed)


def mao_due(judgement: Judgement, said: int, hand_after: int, talking: bool = True) -> np.ndarray:
    """Whether "Mao" is due (a flawless winning turn) under each hypothesis, given the phrases said."""
    if hand_after != 0:
        return np.zeros(judgement.valid.shape[0], dtype=bool)
    flawless = ~judgement.missing(said).any(axis=1)
    if talking:
        extra = bits_to_row(said)[None, :] & ~judgement.required & ~judgement.allowed
        extra[:, cards.MAO] = False
        flawless &= ~extra.any(axis=1)
    return judgement.valid & flawless


# ---- observation parsing ---------------------------------------------------------------------
EV_SEAT = 1
EV_KIND = EV_SEAT + cards.MAX_PLAYERS
EV_CARD = EV_KIND + core.N_EVENT_KINDS
EV_PHRASES = EV_CARD + cards.N_CARD_TYPES
EV_CALLS = EV_PHRASES + N_PHRASES
EV_COUNTS = EV_CALLS + core.N_CALL_BITS  # calls, penalty cards, chain, forced, won, forced seat
EV_NAMED = EV_COUNTS + 6
KIND_PLAY, KIND_BAD_CARD, KIND_DRAW, KIND_RULE_ADDED = (
    core.KIND_PLAY,
    core.KIND_BAD_CARD,
    core.KIND_DRAW,
    core.KIND_RULE_ADDED,
)
PHASE_START, PHASE_SPEAK, PHASE_CHOOSE = 0, 1, 2


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
        return bool((self.call_bits >> core.CALL_BIT_BAD_CARD) & 1)

    @property
    def mao_in_vain(self) -> bool:
        return bool((self.call_bits >> core.CALL_BIT_MAO) & 1)


def parse_event(row: np.ndarray) -> PublicEvent:
    seat = int(np.argmax(row[EV_SEAT : EV_SEAT + cards.MAX_PLAYERS]))
    kind = int(np.argmax(row[EV_KIND : EV_KIND + core.N_EVENT_KINDS]))
    card_part = row[EV_CARD : EV_CARD + cards.N_CARD_TYPES]
    named_part = row[EV_NAMED : EV_NAMED + 4]
    return PublicEvent(
        seat=seat,
        kind=kind,
        card=int(np.argmax(card_part)) if card_part.max() > 0.5 else -1,
        phrases=_bits(row[EV_PHRASES : EV_PHRASES + N_PHRASES]),
        call_bits=_bits(row[EV_CALLS : EV_CALLS + core.N_CALL_BITS]),
        n_calls=int(np.rint(row[EV_COUNTS])),
        penalty_cards=int(np.rint(row[EV_COUNTS + 1])),
        chain_cards=int(np.rint(row[EV_COUNTS + 2])),
        forced_draw=int(np.rint(row[EV_COUNTS + 3])),
        won=bool(row[EV_COUNTS + 4] > 0.5),
        named_suit=int(np.argmax(named_part)) if named_part.max() > 0.5 else -1,
    )


def event_layout(obs_dim: int) -> tuple[int, int]:
    """(number of events K, features per event) of an observation of length ``obs_dim``."""
    rest = obs_dim - core.OFF_EVENTS
    for width in (core.EVENT_FEATURES, core.EVENT_FEATURES + N_RULES):
        if rest >= 0 and rest % width == 0 and rest // width <= core.EVENT_SLOTS:
            return rest // width, width
    raise ValueError(
        f"an observation of length {obs_dim} is not a Mao observation (expected "
        f"{core.OFF_EVENTS} + K * {core.EVENT_FEATURES} or K * {core.EVENT_FEATURES + N_RULES})"
    )


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
    hand_sizes: np.ndarray  # by relative seat
    rounds: int
    n_active: int
    authored: frozenset[int]
    event_rows: list[np.ndarray]  # raw event features, most recent first

    @property
    def hand_total(self) -> int:
        return int(self.hand.sum())

    @property
    def n_players(self) -> int:
        return max(2, int(np.count_nonzero(self.hand_sizes)))


def parse_observation(observation: np.ndarray) -> SeatView:
    """Decode a Mao observation vector (any ``n_events``, any reasons mode)."""
    obs = np.asarray(observation, dtype=np.float32)
    n_events, width = event_layout(obs.shape[0])
    played_part = obs[core.OFF_PLAYED : core.OFF_PLAYED + cards.N_CARD_TYPES]
    phase_part = obs[core.OFF_PHASE : core.OFF_PHASE + 3]
    rows = []
    for k in range(n_events):
        row = obs[core.OFF_EVENTS + k * width : core.OFF_EVENTS + (k + 1) * width]
        if row[0] < 0.5:
            break
        rows.append(row)
    return SeatView(
        hand=np.rint(obs[core.OFF_HAND : core.OFF_HAND + cards.N_CARD_TYPES]).astype(np.int64),
        top=int(np.argmax(obs[core.OFF_TOP : core.OFF_TOP + cards.N_CARD_TYPES])),
        suit_to_follow=int(np.argmax(obs[core.OFF_VALID_SUIT : core.OFF_VALID_SUIT + 4])),
        direction=1 if obs[core.OFF_DIRECTION] > 0.5 else -1,
        pending_seven=int(np.rint(obs[core.OFF_PENDING_SEVEN])),
        phase=int(np.argmax(phase_part)) if phase_part.max() > 0.5 else 3,
        played=int(np.argmax(played_part)) if played_part.max() > 0.5 else -1,
        drew=bool(obs[core.OFF_DREW] > 0.5),
        took_seven=int(np.rint(obs[core.OFF_TOOK_SEVEN])),
        said=_bits(obs[core.OFF_SAID : core.OFF_SAID + N_PHRASES]),
        hand_sizes=np.rint(obs[core.OFF_HAND_SIZES : core.OFF_HAND_SIZES + cards.MAX_PLAYERS]).astype(
            np.int64
        ),
        rounds=int(np.rint(obs[core.OFF_ROUND])),
        n_active=int(np.rint(obs[core.OFF_N_RULES])),
        authored=frozenset(
            int(r) for r in np.flatnonzero(obs[core.OFF_AUTHORED : core.OFF_AUTHORED + N_RULES] > 0.5)
        ),
        event_rows=rows,
    )


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
    return judge_turn(
        hypotheses,
        top=view.top,
        suit_to_follow=view.suit_to_follow,
        pending_seven=view.pending_seven,
        played=view.played,
        drew=view.drew,
        took_seven=view.took_seven,
        first_suit=first_suit,
        hand_after=view.hand_total,
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
