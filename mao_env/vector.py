"""Mao as a batched env: N independent games stepped by one Numba call.

``MaoVectorEnv(n_envs, seed=None, *, copy=True, threads=None, rules=(), fixed_rules=(), rule_pool=(),
pool_draws=1, **env_kwargs)`` obeys the
contract of :class:`cardgame_core.vector.VectorCardEnv` (``reset``, ``step(actions)`` with ``-1``
to skip a game, ``observe(seats)``, auto-reset with ``final_payoffs``/``final_observation``).
``env_kwargs`` are the AEC env's options (``n_players``, ``num_rounds``, ``max_steps``, ``mask``,
``reasons``, ``rule_choice``, ``rounds``, ``seven_turn_ends``, ``seven_phrase``, ``talking``,
``max_sub_actions``, ``n_events``, ``obs_type``, ``win_reward``, ``penalty_card_reward``), checked
by the same code with the same messages (:class:`mao_env.options.MaoOptions`, kept as
``venv.options``; no AEC env is built), and the games run on the same kernels of
:mod:`mao_env.core`, observation encoder included: a game and an AEC env in the same state produce
the same observation, mask and rewards.

Two options belong to the batched env only, because the AEC env takes them per ``reset``
(``options``): ``rules`` (library ids, or ``(rule id, author seat)`` pairs, active from the start of
every episode) and ``fixed_rules`` (the queue of rules the round winners add with
``rule_choice="fixed"``). A third is for training on many rules at once: ``rule_pool`` (library
ids) with ``pool_draws`` (default 1): every episode of every game starts with ``pool_draws``
distinct rules of the pool (not already among ``rules``) active, drawn uniformly and authored by
nobody, so a learner meets a different secret rule in each episode and no rule outside the pool
(hold rules out of training this way). With both ``rules`` and ``rule_pool`` every episode has
the ``rules`` and ``pool_draws`` more drawn from the pool minus ``rules``; a pool that leaves
fewer than ``pool_draws`` rules to draw, or more than 32 rules in all, is refused (``ValueError``).
:meth:`MaoVectorEnv.game_rules` tells which rules a game has.

Seeding: ``reset(seed)`` draws one game seed per game (``game_seeds``); game ``i``'s first episode
is then exactly the AEC env's ``reset(seed=int(game_seeds[i]), options={"rules": rules,
"fixed_rules": fixed_rules})`` (with ``rule_pool``: plus the rules drawn for it, which come from
a stream of their own, so the deal and the game's later draws are unchanged). Later episodes of
a game (auto-reset) are seeded from that game's own random stream, so a game's future depends only
on its own state and the actions it receives;
:meth:`MaoVectorEnv.get_game_state` hands any game to an AEC env's ``set_state``.

Rewards (``[N, n_players]`` float32) are the AEC env's rewards of the same step for every seat:
``win_reward`` to the round winner and ``penalty_card_reward`` per penalty card, whoever moved.
``final_payoffs`` is the sum over the episode that ended.

With ``copy=False`` the observations returned are the env's own buffer: read them, do not write
into them. The step rewrites a row's event block (most of the row) only when the events or the
observing seat changed since the last step, so a value written there by the caller would stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from cardgame_core.jit import compiled_for
from cardgame_core.vector import VectorCardEnv
from mao_env import cards, core, privileged
from mao_env import rules as rule_library
from mao_env import state as snapshots
from mao_env.options import MaoOptions, starting_rules
from mao_env.state import STATE_KEYS

# core.vector_step compiled for the vector env's argument types (the same for every env: its own
# buffers, actions as int64 [N] from the base class's checks), made by the first step; see
# cardgame_core.jit.compiled_for.
_vector_step = None


class VectorSettings(NamedTuple):
    """What the batch kernels need of the vector env's options (one per env, never written)."""

    #: int64 [3, 32]: the rules active at every episode's start, their authors, the fixed queue.
    start_rules: np.ndarray
    #: int64 [P]: library ids drawn from at every episode's start (may be empty).
    rule_pool: np.ndarray
    #: rules drawn from ``rule_pool`` per episode (0 without a pool).
    pool_draws: int
    #: masks by the full rule set (``mask="rules"``) rather than physical ones.
    by_rules: bool
    max_steps: int
    #: events shown in an observation and the reasons mode (``MaoOptions.reasons_code``).
    n_events: int
    reasons: int
    win_reward: float
    penalty_card_reward: float


