"""The Madiao game state: its arrays (:class:`MadiaoState`, what every kernel takes), their
creation (:func:`new_state`), and the snapshot format (``raw_env.get_state()``) with its complete
validation.

The state of N games is one :class:`MadiaoState`, a named tuple of five arrays with a leading
batch axis (the AEC env uses N = 1; their columns are in the class docstring and the ``CS_*`` /
``I_*`` / ``CFG_*`` constants of ``madiao_env.core``). Numba compiles a named tuple of arrays like
separate array arguments, so the kernels take ``state`` and read ``state.card_sets`` etc. by name.

This module and the core are the only ones that use those column numbers: everything else reads
a game through :class:`GameView` and the batch functions (:func:`seats_to_act`, :func:`bankers`,
:func:`overflowed_games`), and makes the ``config`` row with :func:`config_row` (a test scans the
code for column constants used anywhere else).

A snapshot is a plain, picklable dict::

    version              STATE_VERSION (an int)
    config               int32[N_CONFIG]: the rule options' kernel row (must equal the env's)
    stake                float: the ``stake`` option (must equal the env's)
    arrays               [card_sets, ints, history, pending, settled], one game (leading axis 1):
                         the fields of a MadiaoState as a list, in field order, shapes and
                         dtypes in ARRAY_LAYOUT
    rng                  None or the numpy PCG64 ``bit_generator.state`` dict the next reset
                         draws from
    agents, agent_selection, rewards, cumulative_rewards, terminations, truncations, infos,
    rewards_pending_zero the PettingZoo bookkeeping (each info as :func:`settlement_info` makes it)
    last_settlement      None or the env's ``last_settlement`` ({hand_number, lines, payoffs})

Version 2 (the infos' fixed keys, ``last_settlement``) replaced version 1, whose infos held the
settlement's lines.

The kernels never check their inputs: an index out of range in a snapshot would read or write
outside an array (a crash or silent corruption), so :func:`validate_snapshot` checks every field a
kernel uses as an index or a count, that the card sets partition the deck, that the play history
agrees with the card sets, tricks and seat to act, and the bookkeeping, before the env writes
anything. Each failure is one ``ValueError`` naming the field, e.g.
``snapshot ints[I_TO_ACT] = 7: seat to act must be -1..3``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, NoReturn

import numpy as np

from cardgame_core.aec import no_illegal_action
from madiao_env import cards, core, payments

STATE_VERSION = 2


class MadiaoState(NamedTuple):
    """The arrays of N Madiao games (leading axis: the game), the one argument every kernel takes.

    Kernels write them in place; the rule options are not state (the kernel ``config`` row).
    """

    #: uint64[N, N_CARD_COLS] card bitmasks (bit k = card id k) by seat: CS_HAND+s cards held,
    #: CS_FACE_UP+s played face up this hand, CS_SLOUGHED+s sloughed face down this hand,
    #: CS_WON_WITH+s the winning card of every trick won; CS_RNG the game's xorshift64* state.
    card_sets: np.ndarray
    #: int32[N, N_INTS] the scalars, columns I_* of ``madiao_env.core``: banker, seat dealt first,
    #: leader, seat to act (-1: episode over), phase, trick, plays so far, best card and seat of
    #: the trick, redeal offers, hand number, tricks won by seat, the stock (upcard first),
    #: line counts and the flags of the last kernel call.
    ints: np.ndarray
    #: int8[N, MAX_PLAYS, 3] every play of the hand in order: (seat, card, face up 1 / down 0).
    history: np.ndarray
    #: int32[N, MAX_PENDING, 5] payment lines of the hand not yet settled:
    #: (hand number, rule code, payer, payee, stakes in integer units).
    pending: np.ndarray
    #: int32[N, MAX_SETTLED, 5] lines settled during the last kernel call (same columns).
    settled: np.ndarray


# Shape of one game's row of each field (without the batch axis) and its dtype, in field order.
_FIELD_LAYOUT = (
    ((core.N_CARD_COLS,), np.dtype(np.uint64)),
    ((core.N_INTS,), np.dtype(np.int32)),
    ((core.MAX_PLAYS, 3), np.dtype(np.int8)),
    ((core.MAX_PENDING, 5), np.dtype(np.int32)),
    ((core.MAX_SETTLED, 5), np.dtype(np.int32)),
)


def new_state(n_games: int) -> MadiaoState:
    """Zeroed arrays for ``n_games`` games (a game is started by ``core.reset_games``)."""
    return MadiaoState(*(np.zeros((n_games, *shape), dtype=dtype) for shape, dtype in _FIELD_LAYOUT))


def game_arrays(game_state: MadiaoState, game: int) -> list[np.ndarray]:
    """Copies of game ``game``'s rows of every field (batch axis 1): a snapshot's ``arrays``."""
    return [field[game : game + 1].copy() for field in game_state]


def write_game(game_state: MadiaoState, game: int, arrays: list[np.ndarray]) -> None:
    """Write a validated snapshot's ``arrays`` (see :func:`validate_snapshot`) into game ``game``."""
    for field, source in zip(game_state, arrays, strict=True):
        field[game : game + 1] = source


