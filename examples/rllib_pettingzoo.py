"""RLlib 2.60: PPO on Madiao (or Mao) through RLlib's own ``PettingZooEnv`` wrapper, one policy
shared by every seat, with RLlib's action-masking RLModule (``ActionMaskingTorchRLModule`` from
``ray.rllib.examples``), so that the policy only ever samples legal actions.

That module reads the observation as ``{"observations": ..., "action_mask": ...}``; the games
name the vector ``"observation"`` (PettingZoo's convention) and give int8 masks (Madiao also int8
observations), so :class:`RLlibMaskedObservations`, a PettingZoo wrapper, renames the key and
casts both to float32 for the torch module. RLlib's env check, which samples actions without the
mask, passes because ``env()`` ends the game on an illegal action as PettingZoo's classic games do.

    python examples/rllib_pettingzoo.py --game madiao --iterations 20

``train(game, iterations)`` is what the command runs (a test runs one iteration). It starts a
local Ray instance unless the caller is already connected to one, and stops what it started.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import ray
from gymnasium import spaces
from pettingzoo.utils.wrappers import BaseWrapper
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
from ray.tune.registry import register_env

from madiao_env import madiao_v0
from mao_env import mao_v0

#: The PettingZoo env of each game (Mao: three players; the step cap keeps random games short).
GAMES = {
    "madiao": lambda: madiao_v0.env(),
    "mao": lambda: mao_v0.env(n_players=3, max_steps=300),
}
SHARED_POLICY = "shared"


class RLlibMaskedObservations(BaseWrapper):
    """The observation as RLlib's action-masking module reads it: ``{"observations": float32,
    "action_mask": float32}``."""

    def observation_space(self, agent: str) -> spaces.Dict:
        inner = self.env.observation_space(agent)
        vector, mask = inner["observation"], inner["action_mask"]
        return spaces.Dict(
            {
                "observations": spaces.Box(
                    vector.low.astype(np.float32), vector.high.astype(np.float32), dtype=np.float32
                ),
                "action_mask": spaces.Box(0.0, 1.0, mask.shape, np.float32),
            }
        )

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        observed = self.env.observe(agent)
        return {
            "observations": observed["observation"].astype(np.float32),
            "action_mask": observed["action_mask"].astype(np.float32),
        }


def ppo_config(game: str, seed: int = 0) -> PPOConfig:
    """PPO for ``game``: one shared masked policy, sampled in this process (no env-runner
    actors), small batches."""
    register_env(game, lambda _config: PettingZooEnv(RLlibMaskedObservations(GAMES[game]())))
    module = RLModuleSpec(
        module_class=ActionMaskingTorchRLModule,
        model_config={"fcnet_hiddens": [64, 64], "head_fcnet_hiddens": [64]},
    )
    return (
        PPOConfig()
        .environment(game)
        .multi_agent(
            policies={SHARED_POLICY},
            policy_mapping_fn=lambda agent_id, episode, **kwargs: SHARED_POLICY,
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={SHARED_POLICY: module}))
        .env_runners(num_env_runners=0, rollout_fragment_length=128)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=2, lr=3e-4)
        .debugging(seed=seed)
    )


def train(game: str = "madiao", iterations: int = 20, seed: int = 0) -> list[dict[str, Any]]:
    """Run ``iterations`` PPO iterations; one summary per iteration (env steps sampled, the
    shared policy's loss, the mean episode return of player_0 where RLlib reports one)."""
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    algo = ppo_config(game, seed).build_algo()
    summaries = []
    try:
        for _ in range(iterations):
            result = algo.train()
            runners = result["env_runners"]
            player_0_return = runners.get("agent_episode_returns_mean", {}).get("player_0")
            summaries.append(
                {
                    "env_steps": int(runners["num_env_steps_sampled"]),
                    "policy_loss": float(result["learners"][SHARED_POLICY]["policy_loss"]),
                    "player_0_return": None if player_0_return is None else float(player_0_return),
                }
            )
    finally:
        algo.stop()
        if started_ray:
            ray.shutdown()
    return summaries


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", choices=sorted(GAMES), default="madiao")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for index, summary in enumerate(train(args.game, args.iterations, args.seed), start=1):
        print(f"iteration {index}: {summary}")


if __name__ == "__main__":
    main()
