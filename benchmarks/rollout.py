"""Madiao full-rules random play-outs (``madiao_env.rollout``) beside the bare trick-loop probe."""

from __future__ import annotations

import time

from benchmarks.kernels import trick_loop_hands
from benchmarks.timing import Result, unavailable

PLAYOUTS_PER_CALL = 20_000


def probe_hands_per_second(seconds: float) -> float:
    trick_loop_hands(10, 0)  # compile outside the timing
    hands = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        trick_loop_hands(PLAYOUTS_PER_CALL, hands)
        hands += PLAYOUTS_PER_CALL
    return hands / (time.perf_counter() - started)


def playout_hands_per_second(seconds: float) -> float:
    from madiao_env.rollout import new_hand_snapshot, random_playouts

    snapshot = new_hand_snapshot(seed=0)
    random_playouts(snapshot, 10, seed=0)  # compile outside the timing
    hands = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        random_playouts(snapshot, PLAYOUTS_PER_CALL, seed=hands)
        hands += PLAYOUTS_PER_CALL
    return hands / (time.perf_counter() - started)


def run(seconds: float) -> list[Result]:
    results = [
        Result("rollout", "bare trick-loop probe (tricks only)", probe_hands_per_second(seconds), "hands/s")
    ]
    try:
        rate = playout_hands_per_second(seconds)
    except ImportError as error:
        results.append(
            Result("rollout", "madiao random_playouts (full rules)", None, "hands/s", unavailable(error))
        )
    else:
        results.append(
            Result("rollout", "madiao random_playouts (full rules)", rate, "hands/s", "from a fresh deal")
        )
    return results
