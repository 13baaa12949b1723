"""Training run data and display: nothing lost on resume, damaged or missing files named, unique
run folders, a progress bar and summary that tell the true step count, an evaluation curve even in
a short run, a resume line, Ctrl-C that leaves a resumable checkpoint and says how to resume, and
the same scalar names in ``progress.csv`` and TensorBoard.

Every run here is a tiny one on the toy game of ``test_training`` (a few hundred learner steps).
"""

from __future__ import annotations

import csv
import functools
import json
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.common.test_training import ToyVectorEnv, _toy_training_config

pytest.importorskip("sb3_contrib")

from madiao_mao.training import run_folder
from madiao_mao.training.config import TrainConfig, evaluation_interval
from madiao_mao.training.sb3 import train as train_module

ROLLOUT = 8 * 16  # the toy config's n_envs * n_steps


@pytest.fixture()
def toy_config(tmp_path, monkeypatch):
    """``toy_config(**overrides)``: the config of a tiny training run on the toy game, in
    ``tmp_path`` (``tests.common.test_training._toy_training_config``)."""
    return functools.partial(_toy_training_config, train_module, tmp_path, monkeypatch)


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def _folder_contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _fake_evaluation(calls: list[int] | None = None):
    """A stand-in for the baseline evaluation (the toy game is not Mao)."""

    def evaluate(model, config, n_deals, seed):
        if calls is not None:
            calls.append(int(model.num_timesteps))
        return {"random": {"penalties_per_turn": 0.25, "turns": n_deals}}

    return evaluate


# ---- item 6: resume appends to progress.csv


def test_resume_appends_to_progress_csv(toy_config):
    config = toy_config(imitate="none", total_timesteps=256)
    run_dir = train_module.train(config)
    before = _csv_rows(run_dir / "progress.csv")
    assert len(before) == 2  # one row per rollout
    train_module.train(resume=run_dir, total_timesteps=512, quiet=True)
    after = _csv_rows(run_dir / "progress.csv")
    steps = [int(row["charts/total_timesteps"]) for row in after]
    assert steps == [128, 256, 384, 512]
    for old, new in zip(before, after, strict=False):
        assert {key: new[key] for key in old} == old  # the earlier rows are kept as they were


def test_resume_drops_csv_rows_logged_after_the_checkpoint(tmp_path):
    """Rows past the checkpoint's step are re-done by the resumed run: they are not kept twice."""
    from madiao_mao.training.logging_utils import make_logger

    logger = make_logger(tmp_path)
    for step in (128, 256, 384):
        logger.record("time/total_timesteps", step)
        logger.record("train/loss", step / 1000)
        logger.dump(step)
    logger.close()
    resumed = make_logger(tmp_path, resume_step=256)
    resumed.record("time/total_timesteps", 384)
    resumed.record("train/loss", 0.5)
    resumed.record("eval/random_score", 1.0)  # a new column: earlier rows get empty cells
    resumed.dump(384)
    resumed.close()
    rows = _csv_rows(tmp_path / "progress.csv")
    assert [row["charts/total_timesteps"] for row in rows] == ["128", "256", "384"]
    assert [row["eval/random_score"] for row in rows] == ["", "", "1.0"]
    assert rows[-1]["losses/loss"] == "0.5"


# ---- item 7: --resume without checkpoint.zip


def test_resume_without_checkpoint_is_refused_and_changes_nothing(capsys, toy_config):
    config = toy_config(imitate="none", total_timesteps=128)
    run_dir = train_module.train(config)
    (run_dir / "checkpoint.zip").unlink()
    contents = _folder_contents(run_dir)
    with pytest.raises(FileNotFoundError, match=r"checkpoint\.zip"):
        train_module.train(resume=run_dir, total_timesteps=256, quiet=True)
    assert _folder_contents(run_dir) == contents
    # The CLI shows the same error, as one line, and exits with status 2.
    from madiao_mao.cli.main import main

    capsys.readouterr()
    assert main(["train", "--resume", str(run_dir), "--no-progress", "--no-report"]) == 2
    error = capsys.readouterr().err
    assert "checkpoint.zip" in error and "Traceback" not in error
    assert _folder_contents(run_dir) == contents


def test_resume_of_a_folder_that_is_not_a_run_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        train_module.train(resume=tmp_path)


# ---- item 8: unique run folders


def test_two_runs_started_in_the_same_second_get_their_own_folders(tmp_path, monkeypatch, toy_config):
    frozen_clock = SimpleNamespace(time=lambda: 1_700_000_000.0, perf_counter=time.perf_counter)
    monkeypatch.setattr(run_folder, "time", frozen_clock)
    config = toy_config(imitate="none", total_timesteps=128)
    first = train_module.train(config)
    second = train_module.train(config)
    assert first != second and first.parent == second.parent == tmp_path
    assert first.name.startswith("mao__selfplay__1__1700000000")
    assert second.name.startswith("mao__selfplay__1__1700000000")
    for run_dir in (first, second):
        assert json.loads((run_dir / "state.json").read_text())["num_timesteps"] == 128


