"""Memory per game: the vector env's arrays per game, and an AEC env measured with tracemalloc."""

from __future__ import annotations

import importlib
import tracemalloc

import numpy as np
from madiao_mao.benchmarks.batched import vector_env_class
from madiao_mao.benchmarks.timing import Result, unavailable

N_ENVS = 1024
N_AEC_ENVS = 32
AEC_MODULES = {"madiao": "madiao_env.madiao_v0", "mao": "mao_env.mao_v0"}


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


def aec_bytes_per_env(module_name: str) -> float:
    """Python heap growth (tracemalloc) per wrapped AEC env built and reset, after a warm-up."""
    module = importlib.import_module(module_name)
    module.env().reset(seed=0)  # load kernels and caches before counting
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    envs = []
    for seed in range(N_AEC_ENVS):
        env = module.env()
        env.reset(seed=seed)
        envs.append(env)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return grown / N_AEC_ENVS


def run(games=("madiao", "mao")) -> list[Result]:
    results = []
    for game in games:
        try:
            per_game = vector_bytes_per_game(vector_env_class(game))
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
            per_env = aec_bytes_per_env(AEC_MODULES[game])
        except ImportError as error:
            results.append(Result("memory", f"{game} AEC env (wrapped)", None, "bytes", unavailable(error)))
        else:
            results.append(
                Result("memory", f"{game} AEC env (wrapped)", per_env, "bytes", "tracemalloc, after reset")
            )
    return results
