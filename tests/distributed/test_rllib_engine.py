"""RLlib engine on a two-node Ray cluster: runners on the second node, masking, training of both
games, checkpoints with the league, the CLI's run folder (see ``conftest.py`` for the cluster)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from madiao_mao.agents.madiao import PRETRAINED_MODEL as PRETRAINED_MADIAO
from madiao_mao.training.config import TrainConfig
from tests.distributed.conftest import require_distributed_extra

require_distributed_extra()
pytestmark = pytest.mark.distributed


def tiny_config(tmp_path, game: str = "madiao", **overrides) -> TrainConfig:
    values = {
        "game": game,
        "total_timesteps": 512,
        "n_envs": 32,
        "n_steps": 16,
        "batch_size": 128,
        "n_epochs": 1,
        "eval_every": 0,
        "eval_deals": 1,
        "final_eval_deals": 2,
        "runs_dir": str(tmp_path / "runs"),
        "imitate": "none",
        # One thread: the driver's learner shares two cores with the runner and the other tests.
        "torch_threads": 1,
        "progress_bar": False,
        "verbose": False,
    }
    values.update(overrides)
    return TrainConfig(**values)


def build_algo(config: TrainConfig, runners: int, envs: int):
    from madiao_mao.training.rllib.config import ppo_config

    return ppo_config(
        config, num_env_runners=runners, envs_per_runner=envs, env_config={"train_config": config.to_json()}
    ).build_algo()


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"privileged_critic": True}, "has no privileged critic"),
        ({"oracle_guiding_steps": 256}, "has no privileged critic"),
        ({"privileged_critic": True, "oracle_guiding_steps": 256}, "has no privileged critic"),
        ({"imitate": "heuristic"}, "has no warm start"),
        ({"init_model": str(PRETRAINED_MADIAO)}, "cannot start from a saved model"),
    ],
    ids=["privileged-critic", "oracle-guiding-alone", "both", "warm-start", "saved-model"],
)
def test_the_rllib_engine_refuses_what_only_the_other_engines_train_before_any_run(
    tmp_path, monkeypatch, overrides, named
):
    """What the RLlib engine cannot train is refused by name before it connects to Ray or a run
    folder exists, never trained as something else (the hidden state dropped, no warm start)."""
    from madiao_mao.training.rllib import run

    def no_connection(address):
        # Another test of this worker may have started Ray, so "not initialized" proves nothing.
        raise AssertionError(f"connected to Ray (address={address!r}) before refusing the run")

    monkeypatch.setattr(run, "_RayConnection", no_connection)
    with pytest.raises(ValueError, match=named):
        run.train_rllib(tiny_config(tmp_path, **overrides))
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("game", ["madiao", "mao"])
def test_env_runners_sample_on_the_second_node_and_train(cluster, tmp_path, game):
    config = tiny_config(tmp_path, game)
    algo = build_algo(config, runners=1, envs=32)
    try:
        nodes = [
            n for n in algo.env_runner_group.foreach_env_runner(lambda r: r.node_id(), local_env_runner=False)
        ]
        assert nodes == [cluster.worker_node_id]
        assert cluster.worker_node_id != cluster.head_node_id
        before = {k: v.copy() for k, v in algo.get_module().get_state().items()}
        result = algo.train()
        # One PPO iteration: a full train batch of learner decisions sampled remotely, learned from.
        assert result["env_runners"]["num_env_steps_sampled"] >= 32 * 16
        after = algo.get_module().get_state()
        assert any(not np.allclose(np.asarray(before[k]), np.asarray(after[k])) for k in before)
        games = [
            g for games in algo.env_runner_group.foreach_env_runner(lambda r: r.pop_finished()) for g in games
        ]
        if game == "madiao":  # a Mao round outlasts 16 learner steps
            assert games and {g["role"] for g in games} <= {"banker", "player"}
    finally:
        algo.stop()


def local_runner(config: TrainConfig, envs: int):
    from madiao_mao.training.rllib.config import ppo_config
    from madiao_mao.training.rllib.runner import CardGameEnvRunner

    algo_config = ppo_config(
        config, num_env_runners=0, envs_per_runner=envs, env_config={"train_config": config.to_json()}
    )
    return CardGameEnvRunner(config=algo_config, worker_index=0)


@pytest.mark.parametrize("game", ["madiao", "mao"])
def test_masking_module_never_sends_an_illegal_action(cluster, tmp_path, game, monkeypatch):
    """A runner sampling with an untrained (near-uniform) policy plays thousands of decisions and
    the env, which raises on any illegal action, never sees one; with the mask taken out of the
    module the same sampling hits an illegal action at once (so the check is live)."""
    from cardgame_core.aec import IllegalActionError
    from madiao_mao.training.rllib.module import MaskedPPOTorchRLModule

    runner = local_runner(tiny_config(tmp_path, game), envs=64)
    try:
        episodes = runner.sample(num_timesteps=4000, random_actions=False)
        assert sum(len(e) for e in episodes) >= 4000
        for episode in episodes:
            observations = episode.get_observations()
            actions = episode.get_actions()
            masks = observations["action_mask"][: len(actions)]
            assert masks[np.arange(len(actions)), actions].all()
    finally:
        runner.stop()

    unmasked = local_runner(tiny_config(tmp_path, game), envs=64)
    try:
        monkeypatch.setattr(MaskedPPOTorchRLModule, "_mask", staticmethod(lambda output, mask: output))
        with pytest.raises(Exception) as raised:
            unmasked.sample(num_timesteps=4000, random_actions=False)
        chain, error = [], raised.value
        while error is not None:
            chain.append(error)
            error = error.__cause__ or error.__context__
        assert any(isinstance(e, IllegalActionError) for e in chain)
    finally:
        unmasked.stop()


def test_league_checkpoint_restores_and_resumes(cluster, tmp_path):
    from madiao_mao.training.league import League
    from madiao_mao.training.rllib.run import EngineOptions, train_rllib

    config = tiny_config(
        tmp_path, opponents="league", snapshot_every=256, checkpoint_every=256, total_timesteps=512
    )
    options = EngineOptions(num_env_runners=1, envs_per_runner=32)
    run_dir = train_rllib(config, options=options)
    state = json.loads((run_dir / "state.json").read_text())
    league = League.from_dict(json.loads((run_dir / "league.json").read_text()))
    assert state["engine"] == "rllib" and state["num_timesteps"] == 512
    snapshots = league.names("snapshot")
    assert snapshots and all((run_dir / league.members[n].path).is_file() for n in snapshots)
    played = sum(league.members[n].games for n in league.names())
    assert played > 0, "no finished game was recorded against a league member"

    resumed = train_rllib(resume=run_dir, options=options, total_timesteps=1024)
    assert resumed == run_dir
    state = json.loads((run_dir / "state.json").read_text())
    after = League.from_dict(json.loads((run_dir / "league.json").read_text()))
    assert state["num_timesteps"] == 1024 and state["resumes"] == [512]
    # The restored league went on: the same anchors, its snapshots, and more games on top.
    assert after.names("anchor") == league.names("anchor")
    assert after.names("snapshot")[0] == snapshots[0] or len(after.names("snapshot")) == config.max_snapshots
    assert sum(after.members[n].games for n in after.names()) > played


def test_cli_train_engine_rllib_writes_the_run_folder(cluster, tmp_path):
    """``madiao-mao train --engine rllib --address ...`` in a process of its own joins the running
    cluster (its runner and its two learner actors land on the second node: one CPU for the
    runner, half a CPU per learner) and leaves a complete run folder."""
    import subprocess
    import sys

    from madiao_mao.agents.registry import make_agent

    runs = tmp_path / "runs"
    command = [
        sys.executable,
        "-m",
        "madiao_mao.cli.main",
        "train",
        "--engine",
        "rllib",
        "--address",
        cluster.address,
        "--num-env-runners",
        "1",
        "--envs-per-runner",
        "32",
        "--num-learners",
        "2",
        "--cpus-per-learner",
        "0.5",
        "--total-timesteps",
        "512",
        "--n-envs",
        "32",
        "--n-steps",
        "16",
        "--batch-size",
        "128",
        "--eval-deals",
        "1",
        "--eval-every",
        "512",
        "--final-eval-deals",
        "2",
        "--runs-dir",
        str(runs),
        "--no-progress",
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=600)
    status = finished.returncode
    assert status == 0, finished.stderr[-2000:]
    (run_dir,) = runs.iterdir()
    state = json.loads((run_dir / "state.json").read_text())
    assert state["rllib"]["address"] == cluster.address and state["num_timesteps"] == 512
    assert state["rllib"]["num_learners"] == 2 and state["rllib"]["cpus_per_learner"] == 0.5
    saved = json.loads((run_dir / "config.json").read_text())
    # Madiao's policy features, "cards", are built in the RLlib module too.
    assert saved["features"] == "cards" and saved["imitate"] == "none"
    for name in ("config.json", "state.json", "eval.json", "progress.csv", "final_model.pt", "report.md"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "rllib_checkpoint").is_dir()
    assert list(run_dir.glob("events.out.tfevents.*"))
    header = (run_dir / "progress.csv").read_text().splitlines()[0].split(",")
    for tag in ("charts/SPS", "charts/return_banker", "losses/value_loss", "eval/heuristic_all"):
        assert tag in header, tag
    report = (run_dir / "report.md").read_text()
    assert "Madiao duplicate tournament" in report and "2 learner actors" in report
    agent = make_agent(f"model:{run_dir / 'final_model.pt'}", "madiao")
    from madiao_env.vector import MadiaoVectorEnv

    step = MadiaoVectorEnv(8, seed=3, obs_type=saved["obs_type"]).reset()
    actions = agent.act_batch(step.observation, step.action_mask)
    assert step.action_mask[np.arange(8), actions].all()


def test_mao_pool_run_with_snapshots_resumes_and_reports(cluster, tmp_path):
    """Mao through the whole contract: snapshots (Mao's pool gives them a share of the seats),
    a resume that sends them to the new runners, the final report with the exported policy."""
    from madiao_mao.agents.registry import make_agent
    from madiao_mao.training.rllib.run import EngineOptions, final_report, train_rllib
    from mao_env.vector import MaoVectorEnv

    config = tiny_config(tmp_path, "mao", snapshot_every=256, checkpoint_every=256)
    options = EngineOptions(num_env_runners=1, envs_per_runner=32)
    run_dir = train_rllib(config, options=options)
    state = json.loads((run_dir / "state.json").read_text())
    assert state["snapshots"] == ["snapshots/snapshot_000000512.pt"]
    train_rllib(resume=run_dir, options=options, total_timesteps=1024)
    state = json.loads((run_dir / "state.json").read_text())
    assert state["num_timesteps"] == 1024 and state["resumes"] == [512]
    assert all((run_dir / path).is_file() for path in state["snapshots"])
    assert "held-out" in final_report(run_dir, n_deals=2, verbose=False).lower()
    agent = make_agent(f"model:{run_dir / 'final_model.pt'}", "mao")
    step = MaoVectorEnv(4, seed=0, obs_type="history").reset()
    actions = agent.act_batch(step.observation, step.action_mask)
    assert step.action_mask[np.arange(4), actions].all()
