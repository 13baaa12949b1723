"""The GPU check (``benchmarks/gpu_check.py``) as far as a machine without a GPU can run it: the
runs it measures, its table and its one-line refusals (the learner suite it also runs:
``tests/common/test_learner_benchmark.py``)."""

from __future__ import annotations

import pytest

pytest.importorskip("sb3_contrib")

from madiao_mao.benchmarks import gpu_check, learner
from madiao_mao.training.game_spec import GAME_SPECS


def test_every_game_is_trained_by_each_engine_briefly_and_without_a_warm_start(tmp_path):
    runs = gpu_check.training_configs(quick=False, runs_dir=tmp_path)
    labels = [label for label, _, _ in runs]
    for game in GAME_SPECS:
        assert {f"{game} default, sb3", f"{game} default, fast"} <= set(labels)
        assert any(label.startswith(f"{game} n_envs 4096") for label in labels)
        workers = [config for label, _, config in runs if label.startswith(f"{game} n_envs 4096")]
        assert [config.env_workers for config in workers] == [1, gpu_check.WIDE_ENV_WORKERS]
    for _, engine, config in runs:
        assert engine in gpu_check.ENGINES
        assert config.total_timesteps == gpu_check.ROLLOUTS * config.n_envs * config.n_steps
        assert (config.imitate, config.eval_every, config.runs_dir) == ("none", 0, str(tmp_path))


def test_the_check_prints_one_table_of_both_devices(monkeypatch, capsys):
    n_runs = len(gpu_check.training_configs(quick=True, runs_dir=gpu_check.Path("runs")))
    seen = []

    def fake_speed(config, engine):
        seen.append(engine)
        # The device's runs come first, then the CPU's: 900 then 300 learner steps/s.
        sps = 900.0 if len(seen) <= n_runs else 300.0
        return {
            "sps": sps,
            "env_time_fraction": 0.1,
            "opponent_time_fraction": 0.2,
            "update_time_fraction": 0.7,
        }

    monkeypatch.setattr(learner, "training_run_speed", fake_speed)
    assert gpu_check.main(["--device", "cpu", "--quick"]) == 0
    table = capsys.readouterr().out
    assert table.count("| 900 | 300 | 3.00x | env 10%, opponents 20%, updates 70%;") == n_runs
    assert len(seen) == 2 * n_runs and set(seen) == set(gpu_check.ENGINES)


@pytest.mark.parametrize(
    ("argv", "named"), [(["--seconds", "0"], "--seconds"), (["--device", "cuda:99"], "device cuda:99")]
)
def test_a_bad_check_invocation_is_one_line_and_status_2(argv, named, capsys):
    try:
        status = gpu_check.main(argv)
    except SystemExit as exit_:
        status = exit_.code
    error = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(error) == 1 and named in error[0]
