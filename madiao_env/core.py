"""Madiao rules as Numba kernels over a batch of games (numpy + numba + cardgame_core only).

State of N games: one ``madiao_env.state.MadiaoState``, a named tuple of arrays with a leading
batch axis (the AEC env uses N = 1), made by ``madiao_env.state.new_state``. The public kernels
take it as one argument ``state`` and pass its fields by name to the rule helpers below::

    card_sets uint64[N, N_CARD_COLS]  hands, face-up plays, sloughs and trick-winning cards by seat,
                                      plus the game's xorshift64* RNG state (column CS_RNG)
    ints      int32[N, N_INTS]        scalars: banker, first seat, leader, seat to act, phase, trick,
                                      plays so far, best card of the trick, tricks won, stock, ...
    history   int8[N, 32, 3]          every play of the hand in order: (seat, card, face up 1/0)
    pending   int32[N, 128, 5]        payment lines of the hand not yet settled:
                                      (hand number, rule code, payer, payee, stakes)
    settled   int32[N, 256, 5]        lines settled during the last kernel call (same columns)
    config    int32[N_CONFIG]         rule variants and the observation type (shared by the batch;
                                      made by ``madiao_env.options.MadiaoOptions.config_row``)

Stakes are integer units here (the amounts and rule ids: ``madiao_env.payments``); the env layer
multiplies them by the ``stake`` option (through ``payments.stakes_to_rewards``, nowhere else).
The observation offsets come from ``madiao_env.layout``.
Kernels never check their inputs: the env layer validates actions against ``legal mask`` first.

Batch kernels, each taking ``state, config`` first: ``reset_games``/``observe_games`` (both
envs; the AEC env has N = 1), ``vector_step_games`` (the step of both envs: step, rewards,
auto-reset for the vector env, and observation in one call), ``step_games`` (a step with no
rewards or auto-reset: the OpenSpiel game), ``random_playouts_from`` (``madiao_env.rollout``)
and ``deal_games`` (a deal drawn by the caller in place of a random one: the OpenSpiel game).
All of them use the same rule functions and the same observation encoder (``_encode``).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from cardgame_core.bits import bit, bits_above, nth_set_bit, popcount
from cardgame_core.jit import STEP_CHUNK, njit
from cardgame_core.rng import next_u64
from madiao_env import layout, payments
from madiao_env.cards import (
    CARD_SUIT,
    CUT_NUMBER,
    FOUR_LOWEST_MASK,
    HUNDRED_MYRIAD,
    N_ACTIONS,
    N_CARDS,
    N_TRICKS,
    RED_MASK,
    SUIT_MASK,
    SUIT_TENS,
    TOP_MASK,
    mask_of,
)
from madiao_env.payments import (
    RULE_BOSS_CARD,
    RULE_FACE_UP_DISCARD,
    RULE_FOUR_LOWEST,
    RULE_HONOURS,
    RULE_HUNDRED_MYRIAD,
    RULE_MELD,
    RULE_SLAM,
    RULE_STOCK_CHECK,
    RULE_TRICK_COUNT,
    RULE_TWO_TRICKS_HUNDRED_MYRIAD,
)

# The rule names live with the amounts in madiao_env.payments; re-exported for readers of the core.
from madiao_env.payments import RULE_NAMES as RULE_NAMES

_SUMMARY = layout.SUMMARY_SLICES
_HISTORY = layout.HISTORY_SLICES
_RECORD = layout.RECORD_SLICES

# ----------------------------------------------------------------------------- layout constants

# card_sets columns
CS_HAND = 0  # 4 columns: cards held, by seat
CS_FACE_UP = 4  # 4: cards each seat played face up this hand
CS_SLOUGHED = 8  # 4: cards each seat sloughed face down this hand
CS_WON_WITH = 12  # 4: the winning card of every trick each seat won
CS_RNG = 16  # xorshift64* state of this game
N_CARD_COLS = 17

# ints columns
I_BANKER = 0
I_FIRST = 1  # first seat dealt (leads the first trick, asked first for a redeal)
I_LEADER = 2
I_TO_ACT = 3  # -1 when the episode is over
I_PHASE = 4
I_TRICK = 5  # tricks completed, 0..8
I_N_PLAYS = 6  # plays recorded in history, 0..32
I_BEST_CARD = 7  # best face-up card of the suit led in the current trick (-1: no trick)
I_BEST_SEAT = 8
I_REDEALS = 9  # redeals declared in this hand
I_HAND_NUMBER = 10  # index of the current hand in this episode (0-based)
I_HUNDRED_HOLDER = 11  # seat dealt 100T, -1 if it lies in the stock
I_BEEN_BANKER = 12  # bit set of seats that have been banker of a finished hand (match end)
I_ASK_POS = 13  # next deal-order offset (from the first seat) to ask about a redeal
I_ELIGIBLE = 14  # bit set of seats holding five or more cards of one suit
I_PASSED = 15  # bit set of seats that passed a redeal offer on this deal
I_DECIDED = 16  # 1 once any decision was taken in this episode
I_N_PENDING = 17
I_N_SETTLED = 18
I_OVERFLOW = 19  # 1 if a line buffer ever filled up (the env raises)
I_TRICKS_WON = 20  # 4 columns
I_STOCK = 24  # 8 columns, upcard first
I_HANDS_SETTLED = 32  # hands settled during the last kernel call
I_EPISODE_OVER = 33
I_LAST_SETTLED_HAND = 34  # hand number of the last hand settled
N_INTS = 35

PHASE_REDEAL = 0
PHASE_PLAY = 1
PHASE_OVER = 2

MAX_PLAYS = 32
MAX_PENDING = 128
MAX_SETTLED = 256

# config entries
CFG_FACE_UP_DISCARD = 0  # 1: a non-capturing face-up play is legal and costs 2 stakes
CFG_MAX_REDEALS = 1  # -1: unlimited
CFG_MATCH = 2  # 1: the episode is a whole match
CFG_OBS_TYPE = 3  # the observation variant: its place in layout.OBS_TYPES
N_CONFIG = 4

# Meld card sets (the design doc's table).
MELD_TOPS_CARDS = np.uint64(mask_of(["10000T", "9M", "9S", "0C"]))
MELD_EXACT_EIGHT_CARDS = np.uint64(mask_of(["10000T", "20T", "9M", "1M", "9S", "1S", "0C", "9C"]))
HONOURS_THREE_CARDS = np.uint64(mask_of(["10000T", "1000T", "100T"]))
HONOURS_FOUR_CARDS = np.uint64(mask_of(["10000T", "1000T", "100T", "0C"]))
HUNDRED_BIT = np.uint64(1 << HUNDRED_MYRIAD)

# ----------------------------------------------------------------------------- observation layout
# Where the encoder writes each piece: the offsets come from the one table in madiao_env.layout
# (sizes and meaning there). Module-level ints, so Numba reads them as compile-time constants.
OBS_HAND_AT = _SUMMARY["OBS_HAND"].start
OBS_UPCARD_AT = _SUMMARY["OBS_UPCARD"].start
OBS_SEEN_FACE_UP_AT = _SUMMARY["OBS_SEEN_FACE_UP"].start
OBS_OWN_SLOUGHED_AT = _SUMMARY["OBS_OWN_SLOUGHED"].start
OBS_TRICK_FACE_UP_AT = _SUMMARY["OBS_TRICK_FACE_UP"].start
OBS_TRICK_FACE_DOWN_AT = _SUMMARY["OBS_TRICK_FACE_DOWN"].start
OBS_TRICK_FACE_DOWN_COUNT_AT = _SUMMARY["OBS_TRICK_FACE_DOWN_COUNT"].start
OBS_TRICK_LEADER_AT = _SUMMARY["OBS_TRICK_LEADER"].start
OBS_TRICK_PLAYS_AT = _SUMMARY["OBS_TRICK_PLAYS"].start
OBS_TRICKS_WON_AT = _SUMMARY["OBS_TRICKS_WON"].start
OBS_BANKER_AT = _SUMMARY["OBS_BANKER"].start
OBS_FIRST_AT = _SUMMARY["OBS_FIRST"].start
OBS_TRICK_NUMBER_AT = _SUMMARY["OBS_TRICK_NUMBER"].start
OBS_PHASE_AT = _SUMMARY["OBS_PHASE"].start
OBS_BEEN_BANKER_AT = _SUMMARY["OBS_BEEN_BANKER"].start
OBS_REDEAL_PASSED_AT = _SUMMARY["OBS_REDEAL_PASSED"].start
SUMMARY_SIZE = layout.SUMMARY_SIZE

OBS_FACE_UP_BY_SEAT_AT = _RECORD["OBS_FACE_UP_BY_SEAT"].start
OBS_WON_WITH_BY_SEAT_AT = _RECORD["OBS_WON_WITH_BY_SEAT"].start
OBS_SLOUGHED_UNDER_BY_SEAT_AT = _RECORD["OBS_SLOUGHED_UNDER_BY_SEAT"].start
OBS_SLOUGHS_BY_SEAT_AT = _RECORD["OBS_SLOUGHS_BY_SEAT"].start
RECORD_SIZE = layout.RECORD_SIZE
# The config codes of the variants that are not the summary (the encoder's branches).
OBS_TYPE_HISTORY = layout.OBS_TYPES.index("history")
OBS_TYPE_RECORD = layout.OBS_TYPES.index("record")

HIST_HAND_DEALT_AT = _HISTORY["HIST_HAND_DEALT"].start
HIST_HAND_AT = _HISTORY["HIST_HAND"].start
HIST_UPCARD_AT = _HISTORY["HIST_UPCARD"].start
HIST_BANKER_AT = _HISTORY["HIST_BANKER"].start
HIST_FIRST_AT = _HISTORY["HIST_FIRST"].start
HIST_REDEAL_PASSED_AT = _HISTORY["HIST_REDEAL_PASSED"].start
HIST_BEEN_BANKER_AT = _HISTORY["HIST_BEEN_BANKER"].start
HIST_PHASE_AT = _HISTORY["HIST_PHASE"].start
HIST_PLAYS_AT = _HISTORY["HIST_PLAYS"].start
HIST_SLOT_SIZE = layout.HIST_SLOT_SIZE
HISTORY_SIZE = layout.HISTORY_SIZE

_XOR_MULTIPLIER = np.uint64(0x2545F4914F6CDD1D)
# _BYTE_BITS[v, k] = bit k of the byte v, as 0/1 (the observation encoder's table).
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.int8)


# ----------------------------------------------------------------------------- per-game helpers


@njit(inline="always")
def _xorshift(x):
    """The next state of a xorshift64* stream (the output is ``state * _XOR_MULTIPLIER``)."""
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    return x


@njit(inline="always")
def _below(random_u64, n):
    """Uniform integer in 0..n-1 from a 64-bit draw (multiply-shift on the top 32 bits: bias
    below 1e-8)."""
    return int(((random_u64 >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(inline="always")
def _next_random(card_sets, g):
    """xorshift64* step of game ``g``'s RNG (state lives in the snapshot, so continuations replay)."""
    x = _xorshift(card_sets[g, CS_RNG])
    card_sets[g, CS_RNG] = x
    return x * _XOR_MULTIPLIER


