"""``python -m madiao_mao.benchmarks [--seconds S] [--quick] [--only SUITES] [--output PATH] [--device D]``.

Suites: aec (every game's AEC env, the empty AEC env, PettingZoo classic), batched (vector envs at
N = 1, 64, 1024, 4096), rollout (the games' play-outs, e.g. a bare trick probe, and the search agents'
decisions), memory, startup (cold and warm import + compile, in child processes), peers (RLCard,
OpenSpiel, Pgx when installed), learner (the SB3 engine's PPO update and rollout collection next to
the matmul ceiling of the same run), rllib (the RLlib engine beside the SB3 engine,
``benchmarks/rllib.py``; only when ``--only`` names it, as it starts Ray). The learner and rllib
suites train on the torch device of ``--device`` (``TrainConfig.device``'s values; default "auto": a
CUDA GPU when torch sees one), which the table's header and those rows' notes name; every other
suite runs on the CPU.

Before the first timer starts, every timed code path of the selected aec, batched and rollout
suites runs once (``madiao_mao.benchmarks.timing.warm_up``: each game's AEC env, each vector env at each N,
the play-outs), so Numba compiles, or loads from its cache, every kernel outside the timings even
in a fresh clone; the startup suite measures that cold start on purpose, in child processes.

The table is printed; a full run (every suite, no ``--quick``, no ``--only``) also writes it to
``benchmarks/results/latest.md``, the committed results. A quick or partial run writes a file
only when ``--output`` names one. Bad arguments end the run before any measurement, with one line
on stderr and status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import math
import os
import pathlib
import sys
import time
from dataclasses import dataclass
from typing import Annotated

import tyro

from cardgame_core.runtime import library_versions, machine_description
from madiao_mao.benchmarks import aec, batched, learner, memory, peers, rollout, startup, timing
from madiao_mao.benchmarks import rllib as rllib_suite
from madiao_mao.benchmarks.targets import evaluate
from madiao_mao.benchmarks.timing import Result
from madiao_mao.training.cli_args import check_output_file, parse_dataclass, run_reporting_user_errors
from madiao_mao.training.config import ConfigError, check_device_name, resolve_device

SUITES = ("aec", "batched", "rollout", "memory", "startup", "peers", "learner", "rllib")
#: Suites only run when --only names them (the RLlib engine starts Ray: benchmarks/rllib.py).
ON_REQUEST = ("rllib",)
#: Suites that train a policy, on the torch device of --device.
DEVICE_SUITES = ("learner", "rllib")
DEFAULT_OUTPUT = pathlib.Path(__file__).with_name("results") / "latest.md"
PROG = "python -m madiao_mao.benchmarks"


@dataclass
class BenchOptions:
    """Time every game's envs, play-outs and learner against their goals; print the table (a full
    run also writes benchmarks/results/latest.md)."""

    seconds: float = 3.0
    """Time budget of each measurement."""
    quick: Annotated[bool, tyro.conf.FlagCreatePairsOff] = False
    """Smoke test: 0.1 s budgets, N = 1 and 64; no startup, peers or learner suite unless --only
    names them (the learner suite then on 16 games and rollouts of 8 steps)."""
    only: Annotated[str | None, tyro.conf.arg(metavar="SUITES")] = None
    """Comma-separated suites to run, from: aec, batched, rollout, memory, startup, peers, learner,
    rllib."""
    output: Annotated[pathlib.Path | None, tyro.conf.arg(metavar="FILE")] = None
    """Markdown file to write (default: results/latest.md for a full run, none for --quick or
    --only)."""
    device: str = "auto"
    """Torch device of the learner and rllib suites: auto (a CUDA GPU when torch sees one, else the
    CPU), cpu, cuda or cuda:N."""


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The options (``BenchOptions``) checked, with the suites to run (``suites``) and the learner's
    torch device (``torch_device``, None when no suite trains); a bad one is a ValueError."""
    options = parse_dataclass(BenchOptions, sys.argv[1:] if argv is None else argv, prog=PROG)
    arguments = argparse.Namespace(**dataclasses.asdict(options))
    if not math.isfinite(arguments.seconds) or arguments.seconds <= 0:
        raise ValueError(f"--seconds must be a number > 0, got {arguments.seconds}")
    if arguments.only is None:
        # The quick smoke test leaves out the slow child-process suites (compiles, JAX).
        arguments.suites = [
            s
            for s in SUITES
            if s not in ON_REQUEST and not (arguments.quick and s in ("startup", "peers", "learner"))
        ]
    else:
        arguments.suites = [s.strip() for s in arguments.only.split(",") if s.strip()]
        unknown = [s for s in arguments.suites if s not in SUITES]
        if unknown:
            raise ValueError(f"unknown suite(s) {', '.join(unknown)}; suites are {', '.join(SUITES)}")
    try:
        check_device_name(arguments.device)
        # torch only for the suites that train (the memory suite measures this process).
        trains = set(arguments.suites) & set(DEVICE_SUITES)
        arguments.torch_device = resolve_device(arguments.device) if trains else None
    except ConfigError as error:
        raise ValueError(f"--device: {error}") from None
    if arguments.quick:
        arguments.seconds = min(arguments.seconds, 0.1)
    if arguments.output is None and not arguments.quick and arguments.only is None:
        # Only a full run may replace the committed results; smoke and partial runs print only.
        arguments.output = DEFAULT_OUTPUT
    check_output_file(None if arguments.output is None else str(arguments.output), "--output")
    return arguments


