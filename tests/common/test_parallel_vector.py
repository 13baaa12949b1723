"""The batched envs step their games on Numba's threads from ``PARALLEL_MIN_GAMES`` games on:
every output must be bit for bit what the serial kernels give (each game's randomness is its own,
and each iteration of the parallel loop writes only its own game's rows)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os

import numba
import numpy as np
import pytest

from cardgame_core import vector
from cardgame_core.jit import parallel
from madiao_env import core as madiao_core
from madiao_env.vector import MadiaoVectorEnv
from madiao_mao.training.config import ConfigError, TrainConfig
from madiao_mao.training.game_spec import game_spec
from mao_env import core as mao_core
from mao_env.vector import MaoVectorEnv
from tests.common.helpers import TINY_RUN, run_python

#: Large enough to take the parallel kernels, small enough for a quick test.
N_GAMES = max(vector.PARALLEL_MIN_GAMES, 300)
#: Two threads where Numba may use two (on one core the parallel kernels still run, on one thread).
THREADS = min(2, numba.config.NUMBA_NUM_THREADS)
GAMES = [
    pytest.param(MadiaoVectorEnv, {}, id="madiao"),
    pytest.param(MaoVectorEnv, {}, id="mao"),
    pytest.param(MaoVectorEnv, {"rule_pool": (0, 1, 2, 3, 4), "pool_draws": 2}, id="mao-rule-pool"),
]


def _digest(step: vector.VectorStep, digest) -> None:
    for array in step:
        digest.update(np.ascontiguousarray(array).tobytes())


def _play(env: vector.VectorCardEnv, n_steps: int, seed: int) -> str:
    """A hash of every output of ``n_steps`` random legal steps (some games skipped at times), of
    ``observe`` from other seats and of a reseeded ``reset``."""
    rng = np.random.default_rng(seed)
    digest = hashlib.sha256()
    step = env.reset(seed=seed)
    _digest(step, digest)
    for call in range(n_steps):
        scores = np.where(step.action_mask, rng.random(step.action_mask.shape), -1.0)
        actions = scores.argmax(axis=1).astype(np.int64)
        if call % 5 == 2:
            actions[rng.random(env.n_envs) < 0.3] = vector.NO_ACTION
        step = env.step(actions)
        _digest(step, digest)
    seats = rng.integers(0, env.n_players, size=env.n_envs)
    digest.update(env.observe(seats).tobytes())
    _digest(env.reset(seed=seed + 1), digest)
    return digest.hexdigest()


@pytest.mark.parametrize(("env_class", "options"), GAMES)
def test_parallel_steps_are_bit_identical_to_serial(env_class, options):
    serial = env_class(N_GAMES, seed=1, threads=1, **options)
    threaded = env_class(N_GAMES, seed=1, threads=THREADS, **options)
    assert not serial.parallel
    assert threaded.parallel == (THREADS >= 2)
    # Long enough for many episodes to end and auto-reset in every game.
    assert _play(serial, 300, seed=7) == _play(threaded, 300, seed=7)


@pytest.mark.parametrize(("env_class", "options"), GAMES)
def test_parallel_steps_match_serial_call_by_call(env_class, options):
    """The same comparison array by array: a difference names the output and the call."""
    serial = env_class(N_GAMES, seed=3, threads=1, **options)
    threaded = env_class(N_GAMES, seed=3, threads=THREADS, **options)
    rng = np.random.default_rng(11)
    expected, got = serial.reset(), threaded.reset()
    for call in range(60):
        for name, a, b in zip(vector.VectorStep._fields, expected, got, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=f"{name} after {call} calls")
        scores = np.where(expected.action_mask, rng.random(expected.action_mask.shape), -1.0)
        actions = scores.argmax(axis=1).astype(np.int64)
        expected, got = serial.step(actions), threaded.step(actions)


def test_small_batches_and_threads_1_stay_serial():
    assert not MadiaoVectorEnv(vector.PARALLEL_MIN_GAMES - 1, seed=0).parallel
    assert not MaoVectorEnv(vector.PARALLEL_MIN_GAMES, seed=0, threads=1).parallel
    assert MaoVectorEnv(vector.PARALLEL_MIN_GAMES, seed=0).parallel == (numba.get_num_threads() >= 2)


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, numba.config.NUMBA_NUM_THREADS + 1])
def test_bad_thread_counts_are_refused(threads):
    with pytest.raises((TypeError, ValueError), match="threads"):
        MadiaoVectorEnv(4, seed=0, threads=threads)


def test_threads_setting_leaves_the_callers_thread_count_alone():
    before = numba.get_num_threads()
    env = MaoVectorEnv(N_GAMES, seed=0, threads=1 if before > 1 else None)
    env.reset()
    env.step(np.full(N_GAMES, vector.NO_ACTION, dtype=np.int64))
    assert numba.get_num_threads() == before


def test_parallel_variant_is_a_parallel_dispatcher_of_the_same_kernel():
    for kernel in (madiao_core.vector_step_games, mao_core.vector_step):
        variant = parallel(kernel)
        assert variant is parallel(kernel)
        if hasattr(kernel, "py_func"):  # the JIT is on
            assert variant.py_func is kernel.py_func
            assert variant.targetoptions.get("parallel") is True
            assert not kernel.targetoptions.get("parallel")


def test_starting_the_threads_leaves_the_environment_as_it_was():
    had_policy = "OMP_WAIT_POLICY" in os.environ
    env = MadiaoVectorEnv(N_GAMES, seed=0, threads=THREADS)
    env.reset()
    assert ("OMP_WAIT_POLICY" in os.environ) == had_policy


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _numba_env(**variables: str) -> dict[str, str]:
    """This process's environment for a subprocess with two Numba threads and Numba's own choice
    of threading layer, plus ``variables``."""
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_THREADING_LAYER"}
    return {**env, "NUMBA_NUM_THREADS": "2", **variables}


def test_the_threading_layer_is_tbb_where_it_loads_else_one_that_leaves_openmp_alone():
    choose = vector.choose_threading_layer
    assert choose(tbb_loadable=True, openmp_loaded=True) == "tbb"
    assert choose(tbb_loadable=True, openmp_loaded=False) == "tbb"
    assert choose(tbb_loadable=False, openmp_loaded=True) == "workqueue"
    assert choose(tbb_loadable=False, openmp_loaded=False) is None  # Numba's default, OpenMP


#: Whether this environment has the ``tbb`` wheel (a dependency on x86-64 Linux: CI has it).
HAS_TBB = _installed("tbb")

#: A parallel step in a fresh process; torch first where asked, as in training: then the step must
#: neither join torch's OpenMP runtime (whose thread count Numba's OpenMP layer would set to its
#: own) nor leave workers spinning. ``HIDE_TBB`` makes the TBB runtime look missing.
PARALLEL_STEP = """
import sys
import numba, numpy as np
from cardgame_core import vector
if "HIDE_TBB" in sys.argv:
    vector._tbb_loadable = lambda: False