@njit(inline="always")
def _random_below(card_sets, g, n):
    """Uniform integer in 0..n-1 drawn from game ``g``'s RNG."""
    return _below(_next_random(card_sets, g), n)


@njit
def first_seat_from_cut(cut_card, banker):
    """Seat dealt first from the cut card's number (4/8 dealer, 3/7 banker, 2/6 shuffler, else opposite)."""
    digit = CUT_NUMBER[cut_card]
    if digit == 4 or digit == 8:
        return (banker + 1) % 4
    if digit == 3 or digit == 7:
        return banker
    if digit == 2 or digit == 6:
        return (banker + 3) % 4
    return (banker + 2) % 4


# Scalar arguments reach the line helpers as int32 (read from ``ints``), int64 and literals;
# Numba would compile one version per combination (21 of _add_line), which dominated the cold
# compile. These inline shims cast to int64 so that each helper compiles once.


@njit(inline="always")
def _add_line(ints, pending, g, rule, payer, payee, stakes):
    _append_line(
        ints, pending, np.int64(g), np.int64(rule), np.int64(payer), np.int64(payee), np.int64(stakes)
    )


@njit(inline="always")
def _seat_earns(ints, pending, g, seat, stakes, rule):
    _banker_line(ints, pending, np.int64(g), np.int64(seat), np.int64(stakes), np.int64(rule), True)


@njit(inline="always")
def _seat_pays(ints, pending, g, seat, stakes, rule):
    _banker_line(ints, pending, np.int64(g), np.int64(seat), np.int64(stakes), np.int64(rule), False)


@njit(inline="always")
def _append_line(ints, pending, g, rule, payer, payee, stakes):
    if stakes == 0:
        return
    n = ints[g, I_N_PENDING]
    if n >= MAX_PENDING:
        ints[g, I_OVERFLOW] = 1
        return
    pending[g, n, 0] = ints[g, I_HAND_NUMBER]
    pending[g, n, 1] = rule
    pending[g, n, 2] = payer
    pending[g, n, 3] = payee
    pending[g, n, 4] = stakes
    ints[g, I_N_PENDING] = n + 1


@njit
def _banker_line(ints, pending, g, seat, stakes, rule, seat_gains):
    """``seat`` gains (``seat_gains``) or loses ``stakes`` against the other side: a player's line
    is with the banker, the banker's with each player (the reference's ``banker_line``)."""
    banker = ints[g, I_BANKER]
    for other in range(4):
        if (other == banker) == (seat == banker):
            continue  # not a counterpart: the seat itself, or another player of the same side
        if seat_gains:
            _append_line(ints, pending, g, rule, np.int64(other), seat, stakes)
        else:
            _append_line(ints, pending, g, rule, seat, np.int64(other), stakes)


