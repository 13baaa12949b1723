"""The run's ``TrainConfig`` as an RLlib ``PPOConfig`` (new API stack), field by field.

| TrainConfig | RLlib |
| --- | --- |
| learning_rate, lr_schedule | ``lr`` (a constant, or ``[[0, lr], [steps_at_end, 0]]``) |
| n_envs * n_steps (one SB3 rollout) | ``train_batch_size_per_learner`` |
| batch_size, n_epochs | ``minibatch_size``, ``num_epochs`` |
| gamma, gae_lambda, clip_range | ``gamma``, ``lambda_``, ``clip_param`` |
| ent_coef, vf_coef | ``entropy_coeff``, ``vf_loss_coeff`` |
| net_arch | ``fcnet_hiddens`` (tanh, separate policy and value nets: SB3's MlpPolicy) |
| seed | ``debugging(seed=...)`` |

The engine's own settings: ``num_env_runners``/``envs_per_runner`` (``env_runners``) and
``num_learners``/``cpus_per_learner`` (``learners``: 0 learners is the one learner in the driver;
N >= 1 learner actors, data-parallel when N > 1, ``madiao_mao.training.rllib.learner``).
``device`` (the run's ``resolve_device``) is ``learners(num_gpus_per_learner=...)``: 0 on the
CPU, as always; 1 on a GPU (each learner actor holds one GPU that Ray assigns it; the learner in
the driver takes GPU ``local_gpu_idx``, N of "cuda:N"). The env runners always sample on the
CPU. The train batch is the run's rollout in every case: with N learners each updates on its N-th of it
(``train_batch_size_per_learner``) and each minibatch of ``batch_size`` is split the same way
(DDP averages the learners' gradients), so a run takes the same PPO steps for any N.

As in SB3's PPO: no KL penalty, no value clipping, gradients clipped at a global norm of 0.5, no
per-step check of the gradients for nan (``torch_skip_nan_gradients``).
Policy features (``features``): "flat", and Madiao's "cards" (the unseen/boss card planes
appended in the module: ``module.CARD_FEATURES_KEY``); Mao's "rules"/"memory"/"belief" are SB3
policies of their own, for which the engine reads the flat observation (``rllib_features``: a new run's
config is saved with the features it used).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from madiao_mao.agents.madiao.features import summary_layout
from madiao_mao.training.config import TrainConfig, rollout_size, steps_at_end
from madiao_mao.training.game_spec import game_spec

#: SB3's PPO default (``max_grad_norm``).
MAX_GRAD_NORM = 0.5
#: The policy features the engine's module builds (``madiao_mao.training.game_spec.POLICY_FEATURES`` names).
RLLIB_FEATURES = ("flat", "cards")


def rllib_features(config: TrainConfig) -> str:
    """The policy features an RLlib run of ``config`` uses: its own if the module builds them,
    else the flat observation."""
    return config.features if config.features in RLLIB_FEATURES else "flat"


def learner_gpus(device: str) -> dict[str, int]:
    """The GPU settings of ``PPOConfig.learners`` for a torch ``device`` ("cpu", "cuda", "cuda:N"):
    RLlib's defaults (no GPU) on the CPU."""
    if device == "cpu":
        return {"num_gpus_per_learner": 0, "local_gpu_idx": 0}
    return {"num_gpus_per_learner": 1, "local_gpu_idx": int(device.partition(":")[2] or 0)}


def spaces(config: TrainConfig) -> tuple[gym.spaces.Dict, gym.spaces.Discrete]:
    """The observation (dict with the action mask) and action spaces of a config's games."""
    probe = game_spec(config.game).make_vector_env(config, 1, 0)
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
    num_learners: int = 0,
    cpus_per_learner: float = 1.0,
    device: str = "cpu",
):
    """The ``PPOConfig`` of a run (see the module doc for the mapping)."""
    # Ray, and the engine's modules that import it, only for a run that uses it (run.py imports
    # this module, and the CLI reads run.is_rllib_run without Ray).
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from madiao_mao.training.rllib.learner import CardGamePPOLearner
    from madiao_mao.training.rllib.module import CARD_FEATURES_KEY, MaskedPPOTorchRLModule
    from madiao_mao.training.rllib.runner import CardGameEnvRunner, module_to_env_pipeline

    observation_space, action_space = spaces(config)
    model_config: dict[str, Any] = {
        "fcnet_hiddens": list(config.net_arch),
        "fcnet_activation": "tanh",
        "vf_share_layers": False,
    }
    if rllib_features(config) == "cards":
        model_config[CARD_FEATURES_KEY] = summary_layout()
    # The run's rollout, split between the data-parallel learners (each one's share of it).
    batch = max(1, rollout_size(config) // max(1, num_learners))
    if config.lr_schedule == "linear":
        # RLlib sets the rate after each update from the steps sampled so far, so update k runs at
        # the rate of step (k - 1) * rollout: the SB3 engine's schedule
        # (madiao_mao.training.sb3.model.learning_rate_schedule).
        lr: Any = [[0, config.learning_rate], [steps_at_end(config, 0), 0.0]]
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
        .learners(
            num_learners=num_learners,
            num_cpus_per_learner=cpus_per_learner,
            learner_class=CardGamePPOLearner,
            **learner_gpus(device),
        )
        .training(
            lr=lr,
            train_batch_size_per_learner=batch,
            # Each learner's share of a minibatch: DDP averages the N learners' gradients, so a
            # gradient step still sees batch_size samples.
            minibatch_size=max(1, min(config.batch_size // max(1, num_learners), batch)),
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
            rl_module_spec=RLModuleSpec(module_class=MaskedPPOTorchRLModule, model_config=model_config)
        )
        .debugging(seed=config.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=100)
    )