class ConfigEntries(NamedTuple):
    """The entries of the kernels' ``config`` row (int32[N_CONFIG]), by name."""

    #: 1: a non-capturing face-up play is legal (and costs stakes).
    face_up_discard: int
    #: Redeals allowed per hand, -1: unlimited.
    max_redeals: int
    #: 1: the episode is a whole match, 0: one hand.
    match: int
    #: The observation: the index of its ``obs_type`` in ``madiao_env.layout.OBS_TYPES``.
    obs_type: int


_CONFIG_COLUMNS = ConfigEntries(
    face_up_discard=core.CFG_FACE_UP_DISCARD,
    max_redeals=core.CFG_MAX_REDEALS,
    match=core.CFG_MATCH,
    obs_type=core.CFG_OBS_TYPE,
)


def config_row(entries: ConfigEntries) -> np.ndarray:
    """The kernels' ``config`` row holding ``entries``."""
    row = np.zeros(core.N_CONFIG, dtype=np.int32)
    for column, value in zip(_CONFIG_COLUMNS, entries, strict=True):
        row[column] = value
    return row


def config_entries(row: np.ndarray) -> ConfigEntries:
    """The named entries of a ``config`` row of shape ``(N_CONFIG,)``."""
    return ConfigEntries(*(int(row[column]) for column in _CONFIG_COLUMNS))


class _IntsEntry:
    """A read-only attribute of a ``GameView``: one entry of its game's ``ints`` row, as a Python
    int (or as ``kind`` of it)."""

    def __init__(self, column: int, doc: str, kind: type = int) -> None:
        self.column = column
        self.kind = kind
        self.__doc__ = doc

    def __get__(self, view: GameView | None, owner: type | None = None) -> Any:
        if view is None:
            return self
        return self.kind(view._ints[self.column])


class GameView:
    """Named reads of game ``game`` of a :class:`MadiaoState`, and the one write code outside the
    core makes (the random stream): a live view, every read sees the arrays as they are now.

    The kernels' column numbers (``CS_*``, ``I_*``, ``CFG_*`` of ``madiao_env.core``) stay between
    the core and this module: the envs, agents and tools read ``view.to_act``,
    ``view.hand(seat)``, ... (as OpenSpiel's states and Pgx's named fields offer them). The view
    holds views of the arrays' rows, so it follows in-place writes (every kernel call, ``write_game``)
    and must be made again for other arrays (a copy of the state).
    """

    __slots__ = ("_card_sets", "_history", "_ints", "_settled")

    def __init__(self, game_state: MadiaoState, game: int = 0) -> None:
        self._card_sets = game_state.card_sets[game]
        self._ints = game_state.ints[game]
        self._history = game_state.history[game]
        self._settled = game_state.settled[game]

    to_act = _IntsEntry(core.I_TO_ACT, "The seat to act, -1 once the episode is over.")
    banker = _IntsEntry(core.I_BANKER, "The banker's seat.")
    first = _IntsEntry(
        core.I_FIRST, "The seat dealt first (it leads the first trick and is asked first about a redeal)."
    )
    phase = _IntsEntry(core.I_PHASE, "``core.PHASE_REDEAL``, ``PHASE_PLAY`` or ``PHASE_OVER``.")
    tricks_completed = _IntsEntry(core.I_TRICK, "Tricks completed in this hand.")
    redeals = _IntsEntry(core.I_REDEALS, "Redeals declared in this hand.")
    hand_number = _IntsEntry(core.I_HAND_NUMBER, "The current hand's index in the episode (0-based).")
    episode_over = _IntsEntry(core.I_EPISODE_OVER, "Whether the episode is over.", bool)
    overflowed = _IntsEntry(
        core.I_OVERFLOW, "A settlement line buffer filled up (the game cannot go on: the envs raise).", bool
    )
    hands_settled = _IntsEntry(core.I_HANDS_SETTLED, "Hands settled by the last kernel call.")
    last_settled_hand = _IntsEntry(core.I_LAST_SETTLED_HAND, "The hand number of the last hand settled.")

    def redeal_passed(self) -> list[int]:
        """The seats that passed a redeal offer on the current deal (public: every seat holding five
        or more cards of a suit is asked, while the hand's redeal cap allows), in seat order."""
        passed = self._ints[core.I_PASSED].item()
        return [seat for seat in range(cards.N_SEATS) if passed >> seat & 1]

    def tricks_won(self) -> list[int]:
        """Tricks won so far in this hand, by seat."""
        return self._ints[core.I_TRICKS_WON : core.I_TRICKS_WON + cards.N_SEATS].tolist()

    def stock(self) -> list[int]:
        """The card ids of the stock, upcard first."""
        return self._ints[core.I_STOCK : core.I_STOCK + cards.STOCK_SIZE].tolist()

    def hand(self, seat: int) -> int:
        """The cards ``seat`` holds, as a bitmask (bit k = card id k)."""
        return int(self._card_sets[core.CS_HAND + seat])

    def plays(self) -> list[tuple[int, int, int]]:
        """Every play of the hand so far, in order: (seat, card id, face up 1 / face down 0)."""
        return [tuple(play) for play in self._history[: self._ints[core.I_N_PLAYS]].tolist()]

    def settled_lines(self) -> list[tuple[int, int, int, int, int]]:
        """The payment lines settled by the last kernel call: (hand number, rule code, payer,
        payee, stakes in integer units)."""
        return [tuple(line) for line in self._settled[: self._ints[core.I_N_SETTLED]].tolist()]

    @property
    def random_state(self) -> int:
        """The game's xorshift64* state (what the next random deal draws from)."""
        return int(self._card_sets[core.CS_RNG])

    @random_state.setter
    def random_state(self, value: int) -> None:
        self._card_sets[core.CS_RNG] = value


