"""Many seats' Mao beliefs in one call: the posterior updates of every row of a step
(:func:`observe_all`) and the judgements the belief inputs and the scripted players read
(:func:`own_turns_judged`, :func:`turns_faults`, :func:`held_cards_valid`), each one Numba kernel
over all rows' hypotheses; and the beliefs weighed from those judgements
(:func:`play_chances_rows`, :func:`speech_chances_rows`, :func:`fault_chances_rows`, the batched
twins of the scripted players' ``play_chances``, ``speech_chances`` and ``fault_chances``).

:meth:`RulePosterior.observe` stays the reference. :func:`observe_all` runs its three steps
(``take_in``, ``weigh_events``, ``close_observation``) with every row's new events parsed in one
call and the middle step replaced, for the rows whose events the kernel covers: those with no rule
added among the new events, whoever calls the faults. The Mao Master's calls (reasons shown or
hidden) are weighed as ``RulePosterior._judge_event`` weighs them, with the verdict seen; the
players' calls as ``RulePosterior._calls_consistent`` does, each rule set judging the card itself
(a pending seven chain included) and agreeing with every call made, standing or bad. A row whose
new events add a rule (the support branches between two events) runs the reference step.

How the kernels stay bit for bit the reference:

- a hypothesis is its rule set as an int64 bit set (the library has fewer than 63 rules); each
  turn's rule tables are bit sets too (the rules that make the card wild, forbid it, ...), so
  "some rule of the hypothesis does X" is ``hypothesis & rules != 0``, what the reference's 0/1
  matrix products compare with zero;
- the judge's phrases come from the same cached probes as :func:`~madiao_mao.agents.mao.beliefs.judge_turn`
  (the shared judge's answer with no rule phrases, with all card phrases, with all draw phrases),
  OR-ed with the phrases the hypothesis's speech rules ask for;
- a weight is multiplied by 1 or ``eps`` and divided by the row's sum, the sum taken in numpy's
  own order (pairwise, blocks of 8 lanes: :func:`pairwise_sum`), so every float is the same;
- a belief (``weights @ matrix``) is left to numpy, one product per row as in the reference: the
  kernels make the 0/1 matrices, which are the reference's exactly.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np

from cardgame_core.jit import njit
from madiao_mao.agents.mao import beliefs
from madiao_mao.agents.mao.beliefs import PublicEvent, SeatView, parse_events
from madiao_mao.agents.mao.players import PRUNE_BELOW, RulePosterior, SpeechChances
from mao_env import cards, layout
from mao_env.reference import base_card_phrases

N_RULES = beliefs.N_RULES
if N_RULES > 62:
    raise ImportError(f"a rule set must fit an int64 bit set: the library has {N_RULES} rules")

_RULE_VALUES = np.int64(1) << np.arange(N_RULES, dtype=np.int64)


def rule_bits(rows: np.ndarray, axis: int = 0) -> np.ndarray:
    """Boolean rows over the rules (the rule axis ``axis``) as int64 bit sets."""
    return np.tensordot(np.moveaxis(np.asarray(rows, dtype=bool), axis, -1).astype(np.int64), _RULE_VALUES, 1)


# Per card (and top card): the rules that do something to it, as bit sets (module doc).
WILD_RULES = rule_bits(beliefs.WILD)  # [card]
FORBID_RULES = rule_bits(beliefs.FORBID)  # [card, top]
ALTERNATE_RULES = int(rule_bits(beliefs.ALTERNATE))
ORDER_RULES = int(rule_bits(beliefs.ORDER))
ORDER_FAIL_RULES = rule_bits(beliefs.ORDER[:, None, None] & ~beliefs.ORDER_OK)  # [card, top]
TRIGGER_RULES = rule_bits(beliefs.SAY_TRIGGER)  # [card, top]
SAY_DRAW_RULES = int(rule_bits(beliefs.SAY_DRAW))
FORCING_RULES = rule_bits(beliefs.FORCED != 0)  # [card]
#: The phrase bit each speech rule asks for (0 for other rules), and the cards each DRAW rule
#: makes the next seat take (FORCED's value wherever the rule applies).
PHRASE_OF_RULE = (beliefs.PHRASE_OF.astype(np.int64) << np.arange(cards.N_PHRASES)).sum(axis=1)
FORCED_OF_RULE = np.array(
    [int(row[row != 0][0]) if row.any() else 0 for row in beliefs.FORCED], dtype=np.int64
)

_LAST_CARD_BIT = 1 << cards.LAST_CARD
_MAO_BIT = 1 << cards.MAO

# The columns of a judged turn: an event a posterior weighs, the seat's own turn so far, or one
# held card at the start of a turn (only the validity columns, and where its answer goes).
(
    T_ROW,  # the row whose hypotheses judge it
    # validity of the card played on the top card
    T_SUIT_MATCH,
    T_RANK_MATCH,
    T_WILD,  # rule bit sets: the rules that make the card wild, forbid it, fail its rank order
    T_FORBID,
    T_ORDER_FAIL,
    T_NEVER_VALID,  # a seven chain is pending and the card is not a seven
    # phrases
    T_TRIGGER,  # the speech rules the card triggers
    T_CARD_PHRASES,  # the base rules' phrases of the card (0 if none played)
    T_DRAW_RULES,  # SAY_DRAW_RULES if the seat drew, else 0
    T_GOOD,  # the probes of a good card: required, excused, allowed with no rule phrase, with
    _T_GOOD_2,  # every card phrase, with every draw phrase (``beliefs.turn_probes``) ...
    _T_GOOD_3,
    _T_GOOD_4,
    _T_GOOD_5,
    _T_GOOD_6,
    _T_GOOD_7,
    _T_GOOD_8,
    _T_GOOD_9,
    T_BAD,  # ... and of a bad card (or none)
    _T_BAD_2,
    _T_BAD_3,
    _T_BAD_4,
    _T_BAD_5,
    _T_BAD_6,
    _T_BAD_7,
    _T_BAD_8,
    _T_BAD_9,
    T_SAID,
    T_TALKING,  # the row's table has talking calls
    # an event: what it showed
    EV_CHECK_VALID,  # 1: the card's verdict must be the one seen
    EV_GOOD,  # the verdict seen (1 a good play; 0 a bad card or a draw)
    EV_CHECK_FORCED,
    EV_FORCING,  # the DRAW rules of the card
    EV_FORCED_DRAW,
    EV_FAILURES,  # the failures called, "Last card" and "Mao" aside
    EV_TALKING_CALLS,  # the talking calls seen
    EV_SLACK,  # 1 if "Last card" was said (due or talking: either)
    EV_N_CALLS,
    EV_HIDDEN_REASONS,  # the table hides the calls' reasons
    EV_BAD_CARD,  # (hidden reasons) 1 for a bad card, counted among the calls
    # an event of the players' calls: the calls made on it (EV_CHECK_VALID / EV_GOOD: the verdict
    # a call showed, a "bad card" or a bad call of one)
    EV_PLAYERS_CALL,  # 1: the players called (the columns below), 0: the Mao Master did
    EV_CALLED,  # the failures called: each must be missing
    EV_BAD_CALLED,  # the failures called wrongly: none may be missing
    EV_TALKING_CALLED,  # 1: a talking call stands (some phrase was talking), -1: a bad one (none), 0
    # the seat's own turn
    O_PLAYED,  # 1 if it played a card
    O_HAND_AFTER,
    # a held card at the start of a turn: its answer goes to out[start + hypothesis * count + index]
    C_OUT_START,
    C_COUNT,
    C_INDEX,
    N_TURN_COLUMNS,
) = range(51)
_VALIDITY = slice(T_SUIT_MATCH, T_NEVER_VALID + 1)
_PROBES = slice(T_GOOD, T_BAD + 9)


@njit
def pairwise_sum(values: np.ndarray, start: int, n: int) -> float:
    """``values[start:start + n].sum()`` as numpy sums a contiguous float64 array (the same
    float): pairwise halves down to blocks of at most 128, each summed in 8 lanes."""
    if n < 8:
        total = 0.0
        for i in range(n):
            total += values[start + i]
        return total
    if n <= 128:
        lanes = values[start : start + 8].copy()
        i = 8
        while i < n - (n % 8):
            for lane in range(8):
                lanes[lane] += values[start + i + lane]
            i += 8
        total = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + (
            (lanes[4] + lanes[5]) + (lanes[6] + lanes[7])
        )
        while i < n:
            total += values[start + i]
            i += 1
        return total
    half = n // 2
    half -= half % 8
    return pairwise_sum(values, start, half) + pairwise_sum(values, start + half, n - half)


@njit
def _popcount(bits: int) -> int:
    count = 0
    while bits:
        bits &= bits - 1
        count += 1
    return count


@njit
def _sum_over_rules(rules: int, value_of_rule: np.ndarray, bitwise_or: bool) -> int:
    """The values of the rules in the bit set ``rules``, OR-ed or added up."""
    total = 0
    rule = 0
    while rules:
        if rules & 1:
            total = (total | value_of_rule[rule]) if bitwise_or else total + value_of_rule[rule]
        rules >>= 1
        rule += 1
    return total


@njit
def _valid(hypothesis: int, turn: np.ndarray, order_rules: int) -> bool:
    """Whether the turn's card is a good play under the rule set (``beliefs.plays_validity``)."""
    if turn[T_NEVER_VALID]:
        return False
    if hypothesis & order_rules:
        rank_clause = (hypothesis & turn[T_ORDER_FAIL]) == 0
    else:
        rank_clause = turn[T_RANK_MATCH] != 0
    return (turn[T_SUIT_MATCH] != 0 or rank_clause or (hypothesis & turn[T_WILD]) != 0) and (
        hypothesis & turn[T_FORBID]
    ) == 0


