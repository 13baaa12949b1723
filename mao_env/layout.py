"""Mao's observation layout: one table of named pieces, from which everything else is made.

The observation vector is the table state (:data:`STATE_PIECES`, in order) followed by the last
``K = n_events`` public events, most recent first, each :data:`EVENT_PIECES` (plus
:data:`REVEALED_PIECE` with ``reasons="revealed"``). From these tables come the offsets the
kernels of :mod:`mao_env.core` write at (module-level ints such as :data:`OFF_HAND` and
:data:`EV_CARD`, which Numba freezes into the kernels), the slices agents read pieces by name
with (:data:`SLICES`, :data:`EVENT_SLICES`), and the index table of the ``mao_env.env``
docstring (:func:`docstring_table`; a test checks that the docstring holds it).

Positions inside a piece: ``kind`` is one-hot over ``KIND_*``; ``calls`` has bit ``p`` for a
failure to say phrase ``p`` and then ``CALL_BIT_BAD_CARD``, ``CALL_BIT_TALKING``, ``CALL_BIT_MAO``
(the event records of the core use the same numbers). Seats are relative to the observer.
"""

from __future__ import annotations

from typing import NamedTuple

from mao_env import cards
from mao_env import rules as rule_library

__all__ = [
    "EVENT_FEATURES",
    "EVENT_PIECES",
    "EVENT_SLICES",
    "OBS_TYPES",
    "OFF_EVENTS",
    "REVEALED_PIECE",
    "SLICES",
    "STATE_PIECES",
    "Piece",
    "docstring_table",
    "event_width",
    "obs_size",
]

#: The observation variants: the table and the last ``n_events`` public events ("history"), or the
#: table alone ("summary", ``n_events`` 0).
OBS_TYPES = ("history", "summary")

# ---- what positions inside the event pieces mean ----------------------------------------------
KIND_PLAY, KIND_BAD_CARD, KIND_DRAW, KIND_RULE_ADDED, KIND_CALL, KIND_POINT_OF_ORDER = range(6)
N_EVENT_KINDS = 6
# Call reason bits (the call reasons of mao_env.cards): 0..N_PHRASES-1 = failure to say phrase p, then:
CALL_BIT_BAD_CARD = cards.CALL_REASON_BAD_CARD
CALL_BIT_TALKING = cards.CALL_REASON_TALKING
CALL_BIT_MAO = cards.CALL_REASON_MAO
N_CALL_BITS = cards.N_CALL_REASONS


class Piece(NamedTuple):
    """A named run of observation entries."""

    name: str
    size: int
    description: str


STATE_PIECES: tuple[Piece, ...] = (
    Piece("hand", cards.N_CARD_TYPES, "own hand: cards held of each type"),
    Piece("top", cards.N_CARD_TYPES, "top card of the pile (one-hot)"),
    Piece("valid_suit", 4, "the valid suit: the suit named with a Jack, else the top card's (one-hot)"),
    Piece("named", 1, "1 if a suit was named"),
    Piece("direction", 1, "direction: 1 = increasing seat numbers"),
    Piece("pending_seven", 1, "pending seven chain: cards the acting seat takes unless it plays a seven"),
    Piece("phase", 4, "phase: turn start, speaking, choosing a rule, call window (one-hot)"),
    Piece(
        "played",
        cards.N_CARD_TYPES,
        "this turn (own turn, or the one judged in a call window): the card played (one-hot)",
    ),
    Piece("drew", 1, "... 1 if drew a card"),
    Piece("took_seven", 1, "... seven-chain cards taken"),
    Piece("said", cards.N_PHRASES, "... phrases said"),
    Piece("mover", cards.MAX_PLAYERS, "(call window) relative seat whose turn is judged (one-hot)"),
    Piece("hand_sizes", cards.MAX_PLAYERS, "hand sizes by relative seat (0 = self), zero beyond n_players"),
    Piece("stack", 1, "stack size"),
    Piece("pile", 1, "pile size"),
    Piece("rounds", 1, "rounds finished"),
    Piece("n_rules", 1, "active rules"),
    Piece(
        "known",
        rule_library.N_RULES,
        "rules this player knows are in force: its own, and those refused to it (multi-hot)",
    ),
)
EVENT_PIECES: tuple[Piece, ...] = (
    Piece("present", 1, "1 if the slot holds an event"),
    Piece("seat", cards.MAX_PLAYERS, "relative seat of the actor (one-hot)"),
    Piece(
        "kind",
        N_EVENT_KINDS,
        "kind: play, bad card (taken back), draw, new rule introduced, call, point of order",
    ),
    Piece("card", cards.N_CARD_TYPES, "card played (valid or bad), none for draws (drawn cards are private)"),
    Piece("phrases", cards.N_PHRASES, "phrases said"),
    Piece(
        "calls",
        N_CALL_BITS,
        'call reasons: failure to say phrase p, bad card, talking, Mao in vain (0: reasons="hidden")',
    ),
    Piece("bad_calls", N_CALL_BITS, "(players' calls) reasons called wrongly (bad calls)"),
    Piece("n_calls", 1, "number of calls"),
    Piece("penalty_cards", 1, "penalty cards for calls"),
    Piece("chain_cards", 1, "seven-chain cards taken"),
    Piece("forced_draw", 1, "cards a rule made the next seat take"),
    Piece("won", 1, "1 if this turn won the round (Mao)"),
    Piece("forced_seat", 1, "relative seat that took those cards"),
    Piece("named_suit", 4, "suit named with a Jack (one-hot)"),
)
REVEALED_PIECE = Piece(
    "rules", rule_library.N_RULES, '(reasons="revealed") the library rules behind the calls (multi-hot)'
)


