"""Memory per game: the vector env's arrays per game, and an AEC env measured with tracemalloc."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import numpy as np

from madiao_mao.benchmarks.subjects import game_subjects, load
from madiao_mao.benchmarks.timing import Result, unavailable

N_ENVS = 1024
N_AEC_ENVS = 32


def vector_bytes_per_game(env_class) -> float:
    """All numpy arrays the vector env holds (state and output buffers), divided by N."""
    env = env_class(N_ENVS, seed=0, copy=False)
    env.reset()
    total = 0
    seen: set[int] = set()
    for value in vars(env).values():
        if isinstance(value, np.ndarray) and id(value) not in seen:
            seen.add(id(value))
            total += value.nbytes
    return total / N_ENVS


def aec_bytes_per_env(make_env: Callable) -> float:
    """Python heap growth (tracemalloc) per wrapped AEC env built and reset, after a warm-up."""
    make_env().reset(seed=0)  # load kernels and caches before counting
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    envs = []
    for seed in range(N_AEC_ENVS):
        env = make_env()
        env.reset(seed=seed)
        envs.append(env)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return grown / N_AEC_ENVS


def run() -> list[Result]:
    results = []
    for game, subjects in game_subjects():
        try:
            per_game = vector_bytes_per_game(load(subjects.vector_env))
        except (ImportError, AttributeError) as error:
            results.append(
                Result("memory", f"{game} vector env, per game", None, "bytes", unavailable(error))
            )
        else:
            results.append(
                Result(
                    "memory", f"{game} vector env, per game", per_game, "bytes", f"arrays / N at N={N_ENVS}"
                )
            )
        try:
            per_env = aec_bytes_per_env(load(subjects.aec_env))
        except (ImportError, AttributeError) as error:
            results.append(Result("memory", f"{game} AEC env (wrapped)", None, "bytes", unavailable(error)))
        else:
            results.append(
                Result("memory", f"{game} AEC env (wrapped)", per_env, "bytes", "tracemalloc, after reset")
            )
    return results
