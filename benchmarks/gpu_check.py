"""``python -m madiao_mao.benchmarks.gpu_check``: the learner on a CUDA GPU against the same
machine's CPU, in one table, in under 5 minutes, downloading nothing.

Run it on a machine with a CUDA GPU where the project is installed (``pip install -e ".[train]"``):

    python -m madiao_mao.benchmarks.gpu_check            # GPU ("cuda") against the CPU
    python -m madiao_mao.benchmarks.gpu_check --quick    # a smoke test: tiny runs, no learner suite

What it measures, on the GPU and then on the CPU:

- the learner suite (``madiao_mao.benchmarks.learner``: the SB3 and fast engines' PPO update and
  rollout collection on the default model, beside the matmul ceiling);
- a short training run of every registered game with each engine (``sb3``, ``fast``) at the
  game's default config (one rollout, no warm start, no evaluation), and wide runs
  (``--n-envs 4096 --n-steps 4 --batch-size 8192``, where a GPU can pay off) with the fast engine: learner
  steps/s as the run reports it, and where the time went (env, opponents, PPO updates: on the GPU
  the updates' share is the GPU's); each wide run again with its games in ``WIDE_ENV_WORKERS``
  worker processes (``--env-workers``), which play the live policy on the CPU.

The table has one row per measure with its GPU and CPU figures and their ratio. Runs are written
to a temporary folder, removed at the end. ``--device cpu`` compares the CPU with itself (what
the tests run, as CI has no GPU).
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from madiao_mao.benchmarks import learner
from madiao_mao.training.cli_args import parse_dataclass, run_reporting_user_errors
from madiao_mao.training.config import TrainConfig, resolve_device
from madiao_mao.training.env_workers import fork_available
from madiao_mao.training.game_spec import GAME_SPECS

PROG = "python -m madiao_mao.benchmarks.gpu_check"
ENGINES = learner.ENGINES
#: The wide setting of the fast engine's extra rows: many games per step, large minibatches
#: (rollouts of 16,384 learner steps, twice a default one of 8,192).
WIDE = {"n_envs": 4096, "n_steps": 4, "batch_size": 8192}
#: Worker processes of the wide run timed again with its games in shards (``--env-workers``):
#: the rollout's Python on that many cores while the update is the GPU's.
WIDE_ENV_WORKERS = 8
#: Rollouts per training run: one, so that every game's runs on both devices fit the 5 minutes
#: (the slowest game's default learns at hundreds of learner steps/s).
ROLLOUTS = 1


@dataclasses.dataclass(frozen=True)
class Row:
    """One measure on the GPU and on the CPU."""

    what: str
    unit: str
    gpu: float
    cpu: float
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.gpu / self.cpu if self.cpu else float("nan")


@dataclass
class GpuCheckOptions:
    """The learner on a CUDA GPU against the same runs on the CPU."""

    device: str = "cuda"
    """The GPU to measure (cpu: a dry run)."""
    seconds: float = 2.0
    """Time budget of each learner-suite measurement."""
    quick: Annotated[bool, tyro.conf.FlagCreatePairsOff] = False
    """Smoke test: tiny training runs (16 games), no learner suite."""

    def check(self) -> None:
        if not self.seconds > 0:
            raise ValueError(f"--seconds must be > 0, got {self.seconds}")


def training_configs(quick: bool, runs_dir: Path) -> list[tuple[str, str, TrainConfig]]:
    """The training runs to measure: each game's default config with each engine, then the wide
    setting of each game with the fast engine (``quick``: 16 games, rollouts of 8 steps)."""
    runs = []
    for game in GAME_SPECS:
        base = TrainConfig(game=game)
        settings = learner.QUICK_RUN if quick else {}
        default = learner.short_training_config(base, runs_dir, settings, ROLLOUTS)
        runs += [(f"{game} default, {engine}", engine, default) for engine in ENGINES]
        wide = {"n_envs": 32, "n_steps": 8, "batch_size": 128} if quick else WIDE
        label = f"{game} n_envs {wide['n_envs']}, batch {wide['batch_size']}, fast"
        runs.append((label, "fast", learner.short_training_config(base, runs_dir, wide, ROLLOUTS)))
        if fork_available():
            workers = {**wide, "env_workers": 2 if quick else WIDE_ENV_WORKERS}
            sharded = learner.short_training_config(base, runs_dir, workers, ROLLOUTS)
            runs.append((f"{label}, {workers['env_workers']} env workers", "fast", sharded))
    return runs


def measure(device: str, quick: bool, seconds: float, runs_dir: Path) -> dict[str, tuple[float, str, str]]:
    """Every measure on torch ``device``: name -> (value, unit, note)."""
    found: dict[str, tuple[float, str, str]] = {}
    if not quick:
        for result in learner.run(seconds, device):
            found[f"learner suite: {result.system}"] = (result.value, result.unit, "")
    for label, engine, config in training_configs(quick, runs_dir):
        speed = learner.training_run_speed(dataclasses.replace(config, device=device), engine)
        found[f"training run: {label}"] = (speed["sps"], "learner steps/s", learner.time_shares(speed))
    return found


def render(rows: list[Row], device: str, seconds: float) -> str:
    lines = [
        f"# GPU check: {device} against the CPU ({seconds:.0f} s of measuring)",
        "",
        f"| measure | unit | {device} | cpu | {device} / cpu | where the time went ({device}; cpu) |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row.what} | {row.unit} | {row.gpu:,.0f} | {row.cpu:,.0f} | {row.ratio:.2f}x | {row.note} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        options = parse_dataclass(GpuCheckOptions, sys.argv[1:] if argv is None else argv, prog=PROG)
        options.check()
        return _run(options)

    return run_reporting_user_errors(PROG, body)


def _run(arguments: GpuCheckOptions) -> int:
    device = resolve_device(arguments.device)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as folder:
        on_device = measure(
            device, arguments.quick, arguments.seconds, Path(folder) / device.replace(":", "_")
        )
        on_cpu = measure("cpu", arguments.quick, arguments.seconds, Path(folder) / "cpu")
    rows = []
    for name, (value, unit, note) in on_device.items():
        cpu_value, _, cpu_note = on_cpu[name]
        rows.append(Row(name, unit, value, cpu_value, f"{note}; {cpu_note}" if note else ""))
    print(render(rows, device, time.perf_counter() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