def test_make_run_dir_adds_a_suffix_on_collision(tmp_path):
    config = TrainConfig(game="mao", runs_dir=str(tmp_path / "runs"))
    make = functools.partial(run_folder.make_run_dir, config, clock=lambda: 1_700_000_000.0)
    folders = [make() for _ in range(3)]
    assert len(set(folders)) == 3 and all(folder.is_dir() for folder in folders)
    assert folders[0].name == "mao__selfplay__1__1700000000"


# ---- item 9: damaged run files are named


def _damage_cases():
    return {
        "config.json": [b"{not json", b"[1, 2]", b'{"colour": "red"}', b'{"n_envs": 0}'],
        "state.json": [b"", b"{trunc", b'"a string"', b'{"snapshots": 3}', b'{"eval": [{"timesteps": 1}]}'],
        "checkpoint.zip": [b"garbage, not a zip", None],  # None: the zip cut in half
    }


def test_damaged_run_files_are_named_and_nothing_changes(toy_config):
    config = toy_config(imitate="none", total_timesteps=128)
    run_dir = train_module.train(config)
    originals = {name: (run_dir / name).read_bytes() for name in _damage_cases()}
    for name, damages in _damage_cases().items():
        for damage in damages:
            damaged = originals[name][: len(originals[name]) // 2] if damage is None else damage
            (run_dir / name).write_bytes(damaged)
            contents = _folder_contents(run_dir)
            with pytest.raises(ValueError, match=re.escape(name)):
                train_module.train(resume=run_dir, total_timesteps=256, quiet=True)
            assert _folder_contents(run_dir) == contents, f"{name} {damage!r}: the folder changed"
        (run_dir / name).write_bytes(originals[name])
    # Repaired, the run resumes.
    train_module.train(resume=run_dir, total_timesteps=256, quiet=True)
    assert json.loads((run_dir / "state.json").read_text())["num_timesteps"] == 256


# ---- item 13: the training display


def test_progress_csv_columns_are_the_tensorboard_tags(monkeypatch, toy_config):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.setattr(train_module, "evaluate_against_baselines", _fake_evaluation())
    config = toy_config(
        imitate="random",
        imitation_decisions=64,
        imitation_epochs=1,
        total_timesteps=384,
        eval_every=128,
    )
    run_dir = train_module.train(config)
    header = (run_dir / "progress.csv").read_text().splitlines()[0].split(",")
    events = EventAccumulator(str(run_dir))
    events.Reload()
    assert set(header) == set(events.Tags()["scalars"])
    assert {"losses/value_loss", "charts/SPS", "eval/random_penalties_per_turn"} <= set(header)
    assert all(tag.split("/")[0] in ("charts", "losses", "eval", "imitation") for tag in header)


def test_every_evaluation_is_logged_at_the_step_of_eval_json_the_final_one_included(monkeypatch, toy_config):
    """TensorBoard, progress.csv and eval.json give each evaluation the same step: the step the
    policy had learned from. The final evaluation, made after the last update, is logged too."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.setattr(train_module, "evaluate_against_baselines", _fake_evaluation())
    overrides = {"imitate": "none", "total_timesteps": 3 * ROLLOUT, "eval_every": ROLLOUT}
    run_dir = train_module.train(toy_config(**overrides))
    evaluated = [point["timesteps"] for point in json.loads((run_dir / "eval.json").read_text())]
    assert evaluated == [ROLLOUT, 2 * ROLLOUT, 3 * ROLLOUT]
    events = EventAccumulator(str(run_dir))
    events.Reload()
    tag = "eval/random_penalties_per_turn"
    assert [event.step for event in events.Scalars(tag)] == evaluated
    rows = _csv_rows(run_dir / "progress.csv")
    assert [int(row["charts/total_timesteps"]) for row in rows if row[tag]] == evaluated


def test_every_update_learns_at_a_linearly_decaying_positive_rate(monkeypatch, toy_config):
    """A budget that is not a whole number of rollouts (200 steps: two rollouts of 128): the
    linear schedule runs over the 256 steps trained, one step of it per update, and the last
    update learns at half the rate instead of 0."""
    from sb3_contrib import MaskablePPO

    rates: list[float] = []
    original_update = MaskablePPO.train

    def update_and_note_its_rate(model):
        original_update(model)
        rates.append(model.policy.optimizer.param_groups[0]["lr"])

    monkeypatch.setattr(MaskablePPO, "train", update_and_note_its_rate)
    overrides = {"imitate": "none", "total_timesteps": 200, "learning_rate": 1e-3}
    train_module.train(toy_config(**overrides))
    assert rates == pytest.approx([1e-3, 5e-4])


def test_progress_bar_ends_at_its_total_and_the_summary_tells_the_true_count(capsys, toy_config):
    # A budget that is not a whole number of rollouts: PPO finishes the rollout it started.
    config = toy_config(
        imitate="none",
        total_timesteps=200,
        progress_bar=True,
        verbose=True,
    )
    run_dir = train_module.train(config)
    final_steps = json.loads((run_dir / "state.json").read_text())["num_timesteps"]
    assert final_steps == 2 * ROLLOUT
    captured = capsys.readouterr()
    bar_lines = [line for line in re.split(r"[\r\n]", captured.err) if re.search(r"\d+/\d+", line)]
    done, total = map(int, re.search(r"(\d+)/(\d+)", bar_lines[-1]).groups())
    assert done == total == final_steps
    # One speed on the bar (the run's learner steps/s), not tqdm's own rate besides it.
    assert len(re.findall(r"/s\b", bar_lines[-1])) == 1
    assert f"trained {final_steps} learner steps" in captured.out
    assert "rounded up to whole rollouts" in captured.out + captured.err


def test_a_short_run_draws_a_learning_curve_by_default(monkeypatch, toy_config):
    calls: list[int] = []
    monkeypatch.setattr(train_module, "evaluate_against_baselines", _fake_evaluation(calls))
    overrides = {"imitate": "none", "total_timesteps": 8 * ROLLOUT, "eval_every": None}
    config = toy_config(**overrides)
    assert config.eval_every is None
    run_dir = train_module.train(config)
    history = json.loads((run_dir / "eval.json").read_text())
    assert len(history) >= 3 and len(calls) == len(history)
    assert [point["timesteps"] for point in history] == sorted({point["timesteps"] for point in history})
    assert history[-1]["timesteps"] == 8 * ROLLOUT  # the curve reaches the final policy
    # The default interval: about a tenth of the budget, never less than one rollout.
    assert evaluation_interval(TrainConfig(total_timesteps=4_000_000)) == 400_000
    assert evaluation_interval(TrainConfig(total_timesteps=1000)) == 8192
    assert evaluation_interval(TrainConfig(eval_every=0)) == 0
    with pytest.raises(ValueError, match="eval_every"):
        TrainConfig(eval_every=-1)


def test_resume_without_progress_bar_says_that_it_resumed_and_where(capsys, toy_config):
    config = toy_config(imitate="none", total_timesteps=128)
    run_dir = train_module.train(config)
    capsys.readouterr()
    train_module.train(resume=run_dir, total_timesteps=256, quiet=True)
    out = capsys.readouterr().out
    assert f"resumed {run_dir} at step 128" in out
    # quiet is for this invocation only: the run's saved display settings are not changed by it.
    assert json.loads((run_dir / "config.json").read_text())["verbose"] is False


class _InterruptedToyEnv(ToyVectorEnv):
    """The toy game, with a Ctrl-C arriving at the learner's ``interrupt_at``-th step call."""

    calls = 0
    interrupt_at: int | None = None

    def step(self, actions):
        type(self).calls += 1
        if type(self).calls == type(self).interrupt_at:
            raise KeyboardInterrupt
        return super().step(actions)


def test_ctrl_c_leaves_a_resumable_checkpoint_and_prints_how_to_resume(
    tmp_path, monkeypatch, capsys, toy_config
):
    config = toy_config(
        imitate="none",
        total_timesteps=4 * ROLLOUT,
        checkpoint_every=10**6,
    )
    monkeypatch.setattr(
        train_module, "make_vector_env", lambda config, n, seed: _InterruptedToyEnv(n, seed=seed)
    )
    # The toy env is stepped for the learner's moves and the opponents' (about 90 calls a rollout
    # here: the second rollout ends at call 188, the third at 276): the interrupt lands in the
    # middle of the third rollout.
    monkeypatch.setattr(_InterruptedToyEnv, "interrupt_at", 230)
    with pytest.raises(KeyboardInterrupt):
        train_module.train(config)
    (run_dir,) = tmp_path.iterdir()
    err = capsys.readouterr().err
    match = re.search(r"interrupted at step (\d+)", err)
    assert match, err
    steps = int(match.group(1))
    assert f"madiao-mao train --resume {run_dir}" in err
    # The steps of the unfinished rollout were not learned from: the checkpoint does not count them.
    assert steps == 2 * ROLLOUT
    from sb3_contrib import MaskablePPO

    assert MaskablePPO.load(str(run_dir / "checkpoint.zip")).num_timesteps == steps
    assert json.loads((run_dir / "state.json").read_text())["num_timesteps"] == steps
    assert not list(run_dir.glob(".*.tmp*"))
    monkeypatch.setattr(_InterruptedToyEnv, "interrupt_at", None)
    assert train_module.train(resume=run_dir, quiet=True) == run_dir
    state = json.loads((run_dir / "state.json").read_text())
    assert state["num_timesteps"] == 4 * ROLLOUT and state["resumes"] == [steps]
    rows = _csv_rows(run_dir / "progress.csv")
    assert [int(row["charts/total_timesteps"]) for row in rows] == [128, 256, 384, 512]
