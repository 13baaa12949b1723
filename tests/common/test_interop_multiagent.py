"""Both games in the multi-agent tools researchers use, run for real (issue 23): PettingZoo's own
``parallel_seed_test`` on ``env()``; Tianshou 2.0's ``PettingZooEnv`` + ``Collector`` collecting
whole episodes, and a few hundred DQN steps for one seat through ``examples/tianshou_dqn.py``.

RLlib's env check and PPO run with the Ray tests (``tests/distributed/test_rllib_pettingzoo.py``).
Tianshou is optional: without it these tests skip, but fail under ``CI`` (``.ci/run`` installs it).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
from pettingzoo.test import parallel_seed_test
from pettingzoo.utils.conversions import turn_based_aec_to_parallel
from pettingzoo.utils.env_logger import EnvLogger

from cardgame_core.aec import IllegalActionError
from madiao_env import madiao_v0
from mao_env import mao_v0

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GAMES = {
    "madiao": lambda: madiao_v0.env(),
    "madiao match": lambda: madiao_v0.env(episode="match", obs_type="history"),
    "mao": lambda: mao_v0.env(n_players=3, max_steps=300),
    "mao players' calls": lambda: mao_v0.env(calls="players", reasons="revealed", max_steps=300),
}


@pytest.fixture(autouse=True)
def quiet_pettingzoo_warnings():
    """PettingZoo's wrapper prints a warning on every illegal move (the seed test makes many)."""
    EnvLogger.suppress_output()
    yield
    EnvLogger.unsuppress_output()


@pytest.fixture
def tianshou():
    """Tianshou importable (else skip, or fail under CI), torch on one thread meanwhile: the suite
    shares two cores, and more threads only contend."""
    if importlib.util.find_spec("tianshou") is None:
        if os.environ.get("CI"):
            pytest.fail("Tianshou is not installed (required when CI is set)")
        pytest.skip("Tianshou is not installed")
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------- PettingZoo


@pytest.mark.parametrize("game", sorted(GAMES))
def test_parallel_seed_test_passes_on_env(game):
    # PettingZoo's check samples actions without the mask: env() ends such games, as its classic
    # games do, and replays them identically from a seed.
    parallel_seed_test(lambda: turn_based_aec_to_parallel(GAMES[game]()), num_cycles=100)


def test_parallel_seed_test_is_a_real_check_raw_env_fails_it():
    with pytest.raises(IllegalActionError):
        parallel_seed_test(lambda: turn_based_aec_to_parallel(madiao_v0.raw_env()), num_cycles=100)


# ----------------------------------------------------------------------------- Tianshou


@pytest.mark.slow
@pytest.mark.parametrize("game", sorted(GAMES))
def test_tianshou_collector_stacks_whole_episodes_of_env(game, tianshou):
    from tianshou.algorithm import MARLRandomDiscreteMaskedOffPolicyAlgorithm, MultiAgentOffPolicyAlgorithm
    from tianshou.data import Collector, CollectStats, ReplayBuffer
    from tianshou.env import DummyVectorEnv, PettingZooEnv

    env = PettingZooEnv(GAMES[game]())
    players = [MARLRandomDiscreteMaskedOffPolicyAlgorithm(env.action_space) for _ in env.agents]
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=players, env=env)
    buffer = ReplayBuffer(20_000)
    collector = Collector[CollectStats](algorithm, DummyVectorEnv([lambda: env]), buffer)
    stats = collector.collect(n_episode=2, reset_before_collect=True)
    assert stats.n_collected_episodes == 2
    assert stats.returns.shape == (2, len(env.agents))
    # Every step's info went into the buffer's stacked arrays: one row per step, per key.
    info = buffer.info
    assert len(buffer) == stats.n_collected_steps
    assert all(len(info[key][: len(buffer)]) == len(buffer) for key in info.get_keys())
    # Masked random players: no episode ended on an illegal action.
    assert not np.asarray(info.illegal_action[: len(buffer)], dtype=bool).any()


@pytest.mark.slow
@pytest.mark.parametrize("game", ["madiao", "mao"])
def test_tianshou_dqn_example_trains_one_seat_for_a_few_hundred_steps(game, tianshou):
    summary = load_example("tianshou_dqn").train(game, steps=300, n_envs=2, eval_episodes=2)
    assert summary["env_steps"] >= 300
    assert summary["gradient_updates"] > 0
    assert summary["episodes"] == 2
    assert np.isfinite(summary["learner_mean_return"])
