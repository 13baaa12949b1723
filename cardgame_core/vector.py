"""Batched (vector) card-game envs: N games stepped by one Numba call, checked in Python here.

Each game package provides a subclass whose two hooks call its batch kernels: ``_reset_games``
deals every game, ``_step_games`` applies one action per game (``-1`` = leave that game alone),
settles, auto-resets finished games and refreshes the output buffers. The kernels do no checking
at all; this base class validates the actions array (shape, dtype, range, legality) once per call
with a few numpy operations, so a bad action raises an error naming the game and the action
instead of corrupting a game state deep inside a kernel.

Copies: ``copy.deepcopy`` and pickling carry every game, its random stream and the buffers; a
copy steps exactly like the original (the views the kernels write through are rebuilt in the copy,
see ``_link_views``).

Buffers and ownership: the arrays of a :class:`VectorStep` are fresh copies when the env was built
with ``copy=True`` (the default). With ``copy=False`` they are the env's own buffers, overwritten
by the next ``step``/``reset`` (faster; what the benchmarks and the self-play trainer use when they
consume a step before taking the next). ``final_observation`` and ``final_payoffs`` rows are only
meaningful for games with ``terminated | truncated`` set in that step.
"""

from __future__ import annotations

import abc
import ctypes
import functools
import importlib.metadata
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numba
import numpy as np

from cardgame_core.aec import IllegalActionError, seed_sequence
from cardgame_core.jit import njit, parallel

#: ``actions[i] == NO_ACTION`` leaves game ``i`` untouched in this step.
NO_ACTION = -1

#: A batch of at least this many games steps on Numba's threads (when more than one thread is
#: set, see ``VectorCardEnv``'s ``threads``); a smaller one stays serial, where starting and
#: joining the threads would cost more than they save (benchmarks/README.md has the figures).
PARALLEL_MIN_GAMES = 256

_PARALLEL_LAUNCH = threading.Lock()


@njit
def first_bad_action(actions, masks):
    """Index of the first game whose action is neither ``NO_ACTION`` nor legal in its mask, or -1
    (one compiled pass: the fast check of a batch of actions; the caller explains the error)."""
    n_actions = masks.shape[1]
    for game in range(actions.shape[0]):
        action = actions[game]
        if action == NO_ACTION:
            continue
        if action < 0 or action >= n_actions or not masks[game, action]:
            return game
    return -1


class VectorStep(NamedTuple):
    """What one batched ``reset``/``step`` returns (``N`` = number of games)."""

    #: ``[N, obs_dim]``: each game's observation for the seat to act (the new game's after a reset).
    observation: np.ndarray
    #: ``[N, n_actions]`` bool: legal actions of the seat to act.
    action_mask: np.ndarray
    #: ``[N]`` int64: the seat to act in each game.
    to_act: np.ndarray
    #: ``[N, n_players]`` float32: rewards of this call for every seat, terminal ones included.
    rewards: np.ndarray
    #: ``[N]`` bool: the game ended by the rules in this call (and was reset).
    terminated: np.ndarray
    #: ``[N]`` bool: the game was cut short in this call (and was reset).
    truncated: np.ndarray
    #: ``[N, n_players]`` float32: the whole episode's payoffs of a game that ended in this call.
    final_payoffs: np.ndarray
    #: ``[N, n_players, obs_dim]``: every seat's last observation of a game that ended in this call.
    final_observation: np.ndarray


