"""The Madiao ``stake`` option is applied in one place (``madiao_env.payments.stakes_to_rewards``)
and undone nowhere: the AEC env, the vector env and the play-outs convert whole stakes through
it, and duplicate tournaments score whole stakes without dividing by it."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("madiao_env.madiao_v0")

from madiao_env import madiao_v0, payments, rollout
from madiao_env.vector import MadiaoVectorEnv
from madiao_mao.agents.base import RandomAgent
from madiao_mao.training.madiao.evaluation import duplicate_match, make_deals

# 0.1 has no exact binary form: scaling and then dividing again leaves rounding noise.
ODD_STAKE = 0.1


def _scores(stake: float | None) -> list[float]:
    env_kwargs = {} if stake is None else {"stake": stake}
    pair = duplicate_match(
        RandomAgent(seed=1), RandomAgent(seed=2), make_deals(6, seed=5), env_kwargs=env_kwargs
    )
    return pair.score


def test_duplicate_scores_are_whole_stakes_whatever_the_stake_option():
    unscaled = _scores(None)
    assert any(score != 0 for score in unscaled)
    assert all(float(score).is_integer() for score in unscaled)
    for stake in (2.0, ODD_STAKE, 3.7):
        assert _scores(stake) == unscaled, stake


def test_duplicate_match_rejects_a_bad_stake_and_a_scaled_env():
    deals = make_deals(1, seed=0)
    with pytest.raises(ValueError, match="stake"):
        duplicate_match(RandomAgent(seed=1), RandomAgent(seed=2), deals, env_kwargs={"stake": -1.0})
    with pytest.raises(TypeError, match="stake"):
        duplicate_match(RandomAgent(seed=1), RandomAgent(seed=2), deals, env_kwargs={"stake": "2"})
    scaled = madiao_v0.env(stake=2.0)
    with pytest.raises(ValueError, match="stake 1"):
        duplicate_match(RandomAgent(seed=1), RandomAgent(seed=2), deals, env=scaled)


class _Spy:
    """Counts the calls of ``stakes_to_rewards`` while doing what it does."""

    def __init__(self) -> None:
        self.calls = 0
        self.convert = payments.stakes_to_rewards

    def __call__(self, stakes, stake):
        self.calls += 1
        return self.convert(stakes, stake)


def _play_aec(stake: float, seed: int) -> list[float]:
    env = madiao_v0.env(stake=stake)
    env.reset(seed=seed)
    rewards = []
    agent = RandomAgent(seed=seed)
    for _agent_name in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        rewards.append(reward)
        action = None
        if not (terminated or truncated):
            action = agent.act(observation["observation"], observation["action_mask"])
        env.step(action)
    return rewards


def _play_vector(stake: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    env = MadiaoVectorEnv(16, seed=3, stake=stake)
    rng = np.random.default_rng(0)
    rewards, finals = [], []
    step = env.reset(seed=3)
    for _ in range(steps):
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in step.action_mask])
        step = env.step(actions)
        rewards.append(step.rewards.copy())
        finals.append(np.where(step.terminated[:, None], step.final_payoffs, 0.0))
    return np.array(rewards), np.array(finals)


@pytest.mark.parametrize("stake", [ODD_STAKE, 3.7])
def test_every_reward_path_converts_through_the_one_function(monkeypatch, stake):
    spy = _Spy()
    monkeypatch.setattr(payments, "stakes_to_rewards", spy)

    aec = _play_aec(stake, seed=11)
    assert spy.calls > 0, "the AEC env"
    # The conversion is the one it always was: whole stakes times the option (line by line, so
    # the sums may round differently in the last bit).
    unscaled = _play_aec(1.0, seed=11)
    assert any(unscaled)
    assert aec == pytest.approx([r * stake for r in unscaled], rel=1e-12, abs=1e-12)

    spy.calls = 0
    rewards, finals = _play_vector(stake, steps=120)
    assert spy.calls > 0, "the vector env"
    unit_rewards, unit_finals = _play_vector(1.0, steps=120)
    assert unit_finals.any()
    np.testing.assert_array_equal(rewards, (unit_rewards.astype(np.float64) * stake).astype(np.float32))
    np.testing.assert_array_equal(finals, (unit_finals.astype(np.float64) * stake).astype(np.float32))

    spy.calls = 0
    snapshot = rollout.new_hand_snapshot(4, stake=stake)
    payoffs = rollout.random_playouts(snapshot, 8, seed=2)
    assert spy.calls > 0, "the play-outs"
    whole = rollout.random_playouts(rollout.new_hand_snapshot(4), 8, seed=2)
    np.testing.assert_array_equal(payoffs, whole * stake)
