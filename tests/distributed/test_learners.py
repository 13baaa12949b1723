"""More than one learner (``--num-learners``): two data-parallel learner actors on the cluster's
second node update the policy in step, the checkpoint restores them, and the command line checks
the option (see ``conftest.py`` for the cluster). ``--device``: the learners' GPUs (the "cuda"
case runs where ``MADIAO_MAO_TEST_GPU=1`` shows torch a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from madiao_mao.training.config import TrainConfig
from tests.distributed.conftest import require_distributed_extra

require_distributed_extra()
pytestmark = pytest.mark.distributed
torch = pytest.importorskip("torch")


def small_config(tmp_path) -> TrainConfig:
    return TrainConfig(
        game="madiao",
        total_timesteps=10**6,
        n_envs=32,
        n_steps=16,
        batch_size=128,
        n_epochs=1,
        opponents="pool",
        runs_dir=str(tmp_path / "runs"),
        imitate="none",
        torch_threads=1,
        progress_bar=False,
        verbose=False,
    )


def on_learners(algo, func) -> list:
    """``func(learner)`` on every learner (an actor's error is raised here); ``algo``: an
    algorithm or its learner group."""
    group = getattr(algo, "learner_group", algo)
    return [result.get() for result in group.foreach_learner(func)]


def learner_weights(algo) -> list[dict[str, np.ndarray]]:
    """Every learner actor's module weights (numpy)."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    def weights(learner):
        state = learner.module[DEFAULT_MODULE_ID].state_dict()
        return {name: tensor.detach().cpu().numpy().copy() for name, tensor in state.items()}

    return on_learners(algo, weights)


def test_two_learners_update_in_step_and_their_checkpoint_restores(cluster, tmp_path):
    """One iteration with two DDP learners (each half a CPU of the worker node, beside one env
    runner) changes the weights, identically in both; the checkpoint restores them into a new
    algorithm, which trains on."""
    import ray

    from madiao_mao.training.rllib.config import ppo_config

    config = small_config(tmp_path)

    def build():
        return ppo_config(
            config,
            num_env_runners=1,
            envs_per_runner=32,
            env_config={"train_config": config.to_json()},
            num_learners=2,
            cpus_per_learner=0.5,
        ).build_algo()

    algo = build()
    try:
        nodes = on_learners(algo, lambda _: ray.get_runtime_context().get_node_id())
        assert nodes == [cluster.worker_node_id] * 2
        # Each learner trains on its half of the run's rollout, in minibatches of half the size.
        assert algo.config.train_batch_size_per_learner == 32 * 16 // 2
        assert algo.config.minibatch_size == 128 // 2
        before = learner_weights(algo)
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] >= 32 * 16
        after = learner_weights(algo)
        assert len(after) == 2
        for name in before[0]:
            # DDP: both learners start equal and stay equal (all-reduced gradients).
            np.testing.assert_array_equal(before[0][name], before[1][name])
            np.testing.assert_allclose(after[0][name], after[1][name], rtol=0, atol=1e-6)
        assert any(not np.allclose(before[0][n], after[0][n]) for n in before[0])
        checkpoint = tmp_path / "checkpoint"
        algo.save_to_path(str(checkpoint))
    finally:
        algo.stop()

    restored = build()
    try:
        restored.restore_from_path(str(checkpoint))
        for learner in learner_weights(restored):
            for name, value in after[0].items():
                np.testing.assert_allclose(learner[name], value, rtol=0, atol=1e-6)
        restored.train()
        trained_on = learner_weights(restored)[0]
        assert any(not np.allclose(after[0][n], trained_on[n]) for n in after[0])
    finally:
        restored.stop()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--engine", "rllib", "--num-learners", "-1"],
            "--num-learners: num_learners must be an integer >= 0",
        ),
        (["--engine", "rllib", "--num-learners", "two"], "--num-learners: invalid literal for int()"),
        (
            ["--engine", "rllib", "--cpus-per-learner", "0"],
            "--cpus-per-learner: cpus_per_learner must be a number > 0",
        ),
        (["--num-learners", "2"], "need --engine rllib"),
        (["--cpus-per-learner", "0.5"], "need --engine rllib"),
    ],
)
def test_cli_refuses_a_bad_learner_option_in_one_line(tmp_path, capsys, arguments, message):
    """No Ray needed: the options are checked before anything starts (status 2, one line)."""
    from madiao_mao.cli.main import main

    with pytest.raises(SystemExit) as raised:
        status = main(["train", "--runs-dir", str(tmp_path / "runs"), *arguments])
        raise SystemExit(status)
    assert raised.value.code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and message in error, error
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_learners": -1}, "num_learners must be an integer >= 0, got -1"),
        ({"num_learners": 1.5}, "num_learners must be an integer >= 0, got 1.5"),
        ({"num_learners": True}, "num_learners must be an integer >= 0, got True"),
        ({"cpus_per_learner": 0}, "cpus_per_learner must be a number > 0, got 0"),
        ({"cpus_per_learner": float("nan")}, "cpus_per_learner must be a number > 0, got nan"),
    ],
)
def test_engine_options_refuse_bad_learner_settings_before_any_run(tmp_path, options, message):
    """``train_rllib`` checks its options first: a ValueError naming the setting, no run folder."""
    from madiao_mao.training.rllib.options import EngineOptions
    from madiao_mao.training.rllib.run import train_rllib

    with pytest.raises(ValueError, match=message):
        train_rllib(small_config(tmp_path), options=EngineOptions(**options))
    assert not (tmp_path / "runs").exists()


