"""The Mao game state: its arrays (:class:`MaoState`, what every kernel takes), their creation
(:func:`new_state`), and the snapshot format with its complete validation, in one place.

The state of B games is one :class:`MaoState`, a named tuple of eight arrays with a leading batch
axis (the AEC env uses B = 1; the columns are the ``S_*``/``CFG_*``/``E_*``/``K_*`` constants of
``mao_env.core``). Numba compiles a named tuple of arrays like separate array arguments, so the
kernels take ``state`` and read ``state.scalars`` etc. by name. The secret-rule library
(``mao_env.rules.LIBRARY``) is a constant table, not state: the kernels take it as an argument.

This module and the core are the only ones that use those column numbers: everything else reads
a game through :class:`GameView` (events as :class:`Event`, calls as :class:`Call`) and writes the
options with :func:`write_config` (a test scans the code for column constants used anywhere else).

A snapshot is what ``raw_env.get_state()`` and ``MaoVectorEnv.get_game_state()`` return and what
``raw_env.set_state()`` and ``MaoVectorEnv.set_game_state()`` take back: a picklable dict::

    version             SNAPSHOT_VERSION (2; version 1 had no S_REFUSED_0 columns and its infos
                        held the calls themselves)
    options             the options that define the game (GAME_OPTIONS: name -> value)
    arrays              the core's state arrays of one game, each with a batch axis of 1:
        hands      int8   [1, 8, 53]    cards of each type held by each seat
        hand_bits  uint64 [1, 8]        presence set of each hand (bit i = type i held)
        decks      int8   [1, 2, 162]   row STACK: draw order (top = last), row PILE: face-up pile
        scalars    int64  [1, 99]       turn/round state (S_*), the options row (CFG_*), the
                                        call window (S_MOVER .. S_FAULT_RULE_0+18), the rules
                                        refused to each seat (S_REFUSED_0 .. +7, bit sets)
        rules      int64  [1, 3, 32]    active rule ids, their authors, the fixed rule queue
        events     int64  [1, 16, 14]   ring buffer of public events (E_*)
        calls      int64  [1, 32, 6]    the calls of the last step (code, phrase, cards, rule,
                                        player, caller)
        rng        uint64 [1]           the game's SplitMix64 state
    agents, rewards, cumulative_rewards, terminations, truncations, infos
                        the PettingZoo bookkeeping of the AEC env (each info as
                        :func:`calls_info` makes it)
    reset_rng           the numpy bit-generator state the next seedless reset() draws from
    last_calls          the Mao Master's calls of the last step (dicts, as ``env.last_calls``)

The Numba kernels index arrays with the integers of a snapshot and check nothing, so a value out
of range would crash the interpreter or corrupt the game silently. :func:`validate_snapshot`
therefore checks everything a kernel relies on before anything is written: shapes and dtypes,
every seat, card type, size, count and rule id within range, the cards conserved (every copy of
every card type is in exactly one hand, the stack, the pile or the card being played), the
options equal to the receiving env's, and the bookkeeping consistent with the game (who is still
in, who is terminated or truncated). It raises one :class:`ValueError` naming the field, or
returns a :class:`Snapshot` holding private copies of everything, ready to be written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from cardgame_core.aec import no_illegal_action
from mao_env import cards, core
from mao_env import rules as rule_library

SNAPSHOT_VERSION = 2


def calls_info(n_calls: int, call_cards: int, round_blocked: bool = False) -> dict[str, Any]:
    """An agent's ``infos`` entry after a step: the number of calls the step made, the cards this
    agent takes for them, whether the step blocked the round (it ended with no winner: "Nothing
    left to take" in ``docs/mao-rules.md``), and the illegal-action entries
    (``cardgame_core.aec.no_illegal_action``). The keys and shapes never change, so that collectors
    can stack infos; the calls themselves are ``env.last_calls``."""
    return {
        "n_calls": n_calls,
        "call_cards": call_cards,
        "round_blocked": round_blocked,
        **no_illegal_action(),
    }


class MaoState(NamedTuple):
    """The arrays of B Mao games (leading axis: the game), the one argument every kernel takes.

    Kernels write them in place; the options are the ``CFG_*`` columns of ``scalars``, the rule
    library is not state (a kernel argument). Field order = a snapshot's ``arrays`` keys.
    """

    #: int8[B, 8, 53] cards of each type held by each seat.
    hands: np.ndarray
    #: uint64[B, 8] presence set of each hand (bit i = card type i held).
    hand_bits: np.ndarray
    #: int8[B, 2, 162] row STACK: the draw order (top = last); row PILE: the face-up pile.
    decks: np.ndarray
    #: int64[B, N_SCALARS] turn and round state, per-step outputs (S_*), the options (CFG_*).
    scalars: np.ndarray
    #: int64[B, 3, 32] rows ACTIVE (library ids, -1 empty), AUTHOR (their seats), QUEUE (fixed rules).
    rules: np.ndarray
    #: int64[B, EVENT_SLOTS, EVENT_WIDTH] ring buffer of public events (E_* fields).
    events: np.ndarray
    #: int64[B, MAX_CALLS, CALL_WIDTH] the calls of the last step (K_* fields).
    calls: np.ndarray
    #: uint64[B] each game's SplitMix64 state (``cardgame_core.rng``).
    rng: np.ndarray


# Per-game shape (without the batch axis), dtype and fill value of each field, in field order.
_FIELD_LAYOUT = (
    ((cards.MAX_PLAYERS, cards.N_CARD_TYPES), np.dtype(np.int8), 0),
    ((cards.MAX_PLAYERS,), np.dtype(np.uint64), 0),
    ((2, cards.MAX_CARDS), np.dtype(np.int8), 0),
    ((core.N_SCALARS,), np.dtype(np.int64), 0),
    ((3, rule_library.MAX_ACTIVE_RULES), np.dtype(np.int64), -1),
    ((core.EVENT_SLOTS, core.EVENT_WIDTH), np.dtype(np.int64), 0),
    ((core.MAX_CALLS, core.CALL_WIDTH), np.dtype(np.int64), 0),
    ((), np.dtype(np.uint64), 0),
)


def new_state(n_games: int) -> MaoState:
    """Zeroed arrays for ``n_games`` games (no rules active; ``core.reset_game`` starts a game)."""
    return MaoState(*(np.full((n_games, *shape), fill, dtype=dtype) for shape, dtype, fill in _FIELD_LAYOUT))


class ConfigEntries(NamedTuple):
    """The options as the kernels read them from the ``scalars`` row (the ``CFG_*`` columns and
    ``S_N_PLAYERS``), by name; :func:`write_config` writes them."""

    n_players: int
    seven_turn_ends: int
    #: 1: the seven's phrase is "thank you" (else "have a nice day").
    thank_you: int
    talking: int
    #: 1: calls="players" (a call window follows each turn), 0: the Mao Master calls.
    players_call: int
    forgotten_mao_cards: int
    #: 1: rounds="cambridge".
    cambridge: int
    n_rounds: int
    max_sub_actions: int
    #: core.RULE_CHOICE_AGENT, RULE_CHOICE_SAMPLED or RULE_CHOICE_FIXED.
    rule_choice: int
    n_decks: int


_CONFIG_COLUMNS = ConfigEntries(
    n_players=core.S_N_PLAYERS,
    seven_turn_ends=core.CFG_SEVEN_TURN_ENDS,
    thank_you=core.CFG_THANK_YOU,
    talking=core.CFG_TALKING,
    players_call=core.CFG_PLAYERS_CALL,
    forgotten_mao_cards=core.CFG_FORGOTTEN_MAO_CARDS,
    cambridge=core.CFG_CAMBRIDGE,
    n_rounds=core.CFG_N_ROUNDS,
    max_sub_actions=core.CFG_MAX_SUB_ACTIONS,
    rule_choice=core.CFG_RULE_CHOICE,
    n_decks=core.CFG_N_DECKS,
)


def write_config(scalars: np.ndarray, entries: ConfigEntries) -> None:
    """Clear the ``scalars`` rows (``[B, N_SCALARS]``) and write ``entries`` into every one, as
    :func:`mao_env.core.reset_game` expects them."""
    scalars[:] = 0
    for column, value in zip(_CONFIG_COLUMNS, entries, strict=True):
        scalars[:, column] = value


class Event(NamedTuple):
    """One public event of the ring buffer (``MaoState.events``), by name."""

    seat: int
    #: layout.KIND_PLAY, KIND_BAD_CARD, KIND_DRAW, KIND_CALL, KIND_POINT_OF_ORDER or KIND_RULE_ADDED.
    kind: int
    #: The card type played (good or bad), -1 for a draw (drawn cards are private).
    card: int
    #: Bit set of the phrases said.
    phrases: int
    #: Bit set of the call reasons (layout.CALL_BIT_*).
    calls: int
    n_calls: int
    #: Cards given for calls.
    penalty_cards: int
    #: Seven-chain penalty cards taken.
    chain_cards: int
    #: Cards a dynamics rule made ``forced_seat`` take.
    forced_draw: int
    forced_seat: int
    #: The suit named with a Jack, -1 if none.
    named_suit: int
    won: int
    #: Bit set of the library rules behind the calls.
    rule_bits: int
    #: Bit set of the call reasons called wrongly (players' calls).
    bad_calls: int


_EVENT_COLUMNS = Event(
    seat=core.E_SEAT,
    kind=core.E_KIND,
    card=core.E_CARD,
    phrases=core.E_PHRASES,
    calls=core.E_CALLS,
    n_calls=core.E_N_CALLS,
    penalty_cards=core.E_PENALTY_CARDS,
    chain_cards=core.E_CHAIN_CARDS,
    forced_draw=core.E_FORCED_DRAW,
    forced_seat=core.E_FORCED_SEAT,
    named_suit=core.E_NAMED_SUIT,
    won=core.E_WON,
    rule_bits=core.E_RULE_BITS,
    bad_calls=core.E_BAD_CALLS,
)


class Call(NamedTuple):
    """One penalty call of the last step (``MaoState.calls``), by name."""

    #: core.CALL_BAD_CARD, CALL_FAILURE_TO_SAY, CALL_TALKING, CALL_MAO or CALL_BAD_CALL.
    code: int
    #: The phrase concerned (for a bad call: the reason called), -1 if none.
    phrase: int
    cards: int
    #: The library rule behind the call, -1 if none.
    rule: int
    #: The seat that takes the cards.
    player: int
    #: The seat that called, -1: the Mao Master.
    caller: int


_CALL_COLUMNS = Call(
    code=core.K_CODE,
    phrase=core.K_PHRASE,
    cards=core.K_CARDS,
    rule=core.K_RULE,
    player=core.K_PLAYER,
    caller=core.K_CALLER,
)


def active_rule_ids(game_state: MaoState) -> np.ndarray:
    """Each game's active secret rules by slot as library ids, -1 for an empty slot
    (``[B, MAX_ACTIVE_RULES]``): a view."""
    return game_state.rules[:, core.ACTIVE]


def rule_rows(active: Sequence[tuple[int, int]] = (), queue: Sequence[int] = ()) -> np.ndarray:
    """One game's ``rules`` rows (int64 ``[3, MAX_ACTIVE_RULES]``, -1 = empty) holding the
    ``(rule id, author seat)`` pairs ``active`` in slot order and the fixed rule ``queue``."""
    rows = np.full((3, rule_library.MAX_ACTIVE_RULES), -1, dtype=np.int64)
    for slot, (rule, author) in enumerate(active):
        rows[core.ACTIVE, slot] = rule
        rows[core.AUTHOR, slot] = author
    rows[core.QUEUE, : len(queue)] = queue
    return rows


def _scalar(column: int, doc: str, writable: bool = False) -> property:
    """A :class:`GameView` property reading (and writing) one ``scalars`` column as an int."""

    def read(view: GameView) -> int:
        return view._scalars[column].item()

    def write(view: GameView, value: int) -> None:
        view._scalars[column] = value

    return property(read, write if writable else None, doc=doc)


class GameView:
    """Named reads of game ``game`` of a :class:`MaoState`, and the writes a hand-set table
    needs: a live view, every read sees the arrays as they are now.

    The kernels' column numbers (``S_*``, ``CFG_*``, ``E_*``, ``K_*`` of ``mao_env.core``) stay
    between the core and this module: the envs, agents, the web app and tools read
    ``view.current_seat``, ``view.events(...)``, ... (as OpenSpiel's states and Pgx's named fields
    offer them). The view holds views of the arrays' rows, so it follows in-place writes and must
    be made again for other arrays (a copy of the state).
    """

    __slots__ = ("_calls", "_decks", "_events", "_rules", "_scalars")

    def __init__(self, game_state: MaoState, game: int = 0) -> None:
        self._scalars = game_state.scalars[game]
        self._decks = game_state.decks[game]
        self._rules = game_state.rules[game]
        self._events = game_state.events[game]
        self._calls = game_state.calls[game]

    n_players = _scalar(core.S_N_PLAYERS, "Seats at the table.")
    current_seat = _scalar(core.S_CURRENT, "The seat to act.", writable=True)
    direction = _scalar(core.S_DIRECTION, "+1 or -1: the order of play.", writable=True)
    phase = _scalar(core.S_PHASE, "core.PH_START, PH_SPEAK, PH_CHOOSE_RULE, PH_CALL or PH_OVER.")
    named_suit = _scalar(
        core.S_NAMED_SUIT, "The suit named with the last good Jack, -1 if none.", writable=True
    )
    pending_seven = _scalar(
        core.S_PENDING_SEVEN,
        "Penalty cards the seat to act takes unless it plays a seven (0: none).",
        writable=True,
    )
    stack_size = _scalar(core.S_STACK_SIZE, "Cards in the stack (draw pile).", writable=True)
    pile_size = _scalar(core.S_PILE_SIZE, "Cards in the face-up pile.", writable=True)
    played = _scalar(core.S_PLAYED, "The card type played this turn, -1 if none.")
    drew = _scalar(core.S_DREW, "1 if the seat to act drew a card this turn (not the seven penalty).")
    took_seven = _scalar(core.S_TOOK_SEVEN, "Seven-chain penalty cards taken this turn.")
    said = _scalar(core.S_SAID, "Bit set of the phrases said this turn.")
    rounds_finished = _scalar(core.S_ROUND, "Rounds finished so far.")
    steps = _scalar(core.S_STEP, "Sub-actions taken in the episode (the max_steps count).")
    n_events = _scalar(core.S_N_EVENTS, "Public events recorded so far (the buffer keeps the last ones).")
    n_calls = _scalar(core.S_N_CALLS, "Calls made in the last step.")
    round_won_by = _scalar(core.S_ROUND_WON, "The seat that won a round in the last step, -1 if none.")
    done = _scalar(core.S_DONE, "1 once the episode's rounds are all played.")
    round_blocked = _scalar(
        core.S_ROUND_BLOCKED, "1 if a round was blocked in the last step (no seat could play or take a card)."
    )
    mover = _scalar(core.S_MOVER, "In a call window: the seat whose turn is judged.")

    def refused_rules(self, seat: int) -> int:
        """Bit set of the library rules the Mao Master refused when ``seat`` proposed them."""
        return self._scalars[core.S_REFUSED_0 + seat].item()

    def fault_cards(self) -> list[int]:
        """In a call window: the Mao Master's penalty cards for each call reason (0: no fault)."""
        return self._scalars[core.S_FAULT_CARDS_0 : core.S_FAULT_CARDS_0 + cards.N_CALL_REASONS].tolist()

    def top_card(self) -> int:
        """The card type on top of the face-up pile."""
        return self._decks[core.PILE, self._scalars[core.S_PILE_SIZE] - 1].item()

    def active_rules(self) -> list[tuple[int, int]]:
        """``(rule id, author seat)`` of every active secret rule, in slot order (author -1: nobody
        at the table)."""
        rules = self._rules.tolist()
        return [
            (rule, author)
            for rule, author in zip(rules[core.ACTIVE], rules[core.AUTHOR], strict=True)
            if rule >= 0
        ]

    def place_rule(self, slot: int, rule: int, author: int) -> None:
        """Make library rule ``rule``, authored by seat ``author``, active in ``slot``."""
        self._rules[core.ACTIVE, slot] = rule
        self._rules[core.AUTHOR, slot] = author

    def queue_rule(self, index: int, rule: int) -> None:
        """Put library rule ``rule`` at ``index`` of the fixed rule queue."""
        self._rules[core.QUEUE, index] = rule

    def clear_rule_queue(self) -> None:
        """Empty the fixed rule queue (``rule_choice="fixed"``), as a reset without one has it."""
        self._rules[core.QUEUE] = -1

    def shuffled_deck(self, n_cards: int) -> list[int]:
        """The stack row's first ``n_cards`` card types, bottom first: right after a deal, the whole
        shuffle the round was dealt from (dealing moves the stack's size, not its cards)."""
        return self._decks[core.STACK, :n_cards].tolist()

    def place_cards(self, pile: Sequence[int], stack: Sequence[int]) -> None:
        """Lay out the face-up ``pile`` (bottom first: the last is the top card) and the ``stack``
        (the first listed is drawn first), and set both sizes (a hand-set table)."""
        self._decks[:] = 0
        self._decks[core.PILE, : len(pile)] = pile
        self._decks[core.STACK, : len(stack)] = list(stack)[::-1]  # drawn from the end
        self.pile_size = len(pile)
        self.stack_size = len(stack)
        # The turn under way starts on this table: whether it has anything to take.
        self._scalars[core.S_STARVED] = int(len(stack) == 0 and len(pile) <= 1)

    def event(self, index: int) -> Event:
        """The ``index``-th public event of the episode (still in the ring buffer: one of the
        last ``core.EVENT_SLOTS``)."""
        row = self._events[index % core.EVENT_SLOTS].tolist()
        return Event(*(row[column] for column in _EVENT_COLUMNS))

    def recent_events(self, start: int = 0) -> list[tuple[int, Event]]:
        """``(index, event)`` of the events from index ``start`` on that are still in the buffer."""
        total = self.n_events
        first = max(start, total - core.EVENT_SLOTS, 0)
        return [(index, self.event(index)) for index in range(first, total)]

    def calls(self) -> list[Call]:
        """The penalty calls of the last step, in order."""
        rows = self._calls[: self.n_calls].tolist()
        return [Call(*(row[column] for column in _CALL_COLUMNS)) for row in rows]


STATE_KEYS = MaoState._fields
#: dtype and per-game shape of every state array.
ARRAY_SPECS: dict[str, tuple[np.dtype, tuple[int, ...]]] = {
    key: (dtype, shape) for key, (shape, dtype, _) in zip(STATE_KEYS, _FIELD_LAYOUT, strict=True)
}
#: The options that define a game: a snapshot is only valid in an env with these same values.
#: (The observation options ``mask``, ``reasons``, ``n_events``, ``obs_type`` and ``render_mode``
#: only change how the game is shown, so a snapshot may move between envs that differ in them.)
GAME_OPTIONS = (
    "n_players",
    "num_rounds",
    "max_steps",
    "rule_choice",
    "rounds",
    "seven_turn_ends",
    "seven_phrase",
    "talking",
    "calls",
    "forgotten_mao_cards",
    "max_sub_actions",
    "win_reward",
    "penalty_card_reward",
)
SNAPSHOT_KEYS = (
    "version",
    "options",
    "arrays",
    "agents",
    "rewards",
    "cumulative_rewards",
    "terminations",
    "truncations",
    "infos",
    "reset_rng",
    "last_calls",
)

_SCALAR_NAMES = {
    getattr(core, name): name
    for name in dir(core)
    if name.startswith(("S_", "CFG_"))
    and isinstance(getattr(core, name), int)
    and name not in ("S_PENALTY_TAKEN_0", "S_OWED_0", "S_FAULT_CARDS_0", "S_FAULT_RULE_0", "S_REFUSED_0")
}
for _name, _width in (
    ("S_PENALTY_TAKEN_0", cards.MAX_PLAYERS),
    ("S_OWED_0", cards.MAX_PLAYERS),
    ("S_FAULT_CARDS_0", cards.N_CALL_REASONS),
    ("S_FAULT_RULE_0", cards.N_CALL_REASONS),
    ("S_REFUSED_0", cards.MAX_PLAYERS),
):
    _SCALAR_NAMES.update({getattr(core, _name) + k: f"{_name}+{k}" for k in range(_width)})
_EVENT_NAMES = {
    getattr(core, name): name
    for name in dir(core)
    if name.startswith("E_") and isinstance(getattr(core, name), int)
}
_PHRASE_BITS = (1 << cards.N_PHRASES) - 1
_CALL_BITS = (1 << core.N_CALL_BITS) - 1
_RULE_BITS = (1 << rule_library.N_RULES) - 1


class SnapshotTarget(NamedTuple):
    """What a snapshot must agree with: the receiving env's game options."""

    options: dict[str, Any]  # GAME_OPTIONS -> value, as the env holds them
    config_row: np.ndarray  # int64 [N_SCALARS]: S_N_PLAYERS and the CFG_* columns written, rest 0
    n_decks: int
    possible_agents: tuple[str, ...]

    @property
    def n_players(self) -> int:
        return int(self.options["n_players"])

    @property
    def total_cards(self) -> int:
        return self.n_decks * cards.CARDS_PER_DECK


class Snapshot(NamedTuple):
    """A validated snapshot: private copies, safe to write into an env."""

    arrays: MaoState  # each field with a batch axis of 1
    agents: list[str]
    rewards: dict[str, float]
    cumulative_rewards: dict[str, float]
    terminations: dict[str, bool]
    truncations: dict[str, bool]
    infos: dict[str, dict]
    reset_rng: np.random.Generator
    last_calls: list[dict[str, Any]]

    @property
    def scalars(self) -> np.ndarray:
        return self.arrays.scalars[0]


def _fail(field: str, message: str) -> None:
    raise ValueError(f"snapshot field {field}: {message}")


def _check_range(field: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        _fail(field, f"{value} is out of range {low}..{high}")


def validate_snapshot(snapshot: Any, spec: SnapshotTarget, *, caller: str = "set_state") -> Snapshot:
    """Check ``snapshot`` completely against ``spec`` (see the module docstring) and return a
    :class:`Snapshot` of private copies; raise ``ValueError`` naming the first bad field
    (``TypeError`` when ``snapshot`` is not a snapshot dict at all). Writes nothing anywhere."""
    if not isinstance(snapshot, dict) or "arrays" not in snapshot:
        raise TypeError(f"{caller} expects the dict returned by get_state(), got {type(snapshot).__name__}")
    missing = [key for key in SNAPSHOT_KEYS if key not in snapshot]
    if missing:
        _fail(missing[0], f"missing (a snapshot has the keys {', '.join(SNAPSHOT_KEYS)})")
    unknown = sorted(str(key) for key in snapshot if key not in SNAPSHOT_KEYS)
    if unknown:
        _fail(unknown[0], "unknown key")
    version = snapshot["version"]
    if type(version) is not int or version != SNAPSHOT_VERSION:
        _fail("version", f"{version!r} is not the supported version {SNAPSHOT_VERSION}")
    _check_options(snapshot["options"], spec)
    arrays = _copy_arrays(snapshot["arrays"])
    check_game_arrays(arrays, spec)
    return _check_bookkeeping(snapshot, arrays, spec)


def _check_options(options: Any, spec: SnapshotTarget) -> None:
    if not isinstance(options, dict):
        _fail("options", f"must be a dict, got {type(options).__name__}")
    if set(options) != set(GAME_OPTIONS):
        _fail("options", f"must name exactly {', '.join(GAME_OPTIONS)}")
    given_players = options["n_players"]
    if type(given_players) is not int or given_players != spec.n_players:
        _fail(
            "options['n_players']",
            f"the snapshot belongs to a game with a different number of players "
            f"({given_players!r}, this env has {spec.n_players})",
        )
    for name in GAME_OPTIONS:
        expected, given = spec.options[name], options[name]
        if type(given) is not type(expected) or given != expected:
            _fail(f"options[{name!r}]", f"the snapshot's game has {given!r}, this env has {expected!r}")


def _copy_arrays(arrays: Any) -> MaoState:
    if not isinstance(arrays, dict):
        _fail("arrays", f"must be a dict of arrays, got {type(arrays).__name__}")
    if set(arrays) != set(STATE_KEYS):
        _fail("arrays", f"must hold exactly the arrays {', '.join(STATE_KEYS)}")
    copies = []
    for key in STATE_KEYS:
        array = arrays[key]
        dtype, shape = ARRAY_SPECS[key]
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.shape != (1, *shape):
            got = f"{array.dtype} {array.shape}" if isinstance(array, np.ndarray) else type(array).__name__
            _fail(f"arrays[{key!r}]", f"must be a {dtype} array of shape {(1, *shape)}, got {got}")
        copies.append(np.array(array, dtype=dtype, copy=True, order="C"))
    return MaoState(*copies)


def check_game_arrays(arrays: MaoState, spec: SnapshotTarget, game: int = 0) -> None:
    """Check game ``game`` of the state arrays against every invariant the kernels rely on; raise
    ``ValueError`` naming the first bad field."""
    hands, hand_bits, decks, scalars, rules, events, calls, _ = (a[game] for a in arrays)
    n_players = spec.n_players
    total = spec.total_cards
    options = spec.options

    def s(index: int) -> int:
        return int(scalars[index])

    def check(index: int, low: int, high: int) -> None:
        _check_range(f"arrays['scalars'][{_SCALAR_NAMES[index]}]", s(index), low, high)

    # -- the options columns, then every state column within range -------------------------------
    if s(core.S_N_PLAYERS) != n_players:
        _fail(
            "arrays['scalars'][S_N_PLAYERS]",
            f"the snapshot belongs to a game with a different number of players "
            f"({s(core.S_N_PLAYERS)}, this env has {n_players})",
        )
    for index in range(core.CFG_SEVEN_TURN_ENDS, core.CONFIG_END):
        if scalars[index] != spec.config_row[index]:
            name = _SCALAR_NAMES.get(index, str(index))
            _fail(
                f"arrays['scalars'][{name}]",
                f"{s(index)} differs from this env's options ({int(spec.config_row[index])})",
            )
    check(core.S_CURRENT, 0, n_players - 1)
    if s(core.S_DIRECTION) not in (1, -1):
        _fail("arrays['scalars'][S_DIRECTION]", f"must be 1 or -1, got {s(core.S_DIRECTION)}")
    check(core.S_PHASE, core.PH_START, core.PH_OVER)
    check(core.S_NAMED_SUIT, -1, 3)
    check(core.S_PENDING_SEVEN, 0, total)
    check(core.S_STACK_SIZE, 0, total)
    check(core.S_PILE_SIZE, 1, total)  # the top card is read at every step
    check(core.S_PLAYED, -1, cards.N_CARD_TYPES - 1)
    check(core.S_DREW, 0, 1)
    check(core.S_TOOK_SEVEN, 0, total)
    check(core.S_SAID, 0, _PHRASE_BITS)
    check(core.S_FIRST_SUIT, -1, 3)
    # A call window adds its calls and passes to the mover's sub-actions.
    window_steps = n_players * (cards.N_CALL_REASONS + 1) if s(core.S_PHASE) == core.PH_CALL else 0
    check(core.S_SUB_ACTIONS, 0, options["max_sub_actions"] + window_steps)
    check(core.S_ROUND, 0, options["num_rounds"])
    check(core.S_STEP, 0, options["max_steps"])
    # A step records at most three events (a point of order, the turn, a rule added after it).
    check(core.S_N_EVENTS, 0, 3 * s(core.S_STEP))
    check(core.S_N_CALLS, 0, core.MAX_CALLS)
    check(core.S_ROUND_WON, -1, n_players - 1)
    check(core.S_NEXT_SEAT, -1, n_players - 1)
    check(core.S_QUEUE_NEXT, 0, rule_library.MAX_ACTIVE_RULES)
    check(core.S_DONE, 0, 1)
    check(core.S_STARVED, 0, 1)
    check(core.S_STUCK_TURNS, 0, n_players - 1)
    check(core.S_ROUND_BLOCKED, 0, 1)
    for seat in range(cards.MAX_PLAYERS):
        check(core.S_PENALTY_TAKEN_0 + seat, 0, total if seat < n_players else 0)

    # -- the turn's columns agree with the phase -------------------------------------------------
    phase = s(core.S_PHASE)
    done = s(core.S_DONE) == 1
    if done != (phase == core.PH_OVER) or done != (s(core.S_ROUND) == options["num_rounds"]):
        _fail(
            "arrays['scalars'][S_DONE]",
            "the episode is over exactly when the phase is PH_OVER and every round was played "
            f"(S_DONE {s(core.S_DONE)}, S_PHASE {phase}, S_ROUND {s(core.S_ROUND)})",
        )
    played = s(core.S_PLAYED)
    if phase == core.PH_START and (
        played >= 0 or s(core.S_DREW) or s(core.S_SAID) or s(core.S_FIRST_SUIT) >= 0
    ):
        _fail(
            "arrays['scalars'][S_PHASE]", "a turn that has not started holds a card played, a draw or phrases"
        )
    if phase in (core.PH_SPEAK, core.PH_CALL) and not (played >= 0 or s(core.S_DREW) or s(core.S_TOOK_SEVEN)):
        _fail("arrays['scalars'][S_PHASE]", "the speaking phase of a turn that neither played nor drew")
    if played >= 0 and s(core.S_DREW):
        _fail("arrays['scalars'][S_DREW]", "a turn that both played a card and drew")
    first_suit = s(core.S_FIRST_SUIT)
    if first_suit >= 0 and not (s(core.S_SAID) >> (cards.SUIT_PHRASE_0 + first_suit)) & 1:
        _fail("arrays['scalars'][S_FIRST_SUIT]", "a suit named this turn that was not said")
    n_active = int((rules[core.ACTIVE] >= 0).sum())
    if phase == core.PH_CHOOSE_RULE:
        if options["rule_choice"] != "agent":
            _fail("arrays['scalars'][S_PHASE]", "a rule-choice phase needs rule_choice='agent'")
        if n_active >= min(rule_library.MAX_ACTIVE_RULES, rule_library.N_RULES):
            _fail("arrays['scalars'][S_PHASE]", "a rule-choice phase with every rule slot taken")
        check(core.S_NEXT_SEAT, 0, n_players - 1)
    _check_call_window(scalars, phase, spec)

    # -- rules: library ids and seats -------------------------------------------------------------
    for row, name in ((core.ACTIVE, "active"), (core.QUEUE, "queue")):
        for slot, rule in enumerate(rules[row].tolist()):
            _check_range(f"arrays['rules'][{name}][{slot}]", rule, -1, rule_library.N_RULES - 1)
    for slot, author in enumerate(rules[core.AUTHOR].tolist()):
        high = n_players - 1 if rules[core.ACTIVE, slot] >= 0 else -1  # an empty slot has no author
        _check_range(f"arrays['rules'][author][{slot}]", author, -1, high)
    active = rules[core.ACTIVE][rules[core.ACTIVE] >= 0]
    if len(set(active.tolist())) != len(active):
        _fail("arrays['rules'][active]", "a rule is active twice")
    if options["rule_choice"] != "fixed" and (rules[core.QUEUE] >= 0).any():
        _fail("arrays['rules'][queue]", "a fixed rule queue needs rule_choice='fixed'")
    # The rules refused to a seat: each in force and not its own (a seat never proposes a rule it
    # knows), only where the seats choose the rules.
    authors = dict(zip(rules[core.ACTIVE].tolist(), rules[core.AUTHOR].tolist(), strict=True))
    for seat in range(cards.MAX_PLAYERS):
        field = f"arrays['scalars'][S_REFUSED_0+{seat}]"
        refused = s(core.S_REFUSED_0 + seat)
        _check_range(field, refused, 0, _RULE_BITS)
        if refused and (seat >= n_players or options["rule_choice"] != "agent"):
            _fail(field, "rules refused to a seat beyond the players, or without rule_choice='agent'")
        for rule in range(rule_library.N_RULES):
            if (refused >> rule) & 1 and authors.get(rule, seat) == seat:
                _fail(field, f"rule {rule} was refused to seat {seat}, but it is not in force or is its own")

    # -- cards: hands, stack and pile within range, every card conserved ------------------------
    if (hands < 0).any():
        seat, card = np.argwhere(hands < 0)[0]
        _fail(f"arrays['hands'][{seat}][{card}]", f"a negative card count {int(hands[seat, card])}")
    if hands[n_players:].any():
        _fail("arrays['hands']", f"cards held by a seat beyond the {n_players} players")
    stack = decks[core.STACK, : s(core.S_STACK_SIZE)].astype(np.int64)
    pile = decks[core.PILE, : s(core.S_PILE_SIZE)].astype(np.int64)
    for name, row in (("stack", stack), ("pile", pile)):
        bad = np.flatnonzero((row < 0) | (row >= cards.N_CARD_TYPES))
        if bad.size:
            _fail(f"arrays['decks'][{name}][{int(bad[0])}]", f"{int(row[bad[0]])} is not a card type")
    counts = hands[:n_players].sum(axis=0, dtype=np.int64)
    counts += np.bincount(stack, minlength=cards.N_CARD_TYPES) + np.bincount(
        pile, minlength=cards.N_CARD_TYPES
    )
    if played >= 0 and phase != core.PH_OVER:
        # The card being played is out of the hand until the turn ends; once the episode is over
        # (a winning card) it lies on the pile.
        counts[played] += 1
    in_play = np.full(cards.N_CARD_TYPES, spec.n_decks, dtype=np.int64)
    in_play[cards.JOKER] = 2 * spec.n_decks
    if not np.array_equal(counts, in_play):
        card = int(np.flatnonzero(counts != in_play)[0])
        _fail(
            "arrays['hands'/'decks']",
            f"cards are not conserved: {int(counts[card])} copies of {cards.CARD_NAMES[card]} in hands, "
            f"stack, pile and play, the {spec.n_decks} deck(s) hold {int(in_play[card])}",
        )

    presence = (hands > 0).astype(np.uint64) << np.arange(cards.N_CARD_TYPES, dtype=np.uint64)
    expected_bits = np.bitwise_or.reduce(presence, axis=1)
    if not np.array_equal(hand_bits, expected_bits):
        seat = int(np.flatnonzero(hand_bits != expected_bits)[0])
        _fail(f"arrays['hand_bits'][{seat}]", "does not match the cards held in arrays['hands']")

    # -- public events: the recorded ones within range, the never-written slots empty -----------
    n_events = s(core.S_N_EVENTS)
    for slot in range(core.EVENT_SLOTS):
        event = events[slot].tolist()
        if slot >= n_events:
            if any(event):
                _fail(f"arrays['events'][{slot}]", "a slot no event was recorded in is not empty")
            continue

        def check_event(field: int, low: int, high: int, slot: int = slot, event: list = event) -> None:
            _check_range(f"arrays['events'][{slot}][{_EVENT_NAMES[field]}]", event[field], low, high)

        check_event(core.E_SEAT, 0, n_players - 1)
        check_event(core.E_KIND, 0, core.N_EVENT_KINDS - 1)
        check_event(core.E_CARD, -1, cards.N_CARD_TYPES - 1)
        check_event(core.E_PHRASES, 0, _PHRASE_BITS)
        check_event(core.E_CALLS, 0, _CALL_BITS)
        check_event(core.E_N_CALLS, 0, core.MAX_CALLS)
        check_event(core.E_PENALTY_CARDS, 0, core.MAX_CALLS * cards.MAO_PENALTY_CARDS)
        check_event(core.E_CHAIN_CARDS, 0, total)
        check_event(core.E_FORCED_DRAW, 0, total)
        check_event(core.E_FORCED_SEAT, 0 if event[core.E_FORCED_DRAW] else -1, n_players - 1)
        check_event(core.E_NAMED_SUIT, -1, 3)
        check_event(core.E_WON, 0, 1)
        check_event(core.E_RULE_BITS, 0, _RULE_BITS)
        check_event(core.E_BAD_CALLS, 0, _CALL_BITS)

    # -- the calls of the last step ---------------------------------------------------------------
    for k in range(s(core.S_N_CALLS)):
        code, phrase, n_cards, rule, player, caller = calls[k].tolist()
        _check_range(f"arrays['calls'][{k}][code]", code, core.CALL_BAD_CARD, core.CALL_BAD_CALL)
        _check_range(f"arrays['calls'][{k}][phrase]", phrase, -1, cards.N_CALL_REASONS - 1)
        _check_range(f"arrays['calls'][{k}][cards]", n_cards, 0, cards.MAO_PENALTY_CARDS)
        _check_range(f"arrays['calls'][{k}][rule]", rule, -1, rule_library.N_RULES - 1)
        _check_range(f"arrays['calls'][{k}][player]", player, 0, n_players - 1)
        _check_range(f"arrays['calls'][{k}][caller]", caller, -1, n_players - 1)


def _check_call_window(scalars: np.ndarray, phase: int, spec: SnapshotTarget) -> None:
    """The call window's columns: within range in a window (players' calls only), closed outside."""
    n_players = spec.n_players

    def s(index: int) -> int:
        return int(scalars[index])

    def check(index: int, low: int, high: int) -> None:
        _check_range(f"arrays['scalars'][{_SCALAR_NAMES[index]}]", s(index), low, high)

    reasons = range(cards.N_CALL_REASONS)
    if phase != core.PH_CALL:
        closed = [-1] + [0] * (core.S_FAULT_RULE_0 - core.S_VALID) + [-1] * cards.N_CALL_REASONS
        for offset, expected in enumerate(closed):
            if s(core.S_MOVER + offset) != expected:
                name = _SCALAR_NAMES[core.S_MOVER + offset]
                _fail(f"arrays['scalars'][{name}]", f"must be {expected} outside a call window")
        return
    if spec.options["calls"] != "players":
        _fail("arrays['scalars'][S_PHASE]", "a call window needs calls='players'")
    check(core.S_MOVER, 0, n_players - 1)
    if s(core.S_MOVER) == s(core.S_CURRENT):
        _fail("arrays['scalars'][S_MOVER]", "the mover cannot call on its own turn")
    check(core.S_VALID, 0, 1)
    faults = sum(1 << r for r in reasons if s(core.S_FAULT_CARDS_0 + r))
    check(core.S_CALLED, 0, _CALL_BITS)
    if s(core.S_CORRECT) & ~(s(core.S_CALLED) & faults):
        _fail("arrays['scalars'][S_CORRECT]", "correct calls must be faults that were called")
    if s(core.S_TALKING) & ~s(core.S_SAID):
        _fail("arrays['scalars'][S_TALKING]", "talking must be phrases that were said")
    for seat in range(cards.MAX_PLAYERS):
        check(core.S_OWED_0 + seat, 0, spec.total_cards if seat < n_players else 0)
    for reason in reasons:
        check(core.S_FAULT_CARDS_0 + reason, 0, spec.total_cards)
        high = rule_library.N_RULES - 1 if s(core.S_FAULT_CARDS_0 + reason) else -1
        check(core.S_FAULT_RULE_0 + reason, -1, high)


def _checked_info(field: str, info: Any) -> dict[str, Any]:
    """A copy of an agent's info, which must hold exactly the keys of :func:`calls_info`
    (``round_blocked`` may be missing: snapshots taken before infos reported it read as False)."""
    expected = calls_info(0, 0)
    if not isinstance(info, dict) or set(info) | {"round_blocked"} != set(expected):
        _fail(field, f"must be a dict with exactly the keys {', '.join(sorted(expected))}, got {info!r}")
    round_blocked = info.get("round_blocked", False)
    if not isinstance(round_blocked, (bool, np.bool_)):
        _fail(f"{field}['round_blocked']", f"must be a bool, got {round_blocked!r}")
    for key in ("n_calls", "call_cards"):
        if (
            isinstance(info[key], (bool, np.bool_))
            or not isinstance(info[key], (int, np.integer))
            or info[key] < 0
        ):
            _fail(f"{field}[{key!r}]", f"must be an int >= 0, got {info[key]!r}")
    if not isinstance(info["illegal_action"], (bool, np.bool_)):
        _fail(f"{field}['illegal_action']", f"must be a bool, got {info['illegal_action']!r}")
    if not isinstance(info["illegal_action_error"], str):
        _fail(f"{field}['illegal_action_error']", f"must be a str, got {info['illegal_action_error']!r}")
    return {
        **calls_info(int(info["n_calls"]), int(info["call_cards"]), bool(round_blocked)),
        "illegal_action": bool(info["illegal_action"]),
        "illegal_action_error": info["illegal_action_error"],
    }


def _is_number(value: Any) -> bool:
    return (
        not isinstance(value, (bool, np.bool_))
        and isinstance(value, (int, float, np.integer, np.floating))
        and math.isfinite(float(value))
    )


def _check_bookkeeping(snapshot: dict, arrays: MaoState, spec: SnapshotTarget) -> Snapshot:
    scalars = arrays.scalars[0]
    agents = snapshot["agents"]
    if not isinstance(agents, list) or not all(isinstance(agent, str) for agent in agents):
        _fail("agents", "must be a list of agent names")
    order = [agent for agent in spec.possible_agents if agent in agents]
    if agents != order:
        _fail("agents", f"must be distinct agents of {', '.join(spec.possible_agents)}, in seat order")
    terminated = bool(scalars[core.S_DONE])
    truncated = not terminated and int(scalars[core.S_STEP]) >= spec.options["max_steps"]
    if not (terminated or truncated) and len(agents) != len(spec.possible_agents):
        _fail("agents", "every agent is in the game until the episode ends")
    copies: dict[str, dict] = {}
    for key in ("rewards", "cumulative_rewards", "terminations", "truncations", "infos"):
        value = snapshot[key]
        if not isinstance(value, dict) or set(value) != set(agents):
            _fail(key, "must be a dict with one entry per agent in the game")
        copies[key] = dict(value)
    for key in ("rewards", "cumulative_rewards"):
        for agent, value in copies[key].items():
            if not _is_number(value):
                _fail(f"{key}[{agent!r}]", f"must be a finite number, got {value!r}")
            copies[key][agent] = float(value)
    for key, expected in (("terminations", terminated), ("truncations", truncated)):
        for agent, value in copies[key].items():
            if not isinstance(value, (bool, np.bool_)) or bool(value) != expected:
                _fail(f"{key}[{agent!r}]", f"must be {expected} for this game state, got {value!r}")
            copies[key][agent] = bool(value)
    for agent, info in copies["infos"].items():
        copies["infos"][agent] = _checked_info(f"infos[{agent!r}]", info)
    last_calls = snapshot["last_calls"]
    if not isinstance(last_calls, list) or not all(isinstance(call, dict) for call in last_calls):
        _fail("last_calls", "must be a list of call dicts")
    reset_rng = np.random.default_rng()
    try:
        reset_rng.bit_generator.state = snapshot["reset_rng"]
    except Exception as error:  # numpy raises TypeError, ValueError or KeyError for a foreign state
        raise ValueError(
            f"snapshot field reset_rng: not a state of numpy's default generator ({error})"
        ) from None
    return Snapshot(
        arrays=arrays,
        agents=list(agents),
        rewards=copies["rewards"],
        cumulative_rewards=copies["cumulative_rewards"],
        terminations=copies["terminations"],
        truncations=copies["truncations"],
        infos=copies["infos"],
        reset_rng=reset_rng,
        last_calls=[dict(call) for call in last_calls],
    )


#: Bound of the counts read from an options row alone (the envs cap these options at it too).
_MAX_COUNT = 2**31 - 1
_RULE_CHOICE_NAMES = {
    core.RULE_CHOICE_AGENT: "agent",
    core.RULE_CHOICE_SAMPLED: "sampled",
    core.RULE_CHOICE_FIXED: "fixed",
}


def check_state_arrays(arrays: Any, game: int = 0) -> MaoState:
    """Check the state arrays of game ``game`` of a batch (a dict ``{key: array [B, ...]}``, as in
    ``get_state()["arrays"]``) when no env is at hand to say the options: they are read from the
    game's own options row, then every invariant of :func:`check_game_arrays` is checked. Returns
    them as a :class:`MaoState` (not copied); raises ``ValueError`` naming the field."""
    if not isinstance(arrays, dict) or set(arrays) != set(STATE_KEYS):
        raise ValueError(f"state arrays must be a dict with exactly the keys {', '.join(STATE_KEYS)}")
    batch = None
    ordered = []
    for key in STATE_KEYS:
        array = arrays[key]
        dtype, shape = ARRAY_SPECS[key]
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.shape[1:] != shape:
            _fail(f"arrays[{key!r}]", f"must be a {dtype} array of shape (B, {', '.join(map(str, shape))})")
        if batch is None:
            batch = array.shape[0]
        elif array.shape[0] != batch:
            _fail(f"arrays[{key!r}]", f"holds {array.shape[0]} games, the other arrays {batch}")
        ordered.append(array)
    if isinstance(game, (bool, np.bool_)) or not isinstance(game, (int, np.integer)) or not 0 <= game < batch:
        raise ValueError(f"game must be an int in 0..{batch - 1}, got {game!r}")
    state = MaoState(*ordered)
    row = state.scalars[game]
    n_players = int(row[core.S_N_PLAYERS])
    _check_range("arrays['scalars'][S_N_PLAYERS]", n_players, 2, cards.MAX_PLAYERS)
    n_decks = cards.n_decks_for(n_players)
    _check_range("arrays['scalars'][CFG_N_DECKS]", int(row[core.CFG_N_DECKS]), n_decks, n_decks)
    _check_range("arrays['scalars'][CFG_RULE_CHOICE]", int(row[core.CFG_RULE_CHOICE]), 0, 2)
    _check_range("arrays['scalars'][CFG_N_ROUNDS]", int(row[core.CFG_N_ROUNDS]), 1, _MAX_COUNT)
    _check_range("arrays['scalars'][CFG_MAX_SUB_ACTIONS]", int(row[core.CFG_MAX_SUB_ACTIONS]), 3, _MAX_COUNT)
    flags = (core.CFG_SEVEN_TURN_ENDS, core.CFG_THANK_YOU, core.CFG_TALKING, core.CFG_CAMBRIDGE)
    for column in (*flags, core.CFG_PLAYERS_CALL):
        _check_range(f"arrays['scalars'][{_SCALAR_NAMES[column]}]", int(row[column]), 0, 1)
    forgotten = int(row[core.CFG_FORGOTTEN_MAO_CARDS])
    _check_range("arrays['scalars'][CFG_FORGOTTEN_MAO_CARDS]", forgotten, 1, cards.MAO_PENALTY_CARDS)
    options = {
        "n_players": n_players,
        "num_rounds": int(row[core.CFG_N_ROUNDS]),
        "max_steps": _MAX_COUNT,
        "rule_choice": _RULE_CHOICE_NAMES[int(row[core.CFG_RULE_CHOICE])],
        "max_sub_actions": int(row[core.CFG_MAX_SUB_ACTIONS]),
        "calls": "players" if row[core.CFG_PLAYERS_CALL] else "master",
    }
    spec = SnapshotTarget(options, row.copy(), n_decks, tuple(f"player_{i}" for i in range(n_players)))
    check_game_arrays(state, spec, int(game))
    return state
