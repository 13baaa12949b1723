"""The engine's PPO learner: RLlib's torch PPO learner on the torch threads its CPUs allow.

With ``num_learners >= 1`` (``madiao-mao train --engine rllib --num-learners N``) each learner is
a Ray actor of its own, holding ``num_cpus_per_learner`` CPUs; with N > 1 they are data-parallel
(RLlib wraps the module in torch DDP, gradients all-reduced over gloo on the CPU, NCCL on GPUs).
torch would start as many threads as the machine has cores in every one of them, and learners
sharing a machine (or a learner beside env runners) would then fight over the same cores: each
learner actor runs on as many threads as whole CPUs it holds (at least one). The learner in the driver
(``num_learners=0``) keeps the run's ``torch_threads``, set by ``madiao_mao.training.rllib.run``.
"""

from __future__ import annotations

import torch
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner


def learner_threads(num_cpus_per_learner: float | str) -> int:
    """torch threads of a learner actor holding ``num_cpus_per_learner`` CPUs ("auto": RLlib's one)."""
    if num_cpus_per_learner == "auto":
        return 1
    return max(1, int(num_cpus_per_learner))


class CardGamePPOLearner(PPOTorchLearner):
    """``PPOTorchLearner`` whose actors set their torch threads before building (module doc)."""

    def build(self) -> None:
        if self.config.num_learners > 0:
            torch.set_num_threads(learner_threads(self.config.num_cpus_per_learner))
        super().build()