class VectorCardEnv(abc.ABC):
    """N independent games of one card game behind a checked, array-in/array-out API.

    Subclasses set the class attributes and implement the hooks; everything the caller touches
    (argument checks, seeding, buffer handling) lives here once for both games.
    """

    #: Seats per game.
    n_players: int
    #: Size of the discrete action space.
    n_actions: int
    #: Length of the observation vector.
    obs_dim: int
    #: dtype of the observation vector (the AEC env's, so both produce identical arrays).
    observation_dtype: np.dtype
    #: Length of ``privileged_observation``'s vectors (None: the game offers none).
    privileged_dim: int | None = None

    def __init__(
        self, n_envs: int, seed: int | None = None, *, copy: bool = True, threads: int | None = None
    ) -> None:
        """Args:
        n_envs: number of games.
        seed: seeds the first ``reset()`` (``None``: OS entropy).
        copy: ``True`` (default) returns fresh arrays from every call; ``False`` returns the env's
            own buffers, overwritten by the next call (the fast path).
        threads: Numba threads that step the games of a batch of at least
            ``PARALLEL_MIN_GAMES`` games (a smaller batch is always stepped serially). ``None``
            (default): Numba's thread count of the calling thread (``NUMBA_NUM_THREADS``, all
            cores unless set, or ``numba.set_num_threads``); ``1``: serial; at most
            ``NUMBA_NUM_THREADS``. Every thread count gives the same results, bit for bit.
        """
        if isinstance(n_envs, bool) or not isinstance(n_envs, (int, np.integer)) or n_envs < 1:
            raise ValueError(f"n_envs must be a positive integer, got {n_envs!r}")
        if not isinstance(copy, bool):
            raise TypeError(f"copy must be a bool, got {type(copy).__name__} {copy!r}")
        self.n_envs = int(n_envs)
        self.copy = copy
        self.threads = _checked_threads(threads)
        self._rng = seed_sequence(seed)
        self._has_reset = False
        n, p = self.n_envs, self.n_players
        self._observation = np.zeros((n, self.obs_dim), dtype=self.observation_dtype)
        self._action_mask = np.zeros((n, self.n_actions), dtype=np.bool_)
        self._to_act = np.zeros(n, dtype=np.int64)
        self._rewards = np.zeros((n, p), dtype=np.float32)
        self._terminated = np.zeros(n, dtype=np.bool_)
        self._truncated = np.zeros(n, dtype=np.bool_)
        self._final_payoffs = np.zeros((n, p), dtype=np.float32)
        self._final_observation = np.zeros((n, p, self.obs_dim), dtype=self.observation_dtype)
        self._rows = np.arange(n)
        #: The game seeds of the last ``reset`` (uint64 ``[N]``): game ``i``'s first episode is the
        #: AEC env's ``reset(seed=int(game_seeds[i]))``.
        self.game_seeds = np.zeros(n, dtype=np.uint64)
        self._link_views()

    @classmethod
    def _make_options(cls, options_class: type, env_kwargs: dict[str, Any]) -> Any:
        """The game's options object from the AEC env's keyword options (the same checks and
        messages); a vector env has no ``render_mode`` (render a game through the AEC env)."""
        if "render_mode" in env_kwargs:
            raise TypeError(f"{cls.__name__} has no render_mode: render a game through the AEC env")
        return options_class(**env_kwargs)

    @property
    def parallel(self) -> bool:
        """Whether the batch kernels run on Numba's threads now (see ``threads``)."""
        if self.n_envs < PARALLEL_MIN_GAMES or self.threads == 1:
            return False
        _launch_threads()
        return (self.threads or numba.get_num_threads()) > 1

    def _run_parallel(self, kernel: Callable, *arguments: Any) -> Any:
        """``kernel``'s parallel variant (``cardgame_core.jit.parallel``) on ``arguments``, on
        ``threads`` threads; the calling thread's own Numba thread count is left as it was."""
        _launch_threads()
        # The kernels release the GIL, and Numba's work-queue layer aborts the process when two
        # threads enter it at once: one parallel launch at a time (each takes every thread anyway).
        with _PARALLEL_LAUNCH:
            if self.threads is None:
                return parallel(kernel)(*arguments)
            before = numba.get_num_threads()
            numba.set_num_threads(self.threads)
            try:
                return parallel(kernel)(*arguments)
            finally:
                numba.set_num_threads(before)

    def _check_game(self, game: Any, caller: str) -> int:
        """``game`` as an int index after the checks every per-game method makes."""
        if not self._has_reset:
            raise RuntimeError(f"call reset() before {caller}()")
        if isinstance(game, (bool, np.bool_)) or not isinstance(game, (int, np.integer)):
            raise TypeError(f"game must be an int, got {type(game).__name__} {game!r}")
        if not 0 <= game < self.n_envs:
            raise ValueError(f"game {game} is out of range 0..{self.n_envs - 1}")
        return int(game)

    def _link_views(self) -> None:
        # The kernels write masks as 0/1 bytes: an int8 view of the bool buffer costs no copy. A
        # view is tied to its base only in this process: copy.deepcopy and pickle copy it as a
        # separate array (the copy's kernels would then write masks nobody reads, and the checks
        # would judge actions by a frozen mask), so copies drop it and rebuild it on arrival.
        self._mask_bytes = self._action_mask.view(np.int8)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_mask_bytes", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._link_views()

    # -- hooks for the game packages ----------------------------------------------------------
    @abc.abstractmethod
    def _reset_games(self, game_seeds: np.ndarray) -> None:
        """Start a new episode in every game from ``game_seeds`` (uint64 ``[N]``); fill
        ``_observation``, ``_action_mask`` and ``_to_act``."""

    @abc.abstractmethod
    def _step_games(self, actions: np.ndarray) -> None:
        """Apply checked ``actions`` (int64 ``[N]``, ``-1`` = skip) and fill every buffer, auto-
        resetting the games that ended."""

    @abc.abstractmethod
    def _observe_games(self, seats: np.ndarray, out: np.ndarray) -> None:
        """Write each game's observation from ``seats[i]``'s point of view into ``out[i]``."""

    def describe_action(self, action: int) -> str:
        """Human-readable form of an action id, used in error messages."""
        return str(action)

    # -- public API ---------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> VectorStep:
        """Deal a new episode in every game; ``seed`` restarts the env's random stream."""
        if seed is not None:
            self._rng = seed_sequence(seed)
        game_seeds = self._rng.integers(0, np.iinfo(np.int64).max, size=self.n_envs, dtype=np.int64)
        return self._start_episodes(game_seeds, self._reset_games)

    def _start_episodes(self, game_seeds: np.ndarray, deal: Callable[[np.ndarray], None]) -> VectorStep:
        """A new episode in every game: ``deal(game_seeds)`` deals them (``_reset_games``, or a
        game's own dealing of given hands), inside the bookkeeping every reset shares."""
        self._rewards[:] = 0
        self._terminated[:] = False
        self._truncated[:] = False
        self.game_seeds = np.asarray(game_seeds).astype(np.uint64)
        deal(self.game_seeds.copy())
        self._has_reset = True
        return self._output()

    def step(self, actions: np.ndarray) -> VectorStep:
        """One action per game (``-1`` leaves a game untouched); finished games auto-reset.

        ``actions`` is a numpy array of shape ``[N]`` and any integer dtype; every value means
        exactly that action id. Values are range-checked in the given dtype before any cast, so
        nothing wraps (a uint64 ``2**64 - 1`` is out of range, not a skip). Any other dtype (bool,
        float, object) raises ``TypeError``, another shape ``ValueError``, a value out of range or
        outside the game's mask :class:`~cardgame_core.aec.IllegalActionError` naming the game and
        the action; a refused call changes no game.
        """
        if not self._has_reset:
            raise RuntimeError("call reset() before step()")
        checked = self._check_actions(actions)
        self._step_games(checked)
        return self._output()

    def observe(self, seats: np.ndarray) -> np.ndarray:
        """Each game's current observation as seen by ``seats[i]`` (``[N, obs_dim]``, a copy)."""
        seats = self._checked_seats(seats, "observe")
        out = np.zeros((self.n_envs, self.obs_dim), dtype=self.observation_dtype)
        self._observe_games(seats, out)
        return out

    def privileged_observation(self, seats: np.ndarray) -> np.ndarray:
        """What a critic may read during training besides ``seats[i]``'s observation: each game's
        hidden state (every hand, ...) as a float32 vector ``[N, privileged_dim]`` laid out as the
        game's ``privileged`` module documents it, seats relative to ``seats[i]`` (a copy). For a
        value network only: no agent that plays may be handed it."""
        seats = self._checked_seats(seats, "privileged_observation")
        if self.privileged_dim is None:
            raise NotImplementedError(f"{type(self).__name__} offers no privileged observation")
        return self._privileged_games(seats)

    def _privileged_games(self, seats: np.ndarray) -> np.ndarray:
        """Hook of :meth:`privileged_observation` for a game that offers one (``privileged_dim``)."""
        raise NotImplementedError

    def _checked_seats(self, seats: np.ndarray, caller: str) -> np.ndarray:
        """``seats`` (one per game) as int64, after the checks every per-seat method makes."""
        if not self._has_reset:
            raise RuntimeError(f"call reset() before {caller}()")
        seats = np.asarray(seats)
        if seats.shape != (self.n_envs,) or seats.dtype.kind not in "iu":
            raise ValueError(
                f"seats must be an integer array of shape ({self.n_envs},), got dtype {seats.dtype} "
                f"shape {seats.shape}"
            )
        bad = np.flatnonzero((seats < 0) | (seats >= self.n_players))
        if bad.size:
            raise ValueError(
                f"seat {int(seats[bad[0]])} of game {int(bad[0])} is out of range 0..{self.n_players - 1}"
            )
        return seats.astype(np.int64)

    def close(self) -> None:  # noqa: B027 (an optional hook: nothing to release by default)
        """Nothing to release (kept for the gymnasium/SB3 call shape)."""

    # -- helpers ------------------------------------------------------------------------------
    def _check_actions(self, actions: np.ndarray) -> np.ndarray:
        # One Numba pass accepts the usual case (an int64 array of legal or skipped actions); anything
        # else goes through the numpy checks below, which raise the explaining errors.
        if (
            isinstance(actions, np.ndarray)
            and actions.dtype == np.int64
            and actions.shape == (self.n_envs,)
            and actions.flags.c_contiguous
            and first_bad_action(actions, self._action_mask) < 0
        ):
            return actions
        if not isinstance(actions, np.ndarray):
            raise TypeError(
                f"actions must be a numpy array of shape ({self.n_envs},), got {type(actions).__name__}"
            )
        if actions.dtype.kind not in "iu":
            raise TypeError(f"actions must have an integer dtype, got {actions.dtype}")
        if actions.shape != (self.n_envs,):
            raise ValueError(f"actions must have shape ({self.n_envs},), got {actions.shape}")
        # The range is checked in the caller's dtype, before any cast: a uint64 of 2**64 - 1 cast to
        # int64 would become -1 ("skip this game"), and an unsigned array cannot mean a skip at all.
        too_low = False if actions.dtype.kind == "u" else actions < NO_ACTION
        out_of_range = np.flatnonzero(too_low | (actions >= self.n_actions))
        if out_of_range.size:
            game = int(out_of_range[0])
            raise IllegalActionError(
                f"game {game}: action {int(actions[game])} is out of range "
                f"(0..{self.n_actions - 1}, or {NO_ACTION} to skip the game)"
            )
        # Native byte order and contiguous: the layout the compiled kernels were built for.
        actions = np.ascontiguousarray(actions, dtype=np.int64)
        acting = actions >= 0
        legal = self._action_mask[self._rows, np.where(acting, actions, 0)]
        illegal = np.flatnonzero(acting & ~legal)
        if illegal.size:
            game = int(illegal[0])
            action = int(actions[game])
            allowed = ", ".join(
                f"{a} ({self.describe_action(int(a))})" for a in np.flatnonzero(self._action_mask[game])
            )
            raise IllegalActionError(
                f"game {game}: action {action} ({self.describe_action(action)}) is not legal for seat "
                f"{int(self._to_act[game])}; legal actions: {allowed}"
            )
        return actions

    def _output(self) -> VectorStep:
        buffers = (
            self._observation,
            self._action_mask,
            self._to_act,
            self._rewards,
            self._terminated,
            self._truncated,
            self._final_payoffs,
            self._final_observation,
        )
        if self.copy:
            buffers = tuple(b.copy() for b in buffers)
        return VectorStep(*buffers)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_envs={self.n_envs})"


