"""The pretrained Mao policy shipped in ``agents/pretrained``: it loads by name (``model``), is
small, reads the default Mao observation and plays whole games with legal moves (the env raises on
an illegal action), also from the CLI's ``match`` and ``evaluate`` without ``--model``."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from agents.learned import PRETRAINED_MODELS, LearnedPolicyAgent
from agents.registry import agent_names, make_agent


def test_the_shipped_mao_model_is_present_small_and_named():
    path = PRETRAINED_MODELS["mao"]
    assert path.is_file()
    assert path.stat().st_size < 5_000_000
    assert "model" in agent_names("mao")


def test_it_reads_the_default_observation_and_plays_whole_games_legally():
    from training.mao_play import make_mao_env, play_mao_game

    model = make_agent("model", "mao")
    assert isinstance(model, LearnedPolicyAgent) and model.deterministic
    env = make_mao_env(4, 2)
    assert model.obs_dim == env.unwrapped.observation_space("player_0")["observation"].shape[0]
    lineups = [
        [
            model,
            make_agent("base", "mao", seed=1),
            make_agent("bayes", "mao", seed=2),
            make_agent("random", "mao"),
        ],
        [model] * 4,
    ]
    lines: list[str] = []
    for number, lineup in enumerate(lineups):
        returns = play_mao_game(env, lineup, None, seed=number, write=lines.append)
        assert returns.shape == (4,) and np.isfinite(returns).all()
    # The model (seat 0 in both games) played cards and said phrases, as a turn needs.
    text = "\n".join(lines)
    assert "player_0: play " in text and "player_0: say " in text, text[:2000]


def test_match_and_evaluate_take_model_without_a_path(capsys):
    from training.cli import main

    assert (
        main(
            [
                "match",
                "--game",
                "mao",
                "--agents",
                "model",
                "base",
                "bayes",
                "base",
                "--rounds",
                "1",
                "--seed",
                "3",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "player_0 model" in out and "Game over" in out
    assert (
        main(["evaluate", "--game", "mao", "--agents", "model", "base", "--deals", "4", "--seed", "1"]) == 0
    )
    out = capsys.readouterr().out
    assert "| model" in out and "| base" in out