@njit
def _phrases(hypothesis: int, turn: np.ndarray, valid: bool, phrase_of_rule: np.ndarray) -> tuple:
    """(required, excused, allowed) bit sets of the turn under the rule set, given its verdict
    (``beliefs.judge_turn``: the probes OR-ed with the phrases the rule set's speech rules ask)."""
    card_phrases = turn[T_CARD_PHRASES] | _sum_over_rules(hypothesis & turn[T_TRIGGER], phrase_of_rule, True)
    draw_phrases = _sum_over_rules(hypothesis & turn[T_DRAW_RULES], phrase_of_rule, True)
    probes = T_GOOD if valid else T_BAD
    return (
        turn[probes] | (card_phrases & turn[probes + 3]) | (draw_phrases & turn[probes + 6]),
        turn[probes + 1] | (card_phrases & turn[probes + 4]) | (draw_phrases & turn[probes + 7]),
        turn[probes + 2] | (card_phrases & turn[probes + 5]) | (draw_phrases & turn[probes + 8]),
    )


@njit
def _forced_draw_agrees(hypothesis: int, event: np.ndarray, forced_of_rule: np.ndarray) -> bool:
    """Whether the cards the next seat was made to take are the rule set's (when the event says
    to check them): the last test of both kinds of event."""
    if not event[EV_CHECK_FORCED]:
        return True
    return _sum_over_rules(hypothesis & event[EV_FORCING], forced_of_rule, False) == event[EV_FORCED_DRAW]


