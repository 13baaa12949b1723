"""Mao evaluation: the per-turn statistics on hand-set turns whose calls and violations are known,
the curves' arithmetic, the trainer's entry point, and the CLI (a subprocess, tiny budget)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from madiao_mao.agents.base import Agent
from madiao_mao.agents.mao.players import BaseRulesAgent
from madiao_mao.training.mao.evaluation import (
    MaoReport,
    MaoSeatStats,
    evaluate_mao,
    evaluate_mao_seat,
    paired_penalty_difference,
    paired_round_win_difference,
    penalty_ratio_target,
    play_mao_episode,
    rule_discovery_experiment,
    write_mao_report,
)
from mao_env import cards
from mao_env import rules as rule_library
from mao_env.env import raw_env

REPO = Path(__file__).resolve().parents[2]
RABBIT_ON_DRAW = rule_library.RULE_DESCRIPTIONS.index("when drawing a card, say 'That's the rabbit'")
HEARTS_ON_SPADES = rule_library.RULE_DESCRIPTIONS.index("hearts may not be played on spades")


class Scripted(Agent):
    """Plays a fixed list of action texts, then the base player's choices."""

    def __init__(self, env, texts):
        self.env, self.texts, self.fallback = env, list(texts), BaseRulesAgent(seed=0)

    def act(self, observation, action_mask):
        if self.texts:
            return self.env.action_from_text(self.texts.pop(0))
        return self.fallback.act(observation, action_mask)


def test_turn_statistics_and_violations_on_a_known_table():
    # Seat 0 draws without "That's the rabbit" (a violation of the draw rule), then plays 5H on
    # 5S (a bad card by rule 3) and says nothing; seat 0 is the tracked seat, two rules unknown.
    env = raw_env(4, num_rounds=1, rule_choice="fixed", win_reward=1.0, penalty_card_reward=-1.0)
    options = {
        "hands": {0: ["5H", "2C"], 1: ["9D", "8D"], 2: ["9C", "8C"], 3: ["6D", "4D"]},
        "pile": ["5S"],
        "stack": ["KH", "QH", "KD", "QD", "10D", "10C", "JC", "JD", "2H", "3H"],
        "rules": [RABBIT_ON_DRAW, HEARTS_ON_SPADES],
    }
    # Seat 0 draws silently (one call), seats 1-3 draw saying the rabbit (no call), seat 0 plays
    # 5H on 5S (one call: "Bad card"; the card comes back, so no "Last card" is due).
    lineup = [
        Scripted(env, ["draw", "end", "play 5H", "end"]),
        Scripted(env, ["draw", "say rabbit", "end"] * 2),
        Scripted(env, ["draw", "say rabbit", "end"] * 2),
        Scripted(env, ["draw", "say rabbit", "end"] * 2),
    ]
    stats = MaoSeatStats("scripted")
    play_mao_episode(env, lineup, {0: stats}, seed=0, options=options, max_turns=2)
    assert stats.turns == 2
    assert stats.turn_calls == [1, 1]
    assert stats.turn_penalties == [1, 1]  # one card per call, no seven chain
    assert stats.calls_per_turn == 1.0 and stats.penalties_per_turn == 1.0
    assert stats.turn_since_rule == [0, 1]
    # (turn, rule) pairs: turn 0 violates the draw rule only, turn 1 the validity rule only.
    pairs = sorted(zip(stats.discovery_since, stats.discovery_violated, strict=True))
    assert pairs == [(0, False), (0, True), (1, False), (1, True)]
    assert stats.judge_mismatches == 0
    assert stats.rounds_played == 0 and math.isnan(stats.round_win_rate)
    curve = stats.discovery_curve((0, 1, 2))
    assert curve.trials.tolist() == [2, 2] and curve.rates.tolist() == [0.5, 0.5]


