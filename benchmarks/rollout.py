"""Madiao full-rules random play-outs (``madiao_env.rollout``) beside the bare trick-loop probe."""

from __future__ import annotations

from collections.abc import Callable

from madiao_mao.benchmarks.kernels import trick_loop_hands
from madiao_mao.benchmarks.timing import Result, Workload, measure, unavailable, warm_up

PLAYOUTS_PER_CALL = 20_000


def probe_body() -> Callable[[], int]:
    """A body playing ``PLAYOUTS_PER_CALL`` hands of the bare trick loop; returns the hands."""
    hands = 0

    def one_call() -> int:
        nonlocal hands
        trick_loop_hands(PLAYOUTS_PER_CALL, hands)
        hands += PLAYOUTS_PER_CALL
        return PLAYOUTS_PER_CALL

    return one_call


def playout_body() -> Callable[[], int]:
    """A body of ``PLAYOUTS_PER_CALL`` full-rules play-outs from one fresh deal; returns the hands."""
    from madiao_env.rollout import new_hand_snapshot, random_playouts

    snapshot = new_hand_snapshot(seed=0)
    hands = 0

    def one_call() -> int:
        nonlocal hands
        random_playouts(snapshot, PLAYOUTS_PER_CALL, seed=hands)
        hands += PLAYOUTS_PER_CALL
        return PLAYOUTS_PER_CALL

    return one_call


def _from_a_fresh_deal(calls_per_second: float) -> str:
    return "from a fresh deal"


def workloads() -> list[Workload]:
    found = [Workload("rollout", "bare trick-loop probe (tricks only)", "hands/s", probe_body())]
    system = "madiao random_playouts (full rules)"
    try:
        found.append(Workload("rollout", system, "hands/s", playout_body(), _from_a_fresh_deal))
    except ImportError as error:
        found.append(Workload("rollout", system, "hands/s", None, missing=unavailable(error)))
    return found


def run(seconds: float) -> list[Result]:
    """Warm up, then measure every workload of this suite."""
    suite = workloads()
    warm_up(suite)
    return [measure(workload, seconds) for workload in suite]
