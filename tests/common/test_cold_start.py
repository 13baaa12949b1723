"""What a cold start compiles (the start-up goal: benchmarks/startup.py).

A fresh interpreter with an empty Numba cache takes each game's first AEC steps and then its first
vector steps, as the start-up benchmark does, and records every compilation (Numba's compile
events). The checks are on which kernels compile, not on seconds: no kernel is compiled for a
literal constant argument (``cardgame_core.jit`` types calls by type), Madiao's vector env reuses
the AEC env's kernels, and Mao's two envs deal through one compile of ``reset_game``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cardgame_core.jit import njit

# Compiles every kernel the first steps reach (the cache directory is new and empty) and prints
# one record per compilation: the phase, the kernel's qualified name and its argument types.
_FIRST_STEPS = """
import importlib, json, sys
import numpy as np
from numba.core import event

compiled = []
phase = "aec"

class Recorder(event.Listener):
    def on_start(self, ev):
        function = ev.data["dispatcher"].py_func
        compiled.append((phase, f"{function.__module__}.{function.__qualname__}", str(ev.data["args"])))

    def on_end(self, ev):
        pass

event.register("numba:compile", Recorder())

def load(reference):
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)

make_env, vector = load(sys.argv[1]), load(sys.argv[2])
env = make_env()
env.reset(seed=0)
env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
phase = "vector"
venv = vector(1, seed=0)
first = venv.reset()
venv.step(np.flatnonzero(first.action_mask[0])[:1].astype(np.int64))
print(json.dumps(compiled))
"""

_GAMES = {
    "madiao": ("madiao_env.madiao_v0:env", "madiao_env.vector:MadiaoVectorEnv"),
    "mao": ("mao_env.mao_v0:env", "mao_env.vector:MaoVectorEnv"),
}


def _cold_first_steps(game: str, cache_dir: str) -> list[tuple[str, str, str]]:
    environment = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    environment.pop("NUMBA_DISABLE_JIT", None)
    finished = subprocess.run(
        [sys.executable, "-c", _FIRST_STEPS, *_GAMES[game]],
        capture_output=True,
        text=True,
        timeout=900,
        env=environment,
    )
    assert finished.returncode == 0, finished.stderr
    return [tuple(record) for record in json.loads(finished.stdout.strip().splitlines()[-1])]


def _project_kernels(compiled: list[tuple[str, str, str]], phase: str | None = None) -> list[tuple[str, str]]:
    return [
        (name, types)
        for at, name, types in compiled
        if name.startswith(("madiao_env.", "mao_env.", "cardgame_core.")) and phase in (None, at)
    ]


@pytest.fixture(scope="module")
def cold_compiles(tmp_path_factory) -> dict[str, list[tuple[str, str, str]]]:
    return {game: _cold_first_steps(game, str(tmp_path_factory.mktemp(f"numba-{game}"))) for game in _GAMES}


@pytest.mark.slow
@pytest.mark.parametrize("game", sorted(_GAMES))
def test_no_kernel_is_compiled_for_a_literal_argument(cold_compiles, game):
    literal = [(name, types) for name, types in _project_kernels(cold_compiles[game]) if "Literal[" in types]
    assert not literal


@pytest.mark.slow
def test_madiao_vector_env_compiles_nothing_the_aec_env_did_not(cold_compiles):
    # The AEC env steps through the vector env's step kernel; only the vector env's action
    # checker is its own.
    assert _project_kernels(cold_compiles["madiao"], "vector") == [
        ("cardgame_core.vector.first_bad_action", "(Array(int64, 1, 'C', False, aligned=True), "
         "Array(bool, 2, 'C', False, aligned=True))"),
    ]  # fmt: skip


@pytest.mark.slow
def test_mao_envs_deal_through_one_compile_of_reset_game(cold_compiles):
    compiled = _project_kernels(cold_compiles["mao"])
    assert [name for name, _ in compiled].count("mao_env.core.reset_game") == 1


@njit(cache=False)
def _add_flag(value, flag):
    return value + (1 if flag else 0)


@njit(cache=False)
def _add_flags_of_constants(value):
    return _add_flag(value, True) + _add_flag(value, False) + _add_flag(value, value > 3)


def test_a_kernel_called_with_constants_compiles_once_for_their_types():
    assert _add_flags_of_constants(5) == 17
    if hasattr(_add_flag, "signatures"):  # the JIT is on
        assert [str(signature) for signature in _add_flag.signatures] == ["(int64, bool)"]
