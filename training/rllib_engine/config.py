"""The run's ``TrainConfig`` as an RLlib ``PPOConfig`` (new API stack), field by field.

| TrainConfig | RLlib |
| --- | --- |
| learning_rate, lr_schedule | ``lr`` (a constant, or ``[[0, lr], [budget, 0]]`` for "linear") |
| n_envs * n_steps (one SB3 rollout) | ``train_batch_size_per_learner`` |
| batch_size, n_epochs | ``minibatch_size``, ``num_epochs`` |
| gamma, gae_lambda, clip_range | ``gamma``, ``lambda_``, ``clip_param`` |
| ent_coef, vf_coef | ``entropy_coeff``, ``vf_loss_coeff`` |
| net_arch | ``fcnet_hiddens`` (tanh, separate policy and value nets: SB3's MlpPolicy) |
| seed | ``debugging(seed=...)`` |

As in SB3's PPO: no KL penalty, no value clipping, gradients clipped at a global norm of 0.5, no
per-step check of the gradients for nan (``torch_skip_nan_gradients``).
The "cards"/"rules" feature extractors are SB3 policies; the RLlib engine reads the flat
observation (a new run's config is saved with ``features="flat"``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from training.config import TrainConfig, rollout_size

#: SB3's PPO default (``max_grad_norm``).
MAX_GRAD_NORM = 0.5


def spaces(config: TrainConfig) -> tuple[gym.spaces.Dict, gym.spaces.Discrete]:
    """The observation (dict with the action mask) and action spaces of a config's games."""
    import numpy as np

    from training.train import make_vector_env

    probe = make_vector_env(config, 1, 0)
    obs_dim, n_actions = int(probe.obs_dim), int(probe.n_actions)
    probe.close()
    observation = gym.spaces.Dict(
        {
            "observations": gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32),
            "action_mask": gym.spaces.Box(0.0, 1.0, (n_actions,), np.float32),
        }
    )
    return observation, gym.spaces.Discrete(n_actions)


def ppo_config(
    config: TrainConfig,
    *,
    num_env_runners: int,
    envs_per_runner: int,
    env_config: dict[str, Any],
):
    """The ``PPOConfig`` of a run (see the module doc for the mapping)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from training.rllib_engine.module import MaskedPPOTorchRLModule
    from training.rllib_engine.runner import CardGameEnvRunner, module_to_env_pipeline

    observation_space, action_space = spaces(config)
    batch = rollout_size(config)
    if config.lr_schedule == "linear":
        lr: Any = [[0, config.learning_rate], [config.total_timesteps, 0.0]]
    else:
        lr = config.learning_rate
    return (
        PPOConfig()
        .environment(
            env=None,
            env_config=env_config,
            observation_space=observation_space,
            action_space=action_space,
        )
        # SB3 steps the optimizer without checking every gradient for nan/inf; RLlib's check
        # costs a fifth of an update on this network (measured with cProfile).
        .framework("torch", torch_skip_nan_gradients=True)
        .env_runners(
            env_runner_cls=CardGameEnvRunner,
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=envs_per_runner,
            num_cpus_per_env_runner=1,
            # Each runner collects its share of a train batch per iteration.
            rollout_fragment_length="auto",
            module_to_env_connector=module_to_env_pipeline,
            add_default_connectors_to_module_to_env_pipeline=False,
        )
        .learners(num_learners=0)
        .training(
            lr=lr,
            train_batch_size_per_learner=batch,
            minibatch_size=min(config.batch_size, batch),
            num_epochs=config.n_epochs,
            gamma=config.gamma,
            lambda_=config.gae_lambda,
            clip_param=config.clip_range,
            entropy_coeff=config.ent_coef,
            vf_loss_coeff=config.vf_coef,
            use_kl_loss=False,
            vf_clip_param=float("inf"),
            grad_clip=MAX_GRAD_NORM,
            grad_clip_by="global_norm",
        )
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=MaskedPPOTorchRLModule,
                model_config={
                    "fcnet_hiddens": list(config.net_arch),
                    "fcnet_activation": "tanh",
                    "vf_share_layers": False,
                },
            )
        )
        .debugging(seed=config.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=100)
    )
