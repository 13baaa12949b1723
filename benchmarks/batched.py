"""Batched env-steps/s of both games' vector envs, observations and masks included.

The loop a self-play trainer runs: read the masks, pick one random legal action per game (a Numba
kernel, counted in the time, like Pgx's jitted random policy), step all games (auto-reset on).
The env is built with ``copy=False`` so the figure is the env's own cost, not numpy copies.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np

from benchmarks.kernels import random_legal_actions
from benchmarks.timing import Result, Workload, measure, unavailable, warm_up

BATCH_SIZES = (1, 64, 1024, 4096)
VECTOR_ENVS = {
    "madiao": ("madiao_env.vector", "MadiaoVectorEnv"),
    "mao": ("mao_env.vector", "MaoVectorEnv"),
}


def vector_env_class(game: str):
    """The game's vector env class, or raise ImportError when that package is not built yet."""
    module_name, class_name = VECTOR_ENVS[game]
    return getattr(importlib.import_module(module_name), class_name)


def vector_step_body(env_class, n_envs: int) -> Callable[[], int]:
    """A body making one batched step of ``n_envs`` games (random legal actions); returns N."""
    env = env_class(n_envs, seed=0, copy=False)
    step = env.reset()
    actions = np.empty(n_envs, dtype=np.int64)
    calls = 0

    def one_call() -> int:
        nonlocal step, calls
        random_legal_actions(step.action_mask, calls, actions)
        step = env.step(actions)
        calls += 1
        return n_envs

    return one_call


def _obs_and_masks(calls_per_second: float) -> str:
    return "obs + masks"


def workloads(batch_sizes: tuple[int, ...] = BATCH_SIZES, games=("madiao", "mao")) -> list[Workload]:
    """One batched step per body call, for each game and each N (every N is its own compiled
    shape of work, so each is warmed up)."""
    found = []
    for game in games:
        try:
            env_class = vector_env_class(game)
        except (ImportError, AttributeError) as error:
            for n_envs in batch_sizes:
                found.append(
                    Workload(
                        "batched",
                        f"{game} vector N={n_envs}",
                        "env-steps/s",
                        None,
                        missing=unavailable(error),
                    )
                )
            continue
        for n_envs in batch_sizes:
            found.append(
                Workload(
                    "batched",
                    f"{game} vector N={n_envs}",
                    "env-steps/s",
                    vector_step_body(env_class, n_envs),
                    _obs_and_masks,
                )
            )
    return found


def run(seconds: float, batch_sizes: tuple[int, ...] = BATCH_SIZES, games=("madiao", "mao")) -> list[Result]:
    """Warm up, then measure every workload of this suite."""
    suite = workloads(batch_sizes, games)
    warm_up(suite)
    return [measure(workload, seconds) for workload in suite]
