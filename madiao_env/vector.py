"""Madiao as a batched env: N independent games stepped by one Numba call.

``MadiaoVectorEnv(n_envs, seed=None, *, copy=True, threads=None, **env_kwargs)`` obeys the contract of
:class:`cardgame_core.vector.VectorCardEnv` (``reset``, ``step(actions)`` with ``-1`` to skip a
game, ``observe(seats)``, auto-reset with ``final_payoffs``/``final_observation``). The rule and
observation options are the AEC env's (``obs_type``, ``episode``, ``stake``, ``max_redeals``,
``face_up_discard``), checked by the same code (:class:`madiao_env.options.MadiaoOptions`), and
the games run on the same kernels of :mod:`madiao_env.core`, observation encoder included: a
game and an AEC env in the same state produce the same observation, mask and rewards.

Seeding: ``reset(seed)`` draws one 63-bit *game seed* per game (``game_seeds``); game ``i``'s
first episode is then exactly the AEC env's ``reset(seed=game_seeds[i])`` deal. Later episodes
of a game (auto-reset) take their banker and deal from that game's own random stream, so a game's
future depends only on its own state and the actions it receives. ``reset_deals(decks, bankers,
seeds)`` deals given hands instead: game ``i`` is the AEC env's ``reset(seed=seeds[i],
options={"deck": decks[i], "banker": bankers[i]})`` (duplicate tournaments play this way).

Rewards (``[N, 4]`` float32, times ``stake``) are paid to every seat in the call that settles a
hand, like the AEC env's rewards of that step. With ``episode="hand"`` that is the call in which
the episode ends; with ``episode="match"`` every hand is paid as it is settled and
``final_payoffs`` is the sum over the match.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cardgame_core.jit import compiled_for
from cardgame_core.vector import VectorCardEnv, VectorStep
from madiao_env import cards, core, payments, privileged, state
from madiao_env.options import MadiaoOptions

# core.vector_step_games compiled for the vector env's argument types (the same for every env: its
# own buffers, and actions as int64 [N] from the base class's checks; the AEC env's too, so one
# compile serves both), made by the first step; see cardgame_core.jit.compiled_for.
_vector_step_games = None


class MadiaoVectorEnv(VectorCardEnv):
    """N Madiao games behind the batched contract (documentation: the module docstring).

    Args (``n_envs``, ``seed``, ``copy``, ``threads``: as :class:`cardgame_core.vector.VectorCardEnv`):
        **env_kwargs: the AEC env's options ``obs_type``, ``episode``, ``stake``, ``max_redeals``,
            ``face_up_discard`` (same defaults, same checks and error messages).
    """

    n_players = cards.N_SEATS
    n_actions = cards.N_ACTIONS
    observation_dtype = np.dtype(np.int8)
    privileged_dim = privileged.PRIVILEGED_SIZE

    def __init__(
        self,
        n_envs: int,
        seed: int | None = None,
        *,
        copy: bool = True,
        threads: int | None = None,
        **env_kwargs: Any,
    ) -> None:
        # The same options object as the AEC env's: same checks, same kernel config row.
        #: The validated rule and observation options (``madiao_env.options``).
        self.options = self._make_options(MadiaoOptions, env_kwargs)
        self.env_kwargs = self.options.as_kwargs()
        self.obs_type = self.options.obs_type
        self.episode = self.options.episode
        self.stake = self.options.stake
        self._config = self.options.config_row()
        self.obs_dim = self.options.obs_size
        super().__init__(n_envs, seed, copy=copy, threads=threads)
        #: The games' arrays (``madiao_env.state.MadiaoState``), written in place by the kernels.
        self._state = state.new_state(self.n_envs)
        # Settled stakes of the running episode by seat (integer units; final_payoffs = this x stake).
        self._episode_stakes = np.zeros((self.n_envs, self.n_players), dtype=np.int64)
        # The kernels write the masks through ``self._mask_bytes`` (set up by the base class, which
        # rebuilds it in copies and unpickled envs).
        self._no_decks = np.full((self.n_envs, cards.N_CARDS), -1, dtype=np.int8)
        self._no_firsts = np.full(self.n_envs, -1, dtype=np.int64)

    # -- hooks ---------------------------------------------------------------------------------
    def _reset_games(self, game_seeds: np.ndarray) -> None:
        bankers, rng_seeds = _aec_reset_draws(game_seeds, draw_banker=True)
        self._deal(rng_seeds, bankers, self._no_decks)

    def _deal(self, rng_seeds: np.ndarray, bankers: np.ndarray, decks: np.ndarray) -> None:
        arguments = (
            self._state,
            self._config,
            rng_seeds,
            bankers,
            decks,
            self._no_firsts,
            self._observation,
            self._mask_bytes,
        )
        if self.parallel:
            self._run_parallel(core.reset_games, *arguments)
        else:
            core.reset_games(*arguments)
        self._check_overflow()
        self._to_act[:] = state.seats_to_act(self._state)
        self._episode_stakes[:] = 0

    def _step_games(self, actions: np.ndarray) -> None:
        global _vector_step_games
        arguments = (
            self._state,
            self._config,
            actions,
            True,  # auto-reset
            self._episode_stakes,
            self._observation,
            self._mask_bytes,
            self._to_act,
            self._rewards,
            self._terminated,
            self._final_payoffs,
            self._final_observation,
        )
        if self.parallel:
            overflowed = self._run_parallel(core.vector_step_games, *arguments)
        else:
            if _vector_step_games is None:
                _vector_step_games = compiled_for(core.vector_step_games, *arguments)
            overflowed = _vector_step_games(*arguments)
        if overflowed >= 0:
            self._check_overflow()
        # The kernel counts whole stakes; the option is applied here (times 1 changes nothing).
        if self.stake != 1.0:
            self._rewards[:] = payments.stakes_to_rewards(self._rewards.astype(np.float64), self.stake)
            ended = np.flatnonzero(self._terminated)
            if ended.size:
                self._final_payoffs[ended] = payments.stakes_to_rewards(
                    self._final_payoffs[ended].astype(np.float64), self.stake
                )

    def _observe_games(self, seats: np.ndarray, out: np.ndarray) -> None:
        masks = np.empty((self.n_envs, self.n_actions), dtype=np.int8)
        arguments = (self._state, self._config, seats, out, masks)
        if self.parallel:
            self._run_parallel(core.observe_games, *arguments)
        else:
            core.observe_games(*arguments)

    # -- extras --------------------------------------------------------------------------------
    def reset_deals(self, decks: np.ndarray, bankers: np.ndarray, seeds: np.ndarray) -> VectorStep:
        """Deal given hands: game ``i``'s episode is exactly the AEC env's ``reset(seed=seeds[i],
        options={"deck": decks[i], "banker": bankers[i]})`` (a duplicate deal; the seed fixes its
        redeals). ``decks``: card ids ``[N, 40]``, each row a permutation of 0..39, top to bottom;
        ``bankers``: seats ``[N]``; ``seeds``: integers ``[N]`` in 0..2**63-1. Bad arguments raise
        a ValueError naming the first bad game, before any game changes."""
        n = self.n_envs
        decks = np.asarray(decks)
        bankers = np.asarray(bankers)
        seeds = np.asarray(seeds)
        for name, array, shape in (
            ("decks", decks, (n, cards.N_CARDS)),
            ("bankers", bankers, (n,)),
            ("seeds", seeds, (n,)),
        ):
            if array.shape != shape or array.dtype.kind not in "iu":
                raise ValueError(
                    f"{name} must be an integer array of shape {shape}, got dtype {array.dtype} "
                    f"shape {array.shape}"
                )
        not_permutation = np.flatnonzero((np.sort(decks, axis=1) != np.arange(cards.N_CARDS)).any(axis=1))
        if not_permutation.size:
            raise ValueError(
                f"deck of game {int(not_permutation[0])} is not a permutation of the 40 card ids"
            )
        bad_banker = np.flatnonzero((bankers < 0) | (bankers >= cards.N_SEATS))
        if bad_banker.size:
            game = int(bad_banker[0])
            raise ValueError(f"banker {int(bankers[game])} of game {game} is out of range 0..3")
        bad_seed = np.flatnonzero((seeds < 0) | (seeds > np.iinfo(np.int64).max))
        if bad_seed.size:
            game = int(bad_seed[0])
            raise ValueError(f"seed {int(seeds[game])} of game {game} is out of range 0..2**63-1")
        _, rng_seeds = _aec_reset_draws(seeds, draw_banker=False)
        bankers = bankers.astype(np.int64)
        decks = np.ascontiguousarray(decks, dtype=np.int8)
        return self._start_episodes(seeds, lambda _: self._deal(rng_seeds, bankers, decks))

    def _privileged_games(self, seats: np.ndarray) -> np.ndarray:
        return privileged.privileged_observation(self._state, seats)

    def banker(self) -> np.ndarray:
        """Each game's banker seat (``[N]``, a copy)."""
        return state.bankers(self._state).copy()

    def hands(self) -> np.ndarray:
        """Each game's hands by seat as card bitmasks (``[N, 4]`` uint64, bit k = card id k; a copy)."""
        return state.hands(self._state).copy()

    def describe_action(self, action: int) -> str:
        return cards.action_to_text(action)

    def get_game_state(self, game: int) -> dict[str, Any]:
        """Game ``game`` as an AEC ``get_state()`` snapshot (for ``env.unwrapped.set_state`` or
        :func:`madiao_env.rollout.random_playouts`); no settlement yet and no past rewards."""
        game = self._check_game(game, "get_game_state")
        agents = list(state.AGENTS)
        return {
            "version": state.STATE_VERSION,
            "config": self._config.copy(),
            "stake": self.stake,
            "arrays": state.game_arrays(self._state, game),
            "rng": None,
            "agents": agents,
            "agent_selection": agents[int(self._to_act[game])],
            "rewards": dict.fromkeys(agents, 0.0),
            "cumulative_rewards": dict.fromkeys(agents, 0.0),
            "terminations": dict.fromkeys(agents, False),
            "truncations": dict.fromkeys(agents, False),
            "infos": {agent: state.settlement_info(-1, [0.0] * cards.N_SEATS) for agent in agents},
            "rewards_pending_zero": False,
            "last_settlement": None,
        }

    def set_game_state(self, game: int, snapshot: dict[str, Any]) -> None:
        """Put an AEC ``get_state()`` snapshot (or one of :meth:`get_game_state`) of a hand in
        progress, taken with the same rule options and stake, into game ``game``, and refresh its
        observation, mask and seat to act; its episode payoffs restart at zero, and its later
        hands (``episode="match"``) draw from the snapshot's own random stream. For searched
        positions and hand-set tables. The snapshot is checked completely first
        (:func:`madiao_env.state.validate_snapshot`): a bad game index or snapshot raises
        ``ValueError`` (``TypeError`` for a non-int index) and changes nothing."""
        game = self._check_game(game, "set_game_state")
        arrays = state.validate_snapshot(snapshot, self._config, self.stake)["arrays"]
        self._load_game(game, arrays, "snapshot field arrays")

    def copy_game_from(self, source: MadiaoVectorEnv, source_game: int, game: int) -> None:
        """Make game ``game`` a copy of game ``source_game`` of another batched env with the same
        rule options, observation and stake (as :meth:`set_game_state` with that game's
        :meth:`get_game_state`, without the snapshot's dict and checks: the other env's kernels
        made its state). A search moves the deals it replayed into its play-out table this way.
        Another kind of env, other options, a bad index or a finished game raise ``ValueError``
        (``TypeError`` for a non-int index) and change nothing."""
        if not isinstance(source, MadiaoVectorEnv):
            raise ValueError(
                f"copy_game_from: the source must be a MadiaoVectorEnv, not {type(source).__name__}"
            )
        if not np.array_equal(source._config, self._config) or source.stake != self.stake:
            raise ValueError(
                f"copy_game_from: the source env has other options ({source!r}) than this one ({self!r})"
            )
        source_game = source._check_game(source_game, "copy_game_from")
        game = self._check_game(game, "copy_game_from")
        self._load_game(game, state.game_arrays(source._state, source_game), f"source game {source_game}")

    def _load_game(self, game: int, arrays: list[np.ndarray], what: str) -> None:
        """Write a hand in progress (a snapshot's ``arrays``, already checked) into game ``game``
        with its observation, mask and seat to act; ``what`` names the arrays in the error."""
        restored = state.MadiaoState(*arrays)
        to_act = state.GameView(restored).to_act
        if to_act < 0:
            raise ValueError(f"{what}: the episode is over; a game of the batched env is always in progress")
        # The observation and mask are made from the checked copy: nothing is written before here.
        observation = np.empty((1, self.obs_dim), dtype=self.observation_dtype)
        mask = np.empty((1, self.n_actions), dtype=np.int8)
        core.observe_games(restored, self._config, np.array([to_act], dtype=np.int64), observation, mask)
        state.write_game(self._state, game, arrays)
        self._observation[game] = observation[0]
        self._mask_bytes[game] = mask[0]
        self._to_act[game] = to_act
        self._episode_stakes[game] = 0

    def copy_game(self, source: int, targets: Sequence[int]) -> None:
        """Make each game of ``targets`` a copy of game ``source`` as it is now (its state,
        observation, mask and seat to act; episode payoffs restart at zero, as with
        :meth:`set_game_state`): one searched position played out many ways without checking its
        snapshot again. Every index is checked first: a bad one raises and changes nothing."""
        source = self._check_game(source, "copy_game")
        targets = [self._check_game(target, "copy_game") for target in targets]
        arrays = state.game_arrays(self._state, source)
        for target in targets:
            state.write_game(self._state, target, arrays)
            self._observation[target] = self._observation[source]
            self._mask_bytes[target] = self._mask_bytes[source]
            self._to_act[target] = self._to_act[source]
            self._episode_stakes[target] = 0

    def _check_overflow(self) -> None:
        overflowed = state.overflowed_games(self._state)
        if overflowed.size:
            raise RuntimeError(
                f"game {int(overflowed[0])}: Madiao settlement line buffer overflowed "
                "(more lines than the kernel holds)"
            )

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in self.env_kwargs.items())
        return f"MadiaoVectorEnv(n_envs={self.n_envs}, {options})"


def _aec_reset_draws(game_seeds: np.ndarray, *, draw_banker: bool) -> tuple[np.ndarray, np.ndarray]:
    """What the AEC env's ``reset(seed=s)`` draws from ``s``, in its order, for every game seed:
    the banker (only when none is given; else -1) and then the seed of the game's random stream."""
    bankers = np.full(len(game_seeds), -1, dtype=np.int64)
    rng_seeds = np.empty(len(game_seeds), dtype=np.uint64)
    for game, game_seed in enumerate(np.asarray(game_seeds).tolist()):
        generator = np.random.default_rng(int(game_seed))
        if draw_banker:
            bankers[game] = generator.integers(cards.N_SEATS)
        rng_seeds[game] = generator.integers(1, 2**63, dtype=np.uint64)
    return bankers, rng_seeds