@njit(inline="always")
def _flush_pending(ints, pending, settled, g):
    """Move the pending lines to the settled buffer (a hand has been settled)."""
    n_settled = ints[g, I_N_SETTLED]
    for i in range(ints[g, I_N_PENDING]):
        if n_settled >= MAX_SETTLED:
            ints[g, I_OVERFLOW] = 1
            break
        for k in range(5):
            settled[g, n_settled, k] = pending[g, i, k]
        n_settled += 1
    ints[g, I_N_SETTLED] = n_settled
    ints[g, I_N_PENDING] = 0
    ints[g, I_HANDS_SETTLED] += 1
    ints[g, I_LAST_SETTLED_HAND] = ints[g, I_HAND_NUMBER]


@njit
def _meld_stakes(hand):
    """Stakes of the highest meld in an 8-card hand, 0 if none."""
    has_hundred = (hand & HUNDRED_BIT) != np.uint64(0)
    if hand == MELD_EXACT_EIGHT_CARDS:
        return payments.MELD_EXACT_EIGHT
    if popcount(hand & RED_MASK) == 8:
        return payments.MELD_EIGHT_RED_WITH_HUNDRED if has_hundred else payments.MELD_EIGHT_RED
    for suit in range(4):
        if popcount(hand & SUIT_MASK[suit]) == 8:
            return (
                payments.MELD_TENS_FLUSH_WITH_HUNDRED
                if (suit == SUIT_TENS and has_hundred)
                else payments.MELD_FLUSH
            )
    if (hand & MELD_TOPS_CARDS) == MELD_TOPS_CARDS:
        return payments.MELD_FOUR_TOPS_WITH_HUNDRED if has_hundred else payments.MELD_FOUR_TOPS
    return 0


@njit
def _deal_deck(card_sets, ints, g, deck, first_override):
    """Deal a 40-card deck (top to bottom) through the cut-and-deal procedure; new deal state."""
    banker = ints[g, I_BANKER]
    first = first_override if first_override >= 0 else first_seat_from_cut(deck[39], banker)
    for seat in range(4):
        card_sets[g, CS_HAND + seat] = np.uint64(0)
        card_sets[g, CS_FACE_UP + seat] = np.uint64(0)
        card_sets[g, CS_SLOUGHED + seat] = np.uint64(0)
        card_sets[g, CS_WON_WITH + seat] = np.uint64(0)
        ints[g, I_TRICKS_WON + seat] = 0
    for k in range(4):  # a batch of four to each seat in play order from the first seat
        seat = (first + k) % 4
        for j in range(4):
            card_sets[g, CS_HAND + seat] |= bit(deck[4 * k + j])
    for j in range(16):  # then single cards round the table
        seat = (first + j) % 4
        card_sets[g, CS_HAND + seat] |= bit(deck[16 + j])
    for i in range(8):
        ints[g, I_STOCK + i] = deck[39 - i]
    ints[g, I_FIRST] = first
    ints[g, I_LEADER] = first
    ints[g, I_TRICK] = 0
    ints[g, I_N_PLAYS] = 0
    ints[g, I_BEST_CARD] = -1
    ints[g, I_BEST_SEAT] = -1
    ints[g, I_PASSED] = 0
    ints[g, I_ELIGIBLE] = 0
    ints[g, I_ASK_POS] = 0
    holder = -1
    for seat in range(4):
        if card_sets[g, CS_HAND + seat] & HUNDRED_BIT:
            holder = seat
    ints[g, I_HUNDRED_HOLDER] = holder


