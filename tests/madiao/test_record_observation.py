"""Madiao's record observation in training and play: a record run starts from a summary model as
the same policy (``TrainConfig.init_model``), and a record policy is seated at a record table
beside players that read the summary (``madiao-mao evaluate``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from madiao_env import madiao_v0
from madiao_env.layout import OBS_SIZES
from madiao_mao.agents.learned import LearnedPolicyAgent, load_model
from madiao_mao.agents.madiao import PRETRAINED_MODEL
from madiao_mao.cli.main import main
from madiao_mao.training.config import TrainConfig
from madiao_mao.training.opponents import build_opponents
from madiao_mao.training.sb3 import model as sb3_model
from madiao_mao.training.sb3.train import build_env, open_run

#: The trainer's settings of a tiny self-play: one rollout of 128 learner steps.
TINY_TRAINING = {"n_envs": 8, "n_steps": 16, "batch_size": 64, "torch_threads": 1}


def record_model(tmp_path, **config):
    """A fresh record-observation model (and the venv it was built on, to close)."""
    config = TrainConfig(obs_type="record", runs_dir=str(tmp_path), **TINY_TRAINING, **config)
    run = open_run(config, None, total_timesteps=None, quiet=True)
    _, venv = build_env(run, build_opponents(run))
    return sb3_model.make_model(config, venv, device="cpu"), venv


def test_a_record_run_starts_from_a_summary_model_as_the_same_policy(tmp_path):
    """The record observation begins with the summary: a summary model's weights carry over, zero
    on the new entries, and the run's policy plays as the saved one does, wherever the record."""
    model, venv = record_model(tmp_path, init_model=str(PRETRAINED_MODEL))
    sb3_model.load_initial_weights(model, PRETRAINED_MODEL)
    saved = load_model(PRETRAINED_MODEL)
    first_layer = model.policy.state_dict()["mlp_extractor.policy_net.0.weight"]
    saved_first_layer = saved.policy.state_dict()["mlp_extractor.policy_net.0.weight"]
    assert first_layer.shape[1] == saved_first_layer.shape[1] + 484
    assert not first_layer[:, 484:968].any()
    # Played on record observations: the same moves as the saved model on their summary part.
    env = madiao_v0.raw_env(obs_type="record")
    observations, masks = [], []
    for seed in range(6):
        env.reset(seed=seed)
        while env.agents:
            seen = env.observe(env.agent_selection)
            observations.append(seen["observation"])
            masks.append(seen["action_mask"])
            env.step(int(np.flatnonzero(seen["action_mask"])[-1]) if seen["action_mask"].any() else None)
    observations, masks = np.stack(observations), np.stack(masks).astype(bool)
    started, summary_model = LearnedPolicyAgent(model=model), LearnedPolicyAgent(model=saved)
    assert observations[:, 484:].any()
    assert (started.act_batch(observations, masks) == summary_model.act_batch(observations, masks)).all()
    venv.close()
    # The run's policy does read the record: once its weights are not zero, it plays otherwise.
    with torch.no_grad():
        model.policy.mlp_extractor.policy_net[0].weight[:, 500] = 1.0
    assert not (started.act_batch(observations, masks) == summary_model.act_batch(observations, masks)).all()


def test_weights_that_would_not_play_as_the_saved_policy_are_refused(tmp_path, monkeypatch):
    """The carried-over start is checked: new inputs put anywhere but after the observation's own
    entries (as a network reading its features in another order would need) fail that check."""

    def zeros_first(weights, target, at):
        widened = dict(weights)
        for name, tensor in weights.items():
            wanted = target.get(name)
            if wanted is not None and tensor.dim() == 2 and wanted.shape[1] > tensor.shape[1]:
                zeros = torch.zeros(tensor.shape[0], wanted.shape[1] - tensor.shape[1])
                widened[name] = torch.cat([zeros, tensor], dim=1)
        return widened

    model, venv = record_model(tmp_path)
    before = {name: value.clone() for name, value in model.policy.state_dict().items()}
    monkeypatch.setattr(sb3_model, "_with_new_inputs", zeros_first)
    with pytest.raises(ValueError, match="its weights cannot carry over to the longer observation"):
        sb3_model.load_initial_weights(model, PRETRAINED_MODEL)
    assert all(torch.equal(value, before[name]) for name, value in model.policy.state_dict().items())
    venv.close()


