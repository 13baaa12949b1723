"""The project's performance targets, checked on the results of one run (ratios within the run).

Each game's targets come from the goals in its benchmarks module (``subjects.Goals``); the table
lists them by kind (``KINDS``), the games in the registry's order within a kind, then the
learner's target.
"""

from __future__ import annotations

from madiao_mao.benchmarks.aec import EMPTY_WRAPPED, aec_system
from madiao_mao.benchmarks.batched import COMPARED_BATCH_SIZES, learner_system, vector_system
from madiao_mao.benchmarks.goals import Target, at_least_check, at_most_check, ratio_check
from madiao_mao.benchmarks.learner import LEAGUE_TRAINING, SB3_LEAGUE_TRAINING, training_run_system
from madiao_mao.benchmarks.peers import PGX_SYSTEM
from madiao_mao.benchmarks.startup import startup_system
from madiao_mao.benchmarks.subjects import Goals, game_subjects
from madiao_mao.benchmarks.timing import Result

#: The order of the targets' kinds in the table ("more": a game's own targets).
KINDS = ("aec", "batched", "gymnasium", "more", "startup", "learner")
TARGET_BATCH, LARGE_BATCH = COMPARED_BATCH_SIZES


def _batched_check(system: str, minimum: float, share_of_pgx: float | None):
    def check(values: dict[str, float]):
        if share_of_pgx is None:
            return at_least_check(values, system, minimum, "env-steps/s")
        if system not in values:
            return None
        text = f"{values[system]:,.0f} env-steps/s"
        met = values[system] >= minimum
        if PGX_SYSTEM in values:
            ratio = values[system] / values[PGX_SYSTEM]
            text += f" = {ratio:.1f}× Pgx leduc"
            met = met and ratio >= share_of_pgx
        return text, met

    return check


def game_targets(game: str, goals: Goals) -> list[Target]:
    """The targets of one game, from its goals."""
    title = game.capitalize()

    def share_target(what: str, share: float, system: str, baseline: str, group: str) -> Target:
        # At least ``share`` times the baseline's rate.
        return Target(
            f"{title} {what}", f"≥ {share:.2f}×", lambda v: ratio_check(v, system, baseline, share), group
        )

    found = []
    if goals.aec_share is not None:
        found.append(
            share_target("AEC vs empty wrapped AEC", goals.aec_share, aec_system(game), EMPTY_WRAPPED, "aec")
        )
    if goals.batched_steps is not None:
        goal = f"≥ {goals.batched_steps / 1e6:g}M env-steps/s"
        if goals.batched_share_of_pgx is not None:
            goal += f" and ≥ {goals.batched_share_of_pgx:g}× Pgx leduc"
        system = vector_system(game, TARGET_BATCH)
        check = _batched_check(system, goals.batched_steps, goals.batched_share_of_pgx)
        found.append(Target(f"{title} batched N={TARGET_BATCH}, obs + masks", goal, check, "batched"))
    if goals.large_batch_share is not None:
        found.append(
            share_target(
                f"batched N={LARGE_BATCH} vs N={TARGET_BATCH}, obs + masks",
                goals.large_batch_share,
                vector_system(game, LARGE_BATCH),
                vector_system(game, TARGET_BATCH),
                "batched",
            )
        )
    if goals.gymnasium_share is not None:
        found.append(
            share_target(
                f"Gymnasium VectorEnv vs raw API, learner seat, N={TARGET_BATCH}",
                goals.gymnasium_share,
                learner_system(game, "gymnasium", TARGET_BATCH),
                learner_system(game, "raw", TARGET_BATCH),
                "gymnasium",
            )
        )
    found += goals.more
    if goals.fast_training_over_sb3 is not None:
        found.append(
            share_target(
                "training run, fast engine vs SB3 (default config)",
                goals.fast_training_over_sb3,
                training_run_system(game, "fast"),
                training_run_system(game, "sb3"),
                "learner",
            )
        )
    for cache, limit in (("cold", goals.cold_start_seconds), ("warm", goals.warm_start_seconds)):
        if limit is not None:
            found.append(
                Target(
                    f"{title} import + first steps, {cache}",
                    f"≤ {limit:g} s",
                    lambda v, cache=cache, limit=limit: at_most_check(v, startup_system(game, cache), limit),
                    "startup",
                )
            )
    return found


UPDATE, CEILING = "sb3 PPO update", "learner ceiling (matmul GFLOP/s / FLOP per sample)"


def _learner_update(values: dict[str, float]):
    if UPDATE not in values or CEILING not in values:
        return None
    ratio = values[UPDATE] / values[CEILING]
    return f"{values[UPDATE]:,.0f} samples/s = {ratio:.2f}× ceiling", values[UPDATE] >= 1e4 and ratio >= 0.65


LEARNER_TARGET = Target(
    "SB3 PPO update, default network", "≥ 10k samples/s and ≥ 0.65× the learner ceiling", _learner_update
)


def _league_training(values: dict[str, float]):
    needed = (LEAGUE_TRAINING, SB3_LEAGUE_TRAINING, CEILING)
    if any(name not in values for name in needed):
        return None
    of_ceiling = values[LEAGUE_TRAINING] / values[CEILING]
    over_sb3 = values[LEAGUE_TRAINING] / values[SB3_LEAGUE_TRAINING]
    speed = f"{values[LEAGUE_TRAINING]:,.0f} learner steps/s"
    achieved = f"{speed} = {of_ceiling:.2f}× ceiling, {over_sb3:.2f}× SB3"
    return achieved, of_ceiling >= 0.8 and over_sb3 >= 2.0


#: Issue 32's CPU target: the default config's training against its full league, the fast engine.
LEAGUE_TRAINING_TARGET = Target(
    "Fast engine, league training (default config)",
    "≥ 0.8× the learner ceiling and ≥ 2× SB3's",
    _league_training,
)


def targets() -> list[Target]:
    """Every target: the games' by kind (their learner targets last), then the default model's."""
    per_game = [game_targets(game, subjects.goals) for game, subjects in game_subjects()]
    by_kind = [target for kind in KINDS for found in per_game for target in found if target.kind == kind]
    return [*by_kind, LEARNER_TARGET, LEAGUE_TRAINING_TARGET]


def evaluate(results: list[Result]) -> list[tuple[str, str, str, str]]:
    """Rows (target, goal, achieved, status) for the results of one run."""
    values = {r.system: r.value for r in results if r.value is not None}
    rows = []
    for target in targets():
        outcome = target.check(values)
        if outcome is None:
            rows.append((target.name, target.goal, "not measured", "—"))
        else:
            achieved, met = outcome
            rows.append((target.name, target.goal, achieved, "met" if met else "MISSED"))
    return rows