def seats_to_act(game_state: MadiaoState) -> np.ndarray:
    """Each game's seat to act (``[N]``, -1 where the episode is over): a view of the state."""
    return game_state.ints[:, core.I_TO_ACT]


def bankers(game_state: MadiaoState) -> np.ndarray:
    """Each game's banker seat (``[N]``): a view of the state."""
    return game_state.ints[:, core.I_BANKER]


def hands(game_state: MadiaoState) -> np.ndarray:
    """Each game's hands by seat as card bitmasks (``[N, 4]`` uint64, bit k = card id k): a view."""
    return game_state.card_sets[:, core.CS_HAND : core.CS_HAND + cards.N_SEATS]


def sloughed(game_state: MadiaoState) -> np.ndarray:
    """Each game's cards sloughed face down this hand by seat, as card bitmasks (``[N, 4]``
    uint64): a view."""
    return game_state.card_sets[:, core.CS_SLOUGHED : core.CS_SLOUGHED + cards.N_SEATS]


def stocks(game_state: MadiaoState) -> np.ndarray:
    """Each game's stock as card ids, upcard first (``[N, 8]``): a view."""
    return game_state.ints[:, core.I_STOCK : core.I_STOCK + cards.STOCK_SIZE]


def overflowed_games(game_state: MadiaoState) -> np.ndarray:
    """The indices of the games whose settlement line buffer filled up (usually none)."""
    return np.flatnonzero(game_state.ints[:, core.I_OVERFLOW])


# A snapshot holds one game: (field name, shape with a batch axis of 1, dtype), in field order.
ARRAY_LAYOUT = tuple(
    (name, (1, *shape), dtype)
    for name, (shape, dtype) in zip(MadiaoState._fields, _FIELD_LAYOUT, strict=True)
)
SNAPSHOT_KEYS = (
    "version",
    "config",
    "stake",
    "arrays",
    "rng",
    "agents",
    "agent_selection",
    "rewards",
    "cumulative_rewards",
    "terminations",
    "truncations",
    "infos",
    "rewards_pending_zero",
    "last_settlement",
)
AGENTS = tuple(f"player_{seat}" for seat in range(cards.N_SEATS))
FULL_DECK = (1 << cards.N_CARDS) - 1
_CARD_SUIT = tuple(cards.CARD_SUIT.tolist())
# The largest stakes of one settlement line (a meld of eight, a slam).
MAX_LINE_STAKES = payments.MAX_LINE_STAKES

# Names of the ints columns for messages: "I_TRICKS_WON+2" for the third seat's count.
_INT_NAMES: dict[int, str] = {}
for _name in dir(core):
    if _name.startswith("I_"):
        _INT_NAMES.setdefault(getattr(core, _name), _name)
for _k in range(1, cards.N_SEATS):
    _INT_NAMES[core.I_TRICKS_WON + _k] = f"I_TRICKS_WON+{_k}"
for _k in range(1, cards.STOCK_SIZE):
    _INT_NAMES[core.I_STOCK + _k] = f"I_STOCK+{_k}"
_CARD_SET_NAMES = {
    **{core.CS_HAND + s: f"CS_HAND+{s}" for s in range(4)},
    **{core.CS_FACE_UP + s: f"CS_FACE_UP+{s}" for s in range(4)},
    **{core.CS_SLOUGHED + s: f"CS_SLOUGHED+{s}" for s in range(4)},
    **{core.CS_WON_WITH + s: f"CS_WON_WITH+{s}" for s in range(4)},
    core.CS_RNG: "CS_RNG",
}


def _popcount(mask: int) -> int:
    return bin(mask).count("1")


def _fail(field: str, value: Any, requirement: str) -> NoReturn:
    raise ValueError(f"snapshot {field} = {value!r}: {requirement}")


class _Ints:
    """Reads of the ints row as Python ints, with range checks that name the column."""

    def __init__(self, row: np.ndarray) -> None:
        self.values = row.tolist()

    def __getitem__(self, column: int) -> int:
        return self.values[column]

    def field(self, column: int) -> str:
        return f"ints[{_INT_NAMES[column]}]"

    def check(self, column: int, low: int, high: int, meaning: str) -> int:
        value = self.values[column]
        if not low <= value <= high:
            raise ValueError(f"snapshot {self.field(column)} = {value}: {meaning} must be {low}..{high}")
        return value

    def require(self, condition: bool, column: int, requirement: str) -> None:
        if not condition:
            _fail(self.field(column), self.values[column], requirement)


