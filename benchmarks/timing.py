"""Shared measurement helpers: the workload every timed suite builds, the timed loop, the warm-up,
and the result record every suite returns.

A timed suite (``aec``, ``batched``, ``rollout``) describes each measurement as a
:class:`Workload` whose ``body()`` runs the measured code path once. ``python -m madiao_mao.benchmarks``
builds the workloads of every selected suite, runs :func:`warm_up` on all of them (every body
once: Numba compiles or loads each kernel there, for every game, every batch size and the
play-outs) and only then starts the first timer, so no figure includes a compile. Workloads that
are measured for their ratio (a ``group``) take turns (:func:`measure_all`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass
class Result:
    """One row of the results table."""

    #: Suite name (``aec``, ``batched``, ``rollout``, ``memory``, ``startup``, ``peers``).
    suite: str
    #: What was measured ("empty AEC env (wrapped)", "pgx leduc_holdem batch 1024", ...).
    system: str
    #: The figure, in ``unit``; ``None`` when the system could not be measured.
    value: float | None
    #: Unit of ``value`` ("steps/s", "env-steps/s", "hands/s", "bytes", "s").
    unit: str
    #: Why there is no value ("not installed: ...") or a remark on how it was measured.
    note: str = ""


def _no_note(calls_per_second: float) -> str:
    return ""


@dataclass
class Workload:
    """One timed measurement: ``body()`` runs its code path once and returns the units it did."""

    suite: str
    system: str
    unit: str
    #: None when the system cannot be measured here (then ``missing`` says why).
    body: Callable[[], int] | None
    #: The table's note, from the body calls per second (e.g. games/s for a body of one game).
    note: Callable[[float], str] = _no_note
    #: Why there is no body ("not installed: ..."), shown in the table instead of a figure.
    missing: str = ""
    #: Workloads of one non-empty group are timed in turns (see :func:`measure_all`).
    group: str = ""


def timed_calls(body: Callable[[], int], seconds: float) -> tuple[float, float]:
    """Call ``body`` (which returns how many units it did) until ``seconds`` pass:
    (units per second, calls per second)."""
    done = calls = 0
    started = time.perf_counter()
    while True:
        done += body()
        calls += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return done / elapsed, calls / elapsed


def timed_loop(body: Callable[[], int], seconds: float) -> float:
    """Units per second of ``body`` over ``seconds`` (see :func:`timed_calls`)."""
    return timed_calls(body, seconds)[0]


def warm_up(workloads: Sequence[Workload]) -> float:
    """Run every workload's body once, untimed (compiles or loads every kernel they use); returns
    the seconds it took."""
    started = time.perf_counter()
    for workload in workloads:
        if workload.body is not None:
            workload.body()
    return time.perf_counter() - started


def measure(workload: Workload, seconds: float) -> Result:
    """The workload timed for ``seconds`` (after :func:`warm_up`)."""
    if workload.body is None:
        return Result(workload.suite, workload.system, None, workload.unit, workload.missing)
    rate, calls_per_second = timed_calls(workload.body, seconds)
    return Result(workload.suite, workload.system, rate, workload.unit, workload.note(calls_per_second))


#: Length of one turn when the workloads of a group take turns.
TURN_SECONDS = 0.25


def measure_all(workloads: Sequence[Workload], seconds: float) -> list[Result]:
    """Every workload timed for ``seconds`` (after :func:`warm_up`), in order. Workloads that
    share a ``group`` take turns of :data:`TURN_SECONDS` until each has had ``seconds``: their
    ratio, which is what such a group is measured for, then compares like with like even while
    the machine's load drifts."""
    results: dict[int, Result] = {}
    groups: dict[str, list[int]] = {}
    for index, workload in enumerate(workloads):
        if workload.group and workload.body is not None:
            groups.setdefault(workload.group, []).append(index)
        else:
            results[index] = measure(workload, seconds)
    for members in groups.values():
        n_turns = max(1, round(seconds / TURN_SECONDS))
        totals = {index: [0.0, 0.0] for index in members}  # units and body calls, over all turns
        for turn in range(n_turns):
            # Alternate who goes first, so that no member always follows the same neighbour.
            for index in members if turn % 2 == 0 else members[::-1]:
                rate, calls_per_second = timed_calls(workloads[index].body, seconds / n_turns)
                totals[index][0] += rate * seconds / n_turns
                totals[index][1] += calls_per_second * seconds / n_turns
        for index in members:
            workload = workloads[index]
            units, calls = totals[index]
            note = f"{workload.note(calls / seconds)}; timed in turns"
            results[index] = Result(workload.suite, workload.system, units / seconds, workload.unit, note)
    return [results[index] for index in range(len(workloads))]


def unavailable(error: ImportError | AttributeError) -> str:
    """A short "why not measured" note that names the missing module but no local path."""
    missing = getattr(error, "name", None) or type(error).__name__
    return f"not available ({missing} missing)"
