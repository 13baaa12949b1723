"""Throughput, memory and start-up benchmarks of every registered game, measured beside their peers.

The suites loop over the registry of games (``madiao_mao.games``); what they measure of one game
is its benchmarks module's ``SUBJECTS`` (the protocol: ``madiao_mao.benchmarks.subjects``).

``python -m madiao_mao.benchmarks`` runs every suite in one process (peers included when installed), prints a
table and writes it to ``benchmarks/results/latest.md``. Compare ratios measured in one run, not
absolute numbers across runs or machines.
"""

from cardgame_core.version import __version__

__all__ = ["__version__"]
