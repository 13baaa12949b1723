"""The project's performance targets, checked on the results of one run (ratios within the run)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from madiao_mao.benchmarks.batched import learner_system
from madiao_mao.benchmarks.timing import Result


@dataclass
class Target:
    name: str
    #: How to read the goal in the table.
    goal: str
    #: From the results by system name: (achieved text, met?) or None when not measurable.
    check: Callable[[dict[str, float]], tuple[str, bool] | None]


def _ratio(values: dict[str, float], numerator: str, denominator: str, minimum: float):
    if numerator not in values or denominator not in values:
        return None
    ratio = values[numerator] / values[denominator]
    return f"{ratio:.2f}×", ratio >= minimum


def _at_least(values: dict[str, float], system: str, minimum: float, unit: str):
    if system not in values:
        return None
    return f"{values[system]:,.0f} {unit}", values[system] >= minimum


def _at_most(values: dict[str, float], system: str, maximum: float):
    if system not in values:
        return None
    return f"{values[system]:.2f} s", values[system] <= maximum


def _madiao_batched(values: dict[str, float]):
    system, pgx = "madiao vector N=1024", "pgx leduc_holdem batch 1024 (CPU, jit, auto-reset)"
    if system not in values:
        return None
    text = f"{values[system]:,.0f} env-steps/s"
    met = values[system] >= 3e6
    if pgx in values:
        ratio = values[system] / values[pgx]
        text += f" = {ratio:.1f}× Pgx leduc"
        met = met and ratio >= 3
    return text, met


UPDATE, CEILING = "sb3 PPO update", "learner ceiling (matmul GFLOP/s / FLOP per sample)"


def _learner_update(values: dict[str, float]):
    if UPDATE not in values or CEILING not in values:
        return None
    ratio = values[UPDATE] / values[CEILING]
    return f"{values[UPDATE]:,.0f} samples/s = {ratio:.2f}× ceiling", values[UPDATE] >= 1e4 and ratio >= 0.65


EMPTY = "empty AEC env (wrapped)"
TARGETS = [
    Target(
        "Madiao AEC vs empty wrapped AEC",
        "≥ 0.75×",
        lambda v: _ratio(v, "madiao AEC (wrapped), random play", EMPTY, 0.75),
    ),
    Target(
        "Mao AEC vs empty wrapped AEC",
        "≥ 0.60×",
        lambda v: _ratio(v, "mao AEC (wrapped), random play", EMPTY, 0.60),
    ),
    Target("Madiao batched N=1024, obs + masks", "≥ 3M env-steps/s and ≥ 3× Pgx leduc", _madiao_batched),
    Target(
        "Mao batched N=1024, obs + masks",
        "≥ 1M env-steps/s",
        lambda v: _at_least(v, "mao vector N=1024", 1e6, "env-steps/s"),
    ),
    *(
        Target(
            f"{game.capitalize()} Gymnasium VectorEnv vs raw API, learner seat, N=1024",
            "≥ 0.90×",
            lambda v, game=game: _ratio(
                v, learner_system(game, "gymnasium", 1024), learner_system(game, "raw", 1024), 0.90
            ),
        )
        for game in ("madiao", "mao")
    ),
    Target(
        "Madiao rollouts vs bare trick probe",
        "≥ 0.80×",
        lambda v: _ratio(
            v, "madiao random_playouts (full rules)", "bare trick-loop probe (tricks only)", 0.8
        ),
    ),
    Target(
        "Madiao import + first steps, cold",
        "≤ 20 s",
        lambda v: _at_most(v, "madiao import + first steps, cold cache", 20),
    ),
    Target(
        "Madiao import + first steps, warm",
        "≤ 2 s",
        lambda v: _at_most(v, "madiao import + first steps, warm cache", 2),
    ),
    Target(
        "Mao import + first steps, cold",
        "≤ 20 s",
        lambda v: _at_most(v, "mao import + first steps, cold cache", 20),
    ),
    Target(
        "Mao import + first steps, warm",
        "≤ 2 s",
        lambda v: _at_most(v, "mao import + first steps, warm cache", 2),
    ),
    Target(
        "SB3 PPO update, default network",
        "≥ 10k samples/s and ≥ 0.65× the learner ceiling",
        _learner_update,
    ),
]


def evaluate(results: list[Result]) -> list[tuple[str, str, str, str]]:
    """Rows (target, goal, achieved, status) for the results of one run."""
    values = {r.system: r.value for r in results if r.value is not None}
    rows = []
    for target in TARGETS:
        outcome = target.check(values)
        if outcome is None:
            rows.append((target.name, target.goal, "not measured", "—"))
        else:
            achieved, met = outcome
            rows.append((target.name, target.goal, achieved, "met" if met else "MISSED"))
    return rows