def test_curves_and_the_ratio_target_on_known_numbers():
    fast = MaoSeatStats(
        "learner", turns=4, penalty_cards=5, turn_since_rule=[0, 5, 10, 15], turn_penalties=[4, 0, 1, 0]
    )
    oracle = MaoSeatStats(
        "oracle", turns=4, penalty_cards=2, turn_since_rule=[0, 5, 10, 15], turn_penalties=[0, 1, 1, 0]
    )
    counts, means = fast.penalty_curve((0, 10, 20))
    assert counts.tolist() == [2, 2] and means.tolist() == [2.0, 0.5]
    report = MaoReport({"learner": fast, "oracle": oracle}, "t", "s")
    target = penalty_ratio_target(report, "learner", "oracle", ratio=1.5, bin_width=10, horizon=20)
    assert target["bins"] == ["0-10", "10-20"]
    assert target["learner"] == [2.0, 0.5] and target["oracle"] == [0.5, 0.5]
    assert target["ratio"] == [4.0, 1.0]
    assert target["within_from_turn"] == 10


def test_paired_difference_is_taken_game_by_game():
    # Two games: the learner had 2/4 and 0/2 penalty cards per turn, the reference 1/2 and 2/2.
    learner = MaoSeatStats("learner", turns=6, turn_penalties=[1, 0, 0, 1, 0, 0], game_ends=[4, 6])
    reference = MaoSeatStats("base", turns=4, turn_penalties=[1, 0, 1, 1], game_ends=[2, 4])
    assert learner.game_penalty_rates().tolist() == [0.5, 0.0]
    report = MaoReport({"learner": learner, "base": reference}, "t", "s")
    difference = paired_penalty_difference(report, "learner", "base")
    assert difference.n_blocks == 2 and difference.mean == pytest.approx(-0.5)  # (0 + -1) / 2
    # t interval with 1 degree of freedom: 12.706 * sd(0, -1) / sqrt(2) = 6.353.
    assert difference.high == pytest.approx(-0.5 + 6.353, abs=1e-3)
    lonely = MaoReport({"learner": learner, "base": MaoSeatStats("base")}, "t", "s")
    with pytest.raises(ValueError, match="did not play the same controlled games"):
        paired_penalty_difference(lonely, "learner", "base")


def test_paired_round_win_difference_is_taken_game_by_game():
    # Game 1: the learner won 1 of 2 rounds, the reference 2 of 2; game 2: 0 of 1 against 0 of 3;
    # game 3: the learner finished no round, so that game is left out.
    learner = MaoSeatStats("learner", game_ends=[4, 6, 8], game_round_ends=[(1, 2), (1, 3), (1, 3)])
    reference = MaoSeatStats("base", game_ends=[2, 4, 6], game_round_ends=[(2, 2), (2, 5), (3, 6)])
    np.testing.assert_allclose(learner.game_round_win_rates(), [0.5, 0.0, np.nan])
    report = MaoReport({"learner": learner, "base": reference}, "t", "s")
    difference = paired_round_win_difference(report, "learner", "base")
    assert difference.n_blocks == 2 and difference.mean == pytest.approx(-0.25)  # (-0.5 + 0) / 2
    with pytest.raises(ValueError, match="did not play the same controlled games"):
        paired_round_win_difference(
            MaoReport({"learner": learner, "base": MaoSeatStats("base")}, "t", "s"), "learner", "base"
        )


