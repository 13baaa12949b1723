"""The pretrained Mao policy shipped in ``agents/pretrained``: it loads by name (``model``), is
small, reads the default Mao observation and plays whole games with legal moves (the env raises on
an illegal action), also from the CLI's ``match`` and ``evaluate`` without ``--model``."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from madiao_mao.agents.learned import LearnedPolicyAgent
from madiao_mao.agents.mao import PRETRAINED_MODEL
from madiao_mao.agents.registry import agent_names, make_agent


def test_the_shipped_mao_model_is_present_small_and_named():
    path = PRETRAINED_MODEL
    assert path.is_file()
    assert path.stat().st_size < 5_000_000
    assert "model" in agent_names("mao")


def test_it_reads_the_default_observation_and_plays_whole_games_legally():
    from madiao_mao.training.mao.play import make_mao_env, play_mao_game

    model = make_agent("model", "mao")
    assert isinstance(model, LearnedPolicyAgent) and model.deterministic
    env = make_mao_env(4, 2)
    # It is handed the table's observation and appends its belief inputs to it.
    assert model.table_obs_dim == env.unwrapped.observation_space("player_0")["observation"].shape[0]
    lineups = [
        [
            model,
            make_agent("base", "mao", seed=1),
            make_agent("bayes", "mao", seed=2),
            make_agent("random", "mao"),
        ],
        # One agent per seat: the policy keeps its seat's posterior over the secret rules.
        [model, *(make_agent("model", "mao") for _ in range(3))],
    ]
    lines: list[str] = []
    for number, lineup in enumerate(lineups):
        returns = play_mao_game(env, lineup, None, seed=number, write=lines.append)
        assert returns.shape == (4,) and np.isfinite(returns).all()
    # The model (seat 0 in both games) played cards and said phrases, as a turn needs.
    text = "\n".join(lines)
    assert "player_0: play " in text and "player_0: say " in text, text[:2000]


def test_it_keeps_the_seats_posterior_and_ends_rounds_beside_a_player_who_plays_bad_cards():
    """The shipped policy reads its posterior over the secret rules (``BeliefPolicyAgent``). A
    table of it beside a naive player who plays its first held card whatever the top card (and so
    collects calls) still ends its round quickly: the policy before it kept drawing there, since
    the calls filled its 8-event window (700+ of the naive player's moves in 4 of 6 games)."""
    from madiao_mao.agents.mao.policy import BeliefPolicyAgent
    from mao_env import cards
    from mao_env.env import raw_env

    moves = []
    for seed in range(4):
        env = raw_env(4, num_rounds=1)
        env.reset(seed=seed)
        policies = {name: make_agent("model", "mao", env=env) for name in env.possible_agents[1:]}
        assert all(isinstance(agent, BeliefPolicyAgent) for agent in policies.values())
        naive_moves, cut_short = 0, False
        for name in env.agent_iter(max_iter=20_000):
            observation, _reward, terminated, truncated, _info = env.last()
            if terminated or truncated:
                cut_short |= truncated
                env.step(None)
                continue
            mask = observation["action_mask"]
            if name in policies:
                env.step(policies[name].act(observation["observation"], mask))
                continue
            naive_moves += 1
            held = np.flatnonzero(mask[: cards.N_CARD_TYPES])
            if mask[cards.DRAW] and held.size:
                env.step(int(held[0]))
            else:
                env.step(cards.END_TURN if mask[cards.END_TURN] else int(np.flatnonzero(mask)[0]))
        assert not env.agents and not cut_short  # the round ended by a win, not the step cap
        moves.append(naive_moves)
    assert max(moves) < 200, moves


def test_match_and_evaluate_take_model_without_a_path(capsys):
    from madiao_mao.cli.main import main

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


def test_it_proposes_the_rule_its_posterior_suspects_and_takes_the_refusal_as_evidence():
    """At a rule choice the shipped policy proposes among the rules its posterior most suspects
    are in force without being sure (``rules_to_propose``); a refusal makes the rule certain."""
    from madiao_mao.agents.mao.beliefs import hypotheses_from_sets, parse_observation
    from madiao_mao.agents.mao.policy import BeliefPolicyAgent
    from mao_env import cards
    from tests.mao.mao_helpers import won_round_table

    env = won_round_table([(3, 1), (30, 2)])
    policy = make_agent("model", "mao", env=env)
    assert isinstance(policy, BeliefPolicyAgent)
    posterior = policy.beliefs.posteriors.default
    posterior.observe(parse_observation(env.observe("player_0")["observation"]))
    # Say the calls so far made it sure of rule 3 and suspect 30 over 12.
    posterior.hypotheses = hypotheses_from_sets([[3, 30], [3, 12]])
    posterior.weights = np.array([0.75, 0.25])
    observation = env.observe("player_0")
    action = policy.act(observation["observation"], observation["action_mask"])
    assert action == cards.CHOOSE_RULE_0 + 30
    env.step(action)
    assert env.current_seat == 0 and env.refused_rules(0) == [30]  # refused: it proposes again
    observation = env.observe("player_0")
    action = policy.act(observation["observation"], observation["action_mask"])
    assert posterior.hypotheses.tolist() == hypotheses_from_sets([[3, 30]]).tolist()
    assert action - cards.CHOOSE_RULE_0 not in (3, 30)
    env.step(action)
    assert env.active_rules()[-1] == (action - cards.CHOOSE_RULE_0, 0)