def saved_record_model(tmp_path) -> Path:
    """A fresh record-observation model saved as ``record_policy.zip``."""
    model, venv = record_model(tmp_path)
    venv.close()
    path = tmp_path / "record_policy.zip"
    model.save(path)
    return path


def test_evaluate_seats_a_record_policy_at_a_record_table(tmp_path, capsys):
    """A record policy, the shipped summary policy and the heuristic in one tournament: the table is
    played at the record observation, which the others read the leading summary of."""
    path = saved_record_model(tmp_path)
    agents = [f"model:{path}", "model", "heuristic"]
    assert main(["evaluate", "--agents", *agents, "--deals", "2", "--seed", "3"]) == 0
    assert "record_policy" in capsys.readouterr().out


def test_the_scorecard_plays_a_record_policy_at_a_record_table(tmp_path):
    """The table is the record's (at the summary's, the record policy could not play)."""
    from madiao_mao.training.scorecard import score

    path = saved_record_model(tmp_path)
    card = score(f"model:{path}", game="madiao", suite="smoke", baselines=["greedy"], out=tmp_path / "card")
    assert card.baselines == ["greedy"] and card.figures


def test_match_and_play_seat_a_record_policy_at_a_record_table(tmp_path, capsys, monkeypatch):
    """At the summary table the record policy could not play. The search player beside it reads
    the record match's state (a match's snapshot, with its hand number)."""
    policy = f"model:{saved_record_model(tmp_path)}"
    assert main(["match", "--agents", policy, "heuristic", "search:samples=2", "greedy", "--seed", "1"]) == 0
    assert "Match over after" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n" * 40))
    assert main(["play", "--seat", "1", "--opponents", policy, "heuristic", "greedy", "--seed", "5"]) == 0
    assert "Final totals: model " in capsys.readouterr().out


def test_a_ray_shard_seats_a_record_policy_at_a_record_table(tmp_path):
    """``evaluate --engine ray``'s task, called here without Ray: the hands of a local record table."""
    from madiao_mao.training.madiao.distributed_evaluation import play_shard
    from madiao_mao.training.madiao.evaluation import agents_at_their_table, duplicate_match, make_deals

    agents = {"record": (f"model:{saved_record_model(tmp_path)}", 1), "heuristic": ("heuristic", 2)}
    shard = play_shard(agents, ("record", "heuristic"), 4, 3, 1, 3, None)
    table = agents_at_their_table(agents)
    assert table.obs_type == "record" and table.env is None
    local = duplicate_match(
        table.agents["record"],
        table.agents["heuristic"],
        make_deals(4, 3)[1:3],
        env_kwargs={"obs_type": "record"},
    )
    assert shard.score == local.score
    assert shard.deal_index == [1 + index for index in local.deal_index]


@pytest.mark.parametrize("variant", ["record", "summary"])
def test_the_exploiter_trains_and_is_scored_at_its_targets_table(tmp_path, variant):
    """A record policy's exploiter reads the record; the shipped summary policy's the summary,
    whatever a new run's default (so that exploitability figures stay comparable)."""
    from madiao_mao.training.exploit import ExploitSettings, exploit

    target = f"model:{saved_record_model(tmp_path)}" if variant == "record" else "model"
    settings = ExploitSettings(
        target, steps=128, deals=2, seed=1, out=str(tmp_path / "exploit"), n_envs=8,
        train_overrides={"n_steps": 16, "batch_size": 64},
    )  # fmt: skip
    report = exploit(settings, say=lambda *args, **kwargs: None)
    assert json.loads((Path(report["run_dir"]) / "config.json").read_text())["obs_type"] == variant
    assert report["evaluation"]["hands"] == 8


