"""The SB3 ``VecEnv`` adapter of the card games: one learner seat per game, opponents inside.

It lives with the training code because it needs stable-baselines3 (the ``train`` extra); the
Gymnasium adapter of one AEC env, which needs only gymnasium, stays in
:mod:`cardgame_core.adapters` (which still re-exports ``LearnerVecEnv`` lazily, its old home).

Like :class:`~cardgame_core.adapters.SingleAgentCardEnv`, :class:`LearnerVecEnv` hands the learner
ITS OWN seat's reward, accumulated over everything that happened since its previous decision,
terminal rewards included when the game ended on another seat's move (PettingZoo issue 1147;
``tests/common/test_adapters.py`` checks this case explicitly). Opponents use the batched call
shape ``(observations[M, obs_dim], masks[M, n_actions]) -> actions[M]``; ``action_masks()`` serves
sb3-contrib's MaskablePPO.

Opponents with a memory per game (Mao's Bayesian player keeps a posterior per game seat) get the
rows of a call from different games at every call, so a batch index cannot be their key. An
opponent whose ``act_batch`` takes ``rows`` (:func:`takes_row_keys`) is handed, with every call,
the key of each row's game seat (``game * n_players + seat``); when a game ends, every opponent
with a ``reset_rows`` of its own (:func:`keeps_game_memory`) forgets that game's keys before the
next game's first move. An opponent that keeps a memory per game but takes no keys is refused.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from cardgame_core.adapters import check_learner_seat
from cardgame_core.aec import IllegalActionError
from cardgame_core.vector import NO_ACTION, VectorCardEnv

BatchOpponent = Callable[[np.ndarray, np.ndarray], np.ndarray]

OPPONENT_DRAWS = ("per_seat", "per_game")


def keeps_game_memory(agent: Any) -> bool:
    """Whether ``agent`` remembers each ``act_batch`` row's game: it has a ``reset_rows`` of its
    own (the base ``Agent.reset_rows`` is a no-op)."""
    from agents.base import Agent

    reset_rows = getattr(type(agent), "reset_rows", None)
    return callable(reset_rows) and reset_rows is not Agent.reset_rows


def refuse_memory_without_keys(agent: Any, label: str) -> None:
    """A ValueError naming ``label`` if ``agent`` keeps a memory per game but cannot be handed the
    game-seat key of each row (a table hands it rows of different games at every call)."""
    if keeps_game_memory(agent) and not takes_row_keys(agent):
        raise ValueError(
            f"{label} keeps a memory per game but its act_batch takes no rows= keys: it would mix the "
            "games of a table up"
        )


def takes_row_keys(agent: Any) -> bool:
    """Whether ``agent.act_batch`` accepts ``rows=`` (one game-seat key per observation)."""
    return _act_batch_takes_rows(type(agent))


@functools.cache
def _act_batch_takes_rows(agent_class: type) -> bool:
    # Per class, once: the opponent table asks at every call.
    act_batch = getattr(agent_class, "act_batch", None)
    if not callable(act_batch):
        return False
    try:
        return "rows" in inspect.signature(act_batch).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def _batch_call(agent: Any) -> BatchOpponent:
    """An agent object (with ``act_batch``) or a plain callable, as ``f(observations, masks) -> actions``."""
    act_batch = getattr(agent, "act_batch", None)
    if callable(act_batch):
        return act_batch
    if callable(agent):
        return agent
    raise TypeError(
        f"an opponent must have an act_batch(observations, masks) method or be callable, got {agent!r}"
    )


class LearnerVecEnv(VecEnv):
    """An SB3 ``VecEnv`` over a batched card game: one learner seat per game, opponents inside.

    Args:
        vector_env: the batched game env (its games auto-reset).
        opponents: one batched opponent, or a pool (sequence) of them; with a pool every opponent
            seat of every game draws one uniformly at the start of each game. A batched opponent
            has ``act_batch(observations, masks) -> actions`` or is such a callable.
        learner_seat: a fixed seat, or ``"rotate"`` (default): game ``i`` starts with seat
            ``i % n_players`` and moves on one seat per finished game, so the learner plays every
            role equally often.
        seed: seeds the vector env's first reset and the opponent draws.
        opponent_draw: ``"per_seat"`` (default): every opponent seat of a new game draws its own
            pool entry; ``"per_game"``: one entry is drawn per new game and plays all its opponent
            seats (a league: the game's learner return is then a result against exactly that
            entry, given as ``infos[i]["opponent_index"]`` when the game ends).
        opponent_sampler: ``sampler(rng, n) -> n pool indices``, how entries are drawn (called with
            this env's seeded generator; ``n`` is the number of draws); default uniform.

    Each ``step`` returns, per game, the learner seat's reward summed over everything since its
    previous decision. When a game ends, ``done`` is set, ``infos[i]["terminal_observation"]`` is
    the learner's last observation, ``infos[i]["episode"]`` holds the return/length for SB3's
    Monitor statistics, and the observation returned is the new game's (after the opponents moved
    up to the learner's first decision). Rewards that arrive in a new game before the learner's
    first decision are added to the learner's next reward in that game.
    """

    def __init__(
        self,
        vector_env: VectorCardEnv,
        opponents: Any | Sequence[Any],
        *,
        learner_seat: int | str = "rotate",
        seed: int | None = None,
        opponent_draw: str = "per_seat",
        opponent_sampler: Callable[[np.random.Generator, int], Any] | None = None,
    ) -> None:
        self.vector_env = vector_env
        self.n_players = int(vector_env.n_players)
        check_learner_seat(learner_seat, self.n_players)
        if opponent_draw not in OPPONENT_DRAWS:
            raise ValueError(
                f"opponent_draw must be one of {', '.join(OPPONENT_DRAWS)}, got {opponent_draw!r}"
            )
        if opponent_sampler is not None and not callable(opponent_sampler):
            raise TypeError(f"opponent_sampler must be callable as sampler(rng, n), got {opponent_sampler!r}")
        self.opponent_draw = opponent_draw
        self._opponent_sampler = opponent_sampler
        if isinstance(opponents, (list, tuple)):
            if not opponents:
                raise ValueError("the opponent pool is empty")
            entries = list(opponents)
        else:
            entries = [opponents]
        for number, entry in enumerate(entries):
            refuse_memory_without_keys(entry, f"opponent {number} ({entry!r:.60})")
        self._pool = [_batch_call(o) for o in entries]
        #: Pool entries handed the game-seat key of every row, and those told when games end.
        self._keyed = [takes_row_keys(o) for o in entries]
        self._remembering = [o for o in entries if keeps_game_memory(o)]
        n_envs = int(vector_env.n_envs)
        observation_space = gym.spaces.Box(-np.inf, np.inf, (int(vector_env.obs_dim),), np.float32)
        action_space = gym.spaces.Discrete(int(vector_env.n_actions))
        self.render_mode = None  # read by VecEnv.__init__; games are rendered through the AEC env
        super().__init__(n_envs, observation_space, action_space)
        self.learner_seat_option = learner_seat
        self._first_seed = seed
        self.rng = np.random.default_rng(seed)
        self._games = np.arange(n_envs)
        if learner_seat == "rotate":
            self.learner_seat = self._games % self.n_players
        else:
            self.learner_seat = np.full(n_envs, int(learner_seat), dtype=np.int64)
        self.opponent_index = self._draw_opponents(n_envs)
        self._pending_reward = np.zeros(n_envs, dtype=np.float64)
        self._episode_return = np.zeros(n_envs, dtype=np.float64)
        self._episode_length = np.zeros(n_envs, dtype=np.int64)
        self._started = time.time()
        self._observations = np.zeros((n_envs, int(vector_env.obs_dim)), dtype=np.float32)
        self._masks = np.zeros((n_envs, int(vector_env.n_actions)), dtype=bool)
        self._actions = np.full(n_envs, NO_ACTION, dtype=np.int64)
        #: Episodes that ended before the learner's first decision (their rewards are dropped).
        self.episodes_without_learner = 0

    # -- VecEnv API ---------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        seed = self._first_seed
        self._first_seed = None  # later resets continue the env's own random stream
        step = self.vector_env.reset(seed=seed)
        self._forget_games(self._games)  # every game is a new one
        self._pending_reward[:] = 0
        self._episode_return[:] = 0
        self._episode_length[:] = 0
        rewards = np.zeros(self.num_envs)
        dones = np.zeros(self.num_envs, dtype=bool)
        self._advance(step, rewards, dones, [{} for _ in range(self.num_envs)])
        # Rewards that reached the learner's seat before its first decision belong to the
        # learner's first step (SB3 has no reward slot in reset), and step_wait counts them then.
        self._pending_reward += rewards
        self._episode_return -= rewards
        return self._observations.copy()

    def step_async(self, actions: np.ndarray) -> None:
        # Checked before any cast: a float would be truncated and a uint64 of 2**64 - 1 would wrap
        # to -1, which the vector env takes as "skip this game". A learner never skips.
        actions = np.asarray(actions)
        if actions.dtype.kind not in "iu":
            raise TypeError(f"actions must be integer action ids, got dtype {actions.dtype}")
        if actions.size != self.num_envs:
            raise ValueError(
                f"actions must hold one action for each of the {self.num_envs} games, got {actions.shape}"
            )
        actions = actions.reshape(self.num_envs)
        too_low = False if actions.dtype.kind == "u" else actions < 0
        out_of_range = np.flatnonzero(too_low | (actions >= self.action_space.n))
        if out_of_range.size:
            game = int(out_of_range[0])
            raise IllegalActionError(
                f"game {game}: learner action {int(actions[game])} is out of range "
                f"0..{self.action_space.n - 1}"
            )
        self._actions = actions.astype(np.int64)

    def step_wait(self):
        rewards = self._pending_reward.copy()
        self._episode_return += rewards
        self._pending_reward[:] = 0
        dones = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        self._episode_length += 1
        step = self.vector_env.step(self._actions)
        self._advance(step, rewards, dones, infos)
        return self._observations.copy(), rewards.astype(np.float32), dones, infos

    def action_masks(self) -> np.ndarray:
        """``[n_envs, n_actions]`` bool: the learner's legal actions in every game."""
        return self._masks.copy()

    def close(self) -> None:
        self.vector_env.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        return [getattr(self, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        indices = list(self._get_indices(indices))
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in indices]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in indices]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        return hasattr(self, attr_name)

    # -- the opponent loop --------------------------------------------------------------------
    def _advance(self, step, rewards: np.ndarray, dones: np.ndarray, infos: list[dict]) -> None:
        """Credit the learner's rewards and finish ended games, then step the opponents until
        every game waits for its learner; stores the learner observations and masks."""
        while True:
            learner_rewards = step.rewards[self._games, self.learner_seat].astype(np.float64)
            # A game already done in this call has started a new episode: its rewards wait for
            # the learner's next decision there.
            rewards += np.where(dones, 0.0, learner_rewards)
            self._episode_return += np.where(dones, 0.0, learner_rewards)
            self._pending_reward += np.where(dones, learner_rewards, 0.0)
            ended = np.flatnonzero(step.terminated | step.truncated)
            for game in ended:
                self._finish_game(int(game), step, dones, infos)
            if ended.size:
                # Before anyone moves in the new games: their seats are new seats of new games.
                self._forget_games(ended)
            opponent_turn = step.to_act != self.learner_seat
            if not opponent_turn.any():
                break
            step = self.vector_env.step(self._opponent_actions(step, opponent_turn))
        self._observations[:] = step.observation
        self._masks[:] = step.action_mask

    def _finish_game(self, game: int, step, dones: np.ndarray, infos: list[dict]) -> None:
        seat = int(self.learner_seat[game])
        if dones[game]:
            # A second episode ended in this call before the learner moved in it.
            self.episodes_without_learner += 1
            self._pending_reward[game] = 0.0
        else:
            dones[game] = True
            info = infos[game]
            info["terminal_observation"] = step.final_observation[game, seat].astype(np.float32)
            info["TimeLimit.truncated"] = bool(step.truncated[game]) and not bool(step.terminated[game])
            info["episode"] = {
                "r": float(self._episode_return[game]),
                "l": int(self._episode_length[game]),
                "t": round(time.time() - self._started, 6),
            }
            info["learner_seat"] = seat
            info["final_payoffs"] = step.final_payoffs[game].astype(np.float64)
            if self.opponent_draw == "per_game":
                info["opponent_index"] = int(self.opponent_index[game, 0])
        self._episode_return[game] = 0.0
        self._episode_length[game] = 0
        if self.learner_seat_option == "rotate":
            self.learner_seat[game] = (seat + 1) % self.n_players
        self.opponent_index[game] = self._draw_opponents(1)[0]

    def row_keys(self, games: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """The key of a game seat handed to opponents with a memory per game."""
        return np.asarray(games, dtype=np.int64) * self.n_players + np.asarray(seats, dtype=np.int64)

    def _forget_games(self, games: np.ndarray) -> None:
        """Opponents with a memory per game forget every seat of ``games`` (new games start)."""
        if not self._remembering:
            return
        games = np.asarray(games, dtype=np.int64)
        keys = self.row_keys(np.repeat(games, self.n_players), np.tile(np.arange(self.n_players), games.size))
        for opponent in self._remembering:
            opponent.reset_rows(keys)

    def _draw_opponents(self, n_games: int) -> np.ndarray:
        """``[n_games, n_players]`` pool indices for new games (see ``opponent_draw``)."""
        if self._opponent_sampler is None and self.opponent_draw == "per_seat":
            return self.rng.integers(len(self._pool), size=(n_games, self.n_players))
        n_draws = n_games if self.opponent_draw == "per_game" else n_games * self.n_players
        if self._opponent_sampler is None:
            drawn = self.rng.integers(len(self._pool), size=n_draws)
        else:
            drawn = np.asarray(self._opponent_sampler(self.rng, n_draws))
            if (
                drawn.shape != (n_draws,)
                or not np.issubdtype(drawn.dtype, np.integer)
                or ((drawn < 0) | (drawn >= len(self._pool))).any()
            ):
                raise ValueError(
                    f"opponent_sampler returned {drawn!r:.80} for {n_draws} draws; it must return "
                    f"{n_draws} pool indices in 0..{len(self._pool) - 1}"
                )
        if self.opponent_draw == "per_game":
            return np.repeat(drawn.astype(np.int64)[:, None], self.n_players, axis=1)
        return drawn.astype(np.int64).reshape(n_games, self.n_players)

    def _opponent_actions(self, step, opponent_turn: np.ndarray) -> np.ndarray:
        actions = np.full(self.num_envs, NO_ACTION, dtype=np.int64)
        acting = np.where(opponent_turn, self.opponent_index[self._games, step.to_act], -1)
        for pool_index in np.unique(acting[acting >= 0]):
            games = np.flatnonzero(acting == pool_index)
            if self._keyed[pool_index]:
                keys = self.row_keys(games, step.to_act[games])
                chosen = self._pool[pool_index](step.observation[games], step.action_mask[games], rows=keys)
            else:
                chosen = self._pool[pool_index](step.observation[games], step.action_mask[games])
            chosen = np.asarray(chosen)
            if chosen.shape != (games.size,):
                raise ValueError(
                    f"opponent {pool_index} returned actions of shape {chosen.shape} for {games.size} games"
                )
            actions[games] = chosen
        return actions
