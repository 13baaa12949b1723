"""Statistics for tournaments: confidence intervals by block, openskill ratings, tables, plots.

Duplicate deals make the hands of one deal strongly correlated (the same cards are replayed with
the seats rotated), so a confidence interval must treat a *deal block* as the independent unit:
average each block first, then take the mean and standard error over blocks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

Z_95 = 1.959963984540054


def student_t_quantile(probability: float, dof: int) -> float:
    """Two-sided Student t critical value (Cornish-Fisher expansion; exact enough for dof >= 3).

    Written out so the package needs no scipy: with ``probability=0.975`` it gives 2.571 for
    5 dof (exact 2.571), 2.042 for 30 (exact 2.042) and tends to 1.960.
    """
    if dof < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {dof}")
    if not 0.5 < probability < 1.0:
        raise ValueError(f"probability must be in (0.5, 1), got {probability}")
    z = _normal_quantile(probability)
    if dof <= 2:  # closed forms: the expansion is poor for one or two dof
        p_two_sided = 2 * (1 - probability)
        if dof == 1:
            return math.tan(math.pi * (0.5 - p_two_sided / 2))
        return math.sqrt(2 / (p_two_sided * (2 - p_two_sided)) - 2)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / dof + g2 / dof**2 + g3 / dof**3 + g4 / dof**4


def _normal_quantile(probability: float) -> float:
    # Acklam's rational approximation refined by one Newton step on erf: ~1e-12 accurate.
    a = (
        -39.69683028665376,
        220.9460984245205,
        -275.9285104469687,
        138.3577518672690,
        -30.66479806614716,
        2.506628277459239,
    )
    b = (-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572)
    c = (
        -0.007784894002430293,
        -0.3223964580411365,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    )
    d = (0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416)
    p = probability
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / (
            (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1
        )
    elif p > 1 - 0.02425:
        return -_normal_quantile(1 - p)
    else:
        q = p - 0.5
        r = q * q
        x = (
            (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
            * q
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
        )
    error = 0.5 * math.erfc(-x / math.sqrt(2)) - p
    return x - error * math.sqrt(2 * math.pi) * math.exp(x * x / 2)


@dataclass(frozen=True)
class MeanCI:
    """A sample mean with its two-sided confidence interval."""

    mean: float
    low: float
    high: float
    n_blocks: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def __str__(self) -> str:
        if self.n_blocks == 0:
            return "n/a"
        return f"{self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def mean_ci(block_values: Iterable[float], confidence: float = 0.95) -> MeanCI:
    """Mean and t interval over independent block values (one value per deal block).

    An empty sample gives NaNs; a single block gives an infinitely wide interval.
    """
    values = np.asarray(list(block_values), dtype=np.float64)
    n = values.size
    if n == 0:
        return MeanCI(math.nan, math.nan, math.nan, 0)
    mean = float(values.mean())
    if n == 1:
        return MeanCI(mean, -math.inf, math.inf, 1)
    standard_error = float(values.std(ddof=1)) / math.sqrt(n)
    half = student_t_quantile(0.5 + confidence / 2, n - 1) * standard_error
    return MeanCI(mean, mean - half, mean + half, n)


def paired_ratio_difference(
    ours: tuple[Sequence[float], Sequence[float]],
    theirs: tuple[Sequence[float], Sequence[float]],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> MeanCI:
    """(sum of numerators / sum of denominators) of ``ours`` minus that of ``theirs``, each given
    per block (``(numerators, denominators)``, the same blocks in the same order), with a paired
    bootstrap percentile interval: blocks are resampled together, so what both met is held fixed.
    For a ratio of sums, as a call accuracy is (correct calls / calls, per episode), where a
    block's own ratio is often undefined. Resamples where either denominator sums to zero are
    dropped."""
    a_num, a_den, b_num, b_den = (np.asarray(x, dtype=np.float64) for x in (*ours, *theirs))
    n = a_num.size
    if not a_num.shape == a_den.shape == b_num.shape == b_den.shape == (n,):
        raise ValueError("the two sides must give one numerator and one denominator per block")
    if n == 0 or a_den.sum() == 0 or b_den.sum() == 0:
        return MeanCI(math.nan, math.nan, math.nan, 0)
    point = a_num.sum() / a_den.sum() - b_num.sum() / b_den.sum()
    picks = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    sums = [x[picks].sum(axis=1) for x in (a_num, a_den, b_num, b_den)]
    defined = (sums[1] > 0) & (sums[3] > 0)
    differences = sums[0][defined] / sums[1][defined] - sums[2][defined] / sums[3][defined]
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(differences, [tail, 100 - tail])
    return MeanCI(float(point), float(low), float(high), n)


def block_means(values: Sequence[float], block_ids: Sequence[int]) -> np.ndarray:
    """Average ``values`` within each block id (blocks in order of first appearance)."""
    values = np.asarray(values, dtype=np.float64)
    block_ids = np.asarray(block_ids)
    if values.shape != block_ids.shape:
        raise ValueError(f"values {values.shape} and block ids {block_ids.shape} differ in shape")
    _, first_index, inverse = np.unique(block_ids, return_index=True, return_inverse=True)
    sums = np.bincount(inverse, weights=values)
    counts = np.bincount(inverse)
    order = np.argsort(first_index)
    return (sums / counts)[order]


def openskill_ratings(
    matches: Iterable[tuple[str, str, float]], names: Sequence[str]
) -> dict[str, tuple[float, float, float]]:
    """Plackett-Luce ratings from (first, second, score of first) results; ties when score == 0.

    Returns ``{name: (mu, sigma, ordinal)}`` where ordinal = mu - 3 sigma (a conservative skill).
    """
    # openskill and matplotlib (below) are the train extra's, and slow to import: only when used.
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = {name: model.rating(name=name) for name in names}
    for first, second, score in matches:
        ranks = [0, 0] if score == 0 else ([0, 1] if score > 0 else [1, 0])
        (new_first,), (new_second,) = model.rate([[ratings[first]], [ratings[second]]], ranks=ranks)
        ratings[first], ratings[second] = new_first, new_second
    return {name: (r.mu, r.sigma, r.ordinal()) for name, r in ratings.items()}


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub markdown table (numbers right-aligned)."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:+.3f}" if math.isfinite(value) else "n/a"
        return str(value)

    text_rows = [[cell(v) for v in row] for row in rows]
    numeric = [
        all(isinstance(row[i], (int, float, MeanCI)) for row in rows) if rows else False
        for i in range(len(header))
    ]
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("| " + " | ".join("---:" if n else "---" for n in numeric) + " |")
    lines += ["| " + " | ".join(row) + " |" for row in text_rows]
    return "\n".join(lines)


def plot_ratings(ratings: dict[str, tuple[float, float, float]], path: Path) -> Path:
    """Bar chart of openskill mu with +-3 sigma error bars, written as PNG."""
    # Imported here: keeps matplotlib off this module's import path.
    import matplotlib

    matplotlib.use("Agg")
    # Imported here: keeps matplotlib off this module's import path.
    import matplotlib.pyplot as plt

    names = sorted(ratings, key=lambda n: ratings[n][0], reverse=True)
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(names)), 3.5))
    ax.bar(names, [ratings[n][0] for n in names], yerr=[3 * ratings[n][1] for n in names], capsize=4)
    ax.set_ylabel("openskill mu (±3σ)")
    ax.set_title("Ratings")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_curves(
    curves: dict[str, tuple[Sequence[float], Sequence[float]]],
    path: Path,
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    bands: dict[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    whole_x: bool = False,
) -> Path:
    """Line plot of named (x, y) curves, optional shaded (low, high) bands; PNG. ``whole_x``: ticks
    on whole numbers only (an x that counts iterations)."""
    # Imported here: keeps matplotlib off this module's import path.
    import matplotlib

    matplotlib.use("Agg")
    # Imported here: keeps matplotlib off this module's import path.
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, (xs, ys) in curves.items():
        ax.plot(xs, ys, marker="o", markersize=3, label=label)
        if bands and label in bands:
            low, high = bands[label]
            ax.fill_between(xs, low, high, alpha=0.2)
    ax.axhline(0.0, color="grey", linewidth=0.5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if whole_x:
        # Imported here: keeps matplotlib off this module's import path.
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if curves:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (sensible at 0 and at small counts)."""
    if trials == 0:
        return (math.nan, math.nan)
    z = _normal_quantile(0.5 + confidence / 2)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class BinnedRate:
    """A rate of events against a binned x (e.g. violations against turns since a rule appeared)."""

    edges: np.ndarray
    trials: np.ndarray
    hits: np.ndarray

    @property
    def centres(self) -> np.ndarray:
        return (self.edges[:-1] + self.edges[1:]) / 2

    @property
    def rates(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.trials > 0, self.hits / np.maximum(self.trials, 1), np.nan)

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        bounds = [wilson_interval(int(h), int(t)) for h, t in zip(self.hits, self.trials, strict=True)]
        return np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])


def binned_rate(xs: Sequence[float], hits: Sequence[bool], edges: Sequence[float]) -> BinnedRate:
    """Count trials and hits per bin ``[edges[i], edges[i+1])``; values outside are dropped."""
    xs = np.asarray(xs, dtype=np.float64)
    hits = np.asarray(hits, dtype=bool)
    edges = np.asarray(edges, dtype=np.float64)
    if xs.shape != hits.shape:
        raise ValueError(f"xs {xs.shape} and hits {hits.shape} differ in shape")
    if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError("edges must be an increasing sequence of at least two numbers")
    index = np.searchsorted(edges, xs, side="right") - 1
    inside = (index >= 0) & (index < edges.size - 1)
    trials = np.bincount(index[inside], minlength=edges.size - 1)
    hit_counts = np.bincount(index[inside], weights=hits[inside], minlength=edges.size - 1).astype(np.int64)
    return BinnedRate(edges, trials, hit_counts)
