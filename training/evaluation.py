"""The old name of :mod:`madiao_mao.training.madiao.evaluation` (Madiao duplicate tournaments), kept as a re-export."""

from madiao_mao.training.madiao.evaluation import (
    Deal,
    PairResult,
    TournamentReport,
    duplicate_match,
    make_deals,
    run_tournament,
    write_report,
)

__all__ = [
    "Deal",
    "PairResult",
    "TournamentReport",
    "duplicate_match",
    "make_deals",
    "run_tournament",
    "write_report",
]