class VectorBuffers(NamedTuple):
    """The vector env's output buffers the batch kernels write (``cardgame_core.vector``'s, plus
    the running episode payoffs and the observation cache key)."""

    episode_payoffs: np.ndarray  # float64 [N, n_players]
    observation: np.ndarray  # float32 [N, obs_dim]
    mask: np.ndarray  # int8 [N, n_actions]: a view of the bool action mask
    to_act: np.ndarray  # int64 [N]
    rewards: np.ndarray  # float32 [N, n_players]
    terminated: np.ndarray  # bool [N]
    truncated: np.ndarray  # bool [N]
    final_payoffs: np.ndarray  # float32 [N, n_players]
    final_observation: np.ndarray  # float32 [N, n_players, obs_dim]
    #: int64 [N]: which events each observation row's event block shows (-1: none).
    events_key: np.ndarray


class MaoVectorEnv(VectorCardEnv):
    """N Mao games behind the batched contract (documentation: the module docstring).

    Args (``n_envs``, ``seed``, ``copy``, ``threads``: as :class:`cardgame_core.vector.VectorCardEnv`):
        rules: secret rules active at the start of every episode (library ids or ``(id, author)``).
        fixed_rules: the rule queue of ``rule_choice="fixed"``.
        rule_pool: library ids; each episode starts with ``pool_draws`` of them active (drawn).
        pool_draws: rules drawn from ``rule_pool`` per episode (ignored without a pool).
        **env_kwargs: the AEC env's options (same defaults, same checks and error messages:
            :class:`mao_env.options.MaoOptions`).
    """

    n_actions = cards.n_actions(rule_library.N_RULES)
    observation_dtype = np.dtype(np.float32)

    def __init__(
        self,
        n_envs: int,
        seed: int | None = None,
        *,
        copy: bool = True,
        threads: int | None = None,
        rules: Sequence[int | tuple[int, int]] = (),
        fixed_rules: Sequence[int] = (),
        rule_pool: Sequence[int] = (),
        pool_draws: int = 1,
        **env_kwargs: Any,
    ) -> None:
        # The options object checks the options with the AEC env's own code and messages, and
        # makes the kernels' config rows and the starting rules: no AEC env is built.
        options = self._make_options(MaoOptions, env_kwargs)
        self.options = options
        self.env_kwargs = dict(env_kwargs)
        self.n_players = options.n_players
        self.n_decks = options.n_decks
        self.obs_dim = options.obs_dim
        self.privileged_dim = privileged.privileged_size(options.n_players)
        self.max_steps = options.max_steps
        self.n_events = options.n_events
        self.win_reward = options.win_reward
        self.penalty_card_reward = options.penalty_card_reward
        self._reasons = options.reasons_code
        start_rules = starting_rules(options, rules, fixed_rules)
        self.rules = tuple(rules) if rules else ()
        self.fixed_rules = tuple(fixed_rules) if fixed_rules else ()
        self.rule_pool, self.pool_draws = _check_rule_pool(rule_pool, pool_draws, self.rules)
        # Python scalars of fixed types: the compiled step is built for these types once.
        self._settings = VectorSettings(
            start_rules=start_rules,
            rule_pool=np.array(self.rule_pool, dtype=np.int64),
            pool_draws=int(self.pool_draws) if self.rule_pool else 0,
            by_rules=bool(options.by_rules),
            max_steps=int(self.max_steps),
            n_events=int(self.n_events),
            reasons=int(self._reasons),
            win_reward=float(self.win_reward),
            penalty_card_reward=float(self.penalty_card_reward),
        )
        super().__init__(n_envs, seed, copy=copy, threads=threads)
        #: The games' arrays (``mao_env.state.MaoState``), written in place by the kernels.
        self._state = snapshots.new_state(self.n_envs)
        options.write_config(self._state.scalars)
        self._episode_payoffs = np.zeros((self.n_envs, self.n_players), dtype=np.float64)
        # Which events each observation row's event block shows (-1: none). The block is most of a
        # row and changes only at the end of a turn or a change of seat, so the step kernel skips
        # it otherwise; hence the rule that only the kernels write ``self._observation``.
        self._events_key = np.full(self.n_envs, -1, dtype=np.int64)
        self._link_views()

    # -- hooks ---------------------------------------------------------------------------------
    def _reset_games(self, game_seeds: np.ndarray) -> None:
        # The AEC env's reset(seed=s) deals from the first draw of default_rng(s): the same here.
        deal_seeds = np.array(
            [np.random.default_rng(s).integers(0, 2**63 - 1) for s in game_seeds.tolist()], dtype=np.uint64
        )
        self.options.write_config(self._state.scalars)
        self._episode_payoffs[:] = 0
        arguments = (self._state, rule_library.LIBRARY, deal_seeds, self._settings, self._buffers)
        if self.parallel:
            self._run_parallel(core.vector_reset, *arguments)
        else:
            core.vector_reset(*arguments)

    def _step_games(self, actions: np.ndarray) -> None:
        global _vector_step
        arguments = (self._state, rule_library.LIBRARY, actions, self._settings, self._buffers)
        if self.parallel:
            self._run_parallel(core.vector_step, *arguments)
            return
        if _vector_step is None:
            _vector_step = compiled_for(core.vector_step, *arguments)
        _vector_step(*arguments)

    def _observe_games(self, seats: np.ndarray, out: np.ndarray) -> None:
        arguments = (self._state, rule_library.LIBRARY, seats, self.n_events, self._reasons, out)
        if self.parallel:
            self._run_parallel(core.observe_games, *arguments)
        else:
            core.observe_games(*arguments)

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.pop("_buffers", None)  # holds the mask view: rebuilt on arrival by _link_views
        return state

    def _link_views(self) -> None:
        # The base class rebuilds the int8 mask view in copies and unpickled envs; the buffer
        # tuple holds that view, so it is rebuilt with it (before __init__ ends: not yet).
        super()._link_views()
        if hasattr(self, "_events_key"):
            self._buffers = VectorBuffers(
                self._episode_payoffs, self._observation, self._mask_bytes, self._to_act, self._rewards,
                self._terminated, self._truncated, self._final_payoffs, self._final_observation,
                self._events_key,
            )  # fmt: skip

    # -- extras --------------------------------------------------------------------------------
    def describe_action(self, action: int) -> str:
        return cards.action_to_text(action, rule_library.N_RULES)

    def _privileged_games(self, seats: np.ndarray) -> np.ndarray:
        return privileged.privileged_observation(self._state, seats, self.n_players)

    def game_rules(self, game: int) -> list[tuple[int, int]]:
        """The secret rules active in game ``game`` as ``(rule id, author seat)`` pairs (author -1:
        nobody at the table), in slot order: ``reset(options={"rules": ...})`` of an AEC env."""
        game = self._check_game(game, "game_rules")
        return snapshots.GameView(self._state, game).active_rules()

    def get_game_state(self, game: int) -> dict[str, Any]:
        """Game ``game`` as an AEC ``get_state()`` snapshot, for ``set_state`` of an AEC env built
        with the same options (no past rewards, no calls)."""
        game = self._check_game(game, "get_game_state")
        row = slice(game, game + 1)
        agents = self.options.possible_agents
        # An AEC reset() without a seed after set_state draws from this generator.
        reset_rng = np.random.default_rng(int(self._state.rng[game])).bit_generator.state
        return {
            "version": snapshots.SNAPSHOT_VERSION,
            "options": self.options.game_options(),
            "arrays": {key: array[row].copy() for key, array in zip(STATE_KEYS, self._state, strict=True)},
            "agents": agents,
            "rewards": dict.fromkeys(agents, 0.0),
            "cumulative_rewards": dict.fromkeys(agents, 0.0),
            "terminations": dict.fromkeys(agents, False),
            "truncations": dict.fromkeys(agents, False),
            "infos": {agent: snapshots.calls_info(0, 0) for agent in agents},
            "reset_rng": reset_rng,
            "last_calls": [],
        }

    def set_game_state(self, game: int, state: dict[str, Any]) -> None:
        """Put an AEC ``get_state()`` snapshot (of an env with the same game options, see
        :mod:`mao_env.state`) of a game in progress into game ``game`` and refresh its
        observation, mask and seat to act; its episode payoffs restart at zero. For hand-set
        tables (AEC scenarios) and for continuing a searched position. The snapshot is checked
        completely first: a bad one raises ``ValueError`` naming the field and changes nothing."""
        game = self._check_game(game, "set_game_state")
        # Checked completely before anything is written: a rejected snapshot changes nothing.
        snapshot = snapshots.validate_snapshot(state, self.options.snapshot_target(), caller="set_game_state")
        game_view = snapshots.GameView(snapshot.arrays)
        if game_view.done or game_view.steps >= self.max_steps:
            raise ValueError(
                "snapshot field arrays['scalars']: the episode is over (terminated or truncated); "
                "a game of the batched env is always in progress"
            )
        for source, target in zip(snapshot.arrays, self._state, strict=True):
            target[game] = source[0]
        seat = game_view.current_seat
        self._to_act[game] = seat
        library, settings = rule_library.LIBRARY, self._settings
        core.action_mask(self._state, library, game, settings.by_rules, self._mask_bytes[game])
        observation = self._observation[game]
        core.observe(self._state, library, game, seat, settings.n_events, settings.reasons, observation)
        self._events_key[game] = -1  # another game's events now: the next step rewrites the block
        self._episode_payoffs[game] = 0.0

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in self.env_kwargs.items())
        return f"MaoVectorEnv(n_envs={self.n_envs}{', ' if options else ''}{options})"


