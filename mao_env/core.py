"""Mao rules as Numba kernels over fixed-dtype arrays with a leading batch axis (``B`` games).

State of B games: one ``mao_env.state.MaoState``, a named tuple of arrays made by
``mao_env.state.new_state``. The public kernels take it as one argument ``state`` and pass its
fields by name to the rule helpers below (as Madiao's core does; measured faster than passing
the whole tuple down to every helper)::

    hands    int8   [B, 8, 53]        cards of each type held by each seat
    hand_bits uint64 [B, 8]           presence set of each hand (bit i = type i held)
    decks    int8   [B, 2, 162]       row STACK: draw order (top = last), row PILE: face-up pile
    scalars  int64  [B, N_SCALARS]    turn/round state and per-step outputs (S_*), then the
                                      options (CFG_*, written by ``MaoOptions.write_config``),
                                      the call window, the rules refused to each seat
    rules    int64  [B, 3, 32]        row ACTIVE library ids (-1 = empty), row AUTHOR their
                                      authors, row QUEUE the fixed rules to add (rule_choice="fixed")
    events   int64  [B, 16, EW]       ring buffer of public events (E_* fields)
    calls    int64  [B, 32, 6]        the penalty calls of the last step (K_* fields)
    rng      uint64 [B]               each game's SplitMix64 state (cardgame_core.rng)

The secret-rule library is a constant table, not state: it arrives as the argument ``library``
(``mao_env.rules.LIBRARY``: one ``(family, kind, set_a, set_b, param)`` row per rule, card sets as
53-bit masks), never as a global, so editing the library cannot leave a stale cached kernel.
Every kernel takes the game index ``g``; :func:`vector_reset`, :func:`vector_step` and
:func:`observe_games` loop a batch. Public kernels (no underscore) are the ones the envs call:
``reset_game``, ``step_game``, ``step_rewards``, ``action_mask``, ``observe`` and the three batch
kernels. No checking happens here: the env layer masks and validates actions before they reach
a kernel. Naming across both games' cores: ``docs/architecture.md``.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from cardgame_core.bits import popcount
from cardgame_core.jit import STEP_CHUNK, njit
from cardgame_core.rng import next_u64, random_below, shuffle_prefix
from mao_env import cards
from mao_env import rules as rule_library
from mao_env.layout import (  # the observation layout's offsets and event numbering (one table)
    CALL_BIT_BAD_CARD,  # noqa: F401 (re-exported: the event records' numbering)
    CALL_BIT_MAO,  # noqa: F401
    CALL_BIT_TALKING,  # noqa: F401
    EV_BAD_CALLS,
    EV_CALLS,
    EV_CARD,
    EV_CHAIN_CARDS,
    EV_FORCED_DRAW,
    EV_FORCED_SEAT,
    EV_KIND,
    EV_N_CALLS,
    EV_NAMED_SUIT,
    EV_PENALTY_CARDS,
    EV_PHRASES,
    EV_PRESENT,
    EV_RULES,
    EV_SEAT,
    EV_WON,
    EVENT_FEATURES,
    KIND_BAD_CARD,
    KIND_CALL,
    KIND_DRAW,
    KIND_PLAY,
    KIND_POINT_OF_ORDER,
    KIND_RULE_ADDED,
    N_CALL_BITS,  # noqa: F401 (re-exported: the event records' numbering)
    N_EVENT_KINDS,  # noqa: F401
    OFF_DIRECTION,
    OFF_DREW,
    OFF_EVENTS,
    OFF_HAND,
    OFF_HAND_SIZES,
    OFF_KNOWN,
    OFF_MOVER,
    OFF_N_RULES,
    OFF_NAMED,
    OFF_PENDING_SEVEN,
    OFF_PHASE,
    OFF_PILE,
    OFF_PLAYED,
    OFF_ROUND,
    OFF_SAID,
    OFF_STACK,
    OFF_TOOK_SEVEN,
    OFF_TOP,
    OFF_VALID_SUIT,
    event_width,
)

# ``mao_env.rules`` defines what each rule family, kind and library column means (``rule_library.
# SKIP``, ``R_KIND``, ...); Numba freezes those ints into the kernels, whose disk cache is stamped
# with that module's source too (``cardgame_core.jit``; the library rows arrive as an argument).

# ---- array geometry ------------------------------------------------------------------------
STACK, PILE = 0, 1
EVENT_SLOTS = 16
MAX_CALLS = 32
ACTIVE, AUTHOR, QUEUE = 0, 1, 2

# ---- scalars: state --------------------------------------------------------------------------
S_N_PLAYERS = 0
S_CURRENT = 1  # seat to act
S_DIRECTION = 2  # +1 or -1
S_PHASE = 3
S_NAMED_SUIT = 4  # suit named with the last valid Jack, -1 if none
S_PENDING_SEVEN = 5  # penalty cards the seat to act must take unless it plays a seven (0 = none)
S_STACK_SIZE = 6
S_PILE_SIZE = 7
S_PLAYED = 8  # card type played this turn, -1 if none
S_DREW = 9  # 1 if the seat drew a card this turn (not the seven penalty)
S_TOOK_SEVEN = 10  # seven-chain penalty cards taken this turn
S_SAID = 11  # bit set of phrases said this turn
S_FIRST_SUIT = 12  # first suit named this turn, -1 if none
S_SUB_ACTIONS = 13  # sub-actions taken this turn
S_ROUND = 14  # rounds finished so far
S_STEP = 15  # sub-actions in the episode
S_N_EVENTS = 16  # events recorded so far (the ring slot is S_N_EVENTS % EVENT_SLOTS)
S_N_CALLS = 17  # calls made in the last step
S_ROUND_WON = 18  # seat that won a round in the last step, -1 if none
S_NEXT_SEAT = 19  # seat to act after the round winner's rule choice
S_QUEUE_NEXT = 20  # index into the fixed rule queue
S_DONE = 21  # 1 when the episode's rounds are all played
S_PENALTY_TAKEN_0 = 22  # 8 entries: penalty cards each seat received in the last step
# ---- scalars: options (written by the env before reset) ---------------------------------------
CFG_SEVEN_TURN_ENDS = 30
CFG_THANK_YOU = 31
CFG_TALKING = 32
CFG_CAMBRIDGE = 33
CFG_N_ROUNDS = 34
CFG_MAX_SUB_ACTIONS = 35
CFG_RULE_CHOICE = 36
CFG_N_DECKS = 37
CFG_PLAYERS_CALL = 38  # 1: calls="players" (a call window follows each turn), 0: the Mao Master
CFG_FORGOTTEN_MAO_CARDS = 39  # penalty cards for a forgotten "Mao"
CONFIG_END = 40  # the options are the columns CFG_SEVEN_TURN_ENDS .. CONFIG_END - 1
# ---- scalars: the call window (calls="players"; the Master uses them within one step) ----------
S_MOVER = 40  # seat whose turn is judged
S_VALID = 41  # 1 if its card was good
S_CALLED = 42  # bit set of the call reasons called so far in the window
S_CORRECT = 43  # ... of those called correctly
S_TALKING = 44  # bit set of the phrases that were talking
S_OWED_0 = 45  # 8 entries: penalty cards each seat takes when the turn is settled
S_FAULT_CARDS_0 = 53  # N_CALL_REASONS entries: the Master's cards for each fault (0 = no fault)
S_FAULT_RULE_0 = S_FAULT_CARDS_0 + cards.N_CALL_REASONS  # ... the library rule behind it, -1 base
# ---- scalars: the rule choice -----------------------------------------------------------------
# 8 entries: per seat, the bit set of library rules the Mao Master refused when that seat proposed
# them (each was already in force): what the seat knows of the rules besides its own, all episode.
S_REFUSED_0 = S_FAULT_RULE_0 + cards.N_CALL_REASONS
# ---- scalars: a blocked round ("Nothing left to take", docs/mao-rules.md) -----------------------
S_STARVED = S_REFUSED_0 + cards.MAX_PLAYERS  # 1 if nothing could be taken when this turn started
S_STUCK_TURNS = S_STARVED + 1  # turns in a row that started so and ended with no card on the pile
S_ROUND_BLOCKED = S_STUCK_TURNS + 1  # 1 if a round was blocked in the last step
N_SCALARS = S_ROUND_BLOCKED + 1

PH_START, PH_SPEAK, PH_CHOOSE_RULE, PH_CALL, PH_OVER = 0, 1, 2, 3, 4
RULE_CHOICE_AGENT, RULE_CHOICE_SAMPLED, RULE_CHOICE_FIXED = 0, 1, 2

# ---- events --------------------------------------------------------------------------------
E_SEAT = 0
E_KIND = 1
E_CARD = 2  # card played (valid or bad), -1 for a draw (drawn cards are private)
E_PHRASES = 3  # bit set of phrases said
E_CALLS = 4  # bit set of call reasons (CALL_BIT_*)
E_N_CALLS = 5
E_PENALTY_CARDS = 6  # cards given for calls
E_CHAIN_CARDS = 7  # seven-chain penalty cards taken
E_FORCED_DRAW = 8  # cards a dynamics rule made the next seat take
E_FORCED_SEAT = 9
E_NAMED_SUIT = 10
E_WON = 11
E_RULE_BITS = 12  # library rules behind the calls (shown only with reasons="revealed")
E_BAD_CALLS = 13  # bit set of call reasons called wrongly ("Bad call", players' calls)
EVENT_WIDTH = 14
# Event kinds (E_KIND) and call reason bits (E_CALLS) are numbered as the observation shows them:
# KIND_PLAY, KIND_BAD_CARD, KIND_DRAW, KIND_RULE_ADDED, N_EVENT_KINDS, CALL_BIT_BAD_CARD,
# CALL_BIT_TALKING, CALL_BIT_MAO and N_CALL_BITS come from mao_env.layout (imported above).

# ---- calls ---------------------------------------------------------------------------------
# A call: its code, the phrase (for a bad call: the reason called), the cards, the rule behind it,
# the seat that takes the cards and the caller (-1: the Mao Master).
CALL_BAD_CARD, CALL_FAILURE_TO_SAY, CALL_TALKING, CALL_MAO, CALL_BAD_CALL = 0, 1, 2, 3, 4
K_CODE, K_PHRASE, K_CARDS, K_RULE, K_PLAYER, K_CALLER = 0, 1, 2, 3, 4, 5
CALL_WIDTH = 6

# Module-level constants Numba freezes into the kernels.
_RANK = cards.CARD_RANK
_SUIT = cards.CARD_SUIT
_RANK_ABOVE = cards.RANK_ABOVE
_RANK_BELOW = cards.RANK_BELOW
_RED = cards.RED_MASK
_N_TYPES = cards.N_CARD_TYPES
_N_PHRASES = cards.N_PHRASES
_N_REASONS = cards.N_CALL_REASONS
_MAX_ACTIVE = rule_library.MAX_ACTIVE_RULES
_ONE = np.uint64(1)
_ZERO = np.uint64(0)


# ---- cards in and out of hands -----------------------------------------------------------------
@njit
def _give(hands, hand_bits, g, seat, card):
    hands[g, seat, card] += 1
    hand_bits[g, seat] |= _ONE << np.uint64(card)


@njit
def _take(hands, hand_bits, g, seat, card):
    hands[g, seat, card] -= 1
    if hands[g, seat, card] == 0:
        hand_bits[g, seat] &= ~(_ONE << np.uint64(card))


@njit
def _draw_card(hands, hand_bits, decks, scalars, rng, g, seat):
    """Move the stack's top card to ``seat``; rebuild the stack from the pile (all but its top
    card, shuffled) when it is empty. Returns the card, or -1 if no card is left anywhere."""
    if scalars[g, S_STACK_SIZE] == 0:
        pile_size = scalars[g, S_PILE_SIZE]
        if pile_size <= 1:
            return -1
        moved = pile_size - 1
        for i in range(moved):
            decks[g, STACK, i] = decks[g, PILE, i]
        decks[g, PILE, 0] = decks[g, PILE, pile_size - 1]
        scalars[g, S_PILE_SIZE] = 1
        scalars[g, S_STACK_SIZE] = moved
        shuffle_prefix(decks[g, STACK], moved, rng, g)
    size = scalars[g, S_STACK_SIZE] - 1
    card = np.int64(decks[g, STACK, size])
    scalars[g, S_STACK_SIZE] = size
    _give(hands, hand_bits, g, seat, card)
    return card


@njit
def _draw_cards(hands, hand_bits, decks, scalars, rng, g, seat, n):
    """Draw up to ``n`` cards; returns how many were actually drawn."""
    drawn = 0
    for _ in range(n):
        if _draw_card(hands, hand_bits, decks, scalars, rng, g, seat) < 0:
            break
        drawn += 1
    return drawn


@njit
def _hand_size(hands, g, seat):
    total = 0
    for card in range(_N_TYPES):
        total += hands[g, seat, card]
    return total


# ---- rules ---------------------------------------------------------------------------------
@njit
def _top_card(decks, scalars, g):
    return np.int64(decks[g, PILE, scalars[g, S_PILE_SIZE] - 1])


@njit
def _check_play(scalars, rules, library, g, card, top):
    """Whether ``card`` may go on ``top`` now: returns (valid, rule) where rule is the library id
    that makes it invalid, -1 when the base rules do (or when the play is valid).

    valid = (suit match OR rank clause OR some WILD rule) AND NOT (some forbidding rule); the rank
    clause is "same rank", or with RANK_ORDER rules active "ranks above/below the top card"."""
    if scalars[g, S_PENDING_SEVEN] > 0 and _RANK[card] != 7:
        # A seven chain is pending and its penalty was not taken: only a seven may be played.
        return False, -1
    named = scalars[g, S_NAMED_SUIT]
    valid_suit = named if named >= 0 else _SUIT[top]
    card_bit = _ONE << np.uint64(card)
    top_bit = _ONE << np.uint64(top)
    suit_match = _SUIT[card] == valid_suit
    rank_match = _RANK[card] == _RANK[top]
    wild = False
    order_rules = 0  # RANK_ORDER rules active
    order_ok = True
    order_breaker = -1  # first RANK_ORDER rule the card fails
    forbidding = -1
    for slot in range(_MAX_ACTIVE):
        rule = rules[g, ACTIVE, slot]
        if rule < 0 or library[rule, rule_library.R_FAMILY] != rule_library.VALIDITY:
            continue
        kind = library[rule, rule_library.R_KIND]
        set_a = np.uint64(library[rule, rule_library.R_PRED_A])
        set_b = np.uint64(library[rule, rule_library.R_PRED_B])
        forbids = False
        if kind == rule_library.FORBID_ON:
            forbids = (card_bit & set_a) != _ZERO and (top_bit & set_b) != _ZERO
        elif kind == rule_library.ONLY_AFTER:
            forbids = (top_bit & set_b) != _ZERO and (card_bit & set_a) == _ZERO
        elif kind == rule_library.WILD:
            if (card_bit & set_a) != _ZERO:
                wild = True
        elif kind == rule_library.ALTERNATE_COLOUR:  # a card off the valid suit must change colour
            same_colour = ((card_bit & _RED) != _ZERO) == ((top_bit & _RED) != _ZERO)
            forbids = not suit_match and same_colour
        elif kind == rule_library.RANK_ORDER:  # replaces "same rank" by "ranks above (param +1) / below (-1)"
            order = (
                _RANK_ABOVE[_RANK[top]]
                if library[rule, rule_library.R_PARAM] > 0
                else _RANK_BELOW[_RANK[top]]
            )
            order_rules += 1
            if (card_bit & order) == _ZERO:
                order_ok = False
                if order_breaker < 0:
                    order_breaker = rule
        if forbids and forbidding < 0:
            forbidding = rule
    rank_clause = order_ok if order_rules > 0 else rank_match
    if not (suit_match or rank_clause or wild):
        if rank_match:  # the plain base rules would have accepted it: the order rule refused
            return False, order_breaker
        return False, -1
    if forbidding >= 0:
        return False, forbidding
    return True, -1


@njit
def _card_phrases(rules, library, g, card, top, phrase_rule):
    """Phrases a valid play of ``card`` on ``top`` requires; fills ``phrase_rule[p]`` with the
    rule behind phrase p (-1 = base rule) for newly required phrases."""
    need = 0
    if _RANK[card] == 7:
        need |= 1 << cards.NICE_DAY
    if card != cards.JOKER and _SUIT[card] == cards.SPADES:
        need |= 1 << cards.CARD_NAME
    if card == cards.JOKER or card == cards.NINE_OF_DIAMONDS:
        need |= 1 << cards.BADGER
    card_bit = _ONE << np.uint64(card)
    top_bit = _ONE << np.uint64(top)
    for slot in range(_MAX_ACTIVE):
        rule = rules[g, ACTIVE, slot]
        if rule < 0 or library[rule, rule_library.R_FAMILY] != rule_library.SPEECH:
            continue
        kind = library[rule, rule_library.R_KIND]
        trigger_set = np.uint64(library[rule, rule_library.R_PRED_A]) & np.uint64(
            library[rule, rule_library.R_PRED_B]
        )
        if (kind == rule_library.SAY_ON_PLAY and (card_bit & trigger_set) != _ZERO) or (
            kind == rule_library.SAY_ON_TOP and (top_bit & trigger_set) != _ZERO
        ):
            phrase = library[rule, rule_library.R_PARAM]
            if not (need >> phrase) & 1:
                need |= 1 << phrase
                phrase_rule[phrase] = rule
    return need


@njit
def _turn_requirements(hands, decks, scalars, rules, library, g, phrase_rule):
    """What the current turn requires, judged as at END_TURN: returns
    (valid, bad_rule, required, excused, allowed); ``phrase_rule`` gets the rule behind each
    required phrase. ``excused`` phrases belong to a bad card (not talking); ``allowed`` are
    optional (the suit named with a Jack)."""
    for p in range(_N_PHRASES):
        phrase_rule[p] = -1
    seat = scalars[g, S_CURRENT]
    played = scalars[g, S_PLAYED]
    top = _top_card(decks, scalars, g)
    valid = False
    bad_rule = -1
    required = 0
    excused = 0
    allowed = 0
    hand_after = _hand_size(hands, g, seat)
    if played >= 0:
        valid, bad_rule = _check_play(scalars, rules, library, g, played, top)
        phrases = _card_phrases(rules, library, g, played, top, phrase_rule)
        if valid:
            required |= phrases
            if _RANK[played] == cards.JACK and scalars[g, S_FIRST_SUIT] >= 0:
                allowed |= 1 << (cards.SUIT_PHRASE_0 + scalars[g, S_FIRST_SUIT])
        else:
            excused |= phrases
            if _RANK[played] == cards.JACK and scalars[g, S_FIRST_SUIT] >= 0:
                excused |= 1 << (cards.SUIT_PHRASE_0 + scalars[g, S_FIRST_SUIT])
            for p in range(_N_PHRASES):
                phrase_rule[p] = -1
            # The bad card goes back to the hand (then a penalty card follows), so the hand never
            # drops to one card: "Last card" is not due, but saying it for the attempted play
            # is not talking either.
            if hand_after == 1:
                excused |= 1 << cards.LAST_CARD
    took_seven = scalars[g, S_TOOK_SEVEN] > 0 or (scalars[g, S_PENDING_SEVEN] > 0 and not valid)
    if took_seven:
        required |= 1 << (cards.THANK_YOU if scalars[g, CFG_THANK_YOU] else cards.PENALTY_CARD)
    if scalars[g, S_DREW]:
        for slot in range(_MAX_ACTIVE):
            rule = rules[g, ACTIVE, slot]
            if (
                rule >= 0
                and library[rule, rule_library.R_FAMILY] == rule_library.SPEECH
                and library[rule, rule_library.R_KIND] == rule_library.SAY_ON_DRAW
            ):
                phrase = library[rule, rule_library.R_PARAM]
                if not (required >> phrase) & 1:
                    required |= 1 << phrase
                    phrase_rule[phrase] = rule
    if scalars[g, S_DREW]:
        allowed |= 1 << cards.PASS  # "pass" after a draw is not talking
    if hand_after == 1 and (played < 0 or valid):
        required |= 1 << cards.LAST_CARD
    if valid and hand_after == 0:
        # Mao is due only for a flawless winning turn: every other phrase said, none extra.
        said = scalars[g, S_SAID]
        extra = said & ~required & ~allowed & ~(1 << cards.MAO)
        if scalars[g, CFG_TALKING] == 0:
            extra = 0
        if (required & ~said) == 0 and extra == 0:
            required |= 1 << cards.MAO
    return valid, bad_rule, required, excused, allowed


# ---- events and calls ------------------------------------------------------------------------
@njit
def _new_event(scalars, events, g, seat, kind, card):
    slot = scalars[g, S_N_EVENTS] % EVENT_SLOTS
    scalars[g, S_N_EVENTS] += 1
    for f in range(EVENT_WIDTH):
        events[g, slot, f] = 0
    events[g, slot, E_SEAT] = seat
    events[g, slot, E_KIND] = kind
    events[g, slot, E_CARD] = card
    events[g, slot, E_FORCED_SEAT] = -1
    events[g, slot, E_NAMED_SUIT] = -1
    return slot


@njit
def _call(scalars, calls, g, code, phrase, n_cards, rule, player, caller):
    k = scalars[g, S_N_CALLS]
    calls[g, k, K_CODE] = code
    calls[g, k, K_PHRASE] = phrase
    calls[g, k, K_CARDS] = n_cards
    calls[g, k, K_RULE] = rule
    calls[g, k, K_PLAYER] = player
    calls[g, k, K_CALLER] = caller
    scalars[g, S_N_CALLS] = k + 1


# ---- rounds --------------------------------------------------------------------------------
@njit
def _nothing_to_take(scalars, g):
    """No card can be drawn: the stack is empty and the pile is its top card alone."""
    return scalars[g, S_STACK_SIZE] == 0 and scalars[g, S_PILE_SIZE] <= 1


@njit
def _start_turn(scalars, g, seat):
    scalars[g, S_STARVED] = _nothing_to_take(scalars, g)
    scalars[g, S_CURRENT] = seat
    scalars[g, S_PHASE] = PH_START
    scalars[g, S_PLAYED] = -1
    scalars[g, S_DREW] = 0
    scalars[g, S_TOOK_SEVEN] = 0
    scalars[g, S_SAID] = 0
    scalars[g, S_FIRST_SUIT] = -1
    scalars[g, S_SUB_ACTIONS] = 0


@njit
def _deal_round(hands, hand_bits, decks, scalars, rng, g, starter):
    """Collect every card, shuffle, deal five to each seat and turn one card face up."""
    n_players = scalars[g, S_N_PLAYERS]
    for seat in range(cards.MAX_PLAYERS):
        hand_bits[g, seat] = _ZERO
        for card in range(_N_TYPES):
            hands[g, seat, card] = 0
    n = 0
    for _ in range(scalars[g, CFG_N_DECKS]):
        for card in range(_N_TYPES):
            decks[g, STACK, n] = card
            n += 1
        decks[g, STACK, n] = cards.JOKER  # a deck's second joker
        n += 1
    shuffle_prefix(decks[g, STACK], n, rng, g)
    scalars[g, S_STACK_SIZE] = n
    scalars[g, S_PILE_SIZE] = 0
    for seat in range(n_players):
        _draw_cards(hands, hand_bits, decks, scalars, rng, g, seat, cards.HAND_SIZE)
    n -= n_players * cards.HAND_SIZE
    decks[g, PILE, 0] = decks[g, STACK, n - 1]
    scalars[g, S_STACK_SIZE] = n - 1
    scalars[g, S_PILE_SIZE] = 1
    scalars[g, S_DIRECTION] = 1
    scalars[g, S_NAMED_SUIT] = -1
    scalars[g, S_PENDING_SEVEN] = 0
    scalars[g, S_STUCK_TURNS] = 0
    _start_turn(scalars, g, starter)


@njit
def reset_game(state, g, seed):
    """New episode for game ``g``; the options (CFG_*, S_N_PLAYERS) and the fixed rule queue must
    already be written. Clears the active rules."""
    hands, hand_bits, decks, scalars, rules, events, _, rng = state
    rng[g] = np.uint64(seed)
    for slot in range(_MAX_ACTIVE):
        rules[g, ACTIVE, slot] = -1
        rules[g, AUTHOR, slot] = -1
    for s in range(CFG_SEVEN_TURN_ENDS):
        if s != S_N_PLAYERS:
            scalars[g, s] = 0
    scalars[g, S_ROUND_WON] = -1
    scalars[g, S_NEXT_SEAT] = -1
    _close_window(scalars, g)
    for seat in range(cards.MAX_PLAYERS):
        scalars[g, S_REFUSED_0 + seat] = 0
    scalars[g, S_ROUND_BLOCKED] = 0
    for slot in range(EVENT_SLOTS):
        for field in range(EVENT_WIDTH):
            events[g, slot, field] = 0
    _deal_round(hands, hand_bits, decks, scalars, rng, g, 0)


@njit
def _add_rule(scalars, rules, events, g, rule, author):
    for slot in range(_MAX_ACTIVE):
        if rules[g, ACTIVE, slot] < 0:
            rules[g, ACTIVE, slot] = rule
            rules[g, AUTHOR, slot] = author
            _new_event(scalars, events, g, author, KIND_RULE_ADDED, -1)
            return


@njit
def _n_active(rules, g):
    n = 0
    for slot in range(_MAX_ACTIVE):
        if rules[g, ACTIVE, slot] >= 0:
            n += 1
    return n


@njit
def _is_active(rules, g, rule):
    for slot in range(_MAX_ACTIVE):  # noqa: SIM110 (a plain loop compiles best in Numba)
        if rules[g, ACTIVE, slot] == rule:
            return True
    return False


@njit
def _knows_rule(scalars, rules, g, seat, rule):
    """Whether ``seat`` knows ``rule`` is in force: it authored it, or its proposal was refused."""
    if (scalars[g, S_REFUSED_0 + seat] >> rule) & 1:
        return True
    for slot in range(_MAX_ACTIVE):
        if rules[g, ACTIVE, slot] == rule and rules[g, AUTHOR, slot] == seat:
            return True
    return False


@njit
def _next_round(hands, hand_bits, decks, scalars, rng, g, winner):
    """After the rule choice: plain rounds re-deal everyone; Cambridge re-enters the winner."""
    if scalars[g, CFG_CAMBRIDGE]:
        _draw_cards(hands, hand_bits, decks, scalars, rng, g, winner, cards.HAND_SIZE)
        _start_turn(scalars, g, scalars[g, S_NEXT_SEAT])
    else:
        _deal_round(hands, hand_bits, decks, scalars, rng, g, scalars[g, S_ROUND] % scalars[g, S_N_PLAYERS])


@njit
def _round_blocked(hands, hand_bits, decks, scalars, rng, g):
    """Every seat in turn order ended its turn with no card on the pile while nothing could be
    taken: the round ends with no winner and no new rule; every seat is dealt again (Cambridge
    too: no winner re-enters), or the episode ends."""
    scalars[g, S_ROUND] += 1
    scalars[g, S_ROUND_BLOCKED] = 1
    scalars[g, S_STUCK_TURNS] = 0
    if scalars[g, S_ROUND] >= scalars[g, CFG_N_ROUNDS]:
        scalars[g, S_PHASE] = PH_OVER
        scalars[g, S_DONE] = 1
        scalars[g, S_PLAYED] = -1  # the last card tried went back to its hand: none on the table
        return
    _deal_round(hands, hand_bits, decks, scalars, rng, g, scalars[g, S_ROUND] % scalars[g, S_N_PLAYERS])


@njit
def _round_won(hands, hand_bits, decks, scalars, rules, library, events, rng, g, winner):
    scalars[g, S_ROUND] += 1
    scalars[g, S_ROUND_WON] = winner
    if scalars[g, S_ROUND] >= scalars[g, CFG_N_ROUNDS]:
        scalars[g, S_PHASE] = PH_OVER
        scalars[g, S_DONE] = 1
        return
    # A rule is added while a slot is free and some library rule is not in force (the winner's
    # choice then always has a rule to accept: nothing to propose forever).
    if _n_active(rules, g) < min(_MAX_ACTIVE, library.shape[0]):
        mode = scalars[g, CFG_RULE_CHOICE]
        if mode == RULE_CHOICE_AGENT:
            _start_turn(scalars, g, winner)
            scalars[g, S_PHASE] = PH_CHOOSE_RULE
            return
        if mode == RULE_CHOICE_SAMPLED:
            n_free = library.shape[0] - _n_active(rules, g)
            pick = random_below(rng, g, n_free)
            for rule in range(library.shape[0]):
                if not _is_active(rules, g, rule):
                    if pick == 0:
                        _add_rule(scalars, rules, events, g, rule, winner)
                        break
                    pick -= 1
        else:
            index = scalars[g, S_QUEUE_NEXT]
            if index < _MAX_ACTIVE and rules[g, QUEUE, index] >= 0:
                scalars[g, S_QUEUE_NEXT] = index + 1
                rule = rules[g, QUEUE, index]
                if not _is_active(rules, g, rule):
                    _add_rule(scalars, rules, events, g, rule, winner)
    _next_round(hands, hand_bits, decks, scalars, rng, g, winner)


# ---- the judge -------------------------------------------------------------------------------
@njit
def _close_window(scalars, g):
    """The window columns as they are outside a call window."""
    scalars[g, S_MOVER] = -1
    for column in range(S_VALID, S_FAULT_RULE_0):
        scalars[g, column] = 0
    for reason in range(_N_REASONS):
        scalars[g, S_FAULT_RULE_0 + reason] = -1


@njit
def _judge_faults(hands, decks, scalars, rules, library, g):
    """The truth of the turn that just ended, as the Mao Master sees it, into the window columns:
    the mover, the card's verdict, and per call reason the Master's cards for the fault (0: no
    fault) and the library rule behind it (-1: a base rule)."""
    said = scalars[g, S_SAID]
    phrase_rule = np.empty(_N_PHRASES, dtype=np.int64)
    valid, bad_rule, required, excused, allowed = _turn_requirements(
        hands, decks, scalars, rules, library, g, phrase_rule
    )
    _close_window(scalars, g)
    scalars[g, S_MOVER] = scalars[g, S_CURRENT]
    scalars[g, S_VALID] = valid
    if scalars[g, S_PLAYED] >= 0 and not valid:
        scalars[g, S_FAULT_CARDS_0 + cards.CALL_REASON_BAD_CARD] = cards.PENALTY_CARDS
        scalars[g, S_FAULT_RULE_0 + cards.CALL_REASON_BAD_CARD] = bad_rule
    missing = required & ~said & ~(1 << cards.MAO)
    for p in range(_N_PHRASES):
        if (missing >> p) & 1:
            scalars[g, S_FAULT_CARDS_0 + p] = cards.PENALTY_CARDS
            scalars[g, S_FAULT_RULE_0 + p] = phrase_rule[p]
    if scalars[g, CFG_TALKING]:
        talking = said & ~required & ~excused & ~allowed & ~(1 << cards.MAO)
        scalars[g, S_TALKING] = talking
        scalars[g, S_FAULT_CARDS_0 + cards.CALL_REASON_TALKING] = (
            popcount(np.uint64(talking)) * cards.PENALTY_CARDS
        )
    mao_due = (required >> cards.MAO) & 1
    if (said >> cards.MAO) & 1:
        if not mao_due:
            scalars[g, S_FAULT_CARDS_0 + cards.CALL_REASON_MAO] = cards.MAO_PENALTY_CARDS
    elif mao_due:
        scalars[g, S_FAULT_CARDS_0 + cards.MAO] = scalars[g, CFG_FORGOTTEN_MAO_CARDS]


@njit
def _announce(scalars, calls, g, reason, caller):
    """The Master's calls for the fault ``reason`` of the turn under judgement (talking: one per
    phrase), on the mover, made by ``caller`` (-1: the Master); returns the number of calls."""
    mover = scalars[g, S_MOVER]
    n_cards = scalars[g, S_FAULT_CARDS_0 + reason]
    rule = scalars[g, S_FAULT_RULE_0 + reason]
    if reason == cards.CALL_REASON_TALKING:
        talking = scalars[g, S_TALKING]
        n = 0
        for p in range(_N_PHRASES):
            if (talking >> p) & 1:
                _call(scalars, calls, g, CALL_TALKING, p, cards.PENALTY_CARDS, -1, mover, caller)
                n += 1
        return n
    if reason == cards.CALL_REASON_BAD_CARD:
        _call(scalars, calls, g, CALL_BAD_CARD, -1, n_cards, rule, mover, caller)
    elif reason == cards.CALL_REASON_MAO:
        _call(scalars, calls, g, CALL_MAO, cards.MAO, n_cards, -1, mover, caller)
    else:
        _call(scalars, calls, g, CALL_FAILURE_TO_SAY, reason, n_cards, rule, mover, caller)
    return 1


@njit
def _master_calls(scalars, calls, g):
    """The Mao Master calls every fault, in its order: bad card, each missing phrase but "Mao",
    talking, then "Mao" in vain or forgotten."""
    for k in range(_N_REASONS):
        if k == 0:
            reason = cards.CALL_REASON_BAD_CARD
        elif k <= _N_PHRASES - 1:
            reason = k - 1 if k - 1 < cards.MAO else k  # the phrases, "Mao" left for last
        elif k == _N_PHRASES:
            reason = cards.CALL_REASON_TALKING
        elif k == _N_PHRASES + 1:
            reason = cards.CALL_REASON_MAO
        else:
            reason = cards.MAO  # forgotten
        if scalars[g, S_FAULT_CARDS_0 + reason] > 0:
            scalars[g, S_CORRECT] |= np.int64(1) << reason
            _announce(scalars, calls, g, reason, -1)
            scalars[g, S_OWED_0 + scalars[g, S_MOVER]] += scalars[g, S_FAULT_CARDS_0 + reason]


@njit
def _player_call(scalars, events, calls, g, reason):
    """The acting seat calls ``reason`` on the mover: the verdict is announced now (a call
    event), the cards change hands when the turn is settled."""
    caller = scalars[g, S_CURRENT]
    bit = np.int64(1) << reason
    scalars[g, S_CALLED] |= bit
    slot = _new_event(scalars, events, g, caller, KIND_CALL, -1)
    events[g, slot, E_CALLS] = bit
    if scalars[g, S_FAULT_CARDS_0 + reason] > 0:
        scalars[g, S_CORRECT] |= bit
        n_cards = scalars[g, S_FAULT_CARDS_0 + reason]
        events[g, slot, E_N_CALLS] = _announce(scalars, calls, g, reason, caller)
        scalars[g, S_OWED_0 + scalars[g, S_MOVER]] += n_cards
        if scalars[g, S_FAULT_RULE_0 + reason] >= 0:
            events[g, slot, E_RULE_BITS] = np.int64(1) << scalars[g, S_FAULT_RULE_0 + reason]
    else:
        # A bad call: the caller takes the card(s) it meant to give.
        n_cards = cards.PENALTY_CARDS
        if reason == cards.CALL_REASON_MAO:
            n_cards = cards.MAO_PENALTY_CARDS
        elif reason == cards.MAO:
            n_cards = scalars[g, CFG_FORGOTTEN_MAO_CARDS]
        _call(scalars, calls, g, CALL_BAD_CALL, reason, n_cards, -1, caller, caller)
        scalars[g, S_OWED_0 + caller] += n_cards
        events[g, slot, E_N_CALLS] = 1
        events[g, slot, E_BAD_CALLS] = bit
    events[g, slot, E_PENALTY_CARDS] = n_cards


@njit
def _end_turn(hands, hand_bits, decks, scalars, rules, library, events, calls, rng, g):
    """``END_TURN``: the Mao Master calls every fault and the turn is settled, or (players' calls)
    the call window opens at the seat after the mover."""
    _judge_faults(hands, decks, scalars, rules, library, g)
    if scalars[g, CFG_PLAYERS_CALL]:
        scalars[g, S_PHASE] = PH_CALL
        scalars[g, S_CURRENT] = (scalars[g, S_MOVER] + 1) % scalars[g, S_N_PLAYERS]
        return
    _master_calls(scalars, calls, g)
    _settle(hands, hand_bits, decks, scalars, rules, library, events, rng, g)


@njit
def _settle(hands, hand_bits, decks, scalars, rules, library, events, rng, g):
    """The turn's outcome from the faults called (S_CORRECT): a called bad card is taken back, an
    uncalled one stays and acts as a good card; the mover takes the seven chain and the cards of
    the correct calls, then each bad caller (in window order) its own; the turn's public event;
    the next seat, or the round won."""
    seat = scalars[g, S_MOVER]
    scalars[g, S_CURRENT] = seat
    n_players = scalars[g, S_N_PLAYERS]
    played = scalars[g, S_PLAYED]
    correct = scalars[g, S_CORRECT]
    kept = played >= 0 and not (correct >> cards.CALL_REASON_BAD_CARD) & 1
    kind = KIND_DRAW
    if played >= 0:
        kind = KIND_PLAY if kept else KIND_BAD_CARD
    slot = _new_event(scalars, events, g, seat, kind, played)
    events[g, slot, E_PHRASES] = scalars[g, S_SAID]
    if played >= 0 and not kept:
        _give(hands, hand_bits, g, seat, played)  # the bad card is taken back
    # The seven chain: a pending chain is taken unless a seven stays on it.
    chain = 0
    if scalars[g, S_PENDING_SEVEN] > 0 and not (kept and _RANK[played] == cards.SEVEN):
        chain = scalars[g, S_PENDING_SEVEN]
        scalars[g, S_PENDING_SEVEN] = 0
    # Effects of the card that stays.
    skips = 0
    reverse = False
    again = False
    forced = 0
    if kept:
        pile_size = scalars[g, S_PILE_SIZE]
        decks[g, PILE, pile_size] = played
        scalars[g, S_PILE_SIZE] = pile_size + 1
        scalars[g, S_NAMED_SUIT] = -1
        rank = _RANK[played]
        if rank == cards.JACK and scalars[g, S_FIRST_SUIT] >= 0:
            scalars[g, S_NAMED_SUIT] = scalars[g, S_FIRST_SUIT]
            events[g, slot, E_NAMED_SUIT] = scalars[g, S_FIRST_SUIT]
        if rank == 7:
            scalars[g, S_PENDING_SEVEN] += 1
        elif rank == cards.ACE:
            skips += 1
        elif rank == cards.EIGHT:
            reverse = not reverse
        card_bit = _ONE << np.uint64(played)
        for rule_slot in range(_MAX_ACTIVE):
            rule = rules[g, ACTIVE, rule_slot]
            if rule < 0 or library[rule, rule_library.R_FAMILY] != rule_library.DYNAMICS:
                continue
            if (
                card_bit
                & np.uint64(library[rule, rule_library.R_PRED_A])
                & np.uint64(library[rule, rule_library.R_PRED_B])
            ) == _ZERO:
                continue
            effect = library[rule, rule_library.R_KIND]
            if effect == rule_library.SKIP:
                skips += 1
            elif effect == rule_library.REVERSE:
                reverse = not reverse
            elif effect == rule_library.DRAW:
                forced += library[rule, rule_library.R_PARAM]
            elif effect == rule_library.AGAIN:
                again = True
    n_calls = 0
    penalty = 0
    rule_bits = 0
    for reason in range(_N_REASONS):
        if (correct >> reason) & 1:
            penalty += scalars[g, S_FAULT_CARDS_0 + reason]
            if reason == cards.CALL_REASON_TALKING:
                n_calls += popcount(np.uint64(scalars[g, S_TALKING]))
            else:
                n_calls += 1
            if scalars[g, S_FAULT_RULE_0 + reason] >= 0:
                rule_bits |= np.int64(1) << scalars[g, S_FAULT_RULE_0 + reason]
    taken = _draw_cards(hands, hand_bits, decks, scalars, rng, g, seat, chain + scalars[g, S_OWED_0 + seat])
    scalars[g, S_PENALTY_TAKEN_0 + seat] += taken
    for k in range(1, n_players):
        caller = (seat + k) % n_players
        owed = scalars[g, S_OWED_0 + caller]
        if owed > 0:
            scalars[g, S_PENALTY_TAKEN_0 + caller] += _draw_cards(
                hands, hand_bits, decks, scalars, rng, g, caller, owed
            )
    events[g, slot, E_CALLS] = correct
    events[g, slot, E_BAD_CALLS] = scalars[g, S_CALLED] & ~correct
    events[g, slot, E_N_CALLS] = n_calls
    events[g, slot, E_PENALTY_CARDS] = penalty
    events[g, slot, E_CHAIN_CARDS] = chain + scalars[g, S_TOOK_SEVEN]
    events[g, slot, E_RULE_BITS] = rule_bits
    # A win: "Mao" said, the card stayed, the hand empty and no fault called on the turn (with the
    # Master every fault is called, so that is exactly a flawless winning turn).
    won = (
        ((scalars[g, S_SAID] >> cards.MAO) & 1) == 1
        and kept
        and correct == 0
        and _hand_size(hands, g, seat) == 0
    )
    _close_window(scalars, g)
    if reverse:
        scalars[g, S_DIRECTION] = -scalars[g, S_DIRECTION]
    direction = scalars[g, S_DIRECTION]
    if again:
        next_seat = seat
    else:
        next_seat = (seat + direction * (1 + skips)) % n_players
        if forced > 0:
            events[g, slot, E_FORCED_DRAW] = _draw_cards(
                hands, hand_bits, decks, scalars, rng, g, next_seat, forced
            )
            events[g, slot, E_FORCED_SEAT] = next_seat
    # A turn that started with nothing to take and left no card on the pile changed nothing a
    # later turn could use; as many in a row as there are seats block the round.
    if scalars[g, S_STARVED] and not kept:
        scalars[g, S_STUCK_TURNS] += 1
    else:
        scalars[g, S_STUCK_TURNS] = 0
    if won:
        events[g, slot, E_WON] = 1
        scalars[g, S_NEXT_SEAT] = next_seat
        _round_won(hands, hand_bits, decks, scalars, rules, library, events, rng, g, seat)
    elif scalars[g, S_STUCK_TURNS] >= n_players:
        _round_blocked(hands, hand_bits, decks, scalars, rng, g)
    else:
        _start_turn(scalars, g, next_seat)


@njit
def _apply_action(hands, hand_bits, decks, scalars, rules, library, events, calls, rng, g, action):
    """Apply one checked action id to game ``g``."""
    scalars[g, S_N_CALLS] = 0
    scalars[g, S_ROUND_WON] = -1
    scalars[g, S_ROUND_BLOCKED] = 0
    for seat in range(cards.MAX_PLAYERS):
        scalars[g, S_PENALTY_TAKEN_0 + seat] = 0
    scalars[g, S_STEP] += 1
    scalars[g, S_SUB_ACTIONS] += 1
    seat = scalars[g, S_CURRENT]
    phase = scalars[g, S_PHASE]
    if phase == PH_START:
        if action < cards.DRAW:
            _take(hands, hand_bits, g, seat, action)
            scalars[g, S_PLAYED] = action
            scalars[g, S_PHASE] = PH_SPEAK
        elif scalars[g, S_PENDING_SEVEN] > 0:
            chain = scalars[g, S_PENDING_SEVEN]
            scalars[g, S_PENDING_SEVEN] = 0
            scalars[g, S_TOOK_SEVEN] = chain
            taken = _draw_cards(hands, hand_bits, decks, scalars, rng, g, seat, chain)
            scalars[g, S_PENALTY_TAKEN_0 + seat] += taken
            if scalars[g, CFG_SEVEN_TURN_ENDS]:
                scalars[g, S_PHASE] = PH_SPEAK
        else:
            _draw_card(hands, hand_bits, decks, scalars, rng, g, seat)
            scalars[g, S_DREW] = 1
            scalars[g, S_PHASE] = PH_SPEAK
    elif phase == PH_SPEAK:
        if action < cards.END_TURN:
            phrase = action - cards.SAY_0
            scalars[g, S_SAID] |= 1 << phrase
            suit = phrase - cards.SUIT_PHRASE_0
            if 0 <= suit < 4 and scalars[g, S_FIRST_SUIT] < 0:
                scalars[g, S_FIRST_SUIT] = suit
        else:
            _end_turn(hands, hand_bits, decks, scalars, rules, library, events, calls, rng, g)
    elif phase == PH_CALL:
        if action < cards.NO_CALL:
            _player_call(scalars, events, calls, g, action - cards.CALL_0)
        elif action == cards.NO_CALL and (seat + 1) % scalars[g, S_N_PLAYERS] != scalars[g, S_MOVER]:
            scalars[g, S_CURRENT] = (seat + 1) % scalars[g, S_N_PLAYERS]
        else:  # the last seat passed, or a point of order: the calls are settled now
            if action == cards.POINT_OF_ORDER:
                _new_event(scalars, events, g, seat, KIND_POINT_OF_ORDER, -1)
            _settle(hands, hand_bits, decks, scalars, rules, library, events, rng, g)
    elif phase == PH_CHOOSE_RULE:
        rule = action - cards.CHOOSE_RULE_0
        if _is_active(rules, g, rule):
            # The Mao Master refuses a rule already in force, to the proposer alone, who proposes
            # again; no event (the other seats learn nothing).
            scalars[g, S_REFUSED_0 + seat] |= np.int64(1) << rule
        else:
            _add_rule(scalars, rules, events, g, rule, seat)
            _next_round(hands, hand_bits, decks, scalars, rng, g, seat)


# ---- masks -----------------------------------------------------------------------------------
@njit
def action_mask(state, library, g, by_rules, out):
    """Write the acting seat's mask into ``out`` (int8). ``by_rules`` False: what a person can do
    (physical); True: what the full current rule set allows (the oracle's choices)."""
    hands, _, decks, scalars, rules, _, _, _ = state
    out[:] = 0
    seat = scalars[g, S_CURRENT]
    phase = scalars[g, S_PHASE]
    if phase == PH_START:
        top = _top_card(decks, scalars, g)
        for card in range(_N_TYPES):
            if hands[g, seat, card] > 0:
                if by_rules:
                    valid, _ = _check_play(scalars, rules, library, g, card, top)
                    out[card] = valid
                else:
                    out[card] = 1
        out[cards.DRAW] = 1
    elif phase == PH_SPEAK:
        said = scalars[g, S_SAID]
        if scalars[g, S_SUB_ACTIONS] >= scalars[g, CFG_MAX_SUB_ACTIONS] - 1 or (said >> cards.MAO) & 1:
            out[cards.END_TURN] = 1
            return
        if not by_rules:
            for p in range(_N_PHRASES):
                if not (said >> p) & 1:
                    out[cards.SAY_0 + p] = 1
            out[cards.END_TURN] = 1
            return
        phrase_rule = np.empty(_N_PHRASES, dtype=np.int64)
        valid, _, required, _, _ = _turn_requirements(hands, decks, scalars, rules, library, g, phrase_rule)
        missing = required & ~said
        others = missing & ~(1 << cards.MAO)
        for p in range(_N_PHRASES):
            if (others >> p) & 1:
                out[cards.SAY_0 + p] = 1
        if others == 0 and missing != 0:
            out[cards.SAY_0 + cards.MAO] = 1
        if valid and _RANK[scalars[g, S_PLAYED]] == cards.JACK and scalars[g, S_FIRST_SUIT] < 0:
            for suit in range(4):
                out[cards.SAY_0 + cards.SUIT_PHRASE_0 + suit] = 1
        if scalars[g, S_DREW] and not (said >> cards.PASS) & 1:
            out[cards.SAY_0 + cards.PASS] = 1
        if missing == 0:
            out[cards.END_TURN] = 1
    elif phase == PH_CALL:
        # Any reason not yet called in this window (by the rules: only the faults), pass, or P-of-O.
        called = scalars[g, S_CALLED]
        for reason in range(_N_REASONS):
            if not (called >> reason) & 1 and (not by_rules or scalars[g, S_FAULT_CARDS_0 + reason] > 0):
                out[cards.CALL_0 + reason] = 1
        out[cards.NO_CALL] = 1
        out[cards.POINT_OF_ORDER] = 1
    elif phase == PH_CHOOSE_RULE:
        # Physical: every library rule the seat does not know to be in force (which others are is
        # the secret; each refusal takes one rule off, so the choice ends). By the rules: the
        # rules not in force.
        for rule in range(library.shape[0]):
            if by_rules:
                out[cards.CHOOSE_RULE_0 + rule] = not _is_active(rules, g, rule)
            else:
                out[cards.CHOOSE_RULE_0 + rule] = not _knows_rule(scalars, rules, g, seat, rule)


# ---- observation -----------------------------------------------------------------------------
# The offsets (OFF_*, EV_*) and EVENT_FEATURES come from mao_env.layout's table of named pieces.
REASONS_CALLS, REASONS_HIDDEN, REASONS_REVEALED = 0, 1, 2


def obs_size(n_events: int, reasons: int) -> int:
    """Length of the observation vector for ``n_events`` events and a reasons mode."""
    return OFF_EVENTS + n_events * event_width(reasons == REASONS_REVEALED)


@njit
def _relative_seat(other, seat, n_players):
    """``(other - seat) % n_players`` for seats in ``0..n_players-1``, without a division."""
    return other - seat if other >= seat else other - seat + n_players


@njit
def _write_bits(out, offset, bits):
    """``out[offset + i] = 1`` for every set bit ``i`` of ``bits`` (a non-negative int64; ``out``
    is already zeroed): a loop over the few set bits, not over every possible one."""
    while bits != 0:
        lowest = bits & -bits
        out[offset + popcount(np.uint64(lowest - 1))] = 1.0
        bits ^= lowest


@njit
def observe(state, library, g, seat, n_events, reasons, out):
    """Write ``seat``'s observation of game ``g`` into ``out`` (float32, zeroed here)."""
    hands, _, decks, scalars, rules, events, _, _ = state
    _observe_state(hands, decks, scalars, rules, library, g, seat, out)
    _observe_events(scalars, library, events, g, seat, n_events, reasons, out)


@njit
def _events_key(scalars, g, seat):
    """What the event block of ``seat``'s observation depends on, as one int64: the events
    recorded so far in the episode (an event is complete when the step that made it returns)
    and the observing seat."""
    return np.int64(scalars[g, S_N_EVENTS]) * cards.MAX_PLAYERS + seat


@njit(inline="always")
def _observe_cached(state, library, g, seat, n_events, reasons, out, events_key):
    """:func:`observe` for the vector env's own buffer row: the event block (most of the row) is
    rewritten only when ``events_key[g]`` says it holds another seat's view or fewer events. The
    row is then byte for byte what :func:`observe` writes, as long as only the kernels write it."""
    hands, _, decks, scalars, rules, events, _, _ = state
    _observe_state(hands, decks, scalars, rules, library, g, seat, out)
    key = _events_key(scalars, g, seat)
    if events_key[g] != key:
        _observe_events(scalars, library, events, g, seat, n_events, reasons, out)
        events_key[g] = key


@njit
def _observe_state(hands, decks, scalars, rules, library, g, seat, out):
    """The observation up to the event block (``out[:OFF_EVENTS]``, zeroed here)."""
    for i in range(OFF_KNOWN + library.shape[0]):
        out[i] = 0.0
    n_players = scalars[g, S_N_PLAYERS]
    for card in range(_N_TYPES):
        out[OFF_HAND + card] = hands[g, seat, card]
    top = _top_card(decks, scalars, g)
    out[OFF_TOP + top] = 1.0
    named = scalars[g, S_NAMED_SUIT]
    out[OFF_VALID_SUIT + (named if named >= 0 else _SUIT[top])] = 1.0
    out[OFF_NAMED] = 1.0 if named >= 0 else 0.0
    out[OFF_DIRECTION] = 1.0 if scalars[g, S_DIRECTION] > 0 else 0.0
    out[OFF_PENDING_SEVEN] = scalars[g, S_PENDING_SEVEN]
    phase = scalars[g, S_PHASE]
    if phase < PH_OVER:
        out[OFF_PHASE + phase] = 1.0
    if phase == PH_CALL:
        # The turn under judgement is public: every seat sees it, and whose it is.
        out[OFF_MOVER + _relative_seat(scalars[g, S_MOVER], seat, n_players)] = 1.0
    if phase == PH_CALL or (scalars[g, S_CURRENT] == seat and phase < PH_CHOOSE_RULE):
        if scalars[g, S_PLAYED] >= 0:
            out[OFF_PLAYED + scalars[g, S_PLAYED]] = 1.0
        out[OFF_DREW] = scalars[g, S_DREW]
        out[OFF_TOOK_SEVEN] = scalars[g, S_TOOK_SEVEN]
        _write_bits(out, OFF_SAID, scalars[g, S_SAID])
    for rel in range(n_players):
        out[OFF_HAND_SIZES + rel] = _hand_size(hands, g, (seat + rel) % n_players)
    out[OFF_STACK] = scalars[g, S_STACK_SIZE]
    out[OFF_PILE] = scalars[g, S_PILE_SIZE]
    out[OFF_ROUND] = scalars[g, S_ROUND]
    out[OFF_N_RULES] = _n_active(rules, g)
    for slot in range(_MAX_ACTIVE):
        if rules[g, ACTIVE, slot] >= 0 and rules[g, AUTHOR, slot] == seat:
            out[OFF_KNOWN + rules[g, ACTIVE, slot]] = 1.0
    _write_bits(out, OFF_KNOWN, scalars[g, S_REFUSED_0 + seat])


@njit
def _observe_events(scalars, library, events, g, seat, n_events, reasons, out):
    """The event block of the observation (``out[OFF_EVENTS:]``, zeroed here): the last
    ``n_events`` events, most recent first, seats relative to ``seat``."""
    n_players = scalars[g, S_N_PLAYERS]
    o = OFF_KNOWN + library.shape[0]
    for i in range(o, out.shape[0]):
        out[i] = 0.0
    total = scalars[g, S_N_EVENTS]
    width = EVENT_FEATURES + (library.shape[0] if reasons == REASONS_REVEALED else 0)
    for k in range(min(n_events, total, EVENT_SLOTS)):
        event = events[g, (total - 1 - k) % EVENT_SLOTS]
        o = OFF_KNOWN + library.shape[0] + k * width
        out[o + EV_PRESENT] = 1.0
        out[o + EV_SEAT + _relative_seat(event[E_SEAT], seat, n_players)] = 1.0
        out[o + EV_KIND + event[E_KIND]] = 1.0
        if event[E_CARD] >= 0:
            out[o + EV_CARD + event[E_CARD]] = 1.0
        if event[E_PHRASES]:
            _write_bits(out, o + EV_PHRASES, event[E_PHRASES])
        if reasons != REASONS_HIDDEN and event[E_CALLS]:
            _write_bits(out, o + EV_CALLS, event[E_CALLS])
        if reasons != REASONS_HIDDEN and event[E_BAD_CALLS]:
            _write_bits(out, o + EV_BAD_CALLS, event[E_BAD_CALLS])
        out[o + EV_N_CALLS] = event[E_N_CALLS]
        out[o + EV_PENALTY_CARDS] = event[E_PENALTY_CARDS]
        out[o + EV_CHAIN_CARDS] = event[E_CHAIN_CARDS]
        out[o + EV_FORCED_DRAW] = event[E_FORCED_DRAW]
        out[o + EV_WON] = event[E_WON]
        if event[E_FORCED_DRAW]:
            out[o + EV_FORCED_SEAT] = _relative_seat(event[E_FORCED_SEAT], seat, n_players)
        if event[E_NAMED_SUIT] >= 0:
            out[o + EV_NAMED_SUIT + event[E_NAMED_SUIT]] = 1.0
        if reasons == REASONS_REVEALED:
            _write_bits(out, o + EV_RULES, event[E_RULE_BITS])


# ---- whole env steps (the AEC env's one call per step, and the batched env's) -----------------
#: Flags returned by :func:`step_game`.
STEP_REWARDS = 1  # some seat took penalty cards or won the round: this step's rewards are not all 0
STEP_CALLS = 2  # the Mao Master made calls
STEP_DONE = 4  # the episode's last round was won (termination)
STEP_TRUNCATED = 8  # the episode reached ``max_steps`` sub-actions without ending


@njit
def step_game(state, library, g, action, by_rules, max_steps, mask_out):
    """Apply one checked action to game ``g`` and write the next acting seat's mask into
    ``mask_out`` (all zeros once the episode is over); returns the ``STEP_*`` flags, so the env
    layer touches rewards, calls and terminations only when something happened."""
    hands, hand_bits, decks, scalars, rules, events, calls, rng = state
    _apply_action(hands, hand_bits, decks, scalars, rules, library, events, calls, rng, g, action)
    flags = 0
    if scalars[g, S_ROUND_WON] >= 0:
        flags |= STEP_REWARDS
    for seat in range(scalars[g, S_N_PLAYERS]):
        if scalars[g, S_PENALTY_TAKEN_0 + seat] != 0:
            flags |= STEP_REWARDS
    if scalars[g, S_N_CALLS] > 0:
        flags |= STEP_CALLS
    if scalars[g, S_DONE]:
        flags |= STEP_DONE
    elif scalars[g, S_STEP] >= max_steps:
        flags |= STEP_TRUNCATED
    if flags & (STEP_DONE | STEP_TRUNCATED):
        mask_out[:] = 0
    else:
        action_mask(state, library, g, by_rules, mask_out)
    return flags


@njit
def step_rewards(state, g, win_reward, penalty_card_reward, out):
    """This step's reward of every seat of game ``g`` into ``out`` (float64 ``[n_players]``):
    ``penalty_card_reward`` per penalty card received, plus ``win_reward`` for the round winner."""
    scalars = state.scalars
    for seat in range(scalars[g, S_N_PLAYERS]):
        out[seat] = penalty_card_reward * scalars[g, S_PENALTY_TAKEN_0 + seat]
    winner = scalars[g, S_ROUND_WON]
    if winner >= 0:
        out[winner] += win_reward


# Pool draws come from their own stream, derived from the episode seed, so that the deal and every
# later draw of the game are those of the AEC env reset with the same seed and the drawn rules.
_POOL_STREAM = np.uint64(0x5DEECE66D2545F49)


@njit
def _start_episode(state, g, seed, start_rules, rule_pool, pool_draws):
    """:func:`reset_game` plus the episode's starting rules: ``start_rules`` (int64 ``[3, 32]``)
    holds the active rules, their authors and the fixed rule queue, as ``reset(options={"rules":
    ..., "fixed_rules": ...})`` of the AEC env writes them after the deal; then ``pool_draws``
    distinct rules of ``rule_pool`` not already active, drawn uniformly, join them (no author)."""
    rules = state.rules
    for slot in range(_MAX_ACTIVE):
        rules[g, QUEUE, slot] = start_rules[QUEUE, slot]
    reset_game(state, g, seed)
    for slot in range(_MAX_ACTIVE):
        rules[g, ACTIVE, slot] = start_rules[ACTIVE, slot]
        rules[g, AUTHOR, slot] = start_rules[AUTHOR, slot]
    if pool_draws > 0:
        stream = np.empty(1, dtype=np.uint64)
        stream[0] = np.uint64(seed) ^ _POOL_STREAM
        for _ in range(pool_draws):
            n_free = 0
            for rule in rule_pool:
                if not _is_active(rules, g, rule):
                    n_free += 1
            if n_free == 0 or _n_active(rules, g) >= _MAX_ACTIVE:
                break
            pick = random_below(stream, 0, n_free)
            for rule in rule_pool:
                if not _is_active(rules, g, rule):
                    if pick == 0:
                        for slot in range(_MAX_ACTIVE):
                            if rules[g, ACTIVE, slot] < 0:
                                rules[g, ACTIVE, slot] = rule
                                rules[g, AUTHOR, slot] = -1
                                break
                        break
                    pick -= 1


@njit
def vector_reset(state, library, seeds, settings, out):
    """Start an episode in every game ``g`` from ``seeds[g]`` (the options, CFG_* and S_N_PLAYERS,
    must already be written) and fill the acting seat's observation and mask and ``to_act``.
    ``settings`` and ``out`` are ``mao_env.vector.VectorSettings`` / ``VectorBuffers``."""
    for g in prange(seeds.shape[0]):
        _vector_reset_game(state, library, g, seeds[g], settings, out)


@njit
def _vector_reset_game(state, library, g, seed, settings, out):
    _start_episode(state, g, seed, settings.start_rules, settings.rule_pool, settings.pool_draws)
    seat = state.scalars[g, S_CURRENT]
    out.to_act[g] = seat
    action_mask(state, library, g, settings.by_rules, out.mask[g])
    out.events_key[g] = -1
    _observe_cached(state, library, g, seat, settings.n_events, settings.reasons, out.observation[g],
                    out.events_key)  # fmt: skip


@njit
def vector_step(state, library, actions, settings, out):
    """One step of every game ``g`` with ``actions[g] >= 0`` (the others keep their state, get zero
    rewards and keep their outputs): rewards of every seat, termination (the last round won) or
    truncation (``max_steps`` sub-actions), and then the next acting seat's observation and mask.
    A game that ended keeps its payoffs and every seat's last observation in ``final_payoffs`` /
    ``final_observation`` and starts a new episode from its own random stream. ``settings`` and
    ``out`` are ``mao_env.vector.VectorSettings`` / ``VectorBuffers``.

    The loop is a ``prange`` (``cardgame_core.jit.parallel``) over chunks of ``STEP_CHUNK`` games
    (``cardgame_core.jit``) whose body is one call of a function that steps its chunk's games and
    writes only their rows (``reward_rows``, the scratch of the rewards, has one row per game).
    With the step's statements written inline in the loop, Numba 0.68's parallel loop wrote stale
    values into ``to_act`` and ``terminated``.
    """
    n_games = actions.shape[0]
    reward_rows = np.empty((n_games, cards.MAX_PLAYERS), dtype=np.float64)
    for chunk in prange((n_games + STEP_CHUNK - 1) // STEP_CHUNK):
        _vector_step_chunk(
            state, library, chunk * STEP_CHUNK, min(n_games, (chunk + 1) * STEP_CHUNK), actions,
            settings, out, reward_rows,
        )  # fmt: skip


@njit
def _vector_step_chunk(state, library, start, stop, actions, settings, out, reward_rows):
    """:func:`vector_step` of games ``start..stop-1`` (``reward_rows``: float64 scratch
    ``[N, MAX_PLAYERS]``)."""
    scalars = state.scalars
    n_events = settings.n_events
    reasons = settings.reasons
    rewards = out.rewards
    episode_payoffs = out.episode_payoffs
    for g in range(start, stop):
        action = actions[g]
        n_players = scalars[g, S_N_PLAYERS]
        out.terminated[g] = False
        out.truncated[g] = False
        for seat in range(n_players):
            rewards[g, seat] = 0.0
        if action < 0:
            continue
        flags = step_game(state, library, g, action, settings.by_rules, settings.max_steps, out.mask[g])
        if flags & STEP_REWARDS:
            step_reward = reward_rows[g]
            step_rewards(state, g, settings.win_reward, settings.penalty_card_reward, step_reward)
            for seat in range(n_players):
                rewards[g, seat] = step_reward[seat]
                episode_payoffs[g, seat] += step_reward[seat]
        if flags & (STEP_DONE | STEP_TRUNCATED):
            out.terminated[g] = (flags & STEP_DONE) != 0
            out.truncated[g] = (flags & STEP_TRUNCATED) != 0
            for seat in range(n_players):
                out.final_payoffs[g, seat] = episode_payoffs[g, seat]
                episode_payoffs[g, seat] = 0.0
                observe(state, library, g, seat, n_events, reasons, out.final_observation[g, seat])
            # The next episode's seed comes from the game's own stream: a game's future depends
            # only on its own state and actions, whatever the other games do.
            seed = next_u64(state.rng, g)
            _start_episode(state, g, seed, settings.start_rules, settings.rule_pool, settings.pool_draws)
            action_mask(state, library, g, settings.by_rules, out.mask[g])
            out.events_key[g] = -1  # a new episode: its first events block is written whole
        seat = scalars[g, S_CURRENT]
        out.to_act[g] = seat
        _observe_cached(state, library, g, seat, n_events, reasons, out.observation[g], out.events_key)


@njit
def observe_games(state, library, seats, n_events, reasons, out):
    """``out[g]`` = game ``g``'s observation from ``seats[g]``'s point of view, for every game."""
    for g in prange(seats.shape[0]):
        observe(state, library, g, seats[g], n_events, reasons, out[g])
