"""Smoke test of ``python -m madiao_mao.benchmarks --quick`` and checks of its helpers."""

from __future__ import annotations

from types import SimpleNamespace
from typing import ClassVar

import numpy as np
import pytest

from cardgame_core.runtime import machine_description
from madiao_mao.benchmarks import madiao as madiao_benchmarks
from madiao_mao.benchmarks.__main__ import SUITES, main, parse_arguments
from madiao_mao.benchmarks.batched import learner_system, serial_vector_system, vector_system, workloads
from madiao_mao.benchmarks.kernels import random_legal_actions
from madiao_mao.benchmarks.madiao import trick_loop_hands
from madiao_mao.benchmarks.targets import evaluate
from madiao_mao.benchmarks.timing import Result


def test_quick_run_writes_a_table_with_measured_rows(tmp_path, capsys):
    output = tmp_path / "latest.md"
    assert main(["--quick", "--only", "aec,batched,rollout,memory", "--output", str(output)]) == 0
    text = output.read_text()
    assert text in capsys.readouterr().out
    assert "| aec | empty AEC env (wrapped) |" in text
    assert "| rollout | bare trick-loop probe (tricks only) |" in text
    assert "| rollout | madiao model-search decision |" in text
    assert "## Targets" in text
    # What the figures ran on: the machine and the numerical libraries' versions.
    assert f"- machine: {machine_description()}" in text
    assert f"numpy {np.__version__}" in text
    empty_row = next(line for line in text.splitlines() if "empty AEC env (wrapped)" in line)
    assert "steps/s" in empty_row and "—" not in empty_row
    # The learner's view beside the raw API, for both games (N = 64 in a quick run).
    for game in ("madiao", "mao"):
        for api in ("raw", "gymnasium"):
            row = next(line for line in text.splitlines() if f"| {learner_system(game, api, 64)} |" in line)
            assert "env-steps/s" in row and "learner steps/s" in row


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="unknown suite"):
        parse_arguments(["--only", "nonsense"])
    with pytest.raises(ValueError, match="--seconds"):
        parse_arguments(["--seconds", "0"])
    quick = parse_arguments(["--quick"])
    assert quick.seconds == 0.1 and "startup" not in quick.suites and "peers" not in quick.suites


def test_random_legal_actions_pick_only_legal_ids():
    rng = np.random.default_rng(0)
    masks = rng.random((200, 82)) < 0.1
    masks[7] = False
    actions = np.empty(200, dtype=np.int64)
    random_legal_actions(masks, 3, actions)
    assert actions[7] == -1
    rows = np.flatnonzero(masks.any(axis=1))
    assert masks[rows, actions[rows]].all()
    again = np.empty(200, dtype=np.int64)
    random_legal_actions(masks, 3, again)
    np.testing.assert_array_equal(actions, again)


def test_trick_probe_is_deterministic_and_counts_at_most_eight_tricks_a_hand():
    checksum = trick_loop_hands(500, 1)
    assert checksum == trick_loop_hands(500, 1)
    # Seat 0 leads the first trick; over many hands it takes some but far from all tricks.
    assert 0 < checksum < 8 * 500


def test_the_search_rows_time_a_searched_decision_and_refuse_a_position_with_none(monkeypatch):
    body = madiao_benchmarks.search_body("search:samples=8")
    assert body() == 1
    # Seed 3's deal opens with a redeal decision, which the search leaves to its heuristic.
    monkeypatch.setattr(madiao_benchmarks, "SEARCH_POSITION", (3, 0))
    with pytest.raises(RuntimeError, match="searched nothing at the benchmark's position"):
        madiao_benchmarks.search_body("search:samples=8")


def test_targets_report_met_missed_and_not_measured():
    results = [
        Result("aec", "empty AEC env (wrapped)", 100.0, "steps/s"),
        Result("aec", "madiao AEC (wrapped), random play", 80.0, "steps/s"),
        Result("aec", "mao AEC (wrapped), random play", 50.0, "steps/s"),
    ]
    rows = {name: (achieved, status) for name, _, achieved, status in evaluate(results)}
    assert rows["Madiao AEC vs empty wrapped AEC"] == ("0.80×", "met")
    assert rows["Mao AEC vs empty wrapped AEC"] == ("0.50×", "MISSED")
    assert rows["Mao batched N=1024, obs + masks"] == ("not measured", "—")
    results += [
        Result("batched", learner_system("madiao", "raw", 1024), 100.0, "env-steps/s"),
        Result("batched", learner_system("madiao", "gymnasium", 1024), 95.0, "env-steps/s"),
        Result("batched", learner_system("mao", "raw", 1024), 100.0, "env-steps/s"),
        Result("batched", learner_system("mao", "gymnasium", 1024), 85.0, "env-steps/s"),
    ]
    rows = {name: (achieved, status) for name, _, achieved, status in evaluate(results)}
    assert rows["Madiao Gymnasium VectorEnv vs raw API, learner seat, N=1024"] == ("0.95×", "met")
    assert rows["Mao Gymnasium VectorEnv vs raw API, learner seat, N=1024"] == ("0.85×", "MISSED")


