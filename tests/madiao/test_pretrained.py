"""The pretrained Madiao policy shipped in ``agents/pretrained``: it loads by name, is small, and
plays legal moves in whole hands (the env raises on any illegal action)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from agents.learned import PRETRAINED_MADIAO, LearnedPolicyAgent
from agents.registry import make_agent


def test_shipped_model_is_present_and_small():
    assert PRETRAINED_MADIAO.is_file()
    assert PRETRAINED_MADIAO.stat().st_size < 5_000_000


def test_shipped_model_plays_legal_moves_in_whole_hands():
    from training.madiao_games import make_env, play_episode

    model = make_agent("model", "madiao")
    assert isinstance(model, LearnedPolicyAgent) and model.deterministic
    env = make_env()
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
    env = MadiaoVectorEnv(16, seed=2)
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
    with pytest.raises(ValueError, match="expects observations of length"):
        model.act(np.zeros(10, dtype=np.int8), step.action_mask[0])


def test_evaluate_and_play_default_to_the_shipped_model(capsys):
    from training.cli import main

    assert main(["evaluate", "--agents", "model", "greedy", "--deals", "1", "--seed", "4"]) == 0
    assert "| model | greedy | 4 |" in capsys.readouterr().out
