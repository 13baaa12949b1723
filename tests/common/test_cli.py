"""Smoke tests of every ``madiao-mao`` command, run as a user would (a subprocess, tiny budgets)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("madiao_env.madiao_v0")

from tests.common.helpers import run_cli

REPO = Path(__file__).resolve().parents[2]


def test_match_prints_a_whole_match_with_settlements_and_totals(tmp_path):
    record = tmp_path / "match.json"
    result = run_cli("match", "--seed", "3", "--record", str(record))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.count("=== Hand") >= 4  # every seat is banker once
    assert (
        "settlement:" in out
        and "totals by seat:" in out
        and "totals by agent:" in out
        and "Match over" in out
    )
    assert "trick 8:" in out
    data = json.loads(record.read_text())
    assert sum(data["returns"]) == pytest.approx(0.0, abs=1e-6)  # zero-sum
    replay = run_cli("replay", str(record))
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout.count("settlement:") == out.count("settlement:")


def test_play_reasks_on_invalid_input_and_records_the_game(tmp_path):
    record = tmp_path / "game.json"
    # Invalid lines first (garbage, an out-of-range number, an unknown card, a card not held),
    # then always the first listed move; input beyond the end of the hand is never read.
    script = "banana\n99\nplay 11Z\nhelp\n" + "1\n" * 40
    result = run_cli("play", "--seat", "1", "--seed", "5", "--record", str(record), stdin=script)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "neither a move number nor a card name" in out
    assert "There is no move 99" in out
    assert "unknown card name '11Z'" in out
    assert "Your hand:" in out and "Your move:" in out
    assert "Final totals:" in out
    data = json.loads(record.read_text())
    assert data["seats"][1] == "you"
    moves = [e for e in data["events"] if e["type"] == "move"]
    assert len(moves) >= 32
    replay = run_cli("replay", str(record))
    assert replay.returncode == 0 and "settlement:" in replay.stdout


def test_play_ends_cleanly_at_end_of_input():
    result = run_cli("play", "--seat", "0", "--seed", "2", stdin="")
    assert result.returncode == 0, result.stderr
    assert "Goodbye" in result.stdout
    assert "Traceback" not in result.stderr


def test_replay_names_a_bad_record(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = run_cli("replay", str(bad))
    assert result.returncode == 2
    assert "is not a JSON game record" in result.stderr


def test_evaluate_writes_report_plots_and_record(tmp_path):
    out = tmp_path / "eval"
    result = run_cli(
        "evaluate",
        "--agents",
        "greedy",
        "random",
        "--deals",
        "3",
        "--out",
        str(out),
        "--record",
        str(tmp_path / "hands.json"),
        "--record-hands",
        "2",
    )
    assert result.returncode == 0, result.stderr
    assert "| greedy | random | 12 |" in result.stdout
    assert (out / "evaluation.md").is_file() and (out / "evaluation_ratings.png").is_file()
    assert (
        len(
            [
                e
                for e in json.loads((tmp_path / "hands.json").read_text())["events"]
                if e["type"] == "settlement"
            ]
        )
        == 2
    )


def test_evaluate_against_the_search_player_plays_in_the_env_it_reads():
    # The search player samples hidden cards from the env it was built with: the tournament has
    # to deal its hands in that very env.
    result = run_cli("evaluate", "--agents", "greedy", "search", "--deals", "1", "--seed", "3")
    assert result.returncode == 0, result.stderr
    assert "| greedy | search | 4 |" in result.stdout
    assert "| search | greedy | 4 |" in result.stdout


def test_train_tiny_budget_then_report(tmp_path):
    flags = [
        "--total-timesteps",
        "256",
        "--n-envs",
        "8",
        "--n-steps",
        "16",
        "--batch-size",
        "64",
        "--eval-every",
        "128",
        "--eval-deals",
        "1",
        "--final-eval-deals",
        "1",
        "--checkpoint-every",
        "128",
        "--runs-dir",
        str(tmp_path),
        "--no-progress",
    ]
    result = run_cli("train", *flags)
    assert result.returncode == 0, result.stderr
    assert "steps/s" in result.stdout
    (run_dir,) = tmp_path.iterdir()
    assert run_dir.name.startswith("madiao__selfplay__1__")
    # The run's own config.json through --config is the run's config again.
    from madiao_mao.cli.train import parse_train_command

    rerun = parse_train_command(["--config", str(run_dir / "config.json")]).train_config()
    assert rerun == parse_train_command(flags).train_config()
    for name in (
        "final_model.zip",
        "checkpoint.zip",
        "report.md",
        "final_evaluation.md",
        "learning_curves.png",
    ):
        assert (run_dir / name).is_file(), name
    assert "Madiao duplicate tournament" in (run_dir / "report.md").read_text()


def test_train_mao_tiny_budget_then_held_out_report_and_evaluation(tmp_path):
    result = run_cli(
        "train", "--game", "mao", "--total-timesteps", "256", "--n-envs", "8", "--n-steps", "16",
        "--batch-size", "64", "--eval-every", "128", "--eval-deals", "2", "--final-eval-deals", "2",
        "--runs-dir", str(tmp_path / "runs"), "--no-progress", "--imitation-decisions", "64",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "[eval @ " in result.stdout and "pen/turn" in result.stdout
    assert "warm start: bayes plays 64 learner decisions" in result.stdout
    (run_dir,) = (tmp_path / "runs").iterdir()
    report = (run_dir / "report.md").read_text()
    assert "Mao rules held out of training" in report
    assert "- learned " in report and "paired difference per game" in report
    for name in ("learned", "base", "bayes"):
        assert f"| {name} |" in report
    assert (run_dir / "mao_held_out_vs_base_discovery.png").is_file()
    # The saved policy meets the held-out rules again through the evaluation module.
    evaluation = subprocess.run(
        [sys.executable, "-m", "madiao_mao.training.mao.evaluation",
         "--model", str(run_dir / "final_model.zip"), "--turns", "2", "--out", str(tmp_path / "eval")],
        capture_output=True, text=True, timeout=240, cwd=REPO,
    )  # fmt: skip
    assert evaluation.returncode == 0, evaluation.stderr
    assert "- learned " in evaluation.stdout and "vs base" in evaluation.stdout
    assert "(8 games, 95% CI)" in evaluation.stdout
    assert (tmp_path / "eval" / "mao_held_out.md").is_file()


def test_bench_runs_the_benchmarks_module_or_says_it_is_missing():
    result = run_cli("bench", "--help")
    has_benchmarks = (REPO / "benchmarks" / "__main__.py").is_file()
    if has_benchmarks:
        assert result.returncode == 0, result.stderr
    else:
        assert result.returncode == 1 and "no benchmarks" in result.stderr


def test_bad_arguments_are_named():
    result = run_cli("play", "--seat", "7")
    assert result.returncode == 2 and "a seat is 0, 1, 2 or 3" in result.stderr
    result = run_cli("match", "--agents", "random", "random", "random", "wizard")
    assert result.returncode == 2 and "unknown madiao agent 'wizard'" in result.stderr
