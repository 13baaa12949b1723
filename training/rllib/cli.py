"""The Ray engines' side of the command line: whether ``madiao-mao train`` runs on RLlib, the
RLlib training call, and ``madiao-mao evaluate --engine ray`` (kept here so the CLI modules only
wire them in; the RLlib flags of ``train`` are generated from ``EngineOptions``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from madiao_mao.training.config import TrainConfig
from madiao_mao.training.distributed_evaluation import evaluate_command, require_ray
from madiao_mao.training.rllib.options import EngineOptions
from madiao_mao.training.run_folder import RLLIB_ENGINE


def uses_rllib(engine: str, options: EngineOptions, resume: str | None) -> bool:
    """Whether ``train`` runs on RLlib: asked for, or resuming a run RLlib trained; RLlib options
    given to the SB3 engine are an error (they would change nothing)."""
    # The engine's run module imports torch and SB3: not with the parser (madiao_mao.cli imports
    # this).
    from madiao_mao.training.rllib.run import is_rllib_run

    if engine == RLLIB_ENGINE:
        return True
    if options != EngineOptions():
        raise ValueError(
            "--address, --num-env-runners, --envs-per-runner, --num-learners and --cpus-per-learner "
            "need --engine rllib"
        )
    return bool(resume) and is_rllib_run(Path(resume))


def train(
    config: TrainConfig | None,
    options: EngineOptions,
    *,
    resume: str | None,
    total_timesteps: int | None,
    quiet: bool,
    torch_threads: int | None = None,
) -> Path:
    """An RLlib run (``madiao_mao.training.rllib.run.train_rllib``), after checking that Ray is here."""
    from madiao_mao.training.rllib.run import train_rllib  # torch, SB3 (see uses_rllib)

    require_ray()
    return train_rllib(
        config,
        resume,
        options=options,
        total_timesteps=total_timesteps,
        torch_threads=torch_threads,
        quiet=quiet,
    )


def evaluate(args: argparse.Namespace) -> int:
    return evaluate_command(args)
