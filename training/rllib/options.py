"""Where and how wide an RLlib run samples (``EngineOptions``): the ``--address``,
``--num-env-runners``, ``--envs-per-runner``, ``--num-learners`` and ``--cpus-per-learner`` flags of
``madiao-mao train --engine rllib``, generated from this dataclass. Kept apart from ``run`` so
that the command line reads it without importing the trainer."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from madiao_mao.training.config import ConfigError

if TYPE_CHECKING:
    from madiao_mao.training.config import TrainConfig


@dataclasses.dataclass(frozen=True)
class EngineOptions:
    """Where and how wide the run samples."""

    address: str | None = None
    """rllib: a running Ray cluster to join (``ray start --head`` prints it, or "auto"); None: a local
    Ray instance for the run."""
    num_env_runners: int = 1
    """rllib: env-runner actors sampling games (0: sample in the driver)."""
    envs_per_runner: int | None = None
    """rllib: games each env runner steps together; None: the config's ``n_envs`` shared by the
    runners."""
    num_learners: int = 0
    """rllib: learner actors (0: the one learner in the driver process; N > 1: data-parallel, torch DDP
    over gloo, each updating on its N-th of every train batch)."""
    cpus_per_learner: float = 1.0
    """rllib: CPUs Ray reserves for each learner actor (a fraction lets learners share a core); a
    learner actor runs on as many torch threads as whole CPUs it holds (at least one)."""

    def games_per_runner(self, config: TrainConfig) -> int:
        if self.envs_per_runner is not None:
            return self.envs_per_runner
        return max(1, config.n_envs // max(1, self.num_env_runners))

    def check_device(self, device: str) -> None:
        """On a GPU (``device``, the run's ``resolve_device``) each learner actor holds one GPU of
        its own: a local Ray instance (no ``address``) has the GPUs torch sees here, and Ray would
        wait for ever for more, so more learner actors than that are a ConfigError."""
        if device == "cpu" or self.address is not None or self.num_learners <= 1:
            return
        # Imported here: keeps torch off this module's import path.
        import torch

        visible = torch.cuda.device_count()
        if self.num_learners > visible:
            raise ConfigError(
                "num_learners",
                f"num_learners {self.num_learners} on {device} needs a GPU per learner actor, and torch "
                f"sees {visible} here (give fewer learners, or --address of a cluster with more GPUs)",
            )

    def check(self) -> None:
        """Every option's value, checked; a bad one is a ConfigError naming it."""
        _check_int_at_least("num_env_runners", self.num_env_runners, 0)
        if self.envs_per_runner is not None:
            _check_int_at_least("envs_per_runner", self.envs_per_runner, 1)
        _check_int_at_least("num_learners", self.num_learners, 0)
        if (
            isinstance(self.cpus_per_learner, bool)
            or not isinstance(self.cpus_per_learner, (int, float))
            or not 0 < self.cpus_per_learner < float("inf")
        ):
            raise ConfigError(
                "cpus_per_learner", f"cpus_per_learner must be a number > 0, got {self.cpus_per_learner!r}"
            )


def _check_int_at_least(name: str, value: Any, minimum: int) -> None:
    """A ConfigError naming ``name`` unless ``value`` is an integer (not a bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        wanted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ConfigError(name, f"{name} must be {wanted}, got {value!r}")