def _checked_threads(threads: Any) -> int | None:
    if threads is None:
        return None
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer)):
        raise TypeError(f"threads must be a positive int or None, got {type(threads).__name__} {threads!r}")
    if not 1 <= threads <= numba.config.NUMBA_NUM_THREADS:
        raise ValueError(
            f"threads must be in 1..{numba.config.NUMBA_NUM_THREADS} (NUMBA_NUM_THREADS), got {threads}"
        )
    return int(threads)


def _openmp_already_loaded() -> bool:
    """Whether this process has loaded an OpenMP runtime already (torch does, when imported)."""
    try:
        with open("/proc/self/maps") as maps:
            mapped = maps.read()
    except OSError:  # not Linux: torch is the OpenMP user this project knows of
        return "torch" in sys.modules
    return any(runtime in mapped for runtime in ("libgomp", "libomp", "libiomp"))


#: The TBB runtime Numba's TBB layer links by name on Linux (``numba.np.ufunc.tbbpool``).
TBB_LIBRARY = "libtbb.so.12"


def _tbb_loadable() -> bool:
    """Whether Numba's TBB layer can load its runtime. The ``tbb`` wheel (a dependency of this
    project on x86-64 Linux) installs the library beside the environment's packages (a venv's
    ``lib`` folder, ``~/.local/lib``, ``/usr/local/lib``), where the dynamic loader does not always
    look; it is then loaded by the path the wheel's record gives, and Numba's layer finds it loaded
    under its name."""
    if not sys.platform.startswith("linux"):
        return False  # other systems: Numba's own search, through NUMBA_THREADING_LAYER
    for library in (TBB_LIBRARY, *_installed_tbb_libraries()):
        try:
            ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        return True
    return False


