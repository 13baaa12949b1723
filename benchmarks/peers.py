"""Peer libraries measured in the same run (optional installs: the ``peers`` extra).

RLCard and OpenSpiel run the same random-legal-play loop as the project's AEC benchmark (OpenSpiel
once without and once with building the acting player's observation tensor, which an RL loop
needs). Pgx runs batched random play with auto-reset under ``jax.jit`` on the CPU, in a child
process so that JAX's thread pool does not share the process with the other measurements.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time

import numpy as np

from madiao_mao.benchmarks.timing import Result

RLCARD_GAMES = ("uno", "doudizhu")
OPENSPIEL_GAMES = ("hearts", "spades", "crazy_eights")
PGX_GAME = "leduc_holdem"
PGX_BATCH = 1024
PGX_SYSTEM = f"pgx {PGX_GAME} batch {PGX_BATCH} (CPU, jit, auto-reset)"


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def rlcard_random_play(game: str, seconds: float) -> tuple[float, float]:
    # Imported here: an optional peer library, needed only by this benchmark.
    import rlcard

    env = rlcard.make(game, config={"seed": 0})
    rng = np.random.default_rng(0)
    steps = games = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        state, _player = env.reset()
        while not env.is_over():
            legal = list(state["legal_actions"].keys())
            state, _player = env.step(legal[int(rng.integers(len(legal)))])
            steps += 1
        games += 1
    elapsed = time.perf_counter() - started
    return steps / elapsed, games / elapsed


def openspiel_random_play(game_name: str, seconds: float, with_observation: bool) -> tuple[float, float]:
    # Imported here: an optional peer library, needed only by this benchmark.
    import pyspiel

    game = pyspiel.load_game(game_name)
    has_observation_tensor = game.get_type().provides_observation_tensor
    rng = np.random.default_rng(0)
    steps = games = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[int(rng.integers(len(outcomes)))][0])
                continue
            if with_observation:
                player = state.current_player()
                if has_observation_tensor:
                    np.asarray(state.observation_tensor(player))
                else:
                    np.asarray(state.information_state_tensor(player))
            legal = state.legal_actions()
            state.apply_action(legal[int(rng.integers(len(legal)))])
            steps += 1
        games += 1
    elapsed = time.perf_counter() - started
    return steps / elapsed, games / elapsed


PGX_CHILD = """
import json, sys, time
import jax, jax.numpy as jnp, pgx
from pgx.experimental import auto_reset
name, batch, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
env = pgx.make(name)
init = jax.jit(jax.vmap(env.init))
step = jax.jit(jax.vmap(lambda s, a, k: auto_reset(env.step, env.init)(s, a, k)))
act = jax.jit(lambda key, mask: jax.random.categorical(key, jnp.where(mask, 0.0, -1e9)))
key = jax.random.PRNGKey(0)
state = init(jax.random.split(key, batch))
for _ in range(3):
    key, sub = jax.random.split(key)
    state = step(state, act(sub, state.legal_action_mask), jax.random.split(sub, batch))
jax.block_until_ready(state)
calls = 0
started = time.perf_counter()
while time.perf_counter() - started < seconds:
    key, sub = jax.random.split(key)
    state = step(state, act(sub, state.legal_action_mask), jax.random.split(sub, batch))
    calls += 1
jax.block_until_ready(state.observation)
print(json.dumps({"env_steps_per_s": calls * batch / (time.perf_counter() - started)}))
"""


def pgx_batch(game: str, batch: int, seconds: float) -> float:
    completed = subprocess.run(
        [sys.executable, "-c", PGX_CHILD, game, str(batch), str(seconds)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return float(json.loads(completed.stdout.strip().splitlines()[-1])["env_steps_per_s"])


def run(seconds: float) -> list[Result]:
    results = []
    for game in RLCARD_GAMES:
        label = f"rlcard {game}"
        if not _installed("rlcard"):
            results.append(Result("peers", label, None, "steps/s", "not installed"))
            continue
        steps, games = rlcard_random_play(game, seconds)
        results.append(Result("peers", label, steps, "steps/s", f"{games:,.0f} games/s"))
    for game in OPENSPIEL_GAMES:
        for with_observation in (False, True):
            label = f"open_spiel {game} ({'+ obs tensor' if with_observation else 'no obs'})"
            if not _installed("pyspiel"):
                results.append(Result("peers", label, None, "steps/s", "not installed"))
                continue
            steps, games = openspiel_random_play(game, seconds, with_observation)
            results.append(Result("peers", label, steps, "steps/s", f"{games:,.0f} games/s"))
    label = PGX_SYSTEM
    if not (_installed("pgx") and _installed("jax")):
        results.append(Result("peers", label, None, "env-steps/s", "not installed"))
    else:
        try:
            results.append(Result("peers", label, pgx_batch(PGX_GAME, PGX_BATCH, seconds), "env-steps/s"))
        except (subprocess.SubprocessError, ValueError, KeyError) as error:
            results.append(Result("peers", label, None, "env-steps/s", f"failed: {error}"))
    return results