# Snapshots' RNG states are checked by loading them into this one bit generator: building a new
# generator per check costs more than the rest of the validation.
_SCRATCH_BIT_GENERATOR = np.random.PCG64(0)


def checked_rng_state(rng_state: Any) -> dict | None:
    """A fresh copy of a snapshot's ``rng`` entry (a numpy PCG64 state dict, or None) if valid."""
    if rng_state is None:
        return None
    if not isinstance(rng_state, dict) or rng_state.get("bit_generator") != "PCG64":
        _fail("rng", rng_state, "must be None or a numpy PCG64 bit_generator.state dict")
    try:
        _SCRATCH_BIT_GENERATOR.state = rng_state
    except (TypeError, ValueError, KeyError, OverflowError) as error:
        raise ValueError(f"snapshot rng is not a valid PCG64 state: {error}") from None
    return _SCRATCH_BIT_GENERATOR.state


def rng_from_state(rng_state: dict | None) -> np.random.Generator | None:
    """The generator of a snapshot's ``rng`` entry, checked by :func:`checked_rng_state`."""
    if rng_state is None:
        return None
    generator = np.random.default_rng(0)
    generator.bit_generator.state = checked_rng_state(rng_state)
    return generator


def settlement_info(hand_number: int, payoffs: list[float]) -> dict[str, Any]:
    """An agent's ``infos`` entry: the last settlement's hand number (-1: none yet) and payoffs by
    seat, and the illegal-action entries (``cardgame_core.aec.no_illegal_action``). The keys and
    shapes never change, so that collectors can stack infos."""
    return {"hand_number": hand_number, "payoffs": list(payoffs), **no_illegal_action()}


def copy_info(info: dict[str, Any]) -> dict[str, Any]:
    """A copy of an info that shares no list with it."""
    return {**info, "payoffs": list(info["payoffs"])}


def copy_settlement(settlement: dict[str, Any] | None) -> dict[str, Any] | None:
    """A copy of a ``last_settlement`` that shares no list or line with it."""
    if settlement is None:
        return None
    return {
        "hand_number": settlement["hand_number"],
        "lines": [dict(line) for line in settlement["lines"]],
        "payoffs": list(settlement["payoffs"]),
    }


def validate_snapshot(snapshot: Any, config: np.ndarray, stake: float) -> dict[str, Any]:
    """A normalized deep copy of ``snapshot`` if it is a consistent Madiao state for an env with
    this kernel ``config`` row and ``stake``; else ``ValueError`` naming the first bad field.

    Nothing the caller holds is modified; the copy shares no mutable object with ``snapshot``.
    """
    if not isinstance(snapshot, dict):
        raise ValueError(f"not a Madiao get_state() snapshot: a {type(snapshot).__name__}, not a dict")
    missing = [key for key in SNAPSHOT_KEYS if key not in snapshot]
    if missing:
        raise ValueError(f"snapshot is missing key(s) {missing}: not a Madiao get_state() snapshot")
    version = snapshot["version"]
    if isinstance(version, bool) or not isinstance(version, (int, np.integer)) or version != STATE_VERSION:
        _fail("version", version, f"this version of madiao_env reads snapshots of version {STATE_VERSION}")
    _check_options(snapshot["config"], snapshot["stake"], config, stake)
    arrays = _checked_arrays(snapshot["arrays"])
    card_sets, ints_array, history, pending, settled = arrays
    ints = _Ints(ints_array[0])
    _check_game(card_sets[0], ints, history[0], pending[0], settled[0], config)
    rng_state = checked_rng_state(snapshot["rng"])
    bookkeeping = _checked_bookkeeping(snapshot, ints[core.I_TO_ACT])
    return {
        "version": STATE_VERSION,
        "config": config.copy(),
        "stake": float(stake),
        "arrays": arrays,
        "rng": rng_state,
        **bookkeeping,
    }


# ----------------------------------------------------------------------------- options and arrays


def _check_options(snap_config: Any, snap_stake: Any, config: np.ndarray, stake: float) -> None:
    other_options = (
        "was taken with other options (obs_type/episode/max_redeals/face_up_discard) than this env's"
    )
    if not isinstance(snap_config, np.ndarray) or snap_config.shape != config.shape:
        _fail("config", snap_config, f"must be an int32 array of shape {config.shape}")
    if snap_config.dtype != config.dtype:
        _fail("config", snap_config, f"must have dtype {config.dtype}, not {snap_config.dtype}")
    if not np.array_equal(snap_config, config):
        _fail("config", snap_config.tolist(), f"the snapshot {other_options} ({config.tolist()})")
    if isinstance(snap_stake, bool) or not isinstance(snap_stake, (int, float, np.integer, np.floating)):
        _fail("stake", snap_stake, "must be a number")
    try:
        same_stake = float(snap_stake) == stake
    except OverflowError:  # an int beyond any float
        same_stake = False
    if not same_stake:
        _fail("stake", snap_stake, f"the snapshot was taken with another stake than this env's ({stake!r})")