@njit
def _explains(hypothesis: int, event: np.ndarray, order_rules: int, phrase_of_rule: np.ndarray,
              forced_of_rule: np.ndarray) -> bool:  # fmt: skip
    """Whether the rule set explains the event (``RulePosterior._judge_event``, the Mao Master's
    calls)."""
    good = event[EV_GOOD] != 0
    if event[EV_CHECK_VALID] and _valid(hypothesis, event, order_rules) != good:
        return False
    required, excused, allowed = _phrases(hypothesis, event, good, phrase_of_rule)
    said = event[T_SAID]
    missing = required & ~said & ~_MAO_BIT & ~_LAST_CARD_BIT
    talked = 0
    if event[T_TALKING]:
        talked = said & ~required & ~excused & ~allowed & ~_MAO_BIT & ~_LAST_CARD_BIT
    if event[EV_HIDDEN_REASONS]:
        extra = event[EV_N_CALLS] - (_popcount(missing) + _popcount(talked) + event[EV_BAD_CARD])
        if extra < 0 or extra > 2:
            return False
    else:
        if missing != event[EV_FAILURES]:
            return False
        predicted_talking = _popcount(talked)
        seen = event[EV_TALKING_CALLS]
        if seen < predicted_talking or seen > predicted_talking + event[EV_SLACK]:
            return False
    return _forced_draw_agrees(hypothesis, event, forced_of_rule)


@njit
def _calls_explain(hypothesis: int, event: np.ndarray, order_rules: int, phrase_of_rule: np.ndarray,
                   forced_of_rule: np.ndarray) -> bool:  # fmt: skip
    """Whether the rule set agrees with the calls made on the event (``RulePosterior._calls_consistent``,
    the players' calls): the turn judged with the rule set's own verdict on the card."""
    valid = event[O_PLAYED] != 0 and _valid(hypothesis, event, order_rules)
    if event[EV_CHECK_VALID] and valid != (event[EV_GOOD] != 0):
        return False
    required, excused, allowed = _phrases(hypothesis, event, valid, phrase_of_rule)
    said = event[T_SAID]
    missing = required & ~said & ~_MAO_BIT
    if (missing & event[EV_CALLED]) != event[EV_CALLED] or (missing & event[EV_BAD_CALLED]) != 0:
        return False
    if event[EV_TALKING_CALLED] != 0:
        talked = said & ~required & ~excused & ~allowed & ~_MAO_BIT & ~_LAST_CARD_BIT
        if (talked != 0) != (event[EV_TALKING_CALLED] > 0):
            return False
    return _forced_draw_agrees(hypothesis, event, forced_of_rule)


@njit
def _weigh_all(hypotheses: np.ndarray, weights: np.ndarray, row_start: np.ndarray, row_eps: np.ndarray,
               events: np.ndarray, order_rules: int, phrase_of_rule: np.ndarray,
               forced_of_rule: np.ndarray) -> None:  # fmt: skip
    """Each event, in order, weighs its row's hypotheses (``weights`` in place): times the row's
    ``eps`` where the rule set does not explain it, then divided by the row's sum."""
    for e in range(events.shape[0]):
        event = events[e]
        row = event[T_ROW]
        start, stop = row_start[row], row_start[row + 1]
        players_call = event[EV_PLAYERS_CALL] != 0
        for i in range(start, stop):
            if players_call:
                explained = _calls_explain(hypotheses[i], event, order_rules, phrase_of_rule, forced_of_rule)
            else:
                explained = _explains(hypotheses[i], event, order_rules, phrase_of_rule, forced_of_rule)
            if not explained:
                weights[i] = weights[i] * row_eps[row]
        total = pairwise_sum(weights, start, stop - start)
        for i in range(start, stop):
            weights[i] = weights[i] / total


