"""``python -m madiao_mao.benchmarks.batch_size [--game G] [--sizes N,N,...] [--turns T]``: the
CPU time of one batched step per game, at several batch sizes of one game's vector env, the sizes
taking turns in one process.

Why this beside the batched suite's env-steps/s: on a shared machine the wall clock counts the
time other processes held the core, which swamps a difference of 10-20% between two batch sizes.
Here each step is timed on its thread's CPU clock (``time.thread_time_ns``) with the env on one
thread (``threads=1``), and the 10th percentile of the steps' CPU time per game is the cost with
the least interference left in it (a neighbour's memory traffic still counts); the median is
shown beside it. Each size's env steps with the batched suite's random legal policy; the sizes
take turns of about ``--games-per-turn`` game-steps each, so the load's drift falls on all of
them alike. benchmarks/README.md has what these figures showed at N=1024 and N=4096.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Annotated

import numpy as np
import tyro

from madiao_mao.benchmarks.kernels import random_legal_actions
from madiao_mao.benchmarks.subjects import game_subjects, load
from madiao_mao.training.cli_args import check_at_least, parse_dataclass, run_reporting_user_errors

DEFAULT_SIZES = (256, 1024, 4096)
PROG = "python -m madiao_mao.benchmarks.batch_size"


@dataclass(frozen=True)
class SizeCost:
    """The CPU time of one step per game at one batch size."""

    n_envs: int
    #: 10th percentile of the steps' thread CPU time divided by ``n_envs``, nanoseconds.
    p10_ns: float
    median_ns: float
    #: Steps timed.
    steps: int


def step_costs(env_class, sizes: tuple[int, ...], turns: int, games_per_turn: int) -> list[SizeCost]:
    """Each size's CPU time per game of one step (``env_class(n, seed=0, copy=False,
    threads=1)``), the sizes taking ``turns`` turns of ``games_per_turn`` game-steps (at least one
    step), in the order of ``sizes`` and then reversed, alternately."""
    envs = {n: env_class(n, seed=0, copy=False, threads=1) for n in sizes}
    masks = {n: env.reset().action_mask for n, env in envs.items()}
    actions = {n: np.empty(n, dtype=np.int64) for n in sizes}
    samples: dict[int, list[float]] = {n: [] for n in sizes}
    calls = 0

    def one_step(n_envs: int) -> float:
        nonlocal calls
        random_legal_actions(masks[n_envs], calls, actions[n_envs])
        calls += 1
        started = time.thread_time_ns()
        masks[n_envs] = envs[n_envs].step(actions[n_envs]).action_mask
        return (time.thread_time_ns() - started) / n_envs

    for n_envs in sizes:  # untimed: kernels loaded, buffers touched once
        one_step(n_envs)
    for turn in range(turns):
        for n_envs in sizes if turn % 2 == 0 else sizes[::-1]:
            samples[n_envs] += [one_step(n_envs) for _ in range(max(1, games_per_turn // n_envs))]
    return [
        SizeCost(n, float(np.percentile(samples[n], 10)), float(np.median(samples[n])), len(samples[n]))
        for n in sizes
    ]


def table(game: str, costs: list[SizeCost]) -> str:
    """The costs as a Markdown table, each size's speed per game against the first size's."""
    first = costs[0]
    lines = [
        f"| {game} N | CPU ns per game-step, p10 | median | steps | speed vs N={first.n_envs}, p10 |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for cost in costs:
        speed = first.p10_ns / cost.p10_ns
        lines.append(
            f"| {cost.n_envs} | {cost.p10_ns:,.0f} | {cost.median_ns:,.0f} | {cost.steps} | {speed:.2f}× |"
        )
    return "\n".join(lines)


@dataclass
class BatchSizeOptions:
    """CPU time of one batched step per game at several batch sizes of one game's vector env."""

    game: Annotated[str, tyro.conf.arg(metavar="GAME")]
    """The game whose vector env is timed (a registered game's name)."""
    sizes: Annotated[str, tyro.conf.arg(metavar="N,N,...")] = ",".join(map(str, DEFAULT_SIZES))
    """Batch sizes, comma-separated."""
    turns: int = 12
    """Turns each size takes."""
    games_per_turn: int = 40_000
    """Game-steps in one turn."""


def _checked_sizes(options: BatchSizeOptions) -> tuple[int, ...]:
    """The batch sizes of ``options``, checked with the game and counts (a ValueError names the flag)."""
    games = [game for game, _ in game_subjects()]
    if options.game not in games:
        raise ValueError(f"--game must be one of {', '.join(games)}, got {options.game!r}")
    try:
        sizes = tuple(int(size) for size in options.sizes.split(","))
    except ValueError:
        raise ValueError(f"--sizes must be comma-separated integers, got {options.sizes!r}") from None
    if any(size < 1 for size in sizes):
        raise ValueError(f"--sizes must be positive, got {options.sizes!r}")
    check_at_least("--turns", options.turns, 1)
    check_at_least("--games-per-turn", options.games_per_turn, 1)
    return sizes


def main(argv: list[str] | None = None) -> int:
    def body() -> int:
        options = parse_dataclass(BatchSizeOptions, sys.argv[1:] if argv is None else argv, prog=PROG)
        sizes = _checked_sizes(options)
        env_class = load(dict(game_subjects())[options.game].vector_env)
        print(table(options.game, step_costs(env_class, sizes, options.turns, options.games_per_turn)))
        return 0

    return run_reporting_user_errors(PROG, body)


if __name__ == "__main__":
    raise SystemExit(main())
