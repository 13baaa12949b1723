"""Tianshou 2.0: DQN learns one seat of Madiao (or Mao) against random players.

Everything is Tianshou's own: ``PettingZooEnv`` around the game's ``env()``, ``Collector`` and
``VectorReplayBuffer``, ``DQN`` for seat 0 and ``MARLRandomDiscreteMaskedOffPolicyAlgorithm``
for the other seats, ``MultiAgentOffPolicyAlgorithm`` dispatching each decision to its seat.
Tianshou reads ``observation["action_mask"]`` as the mask, so every seat chooses legal actions
only; the infos have the same keys at every step, which is what lets its buffer stack them.

    python examples/tianshou_dqn.py --game madiao --steps 20000

``train(game, steps)`` is what the command runs (a test runs it with a tiny budget).
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from tianshou.algorithm import DQN, MARLRandomDiscreteMaskedOffPolicyAlgorithm, MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net

from madiao_env import madiao_v0
from mao_env import mao_v0

#: The PettingZoo env of each game (Mao: three players; the step cap keeps random games short).
GAMES = {
    "madiao": lambda: madiao_v0.env(),
    "mao": lambda: mao_v0.env(n_players=3, max_steps=300),
}
LEARNER_SEAT = 0


def make_env(game: str) -> PettingZooEnv:
    return PettingZooEnv(GAMES[game]())


def train(
    game: str = "madiao", steps: int = 20_000, n_envs: int = 4, eval_episodes: int = 200, seed: int = 0
) -> dict:
    """Train seat 0 for ``steps`` env steps (every seat's decisions count), then play
    ``eval_episodes`` greedy episodes; returns the counts and the learner's mean return there."""
    torch.manual_seed(seed)
    env = make_env(game)
    observation_shape = env.observation_space["observation"].shape
    net = Net(state_shape=observation_shape, action_shape=env.action_space.n, hidden_sizes=[128, 128])
    policy = DiscreteQLearningPolicy(
        model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.0
    )
    learner = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), gamma=0.99, target_update_freq=200)
    players = [
        learner if seat == LEARNER_SEAT else MARLRandomDiscreteMaskedOffPolicyAlgorithm(env.action_space)
        for seat in range(len(env.agents))
    ]
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=players, env=env)

    train_envs = DummyVectorEnv([lambda: make_env(game) for _ in range(n_envs)])
    train_envs.seed(seed)
    buffer = VectorReplayBuffer(max(steps, 1_000), n_envs)
    collector = Collector[CollectStats](algorithm, train_envs, buffer, exploration_noise=True)
    collector.reset()
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=collector,
            max_epochs=1,
            epoch_num_steps=steps,
            collection_step_num_env_steps=8 * n_envs,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.25,
            multi_agent_return_reduction=lambda returns: returns[:, LEARNER_SEAT],
            show_progress=False,
            verbose=False,
        )
    )

    eval_envs = DummyVectorEnv([lambda: make_env(game) for _ in range(n_envs)])
    eval_envs.seed(seed + 1)
    evaluation = Collector[CollectStats](algorithm, eval_envs).collect(
        n_episode=eval_episodes, reset_before_collect=True
    )
    return {
        "env_steps": int(result.train_step),
        "gradient_updates": int(result.update_step),
        "episodes": int(evaluation.n_collected_episodes),
        "learner_mean_return": float(np.mean(evaluation.returns[:, LEARNER_SEAT])),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", choices=sorted(GAMES), default="madiao")
    parser.add_argument("--steps", type=int, default=20_000, help="env steps to train for")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    summary = train(args.game, args.steps, seed=args.seed)
    print(
        f"{args.game}: {summary['env_steps']} env steps, {summary['gradient_updates']} updates; "
        f"seat {LEARNER_SEAT}'s mean return over {summary['episodes']} greedy episodes against "
        f"random players: {summary['learner_mean_return']:+.3f}"
    )


if __name__ == "__main__":
    main()
