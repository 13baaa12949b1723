"""Both AEC envs: pickling and deep-copying carry the game, and use before reset() is named."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from madiao_env import madiao_v0
from mao_env import mao_v0

MAKERS = {
    "madiao": lambda: madiao_v0.raw_env(obs_type="history", stake=2.0),
    "mao": lambda: mao_v0.raw_env(n_players=5),
}


def play(env, rng: np.random.Generator, n_steps: int) -> list:
    """Random legal play for up to ``n_steps``; returns (agent, observation, reward) per step."""
    trace = []
    for _ in range(n_steps):
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            break
        observation = env.observe(agent)
        action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
        env.step(action)
        trace.append((agent, observation["observation"].tobytes(), dict(env._cumulative_rewards)))
    return trace


@pytest.mark.parametrize("game", sorted(MAKERS))
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_copy_continues_exactly_like_the_original(game: str, how: str) -> None:
    env = MAKERS[game]()
    env.reset(seed=11)
    play(env, np.random.default_rng(0), 7)
    clone = pickle.loads(pickle.dumps(env)) if how == "pickle" else copy.deepcopy(env)
    assert clone.agent_selection == env.agent_selection
    original_trace = play(env, np.random.default_rng(1), 60)
    clone_trace = play(clone, np.random.default_rng(1), 60)
    assert len(original_trace) > 5
    assert clone_trace == original_trace
    # The random stream travels too: the next seedless reset deals the same game.
    env.reset()
    clone.reset()
    assert np.array_equal(env.observe(env.agent_selection)["observation"],
                          clone.observe(clone.agent_selection)["observation"])  # fmt: skip


@pytest.mark.parametrize("game", sorted(MAKERS))
def test_an_env_never_reset_copies_and_says_reset_first(game: str) -> None:
    env = pickle.loads(pickle.dumps(MAKERS[game]()))
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        env.step(0)
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        env.observe(env.possible_agents[1])
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        env.get_state()
    env.reset(seed=0)  # and then it works
    assert env.observe(env.agent_selection)["action_mask"].any()