def _checked_arrays(arrays: Any) -> list[np.ndarray]:
    if not isinstance(arrays, (list, tuple)) or len(arrays) != len(ARRAY_LAYOUT):
        _fail("arrays", arrays, f"must be a list of {len(ARRAY_LAYOUT)} numpy arrays")
    copies = []
    for index, (array, (name, shape, dtype)) in enumerate(zip(arrays, ARRAY_LAYOUT, strict=True)):
        if not isinstance(array, np.ndarray):
            _fail(
                f"arrays[{index}] ({name})", type(array).__name__, f"must be a {dtype} array of shape {shape}"
            )
        if array.shape != shape or array.dtype != dtype:
            raise ValueError(
                f"snapshot arrays[{index}] ({name}) is {array.dtype} {array.shape}: must be {dtype} {shape}"
            )
        copies.append(np.array(array, dtype=dtype, order="C", copy=True))
    return copies


# ----------------------------------------------------------------------------- the game


def _check_game(
    card_sets: np.ndarray,
    ints: _Ints,
    history: np.ndarray,
    pending: np.ndarray,
    settled: np.ndarray,
    config: np.ndarray,
) -> None:
    """Every index and count a kernel uses in range, and the card sets consistent with them."""
    match_episode = config[core.CFG_MATCH] == 1
    redeal_cap = int(config[core.CFG_MAX_REDEALS])
    sets = card_sets.tolist()
    for column, value in enumerate(sets):
        if column != core.CS_RNG and value & ~FULL_DECK:
            _fail(f"card_sets[{_CARD_SET_NAMES[column]}]", hex(value), "holds bits beyond the 40 cards")
    if sets[core.CS_RNG] == 0:
        _fail("card_sets[CS_RNG]", 0, "the xorshift random state must be nonzero (zero stays zero)")

    # Scalars used as seats, phases and counts.
    banker = ints.check(core.I_BANKER, 0, 3, "banker")
    first = ints.check(core.I_FIRST, 0, 3, "seat dealt first")
    leader = ints.check(core.I_LEADER, 0, 3, "leader")
    to_act = ints.check(core.I_TO_ACT, -1, 3, "seat to act")
    phase = ints.check(core.I_PHASE, 0, 2, "phase (redeal/play/over)")
    trick = ints.check(core.I_TRICK, 0, cards.N_TRICKS, "tricks completed")
    n_plays = ints.check(core.I_N_PLAYS, 0, core.MAX_PLAYS, "plays recorded in history")
    best_card = ints.check(core.I_BEST_CARD, -1, cards.N_CARDS - 1, "best card of the trick")
    best_seat = ints.check(core.I_BEST_SEAT, -1, 3, "seat of the best card")
    redeals = ints.check(core.I_REDEALS, 0, redeal_cap if redeal_cap >= 0 else 2**31 - 2, "redeals")
    hand_number = ints.check(
        core.I_HAND_NUMBER, 0, 2**31 - 2 if match_episode else 0, "hand number (episode='hand': only 0)"
    )
    holder = ints.check(core.I_HUNDRED_HOLDER, -1, 3, "seat dealt 100T")
    been_banker = ints.check(core.I_BEEN_BANKER, 0, 15, "seats that have been banker (a 4-bit set)")
    ask_pos = ints.check(core.I_ASK_POS, 0, 4, "deal-order offset of the next redeal offer")
    eligible = ints.check(core.I_ELIGIBLE, 0, 15, "seats eligible for a redeal (a 4-bit set)")
    passed = ints.check(core.I_PASSED, 0, 15, "seats that passed a redeal offer (a 4-bit set)")
    decided = ints.check(core.I_DECIDED, 0, 1, "decision-taken flag")
    n_pending = ints.check(core.I_N_PENDING, 0, core.MAX_PENDING, "pending settlement lines")
    n_settled = ints.check(core.I_N_SETTLED, 0, core.MAX_SETTLED, "settled settlement lines")
    ints.check(core.I_OVERFLOW, 0, 0, "line-buffer overflow flag (an overflowed game cannot continue)")
    tricks_won = [ints.check(core.I_TRICKS_WON + s, 0, cards.N_TRICKS, "tricks won") for s in range(4)]
    stock = [ints.check(core.I_STOCK + i, 0, cards.N_CARDS - 1, "stock card id") for i in range(8)]
    ints.check(core.I_HANDS_SETTLED, 0, core.MAX_SETTLED, "hands settled by the last step")
    over = ints.check(core.I_EPISODE_OVER, 0, 1, "episode-over flag")
    ints.check(core.I_LAST_SETTLED_HAND, 0, hand_number, "hand number of the last settlement")

    # Phase, seat to act and the episode flag agree.
    ints.require(
        (phase == core.PHASE_OVER) == (over == 1), core.I_EPISODE_OVER, "must be 1 exactly in phase 'over'"
    )
    ints.require((to_act == -1) == (over == 1), core.I_TO_ACT, "must be -1 exactly when the episode is over")
    ints.require(
        decided == 1 or (n_plays == 0 and redeals == 0 and passed == 0),
        core.I_DECIDED,
        "must be 1 once a play, a redeal or a pass happened",
    )
    ints.require(
        not (match_episode and been_banker == 15 and over == 0),
        core.I_BEEN_BANKER,
        "every seat has been banker but the match is not over",
    )

    # The cards: 12 disjoint sets and the stock make the deck.
    hands = [sets[core.CS_HAND + s] for s in range(4)]
    face_up = [sets[core.CS_FACE_UP + s] for s in range(4)]
    sloughed = [sets[core.CS_SLOUGHED + s] for s in range(4)]
    won_with = [sets[core.CS_WON_WITH + s] for s in range(4)]
    if len(set(stock)) != len(stock):
        _fail("ints[I_STOCK..I_STOCK+7]", stock, "the stock cards must be distinct")
    stock_mask = sum(1 << card for card in stock)
    seen = stock_mask
    for column in (*range(core.CS_HAND, core.CS_HAND + 4), *range(core.CS_FACE_UP, core.CS_SLOUGHED + 4)):
        if sets[column] & seen:
            _fail(
                f"card_sets[{_CARD_SET_NAMES[column]}]",
                cards.names_of(sets[column] & seen),
                "these cards are also in another seat's set or in the stock",
            )
        seen |= sets[column]
    if seen != FULL_DECK:
        _fail(
            "card_sets",
            cards.names_of(FULL_DECK & ~seen),
            "cards missing: hands, plays, sloughs and stock must hold the 40 cards",
        )
    for seat in range(4):
        dealt = hands[seat] | face_up[seat] | sloughed[seat]
        if _popcount(dealt) != cards.HAND_SIZE:
            _fail(
                f"card_sets[CS_HAND+{seat}]",
                cards.names_of(hands[seat]),
                f"seat {seat} holds and played {_popcount(dealt)} cards, not {cards.HAND_SIZE}",
            )
    hundred = 1 << cards.HUNDRED_MYRIAD
    true_holder = next((s for s in range(4) if (hands[s] | face_up[s] | sloughed[s]) & hundred), -1)
    ints.require(holder == true_holder, core.I_HUNDRED_HOLDER, f"the seat dealt 100T is {true_holder}")

    plays = history[:n_plays].tolist()
    _check_history(ints, plays, first, hands, face_up, sloughed, won_with, tricks_won)

    # The trick in progress and the seat to act.
    in_trick = n_plays % 4
    ints.require(trick == n_plays // 4, core.I_TRICK, f"must be plays // 4 = {n_plays // 4}")
    if phase != core.PHASE_OVER:
        ints.require(n_plays < core.MAX_PLAYS, core.I_N_PLAYS, "all 32 cards played but the hand goes on")
    if in_trick == 0:
        ints.require(best_card == -1, core.I_BEST_CARD, "must be -1 between tricks")
        ints.require(best_seat == -1, core.I_BEST_SEAT, "must be -1 between tricks")
    else:
        expected_card, expected_seat = _trick_best(plays, n_plays - in_trick, in_trick)
        ints.require(
            best_card == expected_card, core.I_BEST_CARD, f"the trick's best card is {expected_card}"
        )
        ints.require(
            best_seat == expected_seat, core.I_BEST_SEAT, f"the trick's best seat is {expected_seat}"
        )
        trick_leader = plays[n_plays - in_trick][0]
        ints.require(leader == trick_leader, core.I_LEADER, f"seat {trick_leader} led the trick")
        if phase != core.PHASE_OVER:
            next_seat = (plays[n_plays - 1][0] + 1) % 4
            ints.require(to_act == next_seat, core.I_TO_ACT, f"seat {next_seat} plays next in the trick")
    if n_plays == 0:
        ints.require(leader == first, core.I_LEADER, "the seat dealt first leads the first trick")
    elif in_trick == 0:
        last_winner = _trick_best(plays, n_plays - 4, 4)[1]
        ints.require(leader == last_winner, core.I_LEADER, f"seat {last_winner} won the last trick")
        if phase == core.PHASE_PLAY:
            ints.require(to_act == leader, core.I_TO_ACT, "the leader plays first")

    if phase == core.PHASE_REDEAL:
        ints.require(n_plays == 0, core.I_N_PLAYS, "no card is played before the redeal offers are over")
        ints.require(
            ask_pos < 4 and (first + ask_pos) % 4 == to_act,
            core.I_ASK_POS,
            f"the seat asked ({to_act}) must be seat first + offset",
        )
        ints.require(
            bool(eligible >> to_act & 1), core.I_ELIGIBLE, f"the seat asked ({to_act}) must be eligible"
        )
        long_suits = _long_suit_seats(hands)
        ints.require(
            eligible & ~long_suits == 0,
            core.I_ELIGIBLE,
            f"only seats holding five cards of a suit may be eligible ({long_suits})",
        )
        ints.require(passed & ~eligible == 0, core.I_PASSED, "only eligible seats can have passed")
        ints.require(redeal_cap < 0 or redeals < redeal_cap, core.I_REDEALS, "the redeal cap is reached")
    elif phase == core.PHASE_PLAY:
        ints.require(ask_pos == 4, core.I_ASK_POS, "must be 4 once play started")
        if n_plays == 0:
            ints.require(to_act == first, core.I_TO_ACT, "the seat dealt first leads the first trick")

    _check_lines(pending, n_pending, hand_number, "pending")
    _check_lines(settled, n_settled, hand_number, "settled")
    del banker  # any seat may be banker: checked for range only


def _long_suit_seats(hands: list[int]) -> int:
    seats = 0
    for seat, hand in enumerate(hands):
        if any(_popcount(hand & int(suit)) >= 5 for suit in cards.SUIT_MASK):
            seats |= 1 << seat
    return seats


def _trick_best(plays: list[list[int]], start: int, count: int) -> tuple[int, int]:
    """(best card, its seat) of the trick whose ``count`` plays (seat, card, face up) start at
    ``plays[start]``: the lead, or the highest face-up card of the suit led."""
    best_seat, best_card, _ = plays[start]
    for seat, card, face_up in plays[start + 1 : start + count]:
        if face_up == 1 and _CARD_SUIT[card] == _CARD_SUIT[best_card] and card > best_card:
            best_card, best_seat = card, seat
    return best_card, best_seat


def _check_history(
    ints: _Ints,
    plays: list[list[int]],
    first: int,
    hands: list[int],
    face_up: list[int],
    sloughed: list[int],
    won_with: list[int],
    tricks_won: list[int],
) -> None:
    """The plays in history are in turn order, from the seats' played sets, and make the tricks won."""
    played_up = [0] * 4
    played_down = [0] * 4
    won = [0] * 4
    won_cards = [0] * 4
    leader = first
    for k, (seat, card, up) in enumerate(plays):
        where = f"history[0, {k}]"
        if not 0 <= card < cards.N_CARDS:
            _fail(where, plays[k], "card id must be 0..39")
        if up not in (0, 1):
            _fail(where, plays[k], "face-up flag must be 0 or 1")
        expected_seat = (leader + k % 4) % 4
        if seat != expected_seat:
            _fail(where, plays[k], f"seat {expected_seat} plays here (turn order from the leader)")
        if k % 4 == 0 and not up:
            _fail(where, plays[k], "a trick is led face up")
        target = played_up if up else played_down
        if (played_up[seat] | played_down[seat]) & (1 << card):
            _fail(where, plays[k], "the card is played twice")
        target[seat] |= 1 << card
        if k % 4 == 3:
            best_card, winner = _trick_best(plays, k - 3, 4)
            won[winner] += 1
            won_cards[winner] |= 1 << best_card
            leader = winner
    for seat in range(4):
        for column, stored, replayed, what in (
            ("CS_FACE_UP", face_up, played_up, "playing face up"),
            ("CS_SLOUGHED", sloughed, played_down, "sloughing"),
            ("CS_WON_WITH", won_with, won_cards, "winning tricks with"),
        ):
            if replayed[seat] != stored[seat]:
                _fail(
                    f"card_sets[{column}+{seat}]",
                    cards.names_of(stored[seat]),
                    f"history has seat {seat} {what} {cards.names_of(replayed[seat])}",
                )
        if won[seat] != tricks_won[seat]:
            _fail(
                f"ints[{_INT_NAMES[core.I_TRICKS_WON + seat]}]",
                tricks_won[seat],
                f"history has seat {seat} winning {won[seat]} tricks",
            )
    del hands  # hand sizes follow from the 8 dealt cards checked by the caller


def _check_lines(lines: np.ndarray, count: int, hand_number: int, name: str) -> None:
    """Lines ``0..count-1`` of a settlement buffer: (hand number, rule, payer, payee, stakes)."""
    for i in range(count):
        hand, rule, payer, payee, stakes = (int(v) for v in lines[i])
        where = f"{name}[0, {i}]"
        if not 0 <= hand <= hand_number:
            _fail(where, lines[i].tolist(), f"hand number must be 0..{hand_number}")
        if not 0 <= rule < len(core.RULE_NAMES):
            _fail(where, lines[i].tolist(), f"rule code must be 0..{len(core.RULE_NAMES) - 1}")
        if not (0 <= payer <= 3 and 0 <= payee <= 3 and payer != payee):
            _fail(where, lines[i].tolist(), "payer and payee must be two different seats 0..3")
        if not 1 <= stakes <= MAX_LINE_STAKES:
            _fail(where, lines[i].tolist(), f"stakes must be 1..{MAX_LINE_STAKES}")


# ----------------------------------------------------------------------------- PettingZoo bookkeeping


def _is_real(value: Any) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, (int, float, np.integer, np.floating))
        and math.isfinite(float(value))
    )


