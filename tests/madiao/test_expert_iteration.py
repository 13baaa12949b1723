"""Expert iteration (``madiao_mao.training.expert_iteration``, ``madiao-mao expert-iteration``) with
the search player as the expert: its decisions are legal and teachable, a tiny run writes its run
folder, an interrupted run resumes to the result an uninterrupted one reaches, bad input is one
line, and ``TrainConfig.init_model`` starts the self-play from the fitted weights."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from madiao_mao.agents.madiao import PRETRAINED_MODEL
from madiao_mao.cli.main import main
from madiao_mao.training import expert_iteration as expit
from madiao_mao.training.config import ConfigError, TrainConfig
from madiao_mao.training.expert_iteration import ExpertIterationSettings, expert_iteration
from madiao_mao.training.madiao.expert_iteration import collect, seat_expert

pytestmark = pytest.mark.xdist_group("expert_iteration")

#: The trainer's settings of a tiny self-play: one rollout of 128 learner steps.
TINY_TRAINING = {"n_envs": 8, "n_steps": 16, "batch_size": 64, "torch_threads": 1}


def quiet(*args, **kwargs) -> None:
    """``say`` of a run whose progress lines are not wanted here."""


def tiny_settings(out: Path, **changes) -> ExpertIterationSettings:
    values = {
        "iterations": 2,
        "decisions": 24,
        "expert": "search:samples=1,policy={policy}",
        "ppo_steps": 64,
        "eval_deals": 4,
        "patience": 2,
        "seed": 3,
        "runs_dir": str(out),
        "train_overrides": TINY_TRAINING,
    }
    return ExpertIterationSettings(**{**values, **changes})


def expert_decisions(n_decisions: int, seed: int):
    settings = tiny_settings(Path("unused"))
    config = settings.train_config()
    expert, env = seat_expert("search:samples=1", config, seed)
    try:
        return collect(expert, env, n_decisions, seed, config.gamma)
    finally:
        env.close()


def test_the_expert_s_decisions_are_legal_choices_with_the_hand_s_payoff():
    data = expert_decisions(40, seed=5)
    assert data.observations.shape == (40, 484) and data.masks.shape == (40, 82)
    assert data.masks[np.arange(40), data.actions].all()  # every target is legal under its mask
    assert (data.masks.sum(axis=1) >= 2).all()  # forced moves teach nothing and are left out
    # Madiao is undiscounted: a decision's return is its seat's payoff of the hand, whole stakes.
    assert data.has_return.all() and np.array_equal(data.returns, np.round(data.returns))
    again = expert_decisions(40, seed=5)
    assert np.array_equal(again.actions, data.actions) and np.array_equal(
        again.observations, data.observations
    )


def test_fitting_raises_the_policy_s_likelihood_of_the_expert_s_decisions():
    from madiao_mao.agents.learned import load_model
    from madiao_mao.training.sb3.imitation import fit_policy, teacher_agreement

    data = expert_decisions(64, seed=6)
    model = load_model(PRETRAINED_MODEL)
    before = teacher_agreement(model.policy, data)
    fit_policy(model.policy, data, epochs=3, batch_size=32, learning_rate=1e-3, vf_coef=0.5, seed=0)
    after = teacher_agreement(model.policy, data)
    assert after["log_likelihood"] > before["log_likelihood"] + 0.05
    assert after["accuracy"] >= before["accuracy"]


def test_the_default_expert_is_model_search_playing_out_the_best_policy():
    from madiao_mao.agents.madiao import MODEL_SEARCH_OPTIONS
    from madiao_mao.agents.madiao.search import parse_search_options

    name, options = expit.expert_spec(ExpertIterationSettings().expert, "BEST.zip").split(":", 1)
    expected = dataclasses.replace(parse_search_options(MODEL_SEARCH_OPTIONS), policy="BEST.zip")
    assert name == "search" and parse_search_options(options) == expected


def test_workers_collect_their_shares_on_their_own_seeds():
    settings = tiny_settings(Path("unused"), decisions=7, workers=2)
    config = settings.train_config()
    game = expit.expert_iteration_game("madiao")
    data = expit.collect_decisions(game, None, None, "search:samples=1", config, settings, seed=5)
    seeds = expit.worker_seeds(5, 2)
    assert len(set(seeds)) == 2 and 5 not in seeds
    first, second = expert_decisions(4, seeds[0]), expert_decisions(3, seeds[1])
    for name in ("observations", "masks", "actions", "returns"):
        assert np.array_equal(
            getattr(data, name), np.concatenate([getattr(first, name), getattr(second, name)])
        )
    # One worker is this process on the iteration's own seed, as before workers existed.
    alone = expit.collect_decisions(
        game,
        *seat_expert("search:samples=1", config, 5),
        "unused",
        config,
        tiny_settings(Path("unused"), decisions=7),
        seed=5,
    )
    assert np.array_equal(alone.actions, expert_decisions(7, 5).actions)


@pytest.mark.parametrize(("workers", "expert_deals", "seated"), [(2, 0, 0), (2, 1, 1), (1, 0, 1)])
def test_the_command_seats_an_expert_only_to_collect_alone_or_to_score_it(
    monkeypatch, tmp_path, workers, expert_deals, seated
):
    game = expit.expert_iteration_game("madiao")
    seats = []

    def counted_seat(spec, config, seed):
        seats.append(spec)
        return game.seat_expert(spec, config, seed)

    def collect_here(game_, expert, table, spec, config, settings, seed):
        # The workers' collection stood in for by one of this process (what it returns is tested
        # above), so only the command's own seating is counted.
        return expert_decisions(settings.decisions, seed)

    monkeypatch.setattr(
        expit, "expert_iteration_game", lambda name: dataclasses.replace(game, seat_expert=counted_seat)
    )
    monkeypatch.setattr(expit, "collect_decisions", collect_here)
    settings = tiny_settings(tmp_path, decisions=6, ppo_steps=0, workers=workers, expert_deals=expert_deals)
    record = expit.run_iteration(expit.new_run(settings), 1, quiet)
    assert len(seats) == seated and record["decisions"] == 6
    assert (record["expert_score"] is None) == (expert_deals == 0)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A tiny run of two iterations, with the expert scored against the starting policy."""
    out = tmp_path_factory.mktemp("runs")
    return expert_iteration(tiny_settings(out, expert_deals=1), say=quiet)