def _check_rule_pool(
    rule_pool: Sequence[int], pool_draws: int, rules: Sequence[int | tuple[int, int]]
) -> tuple[tuple[int, ...], int]:
    if isinstance(rule_pool, (str, bytes)) or not isinstance(rule_pool, Sequence):
        raise TypeError(f"rule_pool must be a sequence of library rule ids, got {rule_pool!r}")
    pool = []
    for rule in rule_pool:
        if isinstance(rule, (bool, np.bool_)) or not isinstance(rule, (int, np.integer)):
            raise TypeError(f"rule_pool holds rule ids (int), got {rule!r}")
        if not 0 <= rule < rule_library.N_RULES:
            raise ValueError(f"rule_pool rule id {rule} is out of range 0..{rule_library.N_RULES - 1}")
        if int(rule) in pool:
            raise ValueError(f"rule_pool lists rule {int(rule)} twice")
        pool.append(int(rule))
    if isinstance(pool_draws, (bool, np.bool_)) or not isinstance(pool_draws, (int, np.integer)):
        raise TypeError(f"pool_draws must be an int, got {pool_draws!r}")
    if pool and not 1 <= pool_draws <= min(len(pool), rule_library.MAX_ACTIVE_RULES):
        raise ValueError(
            f"pool_draws must be in 1..{min(len(pool), rule_library.MAX_ACTIVE_RULES)} "
            f"for a pool of {len(pool)} rules, got {pool_draws}"
        )
    if pool:
        # The draws come from the pool minus ``rules`` and go into the free rule slots: refuse a
        # combination that could not draw ``pool_draws`` rules, rather than drop draws silently.
        fixed = {int(entry[0]) if isinstance(entry, (tuple, list)) else int(entry) for entry in rules}
        drawable = [rule for rule in pool if rule not in fixed]
        if len(drawable) < pool_draws:
            raise ValueError(
                f"rule_pool has {len(drawable)} rule(s) not already in rules, fewer than "
                f"pool_draws={int(pool_draws)}"
            )
        if len(fixed) + pool_draws > rule_library.MAX_ACTIVE_RULES:
            raise ValueError(
                f"rules ({len(fixed)}) and pool_draws ({int(pool_draws)}) make more than the "
                f"at most {rule_library.MAX_ACTIVE_RULES} active rules"
            )
    return tuple(pool), int(pool_draws)