def _checked_bookkeeping(snapshot: dict, to_act: int) -> dict[str, Any]:
    agents = snapshot["agents"]
    if not isinstance(agents, (list, tuple)) or any(not isinstance(a, str) for a in agents):
        _fail("agents", agents, "must be a list of agent names")
    if list(agents) != [a for a in AGENTS if a in agents] or len(set(agents)) != len(agents):
        _fail("agents", agents, f"must be distinct agents of {list(AGENTS)} in seat order")
    agents = list(agents)
    if to_act >= 0 and agents != list(AGENTS):
        _fail("agents", agents, "all four agents are live while the episode goes on")
    selection = snapshot["agent_selection"]
    if to_act >= 0:
        if selection != AGENTS[to_act]:
            _fail("agent_selection", selection, f"the seat to act is {to_act} ({AGENTS[to_act]})")
    elif selection not in (agents or AGENTS):
        _fail("agent_selection", selection, f"must be one of {agents or list(AGENTS)}")
    result: dict[str, Any] = {"agents": agents, "agent_selection": str(selection)}
    for key in ("rewards", "cumulative_rewards", "terminations", "truncations", "infos"):
        value = snapshot[key]
        if not isinstance(value, dict) or set(value) != set(agents):
            keys = sorted(value) if isinstance(value, dict) else type(value).__name__
            _fail(key, keys, f"must be a dict with exactly the live agents {agents} as keys")
    for key in ("rewards", "cumulative_rewards"):
        for agent, reward in snapshot[key].items():
            if not _is_real(reward):
                _fail(f"{key}[{agent!r}]", reward, "must be a finite number")
        result[key] = {agent: float(snapshot[key][agent]) for agent in agents}
    for key, expected in (("terminations", to_act < 0), ("truncations", False)):
        for agent, flag in snapshot[key].items():
            if not isinstance(flag, (bool, np.bool_)) or bool(flag) != expected:
                _fail(f"{key}[{agent!r}]", flag, f"must be {expected} (episode over: {to_act < 0})")
        result[key] = dict.fromkeys(agents, expected)
    result["infos"] = {agent: _checked_info(agent, snapshot["infos"][agent]) for agent in agents}
    result["last_settlement"] = _checked_settlement(snapshot["last_settlement"])
    pending_zero = snapshot["rewards_pending_zero"]
    if not isinstance(pending_zero, (bool, np.bool_)):
        _fail("rewards_pending_zero", pending_zero, "must be a bool")
    result["rewards_pending_zero"] = bool(pending_zero)
    return result