def test_a_tiny_run_writes_its_run_folder(finished_run):
    for name in ("config.json", "state.json", "report.md", "learning_curve.json", "learning_curve.md"):
        assert (finished_run / name).is_file(), name
    assert (finished_run / "learning_curve.png").read_bytes()[:4] == b"\x89PNG"
    for number in (1, 2):
        folder = finished_run / f"iteration_{number:02d}"
        assert {"decisions.npz", "imitation.zip", "model.zip"} <= {path.name for path in folder.iterdir()}
        assert len(list(folder.glob("madiao__self-play__*"))) == 1  # the self-play's own run folder
    state = json.loads((finished_run / "state.json").read_text())
    assert [item["iteration"] for item in state["iterations"]] == [1, 2]
    assert all(item["decisions"] == 24 and item["ppo"]["steps"] == 128 for item in state["iterations"])
    assert all(set(item["results"]) == {"start", "heuristic"} for item in state["iterations"])
    assert all(item["expert_score"]["hands"] == 4 for item in state["iterations"])
    # The starting policy against itself on duplicate deals: exactly even.
    assert state["baseline"]["results"]["start"]["all"]["mean"] == 0.0
    best = state["best"]
    assert (finished_run / "best_model.zip").is_file() == (best > 0)
    curve = json.loads((finished_run / "learning_curve.json").read_text())
    assert [point["iteration"] for point in curve] == [0, 1, 2]
    report = (finished_run / "report.md").read_text()
    assert "Stopped: 2 iteration(s) made." in report and "| 0 (start) |" in report


def test_an_interrupted_run_resumes_at_its_iteration_and_ends_as_an_uninterrupted_one(
    finished_run, tmp_path, monkeypatch, capsys
):
    original = expit.run_iteration
    started = []

    def interrupted_in_the_second(run, number, say):
        started.append(number)
        if number == 2:
            (run.run_dir / "iteration_02").mkdir()  # a half-made iteration, made again on resume
            raise KeyboardInterrupt
        return original(run, number, say)

    monkeypatch.setattr(expit, "run_iteration", interrupted_in_the_second)
    with pytest.raises(KeyboardInterrupt):
        expert_iteration(tiny_settings(tmp_path, expert_deals=1), say=quiet)
    (run_dir,) = tmp_path.iterdir()
    assert f"interrupted in iteration 2; resume with: madiao-mao expert-iteration --resume {run_dir}" in (
        capsys.readouterr().err
    )
    assert len(json.loads((run_dir / "state.json").read_text())["iterations"]) == 1

    started.clear()
    monkeypatch.setattr(
        expit, "run_iteration", lambda run, number, say: started.append(number) or original(run, number, say)
    )
    assert expert_iteration(resume=run_dir, say=quiet) == run_dir
    assert started == [2]  # iteration 1 is not made again
    resumed = json.loads((run_dir / "state.json").read_text())
    uninterrupted = json.loads((finished_run / "state.json").read_text())
    for ours, theirs in zip(resumed["iterations"], uninterrupted["iterations"], strict=True):
        assert (
            ours["results"] == theirs["results"]
            and ours["imitation"]["accuracy_after"] == theirs["imitation"]["accuracy_after"]
        )
    assert resumed["best"] == uninterrupted["best"] and resumed["baseline"] == uninterrupted["baseline"]


