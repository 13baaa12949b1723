"""Batched env-steps/s of both games' vector envs, observations and masks included.

The loop a self-play trainer runs: read the masks, pick one random legal action per game (a Numba
kernel, counted in the time, like Pgx's jitted random policy), step all games (auto-reset on).
The env is built with ``copy=False`` so the figure is the env's own cost, not numpy copies.
"""

from __future__ import annotations

import importlib

import numpy as np

from benchmarks.kernels import random_legal_actions
from benchmarks.timing import Result, timed_loop, unavailable

BATCH_SIZES = (1, 64, 1024, 4096)
VECTOR_ENVS = {
    "madiao": ("madiao_env.vector", "MadiaoVectorEnv"),
    "mao": ("mao_env.vector", "MaoVectorEnv"),
}


def vector_env_class(game: str):
    """The game's vector env class, or raise ImportError when that package is not built yet."""
    module_name, class_name = VECTOR_ENVS[game]
    return getattr(importlib.import_module(module_name), class_name)


def env_steps_per_second(env_class, n_envs: int, seconds: float) -> float:
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

    one_call()  # compile or load the cached kernels outside the timed loop
    return timed_loop(one_call, seconds)


def run(seconds: float, batch_sizes: tuple[int, ...] = BATCH_SIZES, games=("madiao", "mao")) -> list[Result]:
    results = []
    for game in games:
        try:
            env_class = vector_env_class(game)
        except (ImportError, AttributeError) as error:
            for n_envs in batch_sizes:
                results.append(
                    Result("batched", f"{game} vector N={n_envs}", None, "env-steps/s", unavailable(error))
                )
            continue
        for n_envs in batch_sizes:
            rate = env_steps_per_second(env_class, n_envs, seconds)
            results.append(Result("batched", f"{game} vector N={n_envs}", rate, "env-steps/s", "obs + masks"))
    return results