def test_held_out_command_compares_several_models_with_each_other(tmp_path, capsys):
    pytest.importorskip("sb3_contrib")
    from madiao_mao.agents.mao import PRETRAINED_MODEL
    from madiao_mao.training.mao.evaluation import main

    shipped = str(PRETRAINED_MODEL)
    assert main(["--model", shipped, shipped, "--turns", "3", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert f"learned1: {shipped}" in out and f"learned2: {shipped}" in out
    assert "| learned1 |" in out and "| learned2 |" in out and "| bayes |" in out
    # The same greedy policy on the same games: a paired difference of exactly zero.
    line = next(x for x in out.splitlines() if x.startswith("- learned1 ") and " vs learned2 " in x)
    assert "paired difference per game +0.000 [+0.000, +0.000]" in line and "round-win rate" in line
    # Each policy is paired with its teacher too (the Mao target is the Bayesian player's penalties).
    for name in ("learned1", "learned2"):
        assert any(x.startswith(f"- {name} ") and " vs bayes " in x for x in out.splitlines())


def test_controlled_experiment_records_where_each_game_ends():
    report = rule_discovery_experiment(
        {"base": "base", "oracle": "oracle"}, rules=[HEARTS_ON_SPADES, RABBIT_ON_DRAW], turns=6, replicates=2
    )
    for stats in report.stats.values():
        assert stats.game_ends == [6, 12, 18, 24] and stats.turns == 24
        assert len(stats.game_round_ends) == 4 and stats.game_round_ends[-1] == (
            stats.rounds_won,
            stats.rounds_played,
        )
        penalties = np.asarray(stats.turn_penalties, dtype=float).reshape(4, 6)
        assert stats.game_penalty_rates() == pytest.approx(penalties.mean(axis=1))
    # The oracle draws no call; what it gets is seven-chain cards, which the base player gets too.
    assert report.stats["oracle"].calls == 0
    assert paired_penalty_difference(report, "oracle", "base").n_blocks == 4


def test_evaluation_of_base_and_oracle_and_the_report(tmp_path):
    report = evaluate_mao({"base": "base", "oracle": "oracle"}, n_rounds=4, seed=1, rounds_per_episode=4)
    base, oracle = report.stats["base"], report.stats["oracle"]
    assert base.rounds_played == oracle.rounds_played == 4
    assert 0 <= base.rounds_won <= 4
    assert oracle.calls == 0 and oracle.turns > 0
    assert all(not v for v in oracle.discovery_violated)
    assert base.judge_mismatches == oracle.judge_mismatches == 0
    text = report.markdown()
    assert "| base |" in text and "| oracle |" in text and "round-win rate" in text
    paths = write_mao_report(report, tmp_path)
    assert [p.name for p in paths] == ["mao_evaluation.md", "mao_evaluation_discovery.png"]
    assert paths[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_trainer_entry_point_returns_plain_numbers():
    summary = evaluate_mao_seat(BaseRulesAgent(seed=0), "base", n_rounds=2, seed=3)
    assert set(summary) >= {"turns", "penalties_per_turn", "calls_per_turn", "round_win_rate"}
    assert summary["turns"] > 0 and 0.0 <= summary["round_win_rate"] <= 1.0
    assert all(isinstance(v, (int, float)) for v in summary.values())


def test_cli_evaluate_mao_smoke(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "madiao_mao.cli.main", "evaluate", "--game", "mao",
         "--agents", "base", "bayes", "oracle", "--deals", "2", "--seed", "4", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=240, cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for name in ("base", "bayes", "oracle"):
        assert f"| {name} |" in result.stdout
    assert (tmp_path / "mao_evaluation.md").is_file() and (
        tmp_path / "mao_evaluation_discovery.png"
    ).is_file()
    bad = subprocess.run(
        [sys.executable, "-m", "madiao_mao.cli.main", "evaluate", "--game", "mao",
         "--agents", "base", "wizard"],
        capture_output=True, text=True, timeout=240, cwd=REPO,
    )  # fmt: skip
    assert bad.returncode == 2 and "unknown mao agent 'wizard'" in bad.stderr


def test_bad_evaluation_arguments_are_named():
    with pytest.raises(ValueError, match="n_rounds and rounds_per_episode must be >= 1"):
        evaluate_mao({"base": "base"}, n_rounds=0)
    assert np.isnan(MaoSeatStats("x").calls_per_turn)
    assert cards.END_TURN == 70  # the action id the evaluation watches for
