"""The policy export without TorchScript (``module.export_policy_program``): the same masked
logits as the module for any batch size, its metadata kept, no deprecation warning from torch;
``load_policy`` reads it and the TorchScript of older runs alike, and so do the runners'
snapshot opponents. No cluster."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from madiao_mao.training.config import TrainConfig
from tests.distributed.conftest import require_distributed_extra

require_distributed_extra()
pytestmark = pytest.mark.distributed


@pytest.fixture(scope="module")
def module(rllib):
    from madiao_mao.training.rllib.config import ppo_config

    config = TrainConfig(game="madiao", opponents="pool", imitate="none", torch_threads=1)
    algo_config = ppo_config(
        config, num_env_runners=0, envs_per_runner=4, env_config={"train_config": config.to_json()}
    )
    torch.manual_seed(3)
    return algo_config.get_rl_module_spec().build()


def random_inputs(module, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    from madiao_mao.training.rllib.module import MASK_KEY, OBS_KEY

    space = module.observation_space_with_mask
    generator = torch.Generator().manual_seed(seed)
    observations = torch.randn(n, space[OBS_KEY].shape[0], generator=generator)
    masks = (torch.rand(n, space[MASK_KEY].shape[0], generator=generator) < 0.3).float()
    masks[:, 0] = 1.0  # at least one legal action per row
    return observations, masks


def module_logits(module, observations, masks) -> torch.Tensor:
    from ray.rllib.core.columns import Columns

    from madiao_mao.training.rllib.module import MASK_KEY, OBS_KEY

    with torch.no_grad():
        batch = {Columns.OBS: {OBS_KEY: observations, MASK_KEY: masks}}
        return module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]


def test_program_export_plays_the_module_without_a_deprecation_warning(module):
    from ray.rllib.utils.torch_utils import FLOAT_MIN

    from madiao_mao.agents.exported_policy import is_policy_program, load_policy
    from madiao_mao.training.rllib.module import export_policy_program

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        data = export_policy_program(module, {"game": "madiao", "step": 7})
        net, meta = load_policy(data)
    assert is_policy_program(data)
    assert meta["game"] == "madiao" and meta["step"] == 7 and meta["n_actions"] == 82
    for n in (1, 37):  # traced with 2 rows: the batch size is free
        observations, masks = random_inputs(module, n, seed=n)
        with torch.no_grad():
            logits = net(observations, masks)
        torch.testing.assert_close(logits, module_logits(module, observations, masks), rtol=0, atol=0)
        assert (logits[masks < 0.5] == FLOAT_MIN).all()


def _torchscript_of_an_older_run(module, meta: dict) -> bytes:
    """The policy as runs made before 2026-11-24 exported it (TorchScript, meta.json inside)."""
    import io
    import json

    from madiao_mao.agents.exported_policy import FORMAT
    from madiao_mao.training.rllib.module import MASK_KEY, OBS_KEY, _PolicyOnly

    space = module.observation_space_with_mask
    obs_dim, n_actions = int(space[OBS_KEY].shape[0]), int(space[MASK_KEY].shape[0])
    module.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch 2.13 deprecates TorchScript
        with torch.no_grad():
            traced = torch.jit.trace(
                _PolicyOnly(module), (torch.zeros(2, obs_dim), torch.ones(2, n_actions)), check_trace=False
            )
        buffer = io.BytesIO()
        info = {"format": FORMAT, "obs_dim": obs_dim, "n_actions": n_actions, **meta}
        torch.jit.save(traced, buffer, _extra_files={"meta.json": json.dumps(info)})
    return buffer.getvalue()


def test_load_policy_reads_the_torchscript_of_older_runs(module):
    from madiao_mao.agents.exported_policy import is_policy_program, load_policy

    data = _torchscript_of_an_older_run(module, {"game": "madiao", "step": 3})
    assert not is_policy_program(data)
    net, meta = load_policy(data)
    observations, masks = random_inputs(module, 5, seed=0)
    with torch.no_grad():
        torch.testing.assert_close(net(observations, masks), module_logits(module, observations, masks))
    assert meta["step"] == 3


def test_load_policy_refuses_what_is_no_exported_policy(module):
    from madiao_mao.agents.exported_policy import load_policy

    with pytest.raises(ValueError, match="no zip archive"):
        load_policy(b"not a policy")


def test_snapshot_opponents_play_a_program_as_its_module(module):
    """A runner's snapshot opponent made from program bytes sees the module's own logits."""
    from madiao_mao.training.rllib.module import export_policy_program
    from madiao_mao.training.rllib.runner import exported_logits

    logits = exported_logits(export_policy_program(module, {}))
    observations, masks = random_inputs(module, 9, seed=1)
    np.testing.assert_array_equal(
        logits(observations.numpy(), masks.numpy()), module_logits(module, observations, masks).numpy()
    )