def _checked_info(agent: str, info: Any) -> dict[str, Any]:
    """A copy of an agent's info, which must hold exactly the keys of :func:`settlement_info`."""
    where = f"infos[{agent!r}]"
    expected = settlement_info(-1, [0.0] * cards.N_SEATS)
    if not isinstance(info, dict) or set(info) != set(expected):
        keys = sorted(info) if isinstance(info, dict) else type(info).__name__
        _fail(where, keys, f"must be a dict with exactly the keys {sorted(expected)}")
    hand = info["hand_number"]
    if isinstance(hand, bool) or not isinstance(hand, (int, np.integer)) or hand < -1:
        _fail(f"{where}['hand_number']", hand, "must be an int >= -1 (-1: no settlement yet)")
    payoffs = _checked_payoffs(f"{where}['payoffs']", info["payoffs"])
    if not isinstance(info["illegal_action"], (bool, np.bool_)):
        _fail(f"{where}['illegal_action']", info["illegal_action"], "must be a bool")
    if not isinstance(info["illegal_action_error"], str):
        _fail(f"{where}['illegal_action_error']", info["illegal_action_error"], "must be a str")
    return {
        **settlement_info(int(hand), payoffs),
        "illegal_action": bool(info["illegal_action"]),
        "illegal_action_error": info["illegal_action_error"],
    }