def load_average() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def format_value(result: Result) -> str:
    if result.value is None:
        return "—"
    if result.unit == "s":
        return f"{result.value:.2f} s"
    if result.unit == "bytes":
        return f"{result.value:,.0f} B"
    return f"{result.value:,.0f} {result.unit}"


def render(results: list[Result], header: dict[str, str]) -> str:
    lines = [f"# Benchmark results ({header['date']})", ""]
    lines += [f"- {key}: {value}" for key, value in header.items() if key != "date"]
    lines += ["", "| suite | system | value | note |", "| --- | --- | ---: | --- |"]
    for r in results:
        lines.append(f"| {r.suite} | {r.system} | {format_value(r)} | {r.note} |")
    lines += [
        "",
        "## Targets (ratios within this run)",
        "",
        "| target | goal | achieved | status |",
        "| --- | --- | --- | --- |",
    ]
    lines += [
        f"| {name} | {goal} | {achieved} | {status} |" for name, goal, achieved, status in evaluate(results)
    ]
    return "\n".join(lines) + "\n"


TIMED_SUITES = ("aec", "batched", "rollout")


def timed_workloads(suite: str, arguments: argparse.Namespace, batch_sizes: tuple[int, ...]):
    """The workloads of a timed suite (built, not yet run)."""
    if suite == "aec":
        return aec.workloads(with_peers="peers" in arguments.suites)
    if suite == "batched":
        return batched.workloads(batch_sizes)
    return rollout.workloads()


def main(argv: list[str] | None = None) -> int:
    return run_reporting_user_errors(PROG, lambda: _run(parse_arguments(argv), argv))


def _run(arguments: argparse.Namespace, argv: list[str] | None) -> int:
    batch_sizes = (1, 64) if arguments.quick else batched.BATCH_SIZES
    header = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_description(),
        "libraries": ", ".join(f"{name} {found}" for name, found in library_versions().items()),
        "load average at start (1/5/15 min)": load_average(),
        "budget per measurement": f"{arguments.seconds:g} s",
        "command": "python -m madiao_mao.benchmarks " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    if arguments.torch_device is not None:
        header["learner device"] = f"{arguments.torch_device} (--device {arguments.device})"
    started = time.perf_counter()
    workloads = {
        suite: timed_workloads(suite, arguments, batch_sizes)
        for suite in arguments.suites
        if suite in TIMED_SUITES
    }
    warm = timing.warm_up([workload for suite in workloads.values() for workload in suite])
    print(f"  warm-up (every timed code path once, compiles included): {warm:.0f} s", file=sys.stderr)
    header["warm-up before the timings"] = f"{warm:.1f} s"
    results: list[Result] = []
    for suite in arguments.suites:
        if suite in workloads:
            results += timing.measure_all(workloads[suite], arguments.seconds)
        elif suite == "memory":
            results += memory.run()
        elif suite == "startup":
            results += startup.run()
        elif suite == "peers":
            results += peers.run(arguments.seconds)
        elif suite == "learner":
            results += learner.run(arguments.seconds, arguments.torch_device, quick=arguments.quick)
            results += learner.training_run_rows(arguments.torch_device, quick=arguments.quick)
        elif suite == "rllib":
            results += rllib_suite.run(arguments.seconds, arguments.torch_device)
        print(f"  {suite}: done after {time.perf_counter() - started:.0f} s", file=sys.stderr)
    header["load average at end"] = load_average()
    header["wall time"] = f"{time.perf_counter() - started:.0f} s"
    table = render(results, header)
    print(table)
    if arguments.output is not None:
        arguments.output.parent.mkdir(parents=True, exist_ok=True)
        arguments.output.write_text(table)
        print(f"  written to {arguments.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