# ---- the device (``--device``): RLlib's learner GPUs


def test_the_device_is_the_learners_gpu_count_and_the_cpu_keeps_rllibs_defaults(rllib, tmp_path):
    from ray.rllib.algorithms.ppo import PPOConfig

    from madiao_mao.training.rllib.config import learner_gpus, ppo_config

    assert learner_gpus("cpu") == {"num_gpus_per_learner": 0, "local_gpu_idx": 0}
    assert learner_gpus("cuda") == {"num_gpus_per_learner": 1, "local_gpu_idx": 0}
    assert learner_gpus("cuda:1") == {"num_gpus_per_learner": 1, "local_gpu_idx": 1}
    config = small_config(tmp_path)
    env_config = {"train_config": config.to_json()}
    on_cpu = ppo_config(config, num_env_runners=0, envs_per_runner=8, env_config=env_config)
    default = PPOConfig()
    assert (on_cpu.num_gpus_per_learner, on_cpu.local_gpu_idx) == (
        default.num_gpus_per_learner,
        default.local_gpu_idx,
    )
    on_gpu = ppo_config(config, num_env_runners=0, envs_per_runner=8, env_config=env_config, device="cuda:1")
    assert (on_gpu.num_gpus_per_learner, on_gpu.local_gpu_idx) == (1, 1)
    assert on_gpu.num_gpus_per_env_runner == 0  # the runners sample on the CPU


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
        ),
    ],
)
def test_the_learner_in_the_driver_builds_its_module_on_the_device(rllib, tmp_path, device):
    from ray.rllib.core import DEFAULT_MODULE_ID

    from madiao_mao.training.rllib.config import ppo_config

    config = small_config(tmp_path)
    group = ppo_config(
        config,
        num_env_runners=0,
        envs_per_runner=8,
        env_config={"train_config": config.to_json()},
        device=device,
    ).build_learner_group()
    try:
        devices = on_learners(
            group, lambda learner: next(learner.module[DEFAULT_MODULE_ID].parameters()).device
        )
        assert [d.type for d in devices] == [device]
    finally:
        group.shutdown()


def test_more_learner_actors_than_gpus_are_refused_on_a_local_ray(monkeypatch):
    from madiao_mao.training.config import ConfigError
    from madiao_mao.training.rllib.options import EngineOptions

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(
        ConfigError, match="num_learners 2 on cuda needs a GPU per learner actor, and torch sees 1"
    ):
        EngineOptions(num_learners=2).check_device("cuda")
    EngineOptions(num_learners=2).check_device("cpu")
    EngineOptions(num_learners=1).check_device("cuda")
    EngineOptions(num_learners=2, address="10.0.0.1:6379").check_device("cuda")  # the cluster's GPUs