def _checked_payoffs(where: str, payoffs: Any) -> list[float]:
    if not isinstance(payoffs, list) or len(payoffs) != 4 or not all(_is_real(p) for p in payoffs):
        _fail(where, payoffs, "must be a list of 4 finite numbers")
    return [float(p) for p in payoffs]


def _checked_settlement(settlement: Any) -> dict[str, Any] | None:
    """A copy of a snapshot's ``last_settlement``: None, or its hand number, lines and payoffs."""
    where = "last_settlement"
    if settlement is None:
        return None
    if not isinstance(settlement, dict) or set(settlement) != {"hand_number", "lines", "payoffs"}:
        _fail(where, settlement, "must be None or a dict of 'hand_number', 'lines' and 'payoffs'")
    hand = settlement["hand_number"]
    if isinstance(hand, bool) or not isinstance(hand, (int, np.integer)) or hand < 0:
        _fail(f"{where}['hand_number']", hand, "must be an int >= 0")
    lines = settlement["lines"]
    if not isinstance(lines, list):
        _fail(f"{where}['lines']", lines, "must be a list of lines")
    copied_lines = []
    for i, line in enumerate(lines):
        if (
            not isinstance(line, dict)
            or set(line) != {"rule", "payer", "payee", "stakes"}
            or line["rule"] not in core.RULE_NAMES
            or any(isinstance(line[k], bool) or line[k] not in range(4) for k in ("payer", "payee"))
            or not _is_real(line["stakes"])
        ):
            _fail(f"{where}['lines'][{i}]", line, "must be {rule, payer, payee, stakes} of a settlement")
        copied_lines.append(
            {
                "rule": line["rule"],
                "payer": int(line["payer"]),
                "payee": int(line["payee"]),
                "stakes": float(line["stakes"]),
            }
        )
    payoffs = _checked_payoffs(f"{where}['payoffs']", settlement["payoffs"])
    return {"hand_number": int(hand), "lines": copied_lines, "payoffs": payoffs}
