"""The RLlib module reads the SB3 engine's policy features: Madiao's "cards" (the unseen/boss card
planes of ``madiao_mao.agents.madiao.features``) are computed inside the module from the raw observation, and
the exported policy takes the raw observation. No cluster."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from madiao_mao.training.config import TrainConfig
from tests.distributed.conftest import require_distributed_extra

require_distributed_extra()
pytestmark = pytest.mark.distributed


def build_module(features: str, game: str = "madiao"):
    from madiao_mao.training.rllib.config import ppo_config

    config = TrainConfig(game=game, features=features, opponents="pool", imitate="none", torch_threads=1)
    algo_config = ppo_config(
        config, num_env_runners=0, envs_per_runner=4, env_config={"train_config": config.to_json()}
    )
    torch.manual_seed(5)
    return config, algo_config.get_rl_module_spec().build()


def real_observations(config: TrainConfig, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Observations and masks of real games (the card planes mean something there)."""
    from madiao_mao.training.game_spec import game_spec

    env = game_spec(config.game).make_vector_env(config, n, 2)
    step = env.reset()
    observations = torch.as_tensor(np.asarray(step.observation, dtype=np.float32))
    masks = torch.as_tensor(np.asarray(step.action_mask, dtype=np.float32))
    env.close()
    return observations, masks


def test_cards_module_reads_the_card_planes_of_the_sb3_features(rllib):
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from ray.rllib.core.columns import Columns

    from madiao_mao.agents.madiao.features import N_DERIVED, MadiaoCardFeatures, summary_layout
    from madiao_mao.training.rllib.module import MASK_KEY, OBS_KEY

    config, module = build_module("cards")
    observations, masks = real_observations(config, 6)
    obs_dim = observations.shape[1]
    # Both networks take the observation with the derived planes.
    assert module.encoder.actor_encoder.net.mlp[0].in_features == obs_dim + N_DERIVED
    assert module.encoder.critic_encoder.net.mlp[0].in_features == obs_dim + N_DERIVED
    features = MadiaoCardFeatures(module.observation_space[OBS_KEY], **summary_layout())
    with torch.no_grad():
        expected = DefaultPPOTorchRLModule._forward_inference(module, {Columns.OBS: features(observations)})
        logits = module.forward_inference({Columns.OBS: {OBS_KEY: observations, MASK_KEY: masks}})
        values = module.compute_values({Columns.OBS: {OBS_KEY: observations, MASK_KEY: masks}})
    legal = masks > 0.5
    torch.testing.assert_close(
        logits[Columns.ACTION_DIST_INPUTS][legal], expected[Columns.ACTION_DIST_INPUTS][legal]
    )
    encoded = module.encoder({Columns.OBS: features(observations)})
    torch.testing.assert_close(values, module.vf(encoded["encoder_out"]["critic"]).squeeze(-1))


def test_flat_module_reads_the_observation_as_it_is(rllib):
    from madiao_mao.training.rllib.module import OBS_KEY

    _, module = build_module("flat")
    assert module.card_features is None
    assert module.encoder.actor_encoder.net.mlp[0].in_features == module.observation_space[OBS_KEY].shape[0]


def test_a_cards_policy_exports_for_the_raw_observation(rllib):
    from ray.rllib.core.columns import Columns

    from madiao_mao.agents.exported_policy import load_policy
    from madiao_mao.training.rllib.module import MASK_KEY, OBS_KEY, export_policy_program

    config, module = build_module("cards")
    observations, masks = real_observations(config, 5)
    net, meta = load_policy(export_policy_program(module, {}))
    assert meta["obs_dim"] == observations.shape[1]
    with torch.no_grad():
        expected = module.forward_inference({Columns.OBS: {OBS_KEY: observations, MASK_KEY: masks}})
        torch.testing.assert_close(net(observations, masks), expected[Columns.ACTION_DIST_INPUTS])


def test_mao_rule_features_fall_back_to_the_flat_observation(rllib):
    """Mao's "rules" are an SB3 policy class of its own: an RLlib run reads the flat observation
    and says so in its config."""
    from madiao_mao.training.rllib.config import rllib_features

    assert rllib_features(TrainConfig(game="mao", features="rules", imitate="none")) == "flat"
    assert rllib_features(TrainConfig(game="madiao", features="cards", imitate="none")) == "cards"
    _, module = build_module("rules", game="mao")
    assert module.card_features is None
