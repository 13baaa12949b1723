"""The RLlib engine's gymnasium view of the batched games (no Ray needed): next-step autoreset,
the learner's rewards kept whole across it, and illegal actions refused."""

from __future__ import annotations

import numpy as np
import pytest


def make_env(n_games: int = 16):
    from madiao_env.vector import MadiaoVectorEnv
    from madiao_mao.agents.base import RandomAgent
    from madiao_mao.training.rllib.env import LearnerGymVectorEnv, SkippingLearnerVecEnv

    learner = SkippingLearnerVecEnv(MadiaoVectorEnv(n_games, seed=11), RandomAgent(seed=3), seed=11)
    return LearnerGymVectorEnv(learner)


def test_episode_rewards_add_up_to_the_learner_returns_across_autoresets():
    """Summing the rewards of each game between its resets, as an RLlib episode does (a reset
    step's reward is dropped), gives exactly the learner's returns of the finished games."""
    env = make_env()
    rng = np.random.default_rng(0)
    observation, _ = env.reset(seed=11)
    sums = np.zeros(env.num_envs)
    resetting = np.zeros(env.num_envs, dtype=bool)
    ours: list[list[float]] = [[] for _ in range(env.num_envs)]
    for _ in range(300):
        masks = observation["action_mask"] > 0.5
        keys = rng.random(masks.shape)
        keys[~masks] = -1.0
        actions = keys.argmax(axis=1)
        observation, rewards, terminated, truncated, _ = env.step(actions)
        # A reset step carries no reward: it starts the new game's episode.
        assert (rewards[resetting] == 0).all()
        sums[~resetting] += rewards[~resetting]
        done = terminated | truncated
        for game in np.flatnonzero(done):
            ours[game].append(float(sums[game]))
            sums[game] = 0.0
            # Nothing is legal on a terminal observation.
            assert not observation["action_mask"][game].any()
        resetting = done
    theirs: list[list[float]] = [[] for _ in range(env.num_envs)]
    for info in env.finished:
        theirs[info["game"]].append(info["episode"]["r"])
    assert sum(len(x) for x in ours) > 100
    for game in range(env.num_envs):
        np.testing.assert_allclose(ours[game], theirs[game], rtol=0, atol=1e-5)


def test_an_illegal_learner_action_raises_and_names_the_game():
    from cardgame_core.aec import IllegalActionError

    env = make_env(4)
    observation, _ = env.reset(seed=1)
    actions = (observation["action_mask"] > 0.5).argmax(axis=1)
    illegal = int(np.flatnonzero(observation["action_mask"][2] < 0.5)[0])
    actions[2] = illegal
    with pytest.raises(IllegalActionError, match=rf"game 2: learner action {illegal} is illegal"):
        env.step(actions)


class ScriptedLearner:
    """A stand-in learner view whose step results are given in advance (two games)."""

    num_envs = 2

    def __init__(self, steps):
        import gymnasium as gym

        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.steps = list(steps)
        self.skipped = []

    def reset(self):
        return np.zeros((2, 3), dtype=np.float32)

    def action_masks(self):
        return np.ones((2, 2), dtype=bool)

    def step_async_skipping(self, actions, skip):
        self.skipped.append(skip.tolist())

    def step_wait(self):
        rewards, dones = self.steps.pop(0)
        infos = [
            {"terminal_observation": np.ones(3, dtype=np.float32), "episode": {"r": 0.0}} if done else {}
            for done in dones
        ]
        return np.zeros((2, 3), dtype=np.float32), np.asarray(rewards, np.float32), np.asarray(dones), infos

    def close(self):
        """Nothing to release (the gym view closes what it wraps, also when collected)."""


def test_a_reward_earned_before_the_first_decision_reaches_the_first_real_step():
    """Game 0 ends; in the reset step the learner view already holds 0.5 of the new game's reward
    (earned before the learner's first decision there): RLlib drops a reset step's reward, so the
    wrapper pays it with the next step's 0.25, and the reset step leaves game 0 untouched."""
    from madiao_mao.training.rllib.env import LearnerGymVectorEnv

    learner = ScriptedLearner(
        [([1.0, 0.0], [True, False]), ([0.5, 0.1], [False, False]), ([0.25, 0.0], [False, False])]
    )
    env = LearnerGymVectorEnv(learner)
    env.reset()
    _, rewards, terminated, _, _ = env.step(np.zeros(2, dtype=np.int64))
    assert rewards.tolist() == [1.0, 0.0] and terminated.tolist() == [True, False]
    _, rewards, terminated, _, _ = env.step(np.zeros(2, dtype=np.int64))
    np.testing.assert_allclose(rewards, [0.0, 0.1])
    assert learner.skipped[1] == [True, False]
    _, rewards, _, _, _ = env.step(np.zeros(2, dtype=np.int64))
    np.testing.assert_allclose(rewards, [0.75, 0.0])
    assert learner.skipped[2] == [False, False]
