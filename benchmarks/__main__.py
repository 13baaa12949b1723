"""``python -m benchmarks [--seconds S] [--quick] [--only SUITES] [--output PATH]``.

Suites: aec (both games' AEC envs, the empty AEC env, PettingZoo classic), batched (vector envs at
N = 1, 64, 1024, 4096), rollout (Madiao play-outs, bare trick probe), memory, startup (cold and
warm import + compile, in child processes), peers (RLCard, OpenSpiel, Pgx when installed).
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import platform
import sys
import time

from benchmarks import aec, batched, memory, peers, rollout, startup
from benchmarks.targets import evaluate
from benchmarks.timing import Result

SUITES = ("aec", "batched", "rollout", "memory", "startup", "peers")
DEFAULT_OUTPUT = pathlib.Path(__file__).with_name("results") / "latest.md"


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[1])
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="time budget of each measurement (default 3)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: 0.1 s budgets, N = 1 and 64, no startup or peers suite unless --only names them",
    )
    parser.add_argument(
        "--only", default=None, help=f"comma-separated suites to run, from: {', '.join(SUITES)}"
    )
    parser.add_argument("--output", type=pathlib.Path, default=DEFAULT_OUTPUT, help="markdown file to write")
    arguments = parser.parse_args(argv)
    if arguments.seconds <= 0:
        parser.error(f"--seconds must be > 0, got {arguments.seconds}")
    if arguments.only is None:
        # The quick smoke test leaves out the slow child-process suites (compiles, JAX).
        arguments.suites = [s for s in SUITES if not (arguments.quick and s in ("startup", "peers"))]
    else:
        arguments.suites = [s.strip() for s in arguments.only.split(",") if s.strip()]
        unknown = [s for s in arguments.suites if s not in SUITES]
        if unknown:
            parser.error(f"unknown suite(s) {', '.join(unknown)}; suites are {', '.join(SUITES)}")
    if arguments.quick:
        arguments.seconds = min(arguments.seconds, 0.1)
    return arguments


def machine_description() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical cores, Python {platform.python_version()}, {platform.system()}"


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


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    batch_sizes = (1, 64) if arguments.quick else batched.BATCH_SIZES
    header = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_description(),
        "load average at start (1/5/15 min)": load_average(),
        "budget per measurement": f"{arguments.seconds:g} s",
        "command": "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    started = time.perf_counter()
    results: list[Result] = []
    for suite in arguments.suites:
        if suite == "aec":
            results += aec.run(arguments.seconds, with_peers="peers" in arguments.suites)
        elif suite == "batched":
            results += batched.run(arguments.seconds, batch_sizes)
        elif suite == "rollout":
            results += rollout.run(arguments.seconds)
        elif suite == "memory":
            results += memory.run()
        elif suite == "startup":
            results += startup.run()
        elif suite == "peers":
            results += peers.run(arguments.seconds)
        print(f"  {suite}: done after {time.perf_counter() - started:.0f} s", file=sys.stderr)
    header["load average at end"] = load_average()
    header["wall time"] = f"{time.perf_counter() - started:.0f} s"
    table = render(results, header)
    print(table)
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
