"""A performance target and the checks targets are made of (ratios and bounds within one run)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    #: How to read the goal in the table.
    goal: str
    #: From the results by system name: (achieved text, met?) or None when not measurable.
    check: Callable[[dict[str, float]], tuple[str, bool] | None]
    #: Targets are listed by kind (``KINDS`` in ``targets``), in the registry's order of games within one.
    kind: str = "more"


def ratio_check(values: dict[str, float], numerator: str, denominator: str, minimum: float):
    if numerator not in values or denominator not in values:
        return None
    ratio = values[numerator] / values[denominator]
    return f"{ratio:.2f}×", ratio >= minimum


def at_least_check(values: dict[str, float], system: str, minimum: float, unit: str):
    if system not in values:
        return None
    return f"{values[system]:,.0f} {unit}", values[system] >= minimum


def at_most_check(values: dict[str, float], system: str, maximum: float):
    if system not in values:
        return None
    return f"{values[system]:.2f} s", values[system] <= maximum