def one_line_error(argv: list[str], capsys) -> str:
    try:
        status = main(argv)
    except SystemExit as exit_:  # --help's exit, or a usage error of the top level
        status = exit_.code
    captured = capsys.readouterr()
    assert status == 2, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_a_resume_keeps_the_run_s_settings(finished_run, capsys):
    line = one_line_error(["expert-iteration", "--resume", str(finished_run), "--decisions", "999"], capsys)
    assert "--decisions 999 differs from the run's 24" in line and "--iterations and --patience" in line
    line = one_line_error(["expert-iteration", "--resume", str(finished_run), "--workers", "2"], capsys)
    assert "--workers 2 differs from the run's 1" in line
    state = (finished_run / "state.json").read_text()
    # Given as the run has it, an option is no change; a run whose budget is spent has nothing to do.
    assert main(["expert-iteration", "--resume", str(finished_run), "--decisions", "24", "--seed", "3"]) == 0
    assert "Stopped: 2 iteration(s) made." in capsys.readouterr().out
    assert (finished_run / "state.json").read_text() == state


def test_a_run_saved_before_workers_existed_resumes_with_one(finished_run, tmp_path):
    import shutil

    older = tmp_path / finished_run.name
    shutil.copytree(finished_run, older)
    config = json.loads((older / "config.json").read_text())
    del config["workers"]
    (older / "config.json").write_text(json.dumps(config))
    assert expit.reopen_run(older, {}).settings.workers == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--iterations", "0"], "--iterations: expected a positive integer, got 0"),
        (["--ppo-steps", "-1"], "--ppo-steps: expected an integer >= 0, got -1"),
        (["--workers", "0"], "--workers: expected a positive integer, got 0"),
        (["--game", "mao"], "--game must be one of madiao, got 'mao'"),
        (["--expert", "search:samples={samples}"], "only {policy} may stand in braces"),
        (["--expert", "wizard:{policy}"], "unknown madiao agent 'wizard:"),
        (["--expert", "search:depth=3"], "unknown search option 'depth'"),
        (["--start-from", "missing.zip"], "start_from: no saved model at missing.zip"),
        (["--resume", "nowhere"], "nowhere is not an expert-iteration run folder (no config.json)"),
    ],
)
def test_bad_input_is_one_line_and_makes_no_run(options, message, tmp_path, capsys):
    line = one_line_error(["expert-iteration", "--out", str(tmp_path / "runs"), *options], capsys)
    assert line.startswith("madiao-mao") and message in line
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_init_model_starts_a_run_from_the_saved_weights_and_refuses_another_network(tmp_path):
    import torch

    from madiao_mao.agents.learned import load_model
    from madiao_mao.training.opponents import build_opponents
    from madiao_mao.training.sb3.model import load_initial_weights, make_model
    from madiao_mao.training.sb3.train import build_env, open_run

    with pytest.raises(ConfigError, match=r"init_model: no saved model at 'missing\.zip'"):
        TrainConfig(init_model="missing.zip")
    # The shipped policy reads the summary: at that variant its weights carry over unchanged.
    config = TrainConfig(
        init_model=str(PRETRAINED_MODEL), obs_type="summary", runs_dir=str(tmp_path), **TINY_TRAINING
    )
    run = open_run(config, None, total_timesteps=None, quiet=True)
    _, venv = build_env(run, build_opponents(run))
    model = make_model(config, venv, device="cpu")
    load_initial_weights(model, PRETRAINED_MODEL)
    saved = load_model(PRETRAINED_MODEL).policy.state_dict()
    assert all(torch.equal(value, saved[name]) for name, value in model.policy.state_dict().items())
    narrow = make_model(TrainConfig(net_arch=(32,), obs_type="summary", **TINY_TRAINING), venv, device="cpu")
    with pytest.raises(ValueError, match="is another network than this config's"):
        load_initial_weights(narrow, PRETRAINED_MODEL)
    venv.close()
