"""The SB3 ``VecEnv`` adapter of the card games: one learner seat per game, opponents inside.

It lives with the training code because it needs stable-baselines3 (the ``train`` extra); the
Gymnasium adapter of one AEC env, which needs only gymnasium, stays in
:mod:`cardgame_core.adapters`, and the Gymnasium ``VectorEnv`` of the batched games in
:mod:`madiao_mao.training.gymnasium_envs`.

The learner view itself (the opponent loop, the learner's own seat's reward, pools, opponents with
a memory per game) is :class:`madiao_mao.training.learner_games.LearnerGames`, which this adapter and the
Gymnasium ``VectorEnv`` share; ``action_masks()`` serves sb3-contrib's MaskablePPO.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from cardgame_core.aec import IllegalActionError
from cardgame_core.vector import NO_ACTION, VectorCardEnv
from madiao_mao.training.learner_games import LearnerGames


class LearnerVecEnv(LearnerGames, VecEnv):
    """An SB3 ``VecEnv`` over a batched card game: one learner seat per game, opponents inside.

    Args: those of :class:`madiao_mao.training.learner_games.LearnerGames` (the batched env, the opponent or
    pool, ``learner_seat`` (default ``"rotate"``), ``seed``, ``opponent_draw``,
    ``opponent_sampler``).

    Each ``step`` returns, per game, the learner seat's reward summed over everything since its
    previous decision. When a game ends, ``done`` is set, ``infos[i]["terminal_observation"]`` is
    the learner's last observation, ``infos[i]["episode"]`` holds the return/length for SB3's
    Monitor statistics (with ``opponent_draw="per_game"``, ``infos[i]["opponent_index"]`` names
    the pool entry it was played against), and the observation returned is the new game's (after
    the opponents moved up to the learner's first decision). Rewards that arrive in a new game
    before the learner's first decision are added to the learner's next reward in that game.
    Observations are float32 (what SB3's policies take).
    """

    def __init__(self, vector_env: VectorCardEnv, opponents: Any | Sequence[Any], **options: Any) -> None:
        # ``options`` are the keyword-only arguments of LearnerGames, documented and checked there.
        LearnerGames.__init__(self, vector_env, opponents, **options)
        n_envs = int(vector_env.n_envs)
        observation_space = gym.spaces.Box(-np.inf, np.inf, (int(vector_env.obs_dim),), np.float32)
        action_space = gym.spaces.Discrete(int(vector_env.n_actions))
        self.render_mode = None  # read by VecEnv.__init__; games are rendered through the AEC env
        VecEnv.__init__(self, n_envs, observation_space, action_space)
        self._started = time.time()
        self._observations = np.zeros((n_envs, int(vector_env.obs_dim)), dtype=np.float32)
        self._masks = np.zeros((n_envs, int(vector_env.n_actions)), dtype=bool)
        self._actions = np.full(n_envs, NO_ACTION, dtype=np.int64)

    # -- VecEnv API ---------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        seed = self._first_seed
        self._first_seed = None  # later resets continue the env's own random stream
        # Rewards that reached the learner's seat before its first decision belong to the
        # learner's first step (SB3 has no reward slot in reset), and step_wait counts them then.
        self.start_games(seed)
        self._keep_learner_view()
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
        self.play_learner_step(self._actions)
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        for game in np.flatnonzero(self.step_dones):
            infos[game] = self._ended_info(int(game))
        self._keep_learner_view()
        return (
            self._observations.copy(),
            self.step_rewards.astype(np.float32),
            self.step_dones.copy(),
            infos,
        )

    def _ended_info(self, game: int) -> dict[str, Any]:
        """SB3's info of a game whose learner episode ended in this step."""
        info = {
            "terminal_observation": self.ended_observation[game].astype(np.float32),
            "TimeLimit.truncated": bool(self.ended_truncated[game]),
            "episode": {
                "r": float(self.ended_return[game]),
                "l": int(self.ended_length[game]),
                "t": round(time.time() - self._started, 6),
            },
            "learner_seat": int(self.ended_seat[game]),
            "final_payoffs": self.ended_payoffs[game].copy(),
        }
        if self.opponent_draw == "per_game":
            info["opponent_index"] = int(self.ended_opponent[game])
        return info

    def _keep_learner_view(self) -> None:
        self._observations[:] = self.current.observation
        self._masks[:] = self.current.action_mask

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