def test_expert_iteration_fits_its_starting_policy_on_the_variant_it_reads(tmp_path):
    """Whatever a new run's default: the shipped policy reads the summary, a record policy the record."""
    from madiao_mao.training.expert_iteration import ExpertIterationSettings

    assert ExpertIterationSettings(start_from=str(PRETRAINED_MODEL)).train_config().obs_type == "summary"
    record = saved_record_model(tmp_path)
    assert ExpertIterationSettings(start_from=str(record)).train_config().obs_type == "record"


def test_a_duplicate_match_against_a_record_opponent_plays_at_a_record_table(tmp_path):
    """Whatever variant the options name (a summary run's evaluation against a record baseline):
    the hands are those of the record table, both when batched and one at a time (recorded)."""
    from madiao_mao.agents.registry import make_agent
    from madiao_mao.training.madiao.evaluation import duplicate_match, make_deals

    record = LearnedPolicyAgent(saved_record_model(tmp_path), name="record")
    deals = make_deals(3, 5)
    results = {}
    for variant in ("summary", "record"):
        recorded: list = []
        pair = duplicate_match(
            make_agent("heuristic", "madiao", seed=1), record, deals, env_kwargs={"obs_type": variant},
            on_hand=recorded.append, record_hands=4,
        )  # fmt: skip
        results[variant] = pair.score
        assert len(recorded) == 4
    assert results["summary"] == results["record"]


def test_the_scorecard_seats_a_record_baseline_at_a_record_table(tmp_path, monkeypatch):
    """A shipped record ``model`` against a summary policy under test and the reference: each
    pairing is played at the table its two players read."""
    from madiao_mao.training.scorecard import score

    monkeypatch.setattr("madiao_mao.agents.madiao.PRETRAINED_MODEL", saved_record_model(tmp_path))
    card = score("greedy", game="madiao", suite="smoke", baselines=["model"], out=tmp_path / "card")
    assert card.baselines == ["model"] and card.figures


def test_a_record_league_anchor_needs_a_record_run(tmp_path, capsys):
    """A summary run cannot hand a record anchor what it reads: ``train`` refuses it before any
    game and before its run folder exists, naming the anchor and the flag; a record run seats it
    beside players that read the summary."""
    anchor = f"model:{saved_record_model(tmp_path)}"
    runs = tmp_path / "runs"
    tiny = ["--n-envs", "8", "--n-steps", "16", "--batch-size", "64", "--torch-threads", "1"]
    flags = ["train", "--league-anchors", "heuristic", anchor, "--runs-dir", str(runs), *tiny]
    assert main([*flags, "--obs-type", "summary", "--total-timesteps", "128", "--no-progress"]) != 0
    error = capsys.readouterr().err
    assert f"league anchor {anchor!r} reads the 'record' observation" in error
    assert "--obs-type record" in error and "Traceback" not in error
    assert not runs.exists() or not any(runs.iterdir())
    config = TrainConfig(
        obs_type="record", runs_dir=str(runs), league_anchors=("heuristic", anchor), **TINY_TRAINING
    )
    pool = build_opponents(open_run(config, None, total_timesteps=None, quiet=True))
    assert pool.slots[pool.slot_member.index(anchor)].agent.table_obs_dim == OBS_SIZES["record"]


def test_a_record_baseline_is_pinned_at_a_record_table(tmp_path, monkeypatch):
    """The pinned positions of a shipped record ``model`` are dealt at the table it reads (the
    protocol check of every scorecard run plays them); a summary baseline's stay at the summary."""
    from madiao_mao.training.madiao.scorecard import pin_table
    from madiao_mao.training.scorecard import baseline_decisions_hash

    monkeypatch.setattr("madiao_mao.agents.madiao.PRETRAINED_MODEL", saved_record_model(tmp_path))
    assert baseline_decisions_hash("madiao", "model", seeds=(0,), per_game=12).startswith("sha256:")
    assert pin_table(0, "model").unwrapped.obs_type == "record"
    assert pin_table(0, "heuristic").unwrapped.obs_type == "summary"
