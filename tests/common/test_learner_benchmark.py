"""The learner benchmark (``madiao_mao.benchmarks.learner``): its FLOP count, its ceiling and its rows."""

from __future__ import annotations

import math

import pytest


def test_flop_per_sample_counts_forward_and_backward_of_every_epoch():
    from madiao_mao.benchmarks.learner import flop_per_sample

    # One 10 -> 4 layer: 80 FLOP forward; backward twice that; 3 epochs.
    assert flop_per_sample([(10, 4)], n_epochs=3) == 3 * 3 * 80
    assert flop_per_sample([(10, 4), (4, 2)], n_epochs=1) == 3 * (80 + 16)


def test_linear_shapes_are_the_policys_layers():
    import torch

    from madiao_mao.benchmarks.learner import linear_shapes

    net = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    assert linear_shapes(net) == [(7, 5), (5, 3)]


def test_the_ceiling_is_a_plausible_rate():
    from madiao_mao.benchmarks.learner import matmul_gflops

    gflops = matmul_gflops([(64, 64)], seconds=0.05, batch=256)
    assert math.isfinite(gflops) and 0 < gflops < 1e5


@pytest.mark.slow
def test_the_learner_suite_measures_the_default_model_with_both_engines_and_its_target_is_checked():
    from madiao_mao.benchmarks.learner import run
    from madiao_mao.benchmarks.targets import evaluate

    results = {r.system: r for r in run(seconds=0.01, device="cpu")}
    assert all(r.note.startswith("on cpu, ") for r in results.values())  # the device of every row
    update = results["sb3 PPO update"].value
    ceiling = results["learner ceiling (matmul GFLOP/s / FLOP per sample)"].value
    assert update > 0 and ceiling > 0 and results["sb3 rollout collection"].value > 0
    # The two together are slower than either alone.
    training = results["sb3 training (collection + update)"].value
    assert training < update and training < results["sb3 rollout collection"].value
    row = {name: (achieved, status) for name, _, achieved, status in evaluate(list(results.values()))}
    achieved, status = row["SB3 PPO update, default network"]
    assert f"{update / ceiling:.2f}× ceiling" in achieved and status in ("met", "MISSED")
    # The fast engine's rows, measured on the same network, games and opponents (the GPU check
    # prints them beside the CPU's).
    for name in ("fast PPO update", "fast rollout collection", "fast training (collection + update)"):
        assert results[name].value > 0 and "sb3's" in results[name].note
    for name in (
        "fast rollout collection against a league, policies asked jointly",
        "fast rollout collection against a league, one call per policy",
    ):
        assert results[name].value > 0
    assert (
        "x one call per policy"
        in results["fast rollout collection against a league, policies asked jointly"].note
    )


@pytest.mark.slow
def test_the_league_rows_ask_the_policies_jointly_in_one_and_one_by_one_in_the_other(monkeypatch):
    from madiao_mao.agents.learned import LearnedPolicyAgent
    from madiao_mao.benchmarks.learner import default_model, league_collection_seconds

    joint_calls = []
    original = LearnedPolicyAgent.act_jointly.__func__
    monkeypatch.setattr(
        LearnedPolicyAgent,
        "act_jointly",
        classmethod(
            lambda cls, agents, *rest: joint_calls.append(len(agents)) or original(cls, agents, *rest)
        ),
    )
    model, config = default_model()
    assert league_collection_seconds(model, config, 0.01, joint=False) > 0
    assert joint_calls == []
    assert league_collection_seconds(model, config, 0.01, joint=True) > 0
    assert joint_calls and max(joint_calls) == config.max_snapshots + 1
