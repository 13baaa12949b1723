"""Tournament statistics on constructed samples: intervals, deal blocks, ratings, tables, plots."""

from __future__ import annotations

import math

import numpy as np
import pytest

from madiao_mao.training.madiao.evaluation import PairResult, make_deals
from madiao_mao.training.stats import (
    block_means,
    markdown_table,
    mean_ci,
    openskill_ratings,
    plot_curves,
    plot_ratings,
    student_t_quantile,
)


@pytest.mark.parametrize(
    ("dof", "exact"),
    [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (10, 2.228), (30, 2.042), (1000, 1.962)],
)
def test_student_t_quantiles_match_tables(dof, exact):
    assert student_t_quantile(0.975, dof) == pytest.approx(exact, abs=4e-3)


def test_mean_ci_on_a_constructed_sample():
    ci = mean_ci([1.0, 2.0, 3.0, 4.0, 5.0])
    # sd = sqrt(2.5), se = sd / sqrt(5) = 0.7071; t(0.975, 4) = 2.776 -> half width 1.963.
    assert ci.mean == 3.0
    assert ci.half_width == pytest.approx(2.776 * math.sqrt(2.5) / math.sqrt(5), rel=1e-3)
    assert ci.excludes_zero()
    assert not mean_ci([-1.0, 1.0, -1.0, 1.0]).excludes_zero()
    assert math.isinf(mean_ci([2.0]).half_width)
    assert mean_ci([]).n_blocks == 0


def test_ci_width_shrinks_like_one_over_root_n():
    rng = np.random.default_rng(0)
    small = mean_ci(rng.normal(0, 1, 400))
    large = mean_ci(rng.normal(0, 1, 6400))
    assert small.half_width / large.half_width == pytest.approx(4.0, rel=0.1)
    assert large.half_width == pytest.approx(1.96 / 80, rel=0.05)


def test_block_means_average_within_blocks_in_first_seen_order():
    assert block_means([1, 3, 10, 20, 5], [7, 7, 2, 2, 9]).tolist() == [2.0, 15.0, 5.0]
    with pytest.raises(ValueError, match="differ in shape"):
        block_means([1, 2], [1])


def _pair(scores_by_deal: list[list[float]], banker_seat_rotation: int = 0) -> PairResult:
    pair = PairResult("a", "b")
    for deal, scores in enumerate(scores_by_deal):
        for rotation, score in enumerate(scores):
            pair.deal_index.append(deal)
            pair.score.append(score)
            pair.banker.append(rotation == banker_seat_rotation)
    return pair


def test_an_agent_that_always_wins_has_a_ci_above_zero_in_both_roles():
    winner = _pair([[3.0, 1.0, 1.0, 1.0]] * 50)
    assert winner.overall().mean == pytest.approx(1.5)
    assert winner.as_banker().mean == 3.0 and winner.as_banker().half_width == 0.0
    assert winner.as_player().mean == 1.0
    assert winner.overall().low > 0 and winner.as_banker().low > 0 and winner.as_player().low > 0
    loser = _pair([[-3.0, -1.0, -1.0, -1.0]] * 50)
    assert loser.overall().high < 0


def test_duplicate_correlation_is_handled_by_deal_blocks():
    # Within a deal the four hands move together (luck of the cards); the blocks are what vary.
    rng = np.random.default_rng(1)
    luck = rng.normal(0, 2, 200)
    pair = _pair([[x + 0.1] * 4 for x in luck])
    ci = pair.overall()
    assert ci.n_blocks == 200  # not 800 hands: correlated hands are not independent samples
    expected = mean_ci(luck + 0.1)
    assert ci.low == pytest.approx(expected.low) and ci.high == pytest.approx(expected.high)
    assert pair.block_scores().shape == (200,)


def test_openskill_ratings_rank_the_consistent_winner_first():
    matches = [("strong", "weak", 1.0)] * 30 + [("weak", "strong", -1.0)] * 30 + [("mid", "weak", 0.0)] * 5
    ratings = openskill_ratings(matches, ["strong", "mid", "weak"])
    assert ratings["strong"][0] > ratings["mid"][0] > ratings["weak"][0]
    mu, sigma, ordinal = ratings["strong"]
    assert ordinal == pytest.approx(mu - 3 * sigma)


def test_markdown_table_and_plots(tmp_path):
    text = markdown_table(["agent", "score"], [["a", 1.5], ["b", -0.25]])
    assert text.splitlines() == ["| agent | score |", "| --- | ---: |", "| a | +1.500 |", "| b | -0.250 |"]
    ratings = {"a": (27.0, 2.0, 21.0), "b": (23.0, 2.0, 17.0)}
    assert plot_ratings(ratings, tmp_path / "r.png").stat().st_size > 1000
    path = plot_curves(
        {"vs b": ([0, 1, 2], [0.0, 0.5, 1.0])},
        tmp_path / "c.png",
        xlabel="x",
        ylabel="y",
        title="t",
        bands={"vs b": ([-1, 0, 0.5], [1, 1, 1.5])},
    )
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_deals_are_seeded_and_complete():
    first, again = make_deals(5, seed=3), make_deals(5, seed=3)
    assert first == again
    assert all(sorted(d.deck) == sorted(first[0].deck) and len(d.deck) == 40 for d in first)
    assert make_deals(5, seed=4) != first
    with pytest.raises(ValueError, match="at least 1"):
        make_deals(0, seed=0)


def test_wilson_interval_and_binned_rates():
    from madiao_mao.training.stats import binned_rate, wilson_interval

    low, high = wilson_interval(0, 10)
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(0.2775, abs=1e-3)  # textbook value
    low, high = wilson_interval(50, 100)
    assert (low, high) == pytest.approx((0.4038, 0.5962), abs=1e-3)
    rates = binned_rate([0, 1, 5, 9, 10, 25], [True, True, False, True, False, True], [0, 5, 10, 20])
    assert rates.trials.tolist() == [2, 2, 1]  # 25 is outside the last bin
    assert rates.hits.tolist() == [2, 1, 0]
    assert rates.rates.tolist() == [1.0, 0.5, 0.0]
    assert rates.centres.tolist() == [2.5, 7.5, 15.0]
    with pytest.raises(ValueError, match="increasing"):
        binned_rate([1], [True], [3, 1])
