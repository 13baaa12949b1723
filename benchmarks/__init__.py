"""Throughput, memory and start-up benchmarks of both games, measured beside their peers.

``python -m madiao_mao.benchmarks`` runs every suite in one process (peers included when installed), prints a
table and writes it to ``benchmarks/results/latest.md``. Compare ratios measured in one run, not
absolute numbers across runs or machines.
"""

from cardgame_core.version import __version__

__all__ = ["__version__"]
