"""Start-up cost: import time and the first reset+step (Numba compile or cache load).

Each figure comes from a fresh interpreter. "cold" points ``NUMBA_CACHE_DIR`` at a new empty
directory, so every kernel the first step needs is compiled; "warm" runs again with that same,
now filled, directory (what every later process sees). "total" = import + first AEC step +
first vector step, the number the targets are about.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from madiao_mao.benchmarks.subjects import GameSubjects, game_subjects
from madiao_mao.benchmarks.timing import Result

CHILD = """
import importlib, json, sys, time
started = time.perf_counter()
import numpy as np
def load(reference):
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)
make_env, vector = load(sys.argv[1]), load(sys.argv[2])
imported = time.perf_counter()
env = make_env()
env.reset(seed=0)
mask = env.observe(env.agent_selection)["action_mask"]
env.step(int(np.flatnonzero(mask)[0]))
aec_stepped = time.perf_counter()
venv = vector(1, seed=0)
first = venv.reset()
venv.step(np.flatnonzero(first.action_mask[0])[:1].astype(np.int64))
vector_stepped = time.perf_counter()
print(json.dumps({
    "import": imported - started,
    "aec_first_step": aec_stepped - imported,
    "vector_first_step": vector_stepped - aec_stepped,
    "total": vector_stepped - started,
}))
"""


def startup_system(game: str, cache: str) -> str:
    """The row name of ``game``'s start-up with a ``cache`` ("cold" or "warm") Numba cache."""
    return f"{game} import + first steps, {cache} cache"


def measure(subjects: GameSubjects, cache_dir: str) -> dict[str, float]:
    environment = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    completed = subprocess.run(
        [sys.executable, "-c", CHILD, subjects.aec_env, subjects.vector_env],
        capture_output=True,
        text=True,
        env=environment,
        timeout=900,
    )
    if completed.returncode != 0:
        last_line = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(last_line)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def run() -> list[Result]:
    results = []
    for game, subjects in game_subjects():
        with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache_dir:
            try:
                cold = measure(subjects, cache_dir)
                warm = measure(subjects, cache_dir)
            except RuntimeError as error:
                results.append(
                    Result("startup", f"{game} import + first steps", None, "s", f"not available: {error}")
                )
                continue
        for label, figures in (("cold", cold), ("warm", warm)):
            note = (
                f"import {figures['import']:.2f} s, first AEC step {figures['aec_first_step']:.2f} s, "
                f"first vector step {figures['vector_first_step']:.2f} s"
            )
            results.append(Result("startup", startup_system(game, label), figures["total"], "s", note))
    return results