def test_large_batch_target_is_mao_n4096_over_n1024_of_the_same_run():
    # Distinct rates for every row, so that a target reading another row (or the two swapped)
    # shows another ratio.
    results = [
        Result("batched", vector_system("mao", 1024), 200.0, "env-steps/s"),
        Result("batched", vector_system("mao", 4096), 210.0, "env-steps/s"),
        Result("batched", serial_vector_system("mao", 1024), 300.0, "env-steps/s"),
        Result("batched", serial_vector_system("mao", 4096), 150.0, "env-steps/s"),
        Result("batched", vector_system("madiao", 1024), 500.0, "env-steps/s"),
        Result("batched", vector_system("madiao", 4096), 250.0, "env-steps/s"),
    ]
    rows = {name: (goal, achieved, status) for name, goal, achieved, status in evaluate(results)}
    assert rows["Mao batched N=4096 vs N=1024, obs + masks"] == ("≥ 1.00×", "1.05×", "met")
    assert "Madiao batched N=4096 vs N=1024, obs + masks" not in rows  # a goal of Mao's only
    results[1] = Result("batched", vector_system("mao", 4096), 190.0, "env-steps/s")
    rows = {name: (achieved, status) for name, _, achieved, status in evaluate(results)}
    assert rows["Mao batched N=4096 vs N=1024, obs + masks"] == ("0.95×", "MISSED")
    rows = {name: (achieved, status) for name, _, achieved, status in evaluate(results[:1])}
    assert rows["Mao batched N=4096 vs N=1024, obs + masks"] == ("not measured", "—")


def test_each_games_n1024_and_n4096_rows_are_timed_in_turns():
    found = {w.system: w.group for w in workloads((64, 1024, 4096), games=("mao",))}
    threaded = {found[vector_system("mao", n)] for n in (1024, 4096)}
    serial = {found[serial_vector_system("mao", n)] for n in (1024, 4096)}
    # One group for the two threaded rows, another for their threads=1 rows, none for N=64.
    assert len(threaded) == 1 and len(serial) == 1 and "" not in threaded | serial
    assert threaded != serial
    assert found[vector_system("mao", 64)] == ""


def test_quick_and_partial_runs_leave_the_committed_results_alone(tmp_path, monkeypatch, capsys):
    import madiao_mao.benchmarks.__main__ as bench_main
    from madiao_mao.benchmarks import timing

    committed = tmp_path / "latest.md"
    committed.write_text("committed results\n")
    monkeypatch.setattr(bench_main, "DEFAULT_OUTPUT", committed)
    monkeypatch.setattr(timing, "timed_calls", lambda body, seconds: (1.0, 1.0), raising=False)  # fast
    assert bench_main.main(["--quick", "--only", "rollout"]) == 0
    assert "| rollout |" in capsys.readouterr().out
    assert bench_main.main(["--quick"]) == 0
    assert committed.read_text() == "committed results\n"
    assert parse_arguments(["--only", "aec"]).output is None
    assert parse_arguments([]).output == committed  # a full run still writes them
    asked = tmp_path / "quick.md"
    assert bench_main.main(["--quick", "--only", "rollout", "--output", str(asked)]) == 0
    assert "| rollout |" in asked.read_text()


def test_warm_up_runs_every_timed_code_path_before_the_first_timer(monkeypatch):
    import madiao_mao.benchmarks.__main__ as bench_main
    from madiao_mao.benchmarks import aec, batched, rollout, timing

    calls: list[tuple[str, int]] = []
    recorded_bodies: set[int] = set()

    def recorded(original, key: int):
        def body() -> int:
            calls.append(("run", key))
            return original()

        body.key = key
        return body

    def recording(build):
        def build_recorded(*args, **kwargs):
            workloads = build(*args, **kwargs)
            for workload in workloads:
                if workload.body is not None:
                    key = len(recorded_bodies)
                    recorded_bodies.add(key)
                    workload.body = recorded(workload.body, key)
            return workloads

        return build_recorded

    for module in (aec, batched, rollout):
        monkeypatch.setattr(module, "workloads", recording(module.workloads))

    def timer(body, seconds):
        calls.append(("timer", body.key))
        return 1.0, 1.0

    monkeypatch.setattr(timing, "timed_calls", timer)
    assert bench_main.main(["--quick", "--only", "aec,batched,rollout"]) == 0
    first_timer = next(i for i, (kind, _) in enumerate(calls) if kind == "timer")
    warmed = {key for kind, key in calls[:first_timer] if kind == "run"}
    timed = {key for kind, key in calls if kind == "timer"}
    # Both games' AEC envs, the vector envs at N = 1 and 64, the two rollout bodies, the empty envs.
    assert len(timed) >= 2 + 2 + 2 * 2 + 2
    assert timed == recorded_bodies and timed <= warmed