def _installed_tbb_libraries() -> list[str]:
    """The paths of the TBB runtime that the installed ``tbb`` distribution lists (none without it)."""
    try:
        files = importlib.metadata.files("tbb") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    return [str(file.locate()) for file in files if file.name == TBB_LIBRARY]


def choose_threading_layer(*, tbb_loadable: bool, openmp_loaded: bool) -> str | None:
    """The Numba threading layer the batched envs start when the user chose none: TBB where it
    loads, which is safe beside other runtimes and threads; else Numba's own work queue in a
    process that has loaded an OpenMP runtime already; else None, Numba's default (OpenMP, started
    passive by ``_launch_threads``). Why, with the measurements: ``_launch_threads``."""
    if tbb_loadable:
        return "tbb"
    if openmp_loaded:
        return "workqueue"
    return None


@functools.cache
def _launch_threads() -> None:
    """Start Numba's threads, on a threading layer that leaves other libraries' threads alone.

    Numba prefers its TBB layer, then OpenMP, then its own work queue. Its OpenMP layer links
    ``libgomp.so.1`` by name: in a process that has loaded an OpenMP runtime already (torch's, on
    import) it shares that runtime. Its first parallel loop then set torch's thread count to
    Numba's (a run asking for one torch thread trained on two), and the shared runtime's idle
    workers spin, since its wait policy was read when it loaded; two training runs side by side
    on 2 cores fell to a quarter of their speed (docs/training.md). TBB keeps a pool of its own
    beside any OpenMP runtime, and Numba documents it as its one layer safe both across threads
    and across forks; stepping a batch on it ran 1.5 to 2 times as many games per second as the
    work queue beside torch, and as OpenMP without torch (benchmarks/README.md, "Numba's TBB
    layer"). Without TBB, a process that has loaded an OpenMP runtime gets the work queue, whose
    idle workers sleep and which keeps no state of torch's; otherwise OpenMP starts with the
    passive wait policy unless ``OMP_WAIT_POLICY`` is set: with the spinning default, on a
    machine whose cores are busy with other processes a batched step became 10 to 40 times
    slower than the serial one (benchmarks/README.md). OpenMP reads the policy once, when its
    library loads, so the variable is set only for that moment. A layer the user chose
    (``NUMBA_THREADING_LAYER``) is kept; the TBB runtime is loaded first whatever the choice, so
    that one naming TBB (``tbb``, ``safe``, ``threadsafe``) finds it too.
    """
    tbb_loadable = _tbb_loadable()
    if numba.config.THREADING_LAYER == "default":
        layer = choose_threading_layer(tbb_loadable=tbb_loadable, openmp_loaded=_openmp_already_loaded())
        if layer is not None:
            numba.config.THREADING_LAYER = layer
    if "OMP_WAIT_POLICY" in os.environ or numba.config.THREADING_LAYER in ("tbb", "workqueue"):
        numba.get_num_threads()
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        numba.get_num_threads()  # loads the threading layer and starts its threads
    finally:
        del os.environ["OMP_WAIT_POLICY"]