@njit
def _deal_random(card_sets, ints, g):
    """A seeded uniform shuffle of the 40 cards dealt through the procedure."""
    deck = np.empty(N_CARDS, dtype=np.int8)  # one allocation (arange + astype made two)
    for i in range(N_CARDS):
        deck[i] = i
    for i in range(N_CARDS - 1, 0, -1):
        j = _random_below(card_sets, g, i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    _deal_deck(card_sets, ints, g, deck, np.int64(-1))


@njit
def _finish_hand(card_sets, ints, pending, settled, config, g, next_banker, by_meld):
    """Close a hand; returns True if the episode is over, else the next hand has been dealt."""
    if by_meld and ints[g, I_DECIDED] == 0:
        # A meld before the episode's first decision ends a deal, not a hand of the episode: deal
        # again so that the episode has a decision. Like the four lowest, it keeps hand number 0
        # (every episode starts at hand 0, whatever was dealt) and its banker, who never played,
        # has not been banker; its lines stay pending and are settled with hand 0.
        ints[g, I_BANKER] = next_banker
        ints[g, I_REDEALS] = 0
        _deal_random(card_sets, ints, g)
        return False
    ints[g, I_BEEN_BANKER] |= 1 << ints[g, I_BANKER]
    if config[CFG_MATCH] == 1:
        _flush_pending(ints, pending, settled, g)
        over = ints[g, I_BEEN_BANKER] == 15
    else:
        _flush_pending(ints, pending, settled, g)
        over = True
    if over:
        # The finished hand's number stays: table() and the banker describe the last hand played.
        ints[g, I_PHASE] = PHASE_OVER
        ints[g, I_TO_ACT] = -1
        ints[g, I_EPISODE_OVER] = 1
        return True
    ints[g, I_HAND_NUMBER] += 1
    ints[g, I_BANKER] = next_banker
    ints[g, I_REDEALS] = 0
    _deal_random(card_sets, ints, g)
    return False


@njit
def _declare(card_sets, ints, pending, settled, config, g):
    """Melds, four lowest and redeal offers on the current deal, until a decision is due."""
    while True:
        first = ints[g, I_FIRST]
        holder = -1
        best = 0
        for k in range(4):  # deal order: the first in deal order wins equal melds
            seat = (first + k) % 4
            stakes = _meld_stakes(card_sets[g, CS_HAND + seat])
            if stakes > best:
                best = stakes
                holder = seat
        if holder >= 0:
            exempt = ints[g, I_HUNDRED_HOLDER]
            for other in range(4):
                if other != holder and other != exempt:
                    _add_line(ints, pending, g, RULE_MELD, other, holder, best)
            if _finish_hand(card_sets, ints, pending, settled, config, g, np.int64(holder), True):
                return
            continue
        four = -1
        for seat in range(4):
            if (card_sets[g, CS_HAND + seat] & FOUR_LOWEST_MASK) == FOUR_LOWEST_MASK:
                four = seat
        if four >= 0:
            for other in range(4):
                if other != four:
                    _add_line(ints, pending, g, RULE_FOUR_LOWEST, other, four, payments.FOUR_LOWEST)
            ints[g, I_BANKER] = _random_below(card_sets, g, 4)  # the banker is drawn again
            _deal_random(card_sets, ints, g)
            continue
        eligible = 0
        for seat in range(4):
            hand = card_sets[g, CS_HAND + seat]
            for suit in range(4):
                if popcount(hand & SUIT_MASK[suit]) >= 5:
                    eligible |= 1 << seat
        cap = config[CFG_MAX_REDEALS]
        if cap >= 0 and ints[g, I_REDEALS] >= cap:
            eligible = 0
        ints[g, I_ELIGIBLE] = eligible
        ints[g, I_ASK_POS] = 0
        _ask_next_or_play(ints, g)
        return


@njit
def _ask_next_or_play(ints, g):
    """Offer the redeal to the next eligible seat in deal order, or start play."""
    first = ints[g, I_FIRST]
    for k in range(ints[g, I_ASK_POS], 4):
        seat = (first + k) % 4
        if ints[g, I_ELIGIBLE] & (1 << seat):
            ints[g, I_ASK_POS] = k
            ints[g, I_PHASE] = PHASE_REDEAL
            ints[g, I_TO_ACT] = seat
            return
    ints[g, I_ASK_POS] = 4
    ints[g, I_PHASE] = PHASE_PLAY
    ints[g, I_LEADER] = first
    ints[g, I_TO_ACT] = first


@njit
def _settle_play(card_sets, ints, pending, g):
    """Settlement lines after the eighth trick, in the rules doc's order; returns the next banker.
    (Amounts and the rules they pay: ``madiao_env.payments``.)"""
    banker = ints[g, I_BANKER]
    # Tricks won are read from ``ints`` where needed: a scratch array here cost an allocation per
    # hand, a sizeable part of a play-out.
    slam_seat = -1
    for seat in range(4):
        if ints[g, I_TRICKS_WON + seat] == N_TRICKS:
            slam_seat = seat
    # Trick count, or slam instead.
    if slam_seat == banker:
        _seat_earns(ints, pending, g, banker, payments.SLAM, RULE_SLAM)
    else:
        for seat in range(4):
            if seat == banker:
                continue
            if seat == slam_seat:
                _add_line(ints, pending, g, RULE_SLAM, banker, seat, payments.SLAM)
            elif ints[g, I_TRICKS_WON + seat] < payments.MINIMUM_TRICKS:
                _add_line(ints, pending, g, RULE_TRICK_COUNT, seat, banker, payments.TRICK_COUNT)
            elif ints[g, I_TRICKS_WON + seat] > payments.MINIMUM_TRICKS:
                _add_line(ints, pending, g, RULE_TRICK_COUNT, banker, seat, payments.TRICK_COUNT)
    # Boss card: the upcard being a top card promotes the next card of its suit.
    upcard = ints[g, I_STOCK]
    boss = TOP_MASK
    if (TOP_MASK & bit(upcard)) != np.uint64(0):
        boss = (boss & ~bit(upcard)) | bit(upcard - 1)
    for seat in range(4):
        if ints[g, I_TRICKS_WON + seat] >= payments.MINIMUM_TRICKS:
            count = popcount(card_sets[g, CS_WON_WITH + seat] & boss)
            _seat_earns(ints, pending, g, seat, count * payments.BOSS_CARD_PER_TRICK, RULE_BOSS_CARD)
    # Hundred Myriad, one tier for the seat dealt it.
    holder = ints[g, I_HUNDRED_HOLDER]
    if holder >= 0:
        won_with_hundred = (card_sets[g, CS_WON_WITH + holder] & HUNDRED_BIT) != np.uint64(0)
        if ints[g, I_TRICKS_WON + holder] < payments.MINIMUM_TRICKS:
            tier = payments.HUNDRED_MYRIAD_CONSOLATION
        elif won_with_hundred:
            tier = payments.HUNDRED_MYRIAD_WON_WITH_IT
        else:
            tier = payments.HUNDRED_MYRIAD_MINIMUM
        _seat_earns(ints, pending, g, holder, tier, RULE_HUNDRED_MYRIAD)
    # Honours.
    for seat in range(4):
        won = card_sets[g, CS_WON_WITH + seat]
        if (won & HONOURS_FOUR_CARDS) == HONOURS_FOUR_CARDS:
            _seat_earns(ints, pending, g, seat, payments.HONOURS_FOUR, RULE_HONOURS)
        elif (won & HONOURS_THREE_CARDS) == HONOURS_THREE_CARDS:
            _seat_earns(ints, pending, g, seat, payments.HONOURS_THREE, RULE_HONOURS)
    # Two tricks with the Hundred Myriad.
    next_banker = (banker + 1) % 4
    for seat in range(4):
        won_two = ints[g, I_TRICKS_WON + seat] == payments.MINIMUM_TRICKS
        if won_two and (card_sets[g, CS_WON_WITH + seat] & HUNDRED_BIT):
            if seat == banker:
                next_banker = banker
            else:
                for other in range(4):
                    if other != banker and other != seat:
                        _add_line(
                            ints,
                            pending,
                            g,
                            RULE_TWO_TRICKS_HUNDRED_MYRIAD,
                            other,
                            seat,
                            payments.TWO_TRICKS_HUNDRED_MYRIAD,
                        )
    # Stock check: the card under the upcard, as named (no promotion).
    exposed = ints[g, I_STOCK + 1]
    if (TOP_MASK & bit(exposed)) != np.uint64(0):
        second = bit(exposed - 1)
        for seat in range(4):
            if card_sets[g, CS_FACE_UP + seat] & second:
                for other in range(4):
                    if other != seat:
                        _add_line(ints, pending, g, RULE_STOCK_CHECK, seat, other, payments.STOCK_CHECK)
    return next_banker


# ----------------------------------------------------------------------------- trick rules
# The play rules as small scalar functions of a hand and the trick so far. Two callers use them:
# the env's step (``_apply``, one action on the state arrays) and the play-outs
# (``_play_out_tricks``, which keeps the trick in local variables); each rule is written once.


@njit(inline="always")
def _barred_from_capturing(trick, tricks_won):
    """The last-trick rule: a seat that has won no trick may not capture in the eighth trick."""
    return trick == N_TRICKS - 1 and tricks_won == 0


@njit(inline="always")
def _face_up_choices(hand, leading, best, barred, face_up_discard):
    """Cards of ``hand`` that may be played face up: any card to lead; otherwise the cards of the
    led suit above the ``best`` card so far (a capture), none when ``barred`` by the last-trick
    rule, and any card under the face-up-discard variant."""
    if leading:
        return hand
    if barred:
        return np.uint64(0)
    if face_up_discard:
        return hand
    return hand & SUIT_MASK[CARD_SUIT[best]] & bits_above(best)


@njit(inline="always")
def _face_down_choices(hand, leading):
    """Cards of ``hand`` that may be sloughed face down: any card, except when leading."""
    return np.uint64(0) if leading else hand


@njit(inline="always")
def _takes_lead(card, best, leading):
    """Whether a face-up ``card`` becomes the trick's best card: the lead, or a capture (same
    suit as the ``best`` card so far and above it)."""
    return leading or (CARD_SUIT[card] == CARD_SUIT[best] and card > best)


@njit(inline="always")
def _pick_play(random_u64, face_up, face_down):
    """The play action (card, or ``N_CARDS`` + card face down) chosen uniformly from the legal
    sets by the 64-bit draw ``random_u64``."""
    n_up = popcount(face_up)
    pick = _below(random_u64, n_up + popcount(face_down))
    if pick < n_up:
        return nth_set_bit(face_up, pick)
    return N_CARDS + nth_set_bit(face_down, pick - n_up)


@njit(inline="always")
def _play_card(card_sets, ints, pending, g, seat, card, face_up, takes_lead):
    """``seat`` plays ``card``: out of its hand into its face-up or sloughed set; a face-up card
    that does not take the lead (legal only under the variant) costs two stakes."""
    card_bit = bit(card)
    card_sets[g, CS_HAND + seat] &= ~card_bit
    if face_up:
        card_sets[g, CS_FACE_UP + seat] |= card_bit
        if not takes_lead:
            _seat_pays(ints, pending, g, seat, payments.FACE_UP_DISCARD, RULE_FACE_UP_DISCARD)
    else:
        card_sets[g, CS_SLOUGHED + seat] |= card_bit


@njit(inline="always")
def _win_trick(card_sets, ints, g, winner, best):
    """Close a trick: ``winner`` (who played the ``best`` card) scores it and leads the next."""
    ints[g, I_TRICKS_WON + winner] += 1
    card_sets[g, CS_WON_WITH + winner] |= bit(best)
    ints[g, I_TRICK] += 1
    ints[g, I_LEADER] = winner
    ints[g, I_TO_ACT] = winner
    ints[g, I_BEST_CARD] = -1
    ints[g, I_BEST_SEAT] = -1


@njit(inline="always")
def _close_hand(card_sets, ints, pending, settled, config, g):
    """After the eighth trick: settle, then end the episode or deal and declare the next hand.

    Inlined (it only calls compiled functions): as a function of its own it was one more level
    whose compile optimised all the rule code it calls again, at every cold start."""
    next_banker = _settle_play(card_sets, ints, pending, g)
    if not _finish_hand(card_sets, ints, pending, settled, config, g, np.int64(next_banker), False):
        _declare(card_sets, ints, pending, settled, config, g)


@njit(inline="always")
def _apply(card_sets, ints, history, pending, settled, config, g, action):
    """Apply one legal action of the seat to act in game ``g``."""
    seat = ints[g, I_TO_ACT]
    ints[g, I_DECIDED] = 1
    if ints[g, I_PHASE] == PHASE_REDEAL:
        if action == N_ACTIONS - 2:  # redeal: same banker, new deal, declarations again
            ints[g, I_REDEALS] += 1
            _deal_random(card_sets, ints, g)
            _declare(card_sets, ints, pending, settled, config, g)
        else:
            ints[g, I_PASSED] |= 1 << seat
            ints[g, I_ASK_POS] += 1
            _ask_next_or_play(ints, g)
        return
    card = action % N_CARDS
    face_up = action < N_CARDS
    n = ints[g, I_N_PLAYS]
    history[g, n, 0] = seat
    history[g, n, 1] = card
    history[g, n, 2] = 1 if face_up else 0
    ints[g, I_N_PLAYS] = n + 1
    in_trick = n % 4
    takes_lead = face_up and _takes_lead(card, ints[g, I_BEST_CARD], in_trick == 0)
    _play_card(card_sets, ints, pending, g, seat, card, face_up, takes_lead)
    if takes_lead:
        ints[g, I_BEST_CARD] = card
        ints[g, I_BEST_SEAT] = seat
    if in_trick < 3:
        ints[g, I_TO_ACT] = (seat + 1) % 4
        return
    _win_trick(card_sets, ints, g, ints[g, I_BEST_SEAT], ints[g, I_BEST_CARD])
    if ints[g, I_TRICK] == N_TRICKS:
        _close_hand(card_sets, ints, pending, settled, config, g)


# ----------------------------------------------------------------------------- observations


@njit(inline="always")
def _legal_cards(card_sets, ints, config, g, seat):
    """Cards ``seat`` may play now: (face-up set, face-down set), both empty unless it is the seat
    to act in the play phase. The one statement of the play rules, used by the mask and by the
    play-outs (which draw from these sets without building a mask)."""
    hand = card_sets[g, CS_HAND + seat]
    if seat != ints[g, I_TO_ACT] or ints[g, I_PHASE] != PHASE_PLAY:
        return np.uint64(0), np.uint64(0)
    leading = ints[g, I_N_PLAYS] % 4 == 0
    # The loads before any branch: a load inside a short-circuit condition compiled to code
    # about 20x slower (measured).
    barred = _barred_from_capturing(ints[g, I_TRICK], ints[g, I_TRICKS_WON + seat])
    best = ints[g, I_BEST_CARD]
    face_up = _face_up_choices(hand, leading, best, barred, config[CFG_FACE_UP_DISCARD] == 1)
    return face_up, _face_down_choices(hand, leading)


# The encoder helpers below write row ``r`` of a 2-D output array rather than taking a row view:
# a view passed to another compiled function costs reference-count updates at every call, which
# made up half of a vector env step.


@njit(inline="always")
def _legal(card_sets, ints, config, g, seat, masks, r):
    """Legal-action mask (0/1 bytes) of ``seat`` into ``masks[r]``: all zeros unless it is the
    seat to act."""
    face_up, face_down = _legal_cards(card_sets, ints, config, g, seat)
    _write_bits(masks, r, 0, face_up)
    _write_bits(masks, r, N_CARDS, face_down)
    offer = 1 if seat == ints[g, I_TO_ACT] and ints[g, I_PHASE] == PHASE_REDEAL else 0
    masks[r, N_ACTIONS - 2] = offer
    masks[r, N_ACTIONS - 1] = offer


@njit(inline="always")
def _write_bits(out, r, at, cards):
    """``out[r, at + c] = 1`` if card ``c`` is in ``cards``, else 0, for the 40 cards.

    Eight entries at a time from a byte table: the encoder runs at every step, and this is
    about five times faster than a loop over single bits (it compiles to 8-byte copies).
    Inlined by Numba: as a compiled function of its own, left to LLVM, it saved a cold start
    0.2-0.4 s and made the batched step about 10% slower (benchmarks/README.md, "The batched
    step's bit writer inlined again").
    """
    for byte in range(N_CARDS // 8):
        value = (cards >> np.uint64(8 * byte)) & np.uint64(0xFF)
        for k in range(8):
            out[r, at + 8 * byte + k] = _BYTE_BITS[value, k]


@njit(inline="always")
def _zero(out, r, start, stop):
    # Inlined by Numba, as _write_bits.
    for k in range(start, stop):
        out[r, k] = 0


@njit(inline="always")
def _observe_summary(card_sets, ints, history, g, seat, out, r):
    # The first, third and fourth card planes are written whole by _write_bits: zero the rest.
    _zero(out, r, OBS_UPCARD_AT, OBS_SEEN_FACE_UP_AT)
    _zero(out, r, OBS_TRICK_FACE_UP_AT, SUMMARY_SIZE)
    _write_bits(out, r, OBS_HAND_AT, card_sets[g, CS_HAND + seat])
    out[r, OBS_UPCARD_AT + ints[g, I_STOCK]] = 1
    seen = np.uint64(0)
    for other in range(4):
        seen |= card_sets[g, CS_FACE_UP + other]
    _write_bits(out, r, OBS_SEEN_FACE_UP_AT, seen)
    _write_bits(out, r, OBS_OWN_SLOUGHED_AT, card_sets[g, CS_SLOUGHED + seat])
    n = ints[g, I_N_PLAYS]
    in_trick = n % 4
    if in_trick > 0:
        start = n - in_trick
        out[r, OBS_TRICK_LEADER_AT + ((int(history[g, start, 0]) - seat) & 3)] = 1
        for k in range(in_trick):
            relative = (int(history[g, start + k, 0]) - seat) & 3
            card = int(history[g, start + k, 1])
            slot = OBS_TRICK_PLAYS_AT + k * (N_CARDS + 1)
            if history[g, start + k, 2] == 1:
                out[r, OBS_TRICK_FACE_UP_AT + relative * N_CARDS + card] = 1
                out[r, slot + card] = 1
            else:
                out[r, OBS_TRICK_FACE_DOWN_AT + relative] = 1
                out[r, OBS_TRICK_FACE_DOWN_COUNT_AT] += 1
                out[r, slot + N_CARDS] = 1
    for other in range(4):
        relative = (other - seat) & 3
        out[r, OBS_TRICKS_WON_AT + relative] = ints[g, I_TRICKS_WON + other]
        if ints[g, I_BEEN_BANKER] & (1 << other):
            out[r, OBS_BEEN_BANKER_AT + relative] = 1
        if ints[g, I_PASSED] & (1 << other):
            out[r, OBS_REDEAL_PASSED_AT + relative] = 1
    out[r, OBS_BANKER_AT + ((ints[g, I_BANKER] - seat) & 3)] = 1
    out[r, OBS_FIRST_AT + ((ints[g, I_FIRST] - seat) & 3)] = 1
    out[r, OBS_TRICK_NUMBER_AT + ints[g, I_TRICK]] = 1
    out[r, OBS_PHASE_AT + ints[g, I_PHASE]] = 1


@njit(inline="always")
def _observe_history(card_sets, ints, history, g, seat, out, r):
    _zero(out, r, HIST_UPCARD_AT, HISTORY_SIZE)  # the first two card planes are written whole
    hand = card_sets[g, CS_HAND + seat]
    dealt = hand | card_sets[g, CS_FACE_UP + seat] | card_sets[g, CS_SLOUGHED + seat]
    _write_bits(out, r, HIST_HAND_DEALT_AT, dealt)
    _write_bits(out, r, HIST_HAND_AT, hand)
    out[r, HIST_UPCARD_AT + ints[g, I_STOCK]] = 1
    out[r, HIST_BANKER_AT + ((ints[g, I_BANKER] - seat) & 3)] = 1
    out[r, HIST_FIRST_AT + ((ints[g, I_FIRST] - seat) & 3)] = 1
    for other in range(4):
        relative = (other - seat) & 3
        if ints[g, I_PASSED] & (1 << other):
            out[r, HIST_REDEAL_PASSED_AT + relative] = 1
        if ints[g, I_BEEN_BANKER] & (1 << other):
            out[r, HIST_BEEN_BANKER_AT + relative] = 1
    out[r, HIST_PHASE_AT + ints[g, I_PHASE]] = 1
    for k in range(ints[g, I_N_PLAYS]):
        player = int(history[g, k, 0])
        slot = HIST_PLAYS_AT + k * HIST_SLOT_SIZE
        out[r, slot + ((player - seat) & 3)] = 1
        if history[g, k, 2] == 1 or player == seat:  # others' face-down cards stay hidden
            out[r, slot + 4 + int(history[g, k, 1])] = 1
        if history[g, k, 2] == 0:
            out[r, slot + 4 + N_CARDS] = 1


@njit(inline="always")
def _observe_record(card_sets, ints, history, g, seat, out, r):
    # After the summary: the per-seat pieces, all public (face-up cards, trick winners' cards, the
    # best face-up card each face-down slough went under, and how many cards each seat sloughed).
    _zero(out, r, OBS_SLOUGHED_UNDER_BY_SEAT_AT, RECORD_SIZE)
    for other in range(4):
        relative = (other - seat) & 3
        _write_bits(out, r, OBS_FACE_UP_BY_SEAT_AT + relative * N_CARDS, card_sets[g, CS_FACE_UP + other])
        _write_bits(out, r, OBS_WON_WITH_BY_SEAT_AT + relative * N_CARDS, card_sets[g, CS_WON_WITH + other])
    best = 0
    for k in range(ints[g, I_N_PLAYS]):
        card = int(history[g, k, 1])
        if k % 4 == 0:
            best = card
        elif history[g, k, 2] == 1:
            if _takes_lead(card, best, False):  # not so for a face-up discard (a variant)
                best = card
        else:
            relative = (int(history[g, k, 0]) - seat) & 3
            out[r, OBS_SLOUGHED_UNDER_BY_SEAT_AT + relative * N_CARDS + best] = 1
            out[r, OBS_SLOUGHS_BY_SEAT_AT + relative] += 1


@njit(inline="always")
def _encode(card_sets, ints, history, config, g, seat, obs, r):
    """The observation encoder (the one both envs use): ``seat``'s view of game ``g`` into ``obs[r]``."""
    if config[CFG_OBS_TYPE] == OBS_TYPE_HISTORY:
        _observe_history(card_sets, ints, history, g, seat, obs, r)
    else:
        _observe_summary(card_sets, ints, history, g, seat, obs, r)
        if config[CFG_OBS_TYPE] == OBS_TYPE_RECORD:
            _observe_record(card_sets, ints, history, g, seat, obs, r)


@njit
def _encode_out_of_line(state, config, g, seat, obs, r):
    """:func:`_encode` compiled once as a function of its own: every kernel's observations,
    final ones included, go through it, so its large inlined body compiles once per process
    (inlined into each kernel, it added seconds to every cold start)."""
    _encode(state.card_sets, state.ints, state.history, config, g, seat, obs, r)


@njit
def _observe_out_of_line(state, config, g, seat, obs, masks, r):
    """``seat``'s observation (the shared encoder) and legal mask into row ``r``, for the kernels."""
    _encode_out_of_line(state, config, g, seat, obs, r)
    _legal(state.card_sets, state.ints, config, g, seat, masks, r)


# ----------------------------------------------------------------------------- batch kernels


@njit
def _reset_game(state, config, g, rng_seed, banker, deck, first):
    """Start an episode in game ``g`` (``deck[0] < 0``: a random deal) up to its first decision."""
    card_sets, ints, history = state.card_sets, state.ints, state.history
    pending, settled = state.pending, state.settled
    ints[g, :] = 0
    card_sets[g, :] = np.uint64(0)
    history[g, :, :] = 0
    seed = np.uint64(rng_seed)
    card_sets[g, CS_RNG] = seed if seed != np.uint64(0) else np.uint64(0x9E3779B97F4A7C15)
    ints[g, I_BANKER] = banker
    if deck[0] < 0:
        _deal_random(card_sets, ints, g)
    else:
        _deal_deck(card_sets, ints, g, deck, np.int64(first))
    _declare(card_sets, ints, pending, settled, config, g)


@njit
def reset_games(state, config, rng_seeds, bankers, decks, firsts, obs, masks):
    """Start an episode in every game: seed, banker, deal (``decks[g, 0] < 0``: random), declare.

    ``firsts[g] >= 0`` overrides the seat dealt first (a scenario that sets the hands directly).
    Writes the observation and mask of the seat to act into ``obs[g]``/``masks[g]``.
    """
    ints = state.ints
    for g in prange(ints.shape[0]):
        _reset_game(state, config, g, rng_seeds[g], bankers[g], decks[g], firsts[g])
        seat = ints[g, I_TO_ACT]
        _observe_out_of_line(state, config, g, np.int64(max(seat, 0)), obs, masks, g)


@njit
def step_games(state, config, actions, obs, masks):
    """Apply ``actions[g]`` (skip games with -1); refresh the acting seat's observation and mask.

    The settled buffer and the hands-settled count of a stepped game start empty at each call.
    """
    card_sets, ints, history = state.card_sets, state.ints, state.history
    pending, settled = state.pending, state.settled
    for g in range(ints.shape[0]):
        action = actions[g]
        if action < 0:
            continue
        ints[g, I_N_SETTLED] = 0
        ints[g, I_HANDS_SETTLED] = 0
        _apply(card_sets, ints, history, pending, settled, config, g, action)
        seat = ints[g, I_TO_ACT]
        _observe_out_of_line(state, config, g, np.int64(max(seat, 0)), obs, masks, g)


@njit
def observe_games(state, config, seats, obs, masks):
    """Observation and legal mask of ``seats[g]`` in every game."""
    for g in prange(state.ints.shape[0]):
        _observe_out_of_line(state, config, g, np.int64(seats[g]), obs, masks, g)


# ----------------------------------------------------------------------------- vector env kernel


@njit
def _net_settled(ints, settled, g, net):
    """Add this call's settled lines of game ``g`` to ``net`` (int64[4] stakes by seat)."""
    for i in range(ints[g, I_N_SETTLED]):
        stakes = settled[g, i, 4]
        net[settled[g, i, 2]] -= stakes
        net[settled[g, i, 3]] += stakes


@njit
def vector_step_games(
    state,
    config,
    actions,
    auto_reset,
    episode_stakes,
    obs,
    masks,
    to_act,
    rewards,
    terminated,
    final_payoffs,
    final_obs,
):
    """The step of both envs in one call: apply, reward, auto-reset, observe.

    For every game with ``actions[g] >= 0``: apply the action; ``rewards[g]`` = this call's
    settled whole stakes for every seat (the vector env applies the ``stake`` option);
    ``episode_stakes[g]`` (int64[N, 4]) sums them over the episode. When the episode ends:
    ``final_payoffs[g]`` = the episode's whole stakes, ``terminated[g]`` set, and, with
    ``auto_reset`` (the vector env), ``final_obs[g, s]`` = every seat's last observation and a new
    episode starts with a banker and a seed drawn from the game's own RNG (so a game's future
    depends only on its own state). A meld paid while dealing that new episode stays pending and
    is paid with its first settlement, never in this call. Without ``auto_reset`` (the AEC env)
    the ended game stays as it ended, its seat to act -1. Then ``to_act[g]`` = the seat to act and
    ``obs[g]``/``masks[g]`` = its view (seat 0's once the game is over). Skipped games keep their
    state and buffers; their rewards and flags are cleared. Returns the first game whose line
    buffer overflowed, or -1 (the env raises).

    The AEC env steps its one game through this kernel too, rather than a kernel of its own:
    the rule code is then compiled and optimised once per process for both envs (a cold start
    compiles every kernel it reaches, and each top-level kernel optimises its callees again).

    The loop is a ``prange`` (``cardgame_core.jit.parallel``) over chunks of ``STEP_CHUNK`` games
    (``cardgame_core.jit``) whose body is one call of a function that steps its chunk's games and
    writes only their rows (``net``, the scratch of the stakes, has one row per game); statements
    written inline in a parallel loop can go wrong in Numba 0.68 (Mao's step wrote stale values
    into its outputs so).
    """
    n_games = state.ints.shape[0]
    net = np.zeros((n_games, 4), dtype=np.int64)
    # Every seat's final view as rows g * 4 + seat of a 2-D view (see the encoder's note).
    final_rows = final_obs.reshape(final_obs.shape[0] * 4, final_obs.shape[2])
    no_deck = np.full(N_CARDS, -1, dtype=np.int8)
    for chunk in prange((n_games + STEP_CHUNK - 1) // STEP_CHUNK):
        _vector_step_chunk(
            state, config, chunk * STEP_CHUNK, min(n_games, (chunk + 1) * STEP_CHUNK), actions,
            auto_reset, episode_stakes, obs, masks, to_act, rewards, terminated, final_payoffs,
            final_rows, net, no_deck,
        )  # fmt: skip
    for g in range(n_games):
        if actions[g] >= 0 and state.ints[g, I_OVERFLOW] == 1:
            return g
    return -1


@njit
def _vector_step_chunk(
    state, config, start, stop, actions, auto_reset, episode_stakes, obs, masks, to_act, rewards,
    terminated, final_payoffs, final_rows, net, no_deck,
):  # fmt: skip
    """:func:`vector_step_games` of games ``start..stop-1`` (``net``: int64 scratch ``[N, 4]``)."""
    card_sets, ints, history = state.card_sets, state.ints, state.history
    pending, settled = state.pending, state.settled
    for g in range(start, stop):
        for seat in range(4):
            rewards[g, seat] = 0.0
        terminated[g] = False
        action = actions[g]
        if action < 0:
            continue
        ints[g, I_N_SETTLED] = 0
        ints[g, I_HANDS_SETTLED] = 0
        _apply(card_sets, ints, history, pending, settled, config, g, action)
        if ints[g, I_HANDS_SETTLED] > 0:
            _net_settled(ints, settled, g, net[g])
            for seat in range(4):
                rewards[g, seat] = net[g, seat]
                episode_stakes[g, seat] += net[g, seat]
        if ints[g, I_EPISODE_OVER] == 1:
            for seat in range(4):
                if auto_reset:
                    _encode_out_of_line(state, config, g, np.int64(seat), final_rows, 4 * g + seat)
                final_payoffs[g, seat] = episode_stakes[g, seat]
                episode_stakes[g, seat] = 0
            terminated[g] = True
            if auto_reset:
                banker = _random_below(card_sets, g, 4)
                rng_seed = _next_random(card_sets, g)
                _reset_game(state, config, g, rng_seed, np.int64(banker), no_deck, np.int64(-1))
        seat = ints[g, I_TO_ACT]
        to_act[g] = seat
        _observe_out_of_line(state, config, g, np.int64(max(seat, 0)), obs, masks, g)


# ----------------------------------------------------------------------------- play-outs


@njit(inline="always")
def _random_action(card_sets, ints, config, g):
    """A uniformly random legal action of the seat to act, drawn from the game's own RNG."""
    if ints[g, I_PHASE] == PHASE_REDEAL:
        return N_ACTIONS - 2 + _random_below(card_sets, g, 2)
    face_up, face_down = _legal_cards(card_sets, ints, config, g, ints[g, I_TO_ACT])
    return _pick_play(_next_random(card_sets, g), face_up, face_down)


@njit
def _play_out_tricks(card_sets, ints, pending, config, g):
    """Play the rest of game ``g``'s trick phase with uniformly random legal actions.

    The same rule functions and the same draws as ``_random_action`` + ``_apply`` action by
    action, but the trick in progress (seat to act, best card and seat, plays so far) and the
    RNG state stay in local variables, and the play history is not recorded (only the
    observations read it, and nobody observes a play-out). Leaves the state of the end of the
    eighth trick, ready for ``_close_hand``.
    """
    face_up_discard = config[CFG_FACE_UP_DISCARD] == 1
    ints[g, I_DECIDED] = 1
    x = card_sets[g, CS_RNG]
    n = ints[g, I_N_PLAYS]
    seat = ints[g, I_TO_ACT]
    trick = ints[g, I_TRICK]
    best = ints[g, I_BEST_CARD]
    best_seat = ints[g, I_BEST_SEAT]
    while n < 4 * N_TRICKS:
        leading = (n & 3) == 0
        hand = card_sets[g, CS_HAND + seat]
        barred = _barred_from_capturing(trick, ints[g, I_TRICKS_WON + seat])
        face_up_cards = _face_up_choices(hand, leading, best, barred, face_up_discard)
        x = _xorshift(x)
        action = _pick_play(x * _XOR_MULTIPLIER, face_up_cards, _face_down_choices(hand, leading))
        face_up = action < N_CARDS
        card = action - N_CARDS if action >= N_CARDS else action
        takes_lead = face_up and _takes_lead(card, best, leading)
        _play_card(card_sets, ints, pending, g, seat, card, face_up, takes_lead)
        if takes_lead:
            best = card
            best_seat = seat
        n += 1
        if (n & 3) != 0:
            seat = (seat + 1) & 3
            continue
        _win_trick(card_sets, ints, g, best_seat, best)
        trick += 1
        seat = best_seat
        best = -1
    ints[g, I_N_PLAYS] = n
    card_sets[g, CS_RNG] = x


@njit
def random_playouts_from(state, config, seed, net):
    """Play ``net.shape[0]`` random continuations of game 0 of ``state`` to the episode's end.

    Every play-out copies the state into scratch arrays, reseeds the game's RNG from ``seed`` and
    the play-out index (redeals and new deals then differ between play-outs), and plays uniformly
    random legal actions with the full rules: the trick phase through ``_play_out_tricks``, the
    rest through ``_apply``. ``net[k]`` gets play-out ``k``'s stakes by seat from the state on:
    every line settled after it, pending lines included. Returns True if a line buffer overflowed
    (the caller raises). ``state.history`` is not read: no rule depends on the play history.
    """
    card_sets, ints, pending = state.card_sets, state.ints, state.pending
    sim_cards = np.empty((1, N_CARD_COLS), dtype=np.uint64)
    sim_ints = np.empty((1, N_INTS), dtype=np.int32)
    sim_history = np.empty((1, MAX_PLAYS, 3), dtype=np.int8)
    sim_pending = np.empty((1, MAX_PENDING, 5), dtype=np.int32)
    sim_settled = np.empty((1, MAX_SETTLED, 5), dtype=np.int32)
    seed_state = np.empty(1, dtype=np.uint64)
    seed_state[0] = np.uint64(seed)
    overflow = False
    for k in range(net.shape[0]):
        for c in range(N_CARD_COLS):
            sim_cards[0, c] = card_sets[0, c]
        for c in range(N_INTS):
            sim_ints[0, c] = ints[0, c]
        for i in range(ints[0, I_N_PENDING]):
            for c in range(5):
                sim_pending[0, i, c] = pending[0, i, c]
        rng_state = next_u64(seed_state, 0)
        sim_cards[0, CS_RNG] = rng_state if rng_state != np.uint64(0) else np.uint64(0x9E3779B97F4A7C15)
        for seat in range(4):
            net[k, seat] = 0
        while sim_ints[0, I_EPISODE_OVER] == 0:
            sim_ints[0, I_N_SETTLED] = 0
            sim_ints[0, I_HANDS_SETTLED] = 0
            if sim_ints[0, I_PHASE] == PHASE_PLAY:
                _play_out_tricks(sim_cards, sim_ints, sim_pending, config, 0)
                _close_hand(sim_cards, sim_ints, sim_pending, sim_settled, config, 0)
            else:
                action = _random_action(sim_cards, sim_ints, config, 0)
                _apply(sim_cards, sim_ints, sim_history, sim_pending, sim_settled, config, 0, action)
            if sim_ints[0, I_HANDS_SETTLED] > 0:
                for i in range(sim_ints[0, I_N_SETTLED]):
                    stakes = sim_settled[0, i, 4]
                    net[k, sim_settled[0, i, 2]] -= stakes
                    net[k, sim_settled[0, i, 3]] += stakes
        if sim_ints[0, I_OVERFLOW] == 1:
            overflow = True
    return overflow


# ----------------------------------------------------------------------------- deals made by a caller
# A caller that draws the deals itself (the OpenSpiel game's chance nodes, madiao_env.openspiel_game)
# runs the kernels from a known RNG state, learns from ``draws_between`` whether they dealt at
# random, and puts its own deal in place of that one with ``deal_games``.

#: Draws of one random deal (``_deal_random``: a Fisher-Yates shuffle of the 40 cards); a random
#: banker (the four lowest) is one draw more, made before the deal.
DEAL_DRAWS = N_CARDS - 1


@njit
def draws_between(start, end, limit):
    """How many draws took a game's RNG from state ``start`` to state ``end``: 0..limit, or -1."""
    x = np.uint64(start)
    target = np.uint64(end)
    for n in range(limit + 1):
        if x == target:
            return n
        x = _xorshift(x)
    return -1


@njit
def deal_games(state, config, bankers, decks, obs, masks):
    """Deal ``decks[g]`` (top to bottom; skip games with ``decks[g, 0] < 0``) with banker
    ``bankers[g]`` (-1: keep the banker) in place of game ``g``'s last deal, then declare as after
    any deal; write the observation and mask of the seat to act. The state must be one that a
    kernel left right after a random deal that stopped for a decision: the deal is the only part
    of it replaced (the settled buffer and the hands-settled count start empty, as in ``step_games``)."""
    card_sets, ints = state.card_sets, state.ints
    for g in range(ints.shape[0]):
        if decks[g, 0] < 0:
            continue
        ints[g, I_N_SETTLED] = 0
        ints[g, I_HANDS_SETTLED] = 0
        if bankers[g] >= 0:
            ints[g, I_BANKER] = bankers[g]
        _deal_deck(card_sets, ints, g, decks[g], np.int64(-1))
        _declare(card_sets, ints, state.pending, state.settled, config, g)
        seat = ints[g, I_TO_ACT]
        _observe_out_of_line(state, config, g, np.int64(max(seat, 0)), obs, masks, g)