if "TORCH" in sys.argv:
    import torch
    torch.set_num_threads(1)
    assert torch.get_num_threads() == 1  # a trainer reads its setting before the env's first step
from mao_env.vector import MaoVectorEnv
env = MaoVectorEnv(vector.PARALLEL_MIN_GAMES, seed=0)
env.reset()
env.step(np.full(env.n_envs, vector.NO_ACTION, dtype=np.int64))
assert env.parallel
print(numba.threading_layer(), torch.get_num_threads() if "TORCH" in sys.argv else "-")
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "variables", "expected"),
    [
        (["TORCH"], {}, ["tbb" if HAS_TBB else "workqueue", "1"]),
        (["TORCH", "HIDE_TBB"], {}, ["workqueue", "1"]),
        ([], {}, ["tbb" if HAS_TBB else "omp", "-"]),
        pytest.param(
            ["TORCH"],
            {"NUMBA_THREADING_LAYER": "tbb"},
            ["tbb", "1"],
            marks=pytest.mark.skipif(not HAS_TBB, reason="the tbb wheel is not installed"),
        ),
    ],
    ids=["torch-first", "torch-first-without-tbb", "no-torch", "tbb-chosen-by-the-user"],
)
def test_parallel_steps_start_the_chosen_layer_and_leave_torchs_threads_alone(flags, variables, expected):
    result = run_python(["-c", PARALLEL_STEP, *flags], env=_numba_env(**variables), timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == expected


#: Two threads stepping two parallel envs at once (the kernels release the GIL), on the work-queue
#: layer, which aborts the whole process when entered by two threads at the same time.
CONCURRENT = """
import threading
import numba, numpy as np
from cardgame_core.vector import PARALLEL_MIN_GAMES
from madiao_env.vector import MadiaoVectorEnv

def play(seed, digests):
    env = MadiaoVectorEnv(PARALLEL_MIN_GAMES, seed=seed)
    rng = np.random.default_rng(seed)
    step = env.reset()
    total = 0.0
    for _ in range(300):
        scores = np.where(step.action_mask, rng.random(step.action_mask.shape), -1.0)
        step = env.step(scores.argmax(axis=1))
        total += float(step.rewards.sum()) + float(step.observation.sum())
    digests[seed] = total

alone = {}
for seed in (0, 1):
    play(seed, alone)
together = {}
threads = [threading.Thread(target=play, args=(seed, together)) for seed in (0, 1)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
assert together == alone, (together, alone)
print(numba.threading_layer())
"""


@pytest.mark.slow
@pytest.mark.parametrize("layer", ["workqueue", "default"])
def test_parallel_envs_step_from_two_threads_at_once(layer):
    chosen = {} if layer == "default" else {"NUMBA_THREADING_LAYER": layer}
    result = run_python(["-c", CONCURRENT], env=_numba_env(**chosen), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    default = "tbb" if HAS_TBB else "omp"
    assert result.stdout.split() == [default if layer == "default" else layer]


@pytest.mark.parametrize("game", ["madiao", "mao"])
def test_training_games_step_on_the_configs_env_threads(game):
    spec = game_spec(game)
    serial = spec.make_vector_env(TrainConfig(game=game, **TINY_RUN), N_GAMES, 0)
    assert serial.threads == 1 and not serial.parallel
    # More threads than Numba has is refused, naming the field and the way to get them.
    with pytest.raises(ConfigError, match=r"env_threads is .* NUMBA_NUM_THREADS="):
        TrainConfig(game=game, env_threads=numba.config.NUMBA_NUM_THREADS + 1, **TINY_RUN)
