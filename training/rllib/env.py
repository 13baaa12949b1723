"""The batched card games as one gymnasium ``VectorEnv`` for RLlib's single-agent env runner.

``LearnerGymVectorEnv`` wraps the SB3 trainer's learner view (``madiao_mao.training.sb3.adapter.
LearnerVecEnv``: one learner seat per game, the opponents played inside, the learner's own seat's
reward, the game's reward shaping on top), so that both engines train on exactly the same games.
One ``step`` call steps every game in one Numba call (plus the opponents' batched moves); the
runner builds one RLlib episode per game from the steps' arrays (``bulk_episodes``).

What RLlib needs on top:

- observations as a dict ``{"observations": float32[obs_dim], "action_mask": float32[n_actions]}``
  (the masking RLModule reads the mask; ``madiao_mao.training.rllib.module``);
- gymnasium's next-step autoreset: when a game ends, the step returns its terminal observation,
  and the next step returns the new game's first observation while ignoring that game's action.
  The learner view has already moved such a game on to the learner's first decision, so it is
  skipped (action -1, untouched) in that next step, and any reward the learner earned in the new
  game before its first decision is carried to its first real step (RLlib drops a reset's reward).

An illegal learner action raises ``cardgame_core.aec.IllegalActionError`` (the vector env refuses
it), so a masking bug cannot pass silently.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from cardgame_core.aec import IllegalActionError
from cardgame_core.vector import NO_ACTION
from madiao_mao.training.sb3.adapter import LearnerVecEnv


class SkippingLearnerVecEnv(LearnerVecEnv):
    """``LearnerVecEnv`` whose step can leave chosen games untouched (they wait for a reset that
    RLlib's next-step autoreset asks for)."""

    def step_async_skipping(self, actions: np.ndarray, skip: np.ndarray) -> None:
        actions = np.asarray(actions)
        # Validated like any learner step (a skipped game's action is never used).
        self.step_async(np.where(skip, 0, actions).astype(actions.dtype))
        self._actions = np.where(skip, NO_ACTION, self._actions)


class LearnerGymVectorEnv(gym.vector.VectorEnv):
    """The learner's side of ``n_envs`` batched games as a gymnasium vector env (module doc).

    ``learner``: the ``SkippingLearnerVecEnv``; ``shaped``: the VecEnv to step (the learner itself,
    or the game's reward wrapper around it)."""

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, learner: SkippingLearnerVecEnv, shaped: Any | None = None) -> None:
        self.learner = learner
        self.shaped = shaped if shaped is not None else learner
        self.num_envs = int(learner.num_envs)
        n_actions = int(learner.action_space.n)
        self.single_observation_space = gym.spaces.Dict(
            {
                "observations": learner.observation_space,
                "action_mask": gym.spaces.Box(0.0, 1.0, (n_actions,), np.float32),
            }
        )
        self.single_action_space = gym.spaces.Discrete(n_actions)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._waiting_reset = np.zeros(self.num_envs, dtype=bool)
        self._carry = np.zeros(self.num_envs, dtype=np.float64)
        self._next_obs: np.ndarray | None = None
        self._next_mask: np.ndarray | None = None
        #: Finished games' infos (learner seat, final payoffs, opponent), for the runner's league.
        self.finished: list[dict] = []

    def _obs(self, observations: np.ndarray, masks: np.ndarray) -> dict[str, np.ndarray]:
        return {"observations": observations.astype(np.float32), "action_mask": masks.astype(np.float32)}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            # The learner view seeds the games' first reset with the seed it was built with.
            self.learner._first_seed = seed
        observations = self.shaped.reset()
        masks = self.learner.action_masks()
        self._waiting_reset[:] = False
        self._carry[:] = 0.0
        # Infos as a list, one per game (what RLlib's DictInfoToList wrapper would give).
        return self._obs(observations, masks), [{} for _ in range(self.num_envs)]

    def step(self, actions):
        actions = np.asarray(actions).reshape(self.num_envs)
        skip = self._waiting_reset.copy()
        masks = self.learner.action_masks()
        playing = np.flatnonzero(~skip)
        illegal = playing[~masks[playing, np.asarray(actions[playing], dtype=np.int64)]]
        if illegal.size:
            game = int(illegal[0])
            raise IllegalActionError(
                f"game {game}: learner action {int(actions[game])} is illegal; legal: "
                f"{np.flatnonzero(masks[game]).tolist()}"
            )
        self.learner.step_async_skipping(actions, skip)
        observations, rewards, dones, infos = self.shaped.step_wait()
        rewards = rewards.astype(np.float64)
        new_masks = self.learner.action_masks()
        out_obs = observations.astype(np.float32).copy()
        out_masks = new_masks.copy()
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        # Games reset in this step: a skipped game earns nothing now, but the learner view may
        # hold a reward for its first decision (paid by the next real step).
        self._carry[skip] += rewards[skip]
        rewards[skip] = 0.0
        rewards[~skip] += self._carry[~skip]
        self._carry[~skip] = 0.0
        for game in np.flatnonzero(dones):
            info = infos[game]
            out_obs[game] = info["terminal_observation"]
            # A finished game's last observation is no decision: nothing is legal.
            out_masks[game] = False
            if info.get("TimeLimit.truncated"):
                truncated[game] = True
            else:
                terminated[game] = True
            self.finished.append({**info, "game": int(game)})
        self._waiting_reset = dones.astype(bool)
        infos_out = [{} for _ in range(self.num_envs)]
        return self._obs(out_obs, out_masks), rewards.astype(np.float32), terminated, truncated, infos_out

    def close(self, **kwargs: Any) -> None:
        self.shaped.close()
