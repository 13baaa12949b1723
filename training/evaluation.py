"""The old name of :mod:`training.madiao_evaluation` (Madiao duplicate tournaments), kept as a re-export."""

from training.madiao_evaluation import (
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
