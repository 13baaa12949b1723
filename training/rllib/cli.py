"""The command-line options of the Ray engines, added to ``madiao-mao train`` and ``evaluate`` by
``training.cli``, and the dispatch to them (kept here so the CLI module only wires them in)."""

from __future__ import annotations

import argparse
from pathlib import Path

from training.cli_args import non_negative_int, positive_float, positive_int
from training.distributed_evaluation import evaluate_command, require_ray


def add_train_options(train: argparse.ArgumentParser) -> None:
    group = train.add_argument_group("engine (Ray RLlib: docs/scaling-out.md)")
    group.add_argument(
        "--engine",
        choices=("sb3", "rllib"),
        default="sb3",
        help="sb3: MaskablePPO in this process (default); rllib: RLlib PPO with env runners on Ray",
    )
    group.add_argument(
        "--address",
        default=None,
        help="rllib: join this running Ray cluster (HOST:PORT from 'ray start --head', or 'auto'); "
        "default: start a local Ray instance for the run",
    )
    group.add_argument(
        "--num-env-runners",
        type=non_negative_int,
        default=1,
        help="rllib: env-runner actors sampling games (0: sample in the driver)",
    )
    group.add_argument(
        "--envs-per-runner",
        type=positive_int,
        default=None,
        help="rllib: games each env runner steps together (default: --n-envs shared by the runners)",
    )
    group.add_argument(
        "--num-learners",
        type=non_negative_int,
        default=0,
        help="rllib: learner actors (0: the learner runs in the driver process, default; N > 1: "
        "data-parallel learners, torch DDP over gloo, each updating on its N-th of a train batch)",
    )
    group.add_argument(
        "--cpus-per-learner",
        type=positive_float,
        default=1.0,
        help="rllib: CPUs reserved for each learner actor (a fraction lets learners share a core; default 1)",
    )


def add_evaluate_options(evaluate: argparse.ArgumentParser) -> None:
    evaluate.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this process (default); ray: Madiao's duplicate deal blocks sharded over Ray tasks",
    )
    evaluate.add_argument(
        "--address", default=None, help="ray: the running Ray cluster to use (default: a local Ray instance)"
    )


def uses_rllib(args: argparse.Namespace) -> bool:
    """Whether ``train`` runs on RLlib: asked for, or resuming a run RLlib trained."""
    # The engine's run module imports torch and SB3: not with the parser (training.cli imports this).
    from training.rllib.run import is_rllib_run

    if args.engine == "rllib":
        return True
    if (
        args.address is not None
        or args.envs_per_runner is not None
        or args.num_env_runners != 1
        or args.num_learners != 0
        or args.cpus_per_learner != 1.0
    ):
        raise ValueError(
            "--address, --num-env-runners, --envs-per-runner, --num-learners and --cpus-per-learner "
            "need --engine rllib"
        )
    return bool(args.resume) and is_rllib_run(Path(args.resume))


def train(args: argparse.Namespace) -> int:
    from training.rllib.run import run_from_cli  # torch, SB3 (see uses_rllib)

    require_ray()
    run_from_cli(args)
    return 0


def evaluate(args: argparse.Namespace) -> int:
    return evaluate_command(args)
