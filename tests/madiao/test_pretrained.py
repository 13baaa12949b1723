"""The learned-policy stack for Madiao: the card-counting features the policies read, and the
pretrained policy shipped in ``agents/pretrained`` (it loads by name, is small, and plays legal
moves in whole hands; the env raises on any illegal action), each at the table of the observation
variant it reads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sb3_contrib")

from madiao_mao.agents.learned import LearnedPolicyAgent
from madiao_mao.agents.madiao import PRETRAINED_MODEL as PRETRAINED_MADIAO
from madiao_mao.agents.registry import make_agent
from madiao_mao.training.madiao.evaluation import table_obs_type


def test_shipped_model_is_present_and_small():
    assert PRETRAINED_MADIAO.is_file()
    assert PRETRAINED_MADIAO.stat().st_size < 5_000_000


def test_shipped_model_plays_legal_moves_in_whole_hands():
    from madiao_mao.training.madiao.matches import make_env, play_episode

    model = make_agent("model", "madiao")
    assert isinstance(model, LearnedPolicyAgent) and model.deterministic
    env = make_env(obs_type=table_obs_type([model]))
    lineups = [
        [model, make_agent("heuristic"), make_agent("greedy"), make_agent("random", seed=1)],
        [model] * 4,
    ]
    for number, lineup in enumerate(lineups * 2):
        result = play_episode(env, lineup, seed=number, record=True)
        moves = [e for e in result.events if e["type"] == "move"]
        assert len(moves) >= 8  # at least one seat's eight cards were played
        assert result.returns.sum() == pytest.approx(0.0, abs=1e-9)  # zero-sum settlement


def test_batched_and_single_decisions_agree_and_respect_masks():
    from madiao_env.vector import MadiaoVectorEnv

    model = make_agent("model", "madiao")
    sampler = LearnedPolicyAgent(PRETRAINED_MADIAO, deterministic=False, seed=3)
    env = MadiaoVectorEnv(16, seed=2, obs_type=table_obs_type([model]))
    step = env.reset(seed=2)
    for _ in range(40):
        greedy_batch = model.act_batch(step.observation, step.action_mask)
        singles = [model.act(o, m) for o, m in zip(step.observation, step.action_mask, strict=True)]
        assert greedy_batch.tolist() == singles
        # The direct logits path picks what SB3's own masked predict picks.
        predicted, _ = model.model.predict(
            step.observation.astype(np.float32), action_masks=step.action_mask, deterministic=True
        )
        assert greedy_batch.tolist() == np.asarray(predicted).tolist()
        sampled = sampler.act_batch(step.observation, step.action_mask)
        assert step.action_mask[np.arange(16), sampled].all()
        step = env.step(greedy_batch)
    # Sampling is reproducible from a seed.
    sampler.seed(5)
    first = sampler.act_batch(step.observation, step.action_mask)
    sampler.seed(5)
    assert (sampler.act_batch(step.observation, step.action_mask) == first).all()
    with pytest.raises(ValueError, match="expects observations of length"):
        model.act(np.zeros(10, dtype=np.int8), step.action_mask[0])


def test_evaluate_and_play_default_to_the_shipped_model(capsys):
    from madiao_mao.cli.main import main

    assert main(["evaluate", "--agents", "model", "greedy", "--deals", "1", "--seed", "4"]) == 0
    assert "| model | greedy | 4 |" in capsys.readouterr().out


@pytest.mark.parametrize("as_float", [False, True], ids=["int8 (torch)", "float32 (numba)"])
def test_card_features_mark_unseen_cards_and_bosses(as_float):
    import torch
    from gymnasium import spaces

    from madiao_env import cards
    from madiao_env.vector import MadiaoVectorEnv
    from madiao_mao.agents.madiao.features import MadiaoCardFeatures, summary_layout

    obs_dim = MadiaoVectorEnv(1, seed=0).obs_dim
    features = MadiaoCardFeatures(spaces.Box(0, 8, (obs_dim,), np.int8), **summary_layout())
    layout = summary_layout()
    obs = np.zeros((1, obs_dim), dtype=np.int8)
    C = cards.card_id
    for name in ("9S", "7S", "2C"):
        obs[0, layout["hand_at"] + C(name)] = 1
    obs[0, layout["seen_at"] + C("8S")] = 1  # 8S was played face up
    obs[0, layout["upcard_at"] + C("0C")] = 1  # the top Cash card is the upcard
    out = features(torch.as_tensor(obs.astype(np.float32) if as_float else obs))[0].numpy()
    n = cards.N_CARDS
    unseen, boss, held_boss = (out[obs.shape[1] + k * n : obs.shape[1] + (k + 1) * n] for k in range(3))
    assert unseen.sum() == n - 5 and not unseen[[C("9S"), C("7S"), C("2C"), C("8S"), C("0C")]].any()
    # 9S is the top String; 7S is a boss too (8S is gone, 9S is mine); 2C is not (3C..HC unseen),
    # and 9C is not either, since HC (higher) is unseen; 10000T is the top Ten, always a boss.
    assert boss[C("9S")] and boss[C("7S")] and not boss[C("2C")] and not boss[C("9C")]
    assert boss[C("10000T")] and not boss[C("1000T")]
    assert held_boss.nonzero()[0].tolist() == sorted([C("7S"), C("9S")])
    suits = out[obs.shape[1] + 3 * n :]
    assert suits.tolist() == [9, 6, 9, 11, 1, 2, 0, 0]  # unseen per suit, then held per suit
    with pytest.raises(ValueError, match="does not fit a 40-card plane"):
        MadiaoCardFeatures(spaces.Box(0, 8, (obs_dim,), np.int8), **{**layout, "hand_at": obs_dim})


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), n_rows=st.integers(1, 12), top=st.integers(1, 2), fraction=st.booleans())
def test_card_features_in_one_numba_pass_are_the_torch_operations_bit_for_bit(seed, n_rows, top, fraction):
    import torch
    from gymnasium import spaces

    from madiao_env.vector import MadiaoVectorEnv
    from madiao_mao.agents.madiao.features import MadiaoCardFeatures, _card_features, summary_layout

    obs_dim = MadiaoVectorEnv(1, seed=0).obs_dim
    features = MadiaoCardFeatures(spaces.Box(0, 8, (obs_dim,), np.int8), **summary_layout())
    rng = np.random.default_rng(seed)
    # Planes of 0s and 1s (cards in two planes clamp to 0); with top 2, some 2s, and with a
    # fraction, anything: those the torch operations compute, whose sums may then round.
    obs = (rng.random((n_rows, obs_dim)) < 0.2) * rng.integers(1, top + 1, (n_rows, obs_dim))
    obs = obs.astype(np.float32) + (rng.random((n_rows, obs_dim)) if fraction else 0)
    observations = torch.as_tensor(obs.astype(np.float32))
    numba_pass = features(observations)
    torch_pass = features(observations.clone().requires_grad_(True))  # the torch operations
    assert torch_pass.requires_grad, "an input that needs a gradient keeps its graph"
    assert torch.equal(numba_pass, torch_pass.detach())
    assert numba_pass.shape == (n_rows, features.features_dim)
    out = np.empty((n_rows, features.features_dim), dtype=np.float32)
    done = _card_features(obs.astype(np.float32), np.asarray(features.starts, dtype=np.int64), out)
    assert done == (top == 1 and not fraction), "the pass takes exactly the planes of 0s and 1s"
    if done:
        np.testing.assert_array_equal(out, torch_pass.detach().numpy())


def test_a_trace_of_the_card_features_records_the_torch_operations():
    import warnings

    import torch
    from gymnasium import spaces

    from madiao_env.vector import MadiaoVectorEnv
    from madiao_mao.agents.madiao.features import MadiaoCardFeatures, summary_layout

    obs_dim = MadiaoVectorEnv(1, seed=0).obs_dim
    features = MadiaoCardFeatures(spaces.Box(0, 8, (obs_dim,), np.int8), **summary_layout())
    rng = np.random.default_rng(3)
    first, second = (torch.as_tensor((rng.random((4, obs_dim)) < 0.2).astype(np.float32)) for _ in range(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch 2.13 deprecates torch.jit.trace
        traced = torch.jit.trace(features, first)
    assert torch.equal(traced(second), features(second)), "the trace's result is not the first input's"


def test_exported_policy_is_slim_and_plays_the_same(tmp_path):
    from madiao_env.vector import MadiaoVectorEnv
    from madiao_mao.training.sb3.model import export_policy

    path = export_policy(PRETRAINED_MADIAO, tmp_path / "copy.zip")
    copy = LearnedPolicyAgent(path)
    original = make_agent("model", "madiao")
    assert path.stat().st_size <= PRETRAINED_MADIAO.stat().st_size * 1.05
    step = MadiaoVectorEnv(64, seed=9, obs_type=table_obs_type([original])).reset(seed=9)
    assert (
        copy.act_batch(step.observation, step.action_mask)
        == original.act_batch(step.observation, step.action_mask)
    ).all()
