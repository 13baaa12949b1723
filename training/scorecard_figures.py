"""One measured figure of a scorecard: a mean with its 95% interval and the samples behind it.

Its own module because the scorecard (``madiao_mao.training.scorecard``) imports each game's scorecard module
(``madiao_mao.training.madiao.scorecard``, ``madiao_mao.training.mao.scorecard``) and those build figures:
keeping the
record type apart leaves the import graph without a circle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from madiao_mao.training.stats import MeanCI, wilson_interval


@dataclass(frozen=True)
class Figure:
    """One measured figure: a mean with its 95% interval and the samples behind it."""

    table: str
    """Who the policy played against (Madiao: the baseline in the three other seats; Mao: the
    kind of the other players at the table, or ``players_calls``)."""
    measure: str
    """What is measured (docs/scorecard.md lists each measure and its unit)."""
    mean: float | None
    low: float | None
    high: float | None
    """The 95% interval (None when it cannot be computed: no sample, or one block)."""
    n: int
    """The samples (hands, turns, rounds or calls, per ``measure``)."""
    blocks: int
    """The independent units the interval is computed over (deals, games; for a Wilson interval
    of a proportion, the samples themselves)."""

    @classmethod
    def from_ci(cls, table: str, measure: str, ci: MeanCI, n: int) -> Figure:
        return cls(table, measure, _finite(ci.mean), _finite(ci.low), _finite(ci.high), n, ci.n_blocks)

    @classmethod
    def proportion(cls, table: str, measure: str, hits: int, trials: int) -> Figure:
        """A rate with its Wilson interval."""
        low, high = wilson_interval(hits, trials)
        mean = hits / trials if trials else math.nan
        return cls(table, measure, _finite(mean), _finite(low), _finite(high), trials, trials)

    def text(self, *, signed: bool = True) -> str:
        """The mean and its interval to 3 decimals, with a sign for a payoff or a difference
        (``signed``), without one for a rate (``RATES`` of the game's module)."""
        style = "+.3f" if signed else ".3f"
        if self.mean is None:
            return "n/a"
        if self.low is None or self.high is None:
            return format(self.mean, style)
        return f"{self.mean:{style}} [{self.low:{style}}, {self.high:{style}}]"

    def __str__(self) -> str:
        return self.text()


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None