def test_workloads_of_a_group_take_turns_and_others_are_timed_alone(monkeypatch):
    from madiao_mao.benchmarks import timing

    order: list[str] = []

    def timer(body, seconds):
        order.append(body.__name__)
        return {"raw": 100.0, "gym": 90.0, "alone": 5.0}[body.__name__], 2.0

    def raw():
        return 1

    def gym():
        return 1

    def alone():
        return 1

    monkeypatch.setattr(timing, "timed_calls", timer)
    workloads = [
        timing.Workload("batched", "raw", "env-steps/s", raw, group="pair"),
        timing.Workload("batched", "alone", "env-steps/s", alone),
        timing.Workload("batched", "gym", "env-steps/s", gym, group="pair"),
        timing.Workload("batched", "missing", "env-steps/s", None, missing="not installed", group="pair"),
    ]
    results = timing.measure_all(workloads, seconds=1.0)
    assert [r.system for r in results] == ["raw", "alone", "gym", "missing"]
    assert order == ["alone"] + ["raw", "gym", "gym", "raw"] * 2  # four turns each, alternating
    assert [r.value for r in results] == [100.0, 5.0, 90.0, None]
    assert results[0].note.endswith("timed in turns") and results[3].note == "not installed"


def test_the_help_of_only_names_every_suite(capsys):
    """The help is a docstring, so it can drift from ``SUITES``: it must name exactly those."""
    with pytest.raises(SystemExit):
        parse_arguments(["--help"])
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert f"suites to run, from: {', '.join(SUITES)}." in text


class _RecordingVectorEnv:
    """A vector env that notes its construction options and the order of its steps."""

    steps: ClassVar[list[int]] = []
    options: ClassVar[list[dict]] = []
    #: A fake thread clock: each step takes 1000 ns per game.
    clock_ns = 0

    def __init__(self, n_envs: int, **options) -> None:
        self.n_envs = n_envs
        _RecordingVectorEnv.options.append(options)

    def reset(self):
        return SimpleNamespace(action_mask=np.ones((self.n_envs, 3), dtype=bool))

    def step(self, actions):
        assert actions.shape == (self.n_envs,) and (actions >= 0).all()
        _RecordingVectorEnv.steps.append(self.n_envs)
        _RecordingVectorEnv.clock_ns += 1000 * self.n_envs
        return self.reset()


def test_batch_size_costs_take_turns_on_one_thread_and_divide_by_n(monkeypatch):
    from madiao_mao.benchmarks import batch_size

    _RecordingVectorEnv.steps, _RecordingVectorEnv.options = [], []
    monkeypatch.setattr(batch_size.time, "thread_time_ns", lambda: _RecordingVectorEnv.clock_ns)
    costs = batch_size.step_costs(_RecordingVectorEnv, (4, 8), turns=3, games_per_turn=16)
    assert all(options == {"seed": 0, "copy": False, "threads": 1} for options in _RecordingVectorEnv.options)
    # One untimed step each, then turns of 16 games (4 steps of N=4, 2 of N=8), the order reversed
    # every other turn.
    assert _RecordingVectorEnv.steps == [4, 8] + [4] * 4 + [8] * 2 + [8] * 2 + [4] * 4 + [4] * 4 + [8] * 2
    assert [(cost.n_envs, cost.steps) for cost in costs] == [(4, 12), (8, 6)]
    assert all(cost.p10_ns == cost.median_ns == 1000.0 for cost in costs)


def test_batch_size_table_gives_each_sizes_speed_against_the_first():
    from madiao_mao.benchmarks.batch_size import SizeCost, table

    text = table("mao", [SizeCost(1024, 1000.0, 1100.0, 40), SizeCost(4096, 1250.0, 1300.0, 10)])
    rows = [line for line in text.splitlines() if line.startswith("| 1024 ") or line.startswith("| 4096 ")]
    assert rows[0].endswith("| 1.00× |") and rows[1].endswith("| 0.80× |")


def test_batch_size_command_measures_the_real_env(capsys):
    from madiao_mao.benchmarks.batch_size import main

    assert main(["--game", "mao", "--sizes", "2,4", "--turns", "2", "--games-per-turn", "8"]) == 0
    text = capsys.readouterr().out
    assert text.count("\n| 2 |") == 1 and text.count("\n| 4 |") == 1
