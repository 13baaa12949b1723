"""The rollout suite: each game's play-out rows, as its benchmarks module gives them
(``subjects.GameSubjects.rollouts``; a game without play-outs has none)."""

from __future__ import annotations

from madiao_mao.benchmarks.subjects import game_subjects, load
from madiao_mao.benchmarks.timing import Result, Workload, measure, warm_up


def workloads() -> list[Workload]:
    return [
        workload
        for _, subjects in game_subjects()
        if subjects.rollouts is not None
        for workload in load(subjects.rollouts)()
    ]


def run(seconds: float) -> list[Result]:
    """Warm up, then measure every workload of this suite."""
    suite = workloads()
    warm_up(suite)
    return [measure(workload, seconds) for workload in suite]