@njit
def _judge_own_turns(hypotheses: np.ndarray, row_start: np.ndarray, turns: np.ndarray, order_rules: int,
                     phrase_of_rule: np.ndarray, valid: np.ndarray, required: np.ndarray,
                     unmentioned: np.ndarray, mao_due: np.ndarray) -> None:  # fmt: skip
    """The seat's own turn so far under each hypothesis of its row (``speech_chances``): the
    verdict, the required phrases, the phrases neither required, excused nor allowed, and whether
    "Mao" is due (``mao_env.reference.mao_is_due``)."""
    for t in range(turns.shape[0]):
        turn = turns[t]
        said = turn[T_SAID]
        for i in range(row_start[turn[T_ROW]], row_start[turn[T_ROW] + 1]):
            good = turn[O_PLAYED] != 0 and _valid(hypotheses[i], turn, order_rules)
            needed, excused, allowed = _phrases(hypotheses[i], turn, good, phrase_of_rule)
            valid[i] = good
            required[i] = needed
            unmentioned[i] = ~(needed | excused | allowed)
            flawless = (needed & ~said & ~_MAO_BIT) == 0
            if turn[T_TALKING]:
                flawless = flawless and (said & ~needed & ~allowed & ~_MAO_BIT) == 0
            mao_due[i] = good and flawless and turn[O_HAND_AFTER] == 0


@njit
def _held_cards_valid(hypotheses: np.ndarray, row_start: np.ndarray, checks: np.ndarray, order_rules: int,
                      out: np.ndarray) -> None:  # fmt: skip
    """At the start of a turn: whether each held card is a good play under each hypothesis of its
    row, written row by row as ``[hypotheses, cards]`` blocks (``beliefs.plays_validity``)."""
    for c in range(checks.shape[0]):
        check = checks[c]
        start = row_start[check[T_ROW]]
        for i in range(start, row_start[check[T_ROW] + 1]):
            out[check[C_OUT_START] + (i - start) * check[C_COUNT] + check[C_INDEX]] = _valid(
                hypotheses[i], check, order_rules
            )


# ---- filling the columns ---------------------------------------------------------------------
def validity_columns(
    played: np.ndarray, top: np.ndarray, suit: np.ndarray, pending_seven: np.ndarray
) -> np.ndarray:
    """The validity columns (``T_SUIT_MATCH`` .. ``T_NEVER_VALID``) of cards ``played`` on ``top``
    with ``suit`` to follow (arrays of one length), int64 ``[K, 6]``."""
    played, top = np.asarray(played, dtype=np.int64), np.asarray(top, dtype=np.int64)
    suit_match = beliefs.SUIT[played] == np.asarray(suit)
    same_colour_off_suit = ~suit_match & (beliefs.IS_RED[played] == beliefs.IS_RED[top])
    return np.stack(
        [
            suit_match,
            beliefs.RANK[played] == beliefs.RANK[top],
            WILD_RULES[played],
            FORBID_RULES[played, top] | np.where(same_colour_off_suit, ALTERNATE_RULES, 0),
            ORDER_FAIL_RULES[played, top],
            (np.asarray(pending_seven) > 0) & (beliefs.RANK[played] != cards.SEVEN),
        ],
        axis=1,
    ).astype(np.int64)


#: The rule bit sets of each read-only support met (a posterior's, which an update replaces
#: rather than changes: ``RulePosterior.hypotheses``), by the array's id, with a weak reference
#: to it: an entry leaves when its array is freed, before the id can be another's.
_BITS_OF: dict[int, tuple[weakref.ref, np.ndarray]] = {}


def _forget_bits(key: int) -> Callable[[weakref.ref], None]:
    return lambda _ref: _BITS_OF.pop(key, None)


