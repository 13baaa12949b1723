"""Both games in RLlib through its own standard ``PettingZooEnv`` wrapper (issue 23): the env
check RLlib runs when it builds env runners, and one PPO iteration with RLlib's action-masking
RLModule, as ``examples/rllib_pettingzoo.py`` does (see ``conftest.py`` for the cluster)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from pettingzoo.utils.env_logger import EnvLogger

from madiao_env import madiao_v0
from mao_env import mao_v0

pytestmark = pytest.mark.distributed

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rllib_pettingzoo.py"
GAMES = {
    "madiao": lambda: madiao_v0.env(),
    "madiao match": lambda: madiao_v0.env(episode="match", obs_type="history"),
    "mao": lambda: mao_v0.env(n_players=3, max_steps=300),
    "mao players' calls": lambda: mao_v0.env(calls="players", max_steps=300),
}


@pytest.fixture(autouse=True)
def quiet_pettingzoo_warnings():
    """PettingZoo's wrapper prints a warning on every illegal move (RLlib's check makes them)."""
    EnvLogger.suppress_output()
    yield
    EnvLogger.unsuppress_output()


def load_example():
    spec = importlib.util.spec_from_file_location("rllib_pettingzoo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("game", sorted(GAMES))
def test_rllib_env_check_passes_on_its_pettingzoo_wrapper_of_env(rllib, game):
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    for seed in range(5):  # the check samples one unmasked action: mostly an illegal one
        env = PettingZooEnv(GAMES[game]())
        for space in env.action_spaces.values():
            space.seed(seed)
        check_multiagent_environments(env)


def test_rllib_env_check_is_a_real_check_raw_env_fails_it(rllib):
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    env = PettingZooEnv(madiao_v0.raw_env())
    env.reset(seed=42, options={})  # the check's own reset: the same deal and seat to act
    agent = env.env.agent_selection
    for space in env.action_spaces.values():
        space.seed(0)
    assert not env.env.observe(agent)["action_mask"][env.action_spaces[agent].sample()]  # an illegal id
    for space in env.action_spaces.values():
        space.seed(0)
    with pytest.raises(ValueError, match="step"):
        check_multiagent_environments(env)


@pytest.mark.parametrize("game", ["madiao", "mao"])
def test_one_ppo_iteration_with_rllibs_action_masking_module(cluster, game):
    summaries = load_example().train(game, iterations=1)
    assert len(summaries) == 1
    assert summaries[0]["env_steps"] >= 256  # the example's train batch
    assert np.isfinite(summaries[0]["policy_loss"])
