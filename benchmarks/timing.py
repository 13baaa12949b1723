"""Shared measurement helpers: a timed loop and the result record every suite returns."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Result:
    """One row of the results table."""

    #: Suite name (``aec``, ``batched``, ``rollout``, ``memory``, ``startup``, ``peers``).
    suite: str
    #: What was measured ("madiao AEC random play", "pgx leduc_holdem batch 1024", ...).
    system: str
    #: The figure, in ``unit``; ``None`` when the system could not be measured.
    value: float | None
    #: Unit of ``value`` ("steps/s", "env-steps/s", "hands/s", "bytes", "s").
    unit: str
    #: Why there is no value ("not installed: ...") or a remark on how it was measured.
    note: str = ""


def timed_loop(body: Callable[[], int], seconds: float) -> float:
    """Call ``body`` (which returns how many units it did) until ``seconds`` pass; units per second."""
    done = 0
    started = time.perf_counter()
    while True:
        done += body()
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return done / elapsed


def unavailable(error: ImportError | AttributeError) -> str:
    """A short "why not measured" note that names the missing module but no local path."""
    missing = getattr(error, "name", None) or type(error).__name__
    return f"not available ({missing} missing)"