def _bit_sets(hypotheses: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """All rows' hypotheses as one int64 array of rule bit sets, and each row's start in it (each
    read-only support's bit sets made once, kept in ``_BITS_OF``)."""
    row_start = np.zeros(len(hypotheses) + 1, dtype=np.int64)
    np.cumsum([h.shape[0] for h in hypotheses], out=row_start[1:])
    parts: list[np.ndarray | None] = []
    missing = []
    for index, rule_sets in enumerate(hypotheses):
        kept = _BITS_OF.get(id(rule_sets))
        if kept is not None and kept[0]() is rule_sets:
            parts.append(kept[1])
        else:
            parts.append(None)
            missing.append(index)
    if missing:
        # A bool-by-int64 product (exact integers) rather than rule_bits's tensordot: cheaper on the
        # few rows of a training call, where the fixed costs of a call count as much as its rows.
        made = (np.concatenate([hypotheses[i] for i in missing]) > 0.5) @ _RULE_VALUES
        starts = np.cumsum([0] + [hypotheses[i].shape[0] for i in missing])
        for n, index in enumerate(missing):
            rule_sets, bits = hypotheses[index], made[starts[n] : starts[n + 1]]
            parts[index] = bits
            if not rule_sets.flags.writeable:
                key = id(rule_sets)
                _BITS_OF[key] = (weakref.ref(rule_sets, _forget_bits(key)), bits)
    return np.concatenate(parts), row_start


def _event_turn(posterior: RulePosterior, row: int, event: PublicEvent, top: int, suit: int) -> list | None:
    """The turn columns of one event weighed with the context (``top``, ``suit``) before it (the
    validity columns filled later, from the card and context it returns), or None for an event
    that weighs nothing (``RulePosterior._judge_event``, the Mao Master's calls)."""
    columns = [0] * N_TURN_COLUMNS
    columns[T_ROW] = row
    if event.kind in (layout.KIND_PLAY, layout.KIND_BAD_CARD) and top >= 0 and event.card >= 0:
        card = event.card
        good = event.kind == layout.KIND_PLAY
        chain_bad = not good and event.chain_cards > 0 and beliefs.RANK[card] != cards.SEVEN
        columns[EV_CHECK_VALID] = int(not chain_bad)
        columns[EV_GOOD] = int(good)
        first_suit = (
            event.named_suit if event.named_suit >= 0 else beliefs.first_suit_said(event.phrases, card)
        )
        turn = (card, first_suit, event.chain_cards, 0, posterior.thank_you, False, None)
        probes = T_GOOD if good else T_BAD
        columns[T_TRIGGER] = int(TRIGGER_RULES[card, top])
        columns[T_CARD_PHRASES] = base_card_phrases(card)
        columns[EV_BAD_CARD] = int(not good)
        if good:
            columns[EV_CHECK_FORCED] = 1
            columns[EV_FORCING] = int(FORCING_RULES[card])
            columns[EV_FORCED_DRAW] = event.forced_draw
    elif event.kind == layout.KIND_DRAW:
        card, good = -1, False
        drew = not (posterior.seven_turn_ends and event.chain_cards > 0)
        turn = (-1, -1, event.chain_cards, 0, posterior.thank_you, drew, None)
        probes = T_BAD
        columns[T_DRAW_RULES] = SAY_DRAW_RULES if drew else 0
    else:
        return None
    columns[probes : probes + 9] = [int(bits) for probe in beliefs.turn_probes(turn, good) for bits in probe]
    said = event.phrases
    columns[T_SAID] = said
    columns[T_TALKING] = int(posterior.talking)
    columns[EV_FAILURES] = event.failure_bits & ~beliefs.HAND_SIZE_PHRASES
    failures = bin(event.failure_bits).count("1")
    columns[EV_TALKING_CALLS] = event.n_calls - int(event.bad_card_called) - failures - int(event.mao_in_vain)
    columns[EV_SLACK] = 1 if (said >> cards.LAST_CARD) & 1 else 0
    columns[EV_N_CALLS] = event.n_calls
    columns[EV_HIDDEN_REASONS] = int(posterior.hidden_reasons)
    return columns, (max(card, 0), max(top, 0), suit, 0)


#: The failures a players' call can name on a turn a seat did not follow: "Last card" and "Mao"
#: hang on a hand size it does not know (``RulePosterior._calls_consistent``).
_JUDGED_FAILURES = beliefs.ALL_PHRASES & ~beliefs.HAND_SIZE_PHRASES


def _calls_event_turn(
    posterior: RulePosterior, row: int, event: PublicEvent, top: int, suit: int
) -> list | None:
    """:func:`_event_turn` of a row of the players' calls (``RulePosterior._calls_consistent``):
    each rule set judges the card itself, so both verdicts' probes are filled; the context also
    says whether a seven chain was pending."""
    columns = [0] * N_TURN_COLUMNS
    columns[T_ROW] = row
    columns[EV_PLAYERS_CALL] = 1
    if event.kind in (layout.KIND_PLAY, layout.KIND_BAD_CARD) and top >= 0 and event.card >= 0:
        card = event.card
        pending = 1 if event.chain_cards > 0 and beliefs.RANK[card] != cards.SEVEN else 0
        first_suit = (
            event.named_suit if event.named_suit >= 0 else beliefs.first_suit_said(event.phrases, card)
        )
        turn = (card, first_suit, event.chain_cards, pending, posterior.thank_you, False, None)
        columns[O_PLAYED] = 1
        columns[T_TRIGGER] = int(TRIGGER_RULES[card, top])
        columns[T_CARD_PHRASES] = base_card_phrases(card)
        columns[T_GOOD : T_GOOD + 9] = [
            int(bits) for probe in beliefs.turn_probes(turn, True) for bits in probe
        ]
        if event.kind == layout.KIND_BAD_CARD:  # the call stood: the card was bad
            columns[EV_CHECK_VALID], columns[EV_GOOD] = 1, 0
        elif (event.bad_call_bits >> cards.CALL_REASON_BAD_CARD) & 1:  # a bad call: it was good
            columns[EV_CHECK_VALID], columns[EV_GOOD] = 1, 1
        if event.kind == layout.KIND_PLAY:
            columns[EV_CHECK_FORCED] = 1
            columns[EV_FORCING] = int(FORCING_RULES[card])
            columns[EV_FORCED_DRAW] = event.forced_draw
        context = (card, top, suit, pending)
    elif event.kind == layout.KIND_DRAW:
        drew = not (posterior.seven_turn_ends and event.chain_cards > 0)
        turn = (-1, -1, event.chain_cards, 0, posterior.thank_you, drew, None)
        columns[T_DRAW_RULES] = SAY_DRAW_RULES if drew else 0
        context = (0, max(top, 0), max(suit, 0), 0)  # no card: the validity columns go unread
    else:
        return None
    columns[T_BAD : T_BAD + 9] = [int(bits) for probe in beliefs.turn_probes(turn, False) for bits in probe]
    said = event.phrases
    columns[T_SAID] = said
    called = event.call_bits & _JUDGED_FAILURES
    columns[EV_CALLED] = called
    columns[EV_BAD_CALLED] = event.bad_call_bits & _JUDGED_FAILURES & ~called
    if posterior.talking:
        if (event.call_bits >> cards.CALL_REASON_TALKING) & 1 and not (said >> cards.LAST_CARD) & 1:
            columns[EV_TALKING_CALLED] = 1
        elif (event.bad_call_bits >> cards.CALL_REASON_TALKING) & 1:
            columns[EV_TALKING_CALLED] = -1
    return columns, context


#: Calls and points of order: weighed with the turn event they judged, which follows them.
_WEIGHED_LATER = (layout.KIND_CALL, layout.KIND_POINT_OF_ORDER)


def kernel_weighs(posterior: RulePosterior, events: list[PublicEvent]) -> bool:
    """Whether the kernel covers this row's events (module doc)."""
    return all(event.kind != layout.KIND_RULE_ADDED for event in events)


def observe_all(posteriors: list[RulePosterior], views: list[SeatView]) -> None:
    """``posterior.observe(view)`` for each pair (distinct posteriors), the events of all rows
    parsed in one call and weighed in one kernel call (module doc); the same posteriors, bit for
    bit."""
    if not posteriors:
        return
    found = [posterior.new_event_rows(view) for posterior, view in zip(posteriors, views, strict=True)]
    # Every row's new events parsed in one call, then handed back row by row.
    parsed = parse_events([row for rows, _choosing in found for row in rows])
    ends = np.cumsum([len(rows) for rows, _choosing in found]).tolist()
    deferred = []  # (posterior, view, events, newly_authored)
    for posterior, view, (_rows, choosing_again), start, end in zip(
        posteriors, views, found, [0, *ends[:-1]], ends, strict=True
    ):
        events, newly_authored, still_to_branch = posterior.take_in_events(
            view, parsed[start:end], choosing_again
        )
        if kernel_weighs(posterior, events):
            deferred.append((posterior, view, events, newly_authored))
        else:
            newly_authored = posterior.weigh_events(events, newly_authored, still_to_branch)
            posterior.close_observation(view, newly_authored)
    weigh_all([(posterior, events) for posterior, _view, events, _new in deferred])
    for posterior, view, _events, newly_authored in deferred:
        posterior.close_observation(view, newly_authored, prune=False)
    prune_all([posterior for posterior, _view, _events, _new in deferred])


def prune_all(posteriors: list[RulePosterior]) -> None:
    """``posterior._prune()`` for each of ``posteriors`` (distinct), the rows whose support keeps
    every hypothesis (the common case) normalised in one kernel call, with numpy's sums; the
    others pruned by the reference."""
    if not posteriors:
        return
    row_start = np.zeros(len(posteriors) + 1, dtype=np.int64)
    np.cumsum([posterior.weights.size for posterior in posteriors], out=row_start[1:])
    weights = np.concatenate([posterior.weights for posterior in posteriors])
    limits = np.array([posterior.max_hypotheses for posterior in posteriors], dtype=np.int64)
    normalised = np.zeros(len(posteriors), dtype=np.bool_)
    _normalise_unpruned(weights, row_start, limits, normalised)
    for index, posterior in enumerate(posteriors):
        if normalised[index]:
            posterior.weights = weights[row_start[index] : row_start[index + 1]]
        else:
            posterior._prune()


@njit
def _normalise_unpruned(weights: np.ndarray, row_start: np.ndarray, limits: np.ndarray,
                        normalised: np.ndarray) -> None:  # fmt: skip
    """For each row whose ``RulePosterior._prune`` would keep every hypothesis (none below the
    largest weight times ``PRUNE_BELOW``, no more than its limit), that prune's last step in place: the
    weights divided by their sum (``pairwise_sum``, numpy's); ``normalised`` says which rows."""
    for row in range(row_start.size - 1):
        start, stop = row_start[row], row_start[row + 1]
        if stop - start > limits[row]:
            continue
        largest = weights[start]
        for i in range(start + 1, stop):
            largest = max(largest, weights[i])
        threshold = largest * PRUNE_BELOW
        keeps_all = True
        for i in range(start, stop):
            if not weights[i] >= threshold:
                keeps_all = False
                break
        if not keeps_all:
            continue
        total = pairwise_sum(weights, start, stop - start)
        for i in range(start, stop):
            weights[i] = weights[i] / total
        normalised[row] = True


#: The turn columns of events met before (:func:`_judged_event`), by what they depend on.
_JUDGED_EVENTS: dict[tuple, tuple | None] = {}
#: When to start :data:`_JUDGED_EVENTS` afresh (a game repeats few turns; this bounds its memory).
_MAX_JUDGED_EVENTS = 1 << 15


def _judged_event(posterior: RulePosterior, event: PublicEvent, top: int, suit: int) -> tuple | None:
    """:func:`_event_turn` (or :func:`_calls_event_turn`) of the event for row 0, remembered: every
    seat at a table sees each public event, and the columns depend on the event's fields but its
    seat, on the context before it and on the posterior's table options only."""
    key = (
        event.kind, event.card, event.phrases, event.call_bits, event.bad_call_bits, event.n_calls,
        event.chain_cards, event.forced_draw, event.named_suit, top, suit, posterior.players_call,
        posterior.thank_you, posterior.seven_turn_ends, posterior.talking, posterior.hidden_reasons,
    )  # fmt: skip
    judged = _JUDGED_EVENTS.get(key, _JUDGED_EVENTS)
    if judged is _JUDGED_EVENTS:
        event_turn = _calls_event_turn if posterior.players_call else _event_turn
        judged = event_turn(posterior, 0, event, top, suit)
        if len(_JUDGED_EVENTS) >= _MAX_JUDGED_EVENTS:
            _JUDGED_EVENTS.clear()
        _JUDGED_EVENTS[key] = judged
    return judged


def weigh_all(rows: list[tuple[RulePosterior, list[PublicEvent]]]) -> None:
    """``posterior.weigh_events(events, set(), 0)`` for each (posterior, events) the kernel covers
    (:func:`kernel_weighs`), in one kernel call (distinct posteriors)."""
    event_turns, event_rows, contexts = [], [], []
    for row, (posterior, events) in enumerate(rows):
        top, suit = posterior.context
        for event in events:
            posterior.events_since_new_rule += 1
            if event.kind in _WEIGHED_LATER:
                continue  # the reference leaves the context as it was too
            judged = _judged_event(posterior, event, top, suit)
            if judged is not None:
                event_turns.append(judged[0])
                event_rows.append(row)
                contexts.append(judged[1])
            top, suit = posterior.context_after(event, top, suit)
    if not event_turns:
        return
    events = np.array(event_turns, dtype=np.int64)
    events[:, T_ROW] = event_rows
    played, top, suit, pending_seven = np.array(contexts, dtype=np.int64).T
    events[:, _VALIDITY] = validity_columns(played, top, suit, pending_seven)
    hypotheses, row_start = _bit_sets([posterior.hypotheses for posterior, _events in rows])
    weights = np.concatenate([posterior.weights for posterior, _events in rows])
    row_eps = np.array([posterior.eps for posterior, _events in rows], dtype=np.float64)
    _weigh_all(hypotheses, weights, row_start, row_eps, events, ORDER_RULES, PHRASE_OF_RULE, FORCED_OF_RULE)
    for index, (posterior, _events) in enumerate(rows):
        posterior.weights = weights[row_start[index] : row_start[index + 1]]


def own_turns_judged(
    rows: list[tuple[SeatView, np.ndarray]],
    thank_you: bool,
    talking: bool,
    hands_after: list[int] | None = None,
) -> tuple[np.ndarray, ...]:
    """For each (view, hypotheses ``[N, R]``) of a seat speaking in its own turn: its turn so far
    judged under each hypothesis (``speech_chances``), one kernel call for all. Returns, over the
    rows' hypotheses one after the other: the verdict (bool), the required phrases and the phrases
    neither required, excused nor allowed (int64 bit sets), whether "Mao" is due (bool), and each
    row's start. ``hands_after``: the mover's cards after the turn, per row (default: the seat's
    own, ``view.hand_total``)."""
    hypotheses, row_start = _bit_sets([rule_sets for _view, rule_sets in rows])
    turns = np.zeros((len(rows), N_TURN_COLUMNS), dtype=np.int64)
    if hands_after is None:
        hands_after = [view.hand_total for view, _rule_sets in rows]
    for index, ((view, _rule_sets), hand_after) in enumerate(zip(rows, hands_after, strict=True)):
        turn = turns[index]
        played = view.played
        key = (
            played, beliefs.first_suit_said(view.said, played), view.took_seven, view.pending_seven,
            thank_you, view.drew, hand_after,
        )  # fmt: skip
        turn[T_ROW] = index
        if played >= 0:
            turn[O_PLAYED] = 1
            turn[T_TRIGGER] = TRIGGER_RULES[played, view.top]
            turn[T_CARD_PHRASES] = base_card_phrases(played)
            turn[T_GOOD : T_GOOD + 9] = [bits for probe in beliefs.turn_probes(key, True) for bits in probe]
        turn[T_BAD : T_BAD + 9] = [bits for probe in beliefs.turn_probes(key, False) for bits in probe]
        turn[T_DRAW_RULES] = SAY_DRAW_RULES if view.drew else 0
        turn[T_SAID] = view.said
        turn[T_TALKING] = int(talking)
        turn[O_HAND_AFTER] = hand_after
    turns[:, _VALIDITY] = validity_columns(
        [max(view.played, 0) for view, _h in rows],
        [view.top for view, _h in rows],
        [view.suit_to_follow for view, _h in rows],
        [view.pending_seven for view, _h in rows],
    )
    n = hypotheses.size
    valid, mao_due = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    required, unmentioned = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    _judge_own_turns(
        hypotheses, row_start, turns, ORDER_RULES, PHRASE_OF_RULE, valid, required, unmentioned, mao_due
    )
    return valid, required, unmentioned & beliefs.ALL_PHRASES, mao_due, row_start


def turns_faults(
    rows: list[tuple[SeatView, np.ndarray]], thank_you: bool, talking: bool
) -> tuple[np.ndarray, np.ndarray]:
    """For each (view, hypotheses ``[N, R]``) of a seat in a call window: which call reasons the
    turn under judgement deserves under each hypothesis (``beliefs.turn_faults``), the turns
    judged in one kernel call (:func:`own_turns_judged`, with the mover's hand). Returns bool
    ``[hypotheses of all rows, N_CALL_REASONS]`` and each row's start."""
    valid, required, unmentioned, due, row_start = own_turns_judged(
        rows, thank_you, talking, [int(view.hand_sizes[view.mover]) for view, _rule_sets in rows]
    )
    row_of = np.repeat(np.arange(len(rows)), np.diff(row_start))
    said = np.array([view.said for view, _rule_sets in rows], dtype=np.int64)[row_of]
    played = np.array([view.played >= 0 for view, _rule_sets in rows], dtype=bool)[row_of]
    said_mao = ((said >> cards.MAO) & 1) == 1
    faults = np.zeros((row_of.size, cards.N_CALL_REASONS), dtype=bool)
    faults[:, : cards.N_PHRASES] = beliefs.bits_to_rows(required & ~said & ~_MAO_BIT)
    faults[:, cards.CALL_REASON_BAD_CARD] = played & ~valid
    if talking:
        faults[:, cards.CALL_REASON_TALKING] = (said & unmentioned & ~_MAO_BIT) != 0
    faults[:, cards.CALL_REASON_MAO] = said_mao & ~due
    faults[:, cards.MAO] = ~said_mao & due
    return faults, row_start


def play_chances_rows(rows: list[tuple[SeatView, np.ndarray, np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """For each (view, held cards, hypotheses ``[N, R]``, weights ``[N]``) of a seat at the start
    of its turn: the belief that each held card is a good play (``players.play_chances``), the
    verdicts of all rows from one kernel call (:func:`held_cards_valid`)."""
    validities = held_cards_valid([(view, held, hypotheses) for view, held, hypotheses, _weights in rows])
    return [weights @ validity for (*_view, weights), validity in zip(rows, validities, strict=True)]


def speech_chances_rows(
    rows: list[tuple[SeatView, np.ndarray, np.ndarray]], thank_you: bool, talking: bool
) -> list[SpeechChances]:
    """For each (view, hypotheses ``[N, R]``, weights ``[N]``) of a speaking seat: the
    ``players.speech_chances`` of its own turn so far, all turns judged in one kernel call
    (:func:`own_turns_judged`)."""
    judged = own_turns_judged([(view, hypotheses) for view, hypotheses, _weights in rows], thank_you, talking)
    _valid, required, unmentioned, mao_due, row_start = judged
    chances = []
    for n, (_view, _hypotheses, weights) in enumerate(rows):
        support = slice(row_start[n], row_start[n + 1])
        p_talking = np.zeros(cards.N_PHRASES)
        if talking:
            p_talking = weights @ beliefs.bits_to_rows(unmentioned[support])
        p_required = weights @ beliefs.bits_to_rows(required[support])
        chances.append(SpeechChances(p_required, p_talking, float(weights @ mao_due[support])))
    return chances


def fault_chances_rows(
    rows: list[tuple[SeatView, np.ndarray, np.ndarray]], thank_you: bool, talking: bool
) -> list[np.ndarray]:
    """For each (view, hypotheses ``[N, R]``, weights ``[N]``) of a seat in a call window: the
    belief that the turn under judgement deserves each call reason (``players.fault_chances``),
    all turns judged in one kernel call (:func:`turns_faults`)."""
    judged = [(view, hypotheses) for view, hypotheses, _weights in rows]
    faults, row_start = turns_faults(judged, thank_you, talking)
    return [weights @ faults[row_start[n] : row_start[n + 1]] for n, (*_judged, weights) in enumerate(rows)]


def held_cards_valid(rows: list[tuple[SeatView, np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """For each (view, held cards, hypotheses ``[N, R]``) of a seat at the start of its turn:
    whether each held card is a good play under each hypothesis, bool ``[N, cards]`` (what
    ``beliefs.plays_validity`` answers), one kernel call for all."""
    hypotheses, row_start = _bit_sets([rule_sets for _view, _held, rule_sets in rows])
    sizes = [(row_start[i + 1] - row_start[i]) * held.size for i, (_v, held, _h) in enumerate(rows)]
    out_start = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out_start[1:])
    row_of = np.repeat(np.arange(len(rows)), [held.size for _view, held, _h in rows])
    played = np.concatenate([held for _view, held, _h in rows])
    checks = np.zeros((played.size, N_TURN_COLUMNS), dtype=np.int64)
    checks[:, T_ROW] = row_of
    checks[:, C_OUT_START] = out_start[row_of]
    checks[:, C_COUNT] = np.array([held.size for _view, held, _h in rows])[row_of]
    checks[:, C_INDEX] = np.concatenate([np.arange(held.size) for _view, held, _h in rows])
    views = [view for view, _held, _h in rows]
    checks[:, _VALIDITY] = validity_columns(
        played,
        np.array([view.top for view in views])[row_of],
        np.array([view.suit_to_follow for view in views])[row_of],
        np.array([view.pending_seven for view in views])[row_of],
    )
    out = np.zeros(int(out_start[-1]), dtype=bool)
    _held_cards_valid(hypotheses, row_start, checks, ORDER_RULES, out)
    return [
        out[out_start[i] : out_start[i + 1]].reshape(-1, held.size) for i, (_v, held, _h) in enumerate(rows)
    ]