def _starts(pieces: tuple[Piece, ...]) -> dict[str, int]:
    starts, offset = {}, 0
    for piece in pieces:
        starts[piece.name] = offset
        offset += piece.size
    return starts


_STATE_STARTS = _starts(STATE_PIECES)
_EVENT_STARTS = _starts((*EVENT_PIECES, REVEALED_PIECE))
#: ``obs[SLICES["hand"]]``: each table-state piece of the observation.
SLICES: dict[str, slice] = {
    p.name: slice(_STATE_STARTS[p.name], _STATE_STARTS[p.name] + p.size) for p in STATE_PIECES
}
#: ``event_row[EVENT_SLICES["card"]]``: each piece of one event's features.
EVENT_SLICES: dict[str, slice] = {
    p.name: slice(_EVENT_STARTS[p.name], _EVENT_STARTS[p.name] + p.size)
    for p in (*EVENT_PIECES, REVEALED_PIECE)
}

# ---- offsets as module-level ints (what the Numba kernels index with) --------------------------
OFF_HAND = _STATE_STARTS["hand"]
OFF_TOP = _STATE_STARTS["top"]
OFF_VALID_SUIT = _STATE_STARTS["valid_suit"]
OFF_NAMED = _STATE_STARTS["named"]
OFF_DIRECTION = _STATE_STARTS["direction"]
OFF_PENDING_SEVEN = _STATE_STARTS["pending_seven"]
OFF_PHASE = _STATE_STARTS["phase"]
OFF_PLAYED = _STATE_STARTS["played"]
OFF_DREW = _STATE_STARTS["drew"]
OFF_TOOK_SEVEN = _STATE_STARTS["took_seven"]
OFF_SAID = _STATE_STARTS["said"]
OFF_MOVER = _STATE_STARTS["mover"]
OFF_HAND_SIZES = _STATE_STARTS["hand_sizes"]
OFF_STACK = _STATE_STARTS["stack"]
OFF_PILE = _STATE_STARTS["pile"]
OFF_ROUND = _STATE_STARTS["rounds"]
OFF_N_RULES = _STATE_STARTS["n_rules"]
OFF_KNOWN = _STATE_STARTS["known"]
#: Where the event block starts (the table state's length).
OFF_EVENTS = sum(p.size for p in STATE_PIECES)
# Inside one event's features:
EV_PRESENT = _EVENT_STARTS["present"]
EV_SEAT = _EVENT_STARTS["seat"]
EV_KIND = _EVENT_STARTS["kind"]
EV_CARD = _EVENT_STARTS["card"]
EV_PHRASES = _EVENT_STARTS["phrases"]
EV_CALLS = _EVENT_STARTS["calls"]
EV_BAD_CALLS = _EVENT_STARTS["bad_calls"]
EV_N_CALLS = _EVENT_STARTS["n_calls"]
EV_PENALTY_CARDS = _EVENT_STARTS["penalty_cards"]
EV_CHAIN_CARDS = _EVENT_STARTS["chain_cards"]
EV_FORCED_DRAW = _EVENT_STARTS["forced_draw"]
EV_WON = _EVENT_STARTS["won"]
EV_FORCED_SEAT = _EVENT_STARTS["forced_seat"]
EV_NAMED_SUIT = _EVENT_STARTS["named_suit"]
EV_RULES = _EVENT_STARTS["rules"]
#: Features per event in the observation (without the revealed-rule block).
EVENT_FEATURES = sum(p.size for p in EVENT_PIECES)


def event_width(revealed: bool) -> int:
    """Features per event: :data:`EVENT_FEATURES`, plus the library rules with ``reasons="revealed"``."""
    return EVENT_FEATURES + (REVEALED_PIECE.size if revealed else 0)


def obs_size(n_events: int, revealed: bool) -> int:
    """Length of the observation vector with ``n_events`` events."""
    return OFF_EVENTS + n_events * event_width(revealed)


def _span(start: int, size: int) -> str:
    return str(start) if size == 1 else f"{start}..{start + size - 1}"


def docstring_table() -> str:
    """The observation's index table as the ``mao_env.env`` docstring shows it."""
    lines = [f"    {_span(_STATE_STARTS[p.name], p.size):<13}{p.description}" for p in STATE_PIECES]
    lines.append(
        f"    {f'{OFF_EVENTS}..':<13}the last K public events, most recent first, E (+R) features each:"
    )
    lines += [f"      {'+' + _span(_EVENT_STARTS[p.name], p.size):<11}{p.description}" for p in EVENT_PIECES]
    lines.append(f"      {f'+{EV_RULES}..':<11}{REVEALED_PIECE.description}")
    return "\n".join(lines)
