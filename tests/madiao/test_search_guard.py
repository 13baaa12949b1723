"""The guarded search (``search:policy=P,guard=Z,screen=K``; ``madiao_mao.agents.madiao.search``): the
play-out policy's own move, kept unless the play-outs of the same deals show another candidate
better by more than ``Z`` standard errors; ``screen`` plays the rest of the deals out only for the
candidates ahead of the policy's move on the first ``K``."""

from __future__ import annotations

import numpy as np
import pytest

from madiao_env import madiao_v0
from madiao_mao.agents.madiao.heuristic import RoleAwareHeuristicAgent
from madiao_mao.agents.madiao.search import (
    MadiaoSearchAgent,
    SearchBudget,
    guarded_choice,
    parse_search_options,
)
from madiao_mao.agents.registry import make_agent


def test_guard_and_screen_are_read_and_written_back():
    budget = parse_search_options("samples=64,policy=model,guard=2,screen=16")
    assert budget == SearchBudget(samples=64, policy="model", guard=2.0, screen=16)
    assert budget.label() == "samples=64,sloughs=3,policy=model,guard=2,screen=16"
    assert parse_search_options(budget.label()) == budget
    assert "guard" not in SearchBudget().label()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("guard=-1", "search option guard must be a number >= 0, got -1.0"),
        ("guard=nan", "search option guard must be a number >= 0, got nan"),
        ("guard=inf", "search option guard must be a number >= 0, got inf"),
        ("guard=high", "search option guard must be a number >= 0, got 'high'"),
        ("guard=1,policy=random", "guard keeps the play-out policy's own move: it needs a policy"),
        ("guard=1,inference=heuristic", "guard compares candidates over equally weighted deals"),
        ("screen=4", "search option screen needs guard"),
        ("samples=8,guard=1,screen=8", r"search option screen must be below samples \(8\), got 8"),
        ("guard=1,screen=-2", "search option screen must be an integer >= 0"),
    ],
)
def test_bad_guard_options_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        parse_search_options(text)


def test_the_default_is_kept_unless_another_move_is_ahead_by_more_than_the_guard():
    # Candidate 1 beats the default (column 0) by 1 in every deal but one: mean 0.75, sd 0.5.
    payoffs = np.array([[0.0, 1.0, -1.0], [0.0, 1.0, -1.0], [0.0, 1.0, -1.0], [0.0, 0.0, 5.0]])
    standard_error = np.std([1.0, 1.0, 1.0, 0.0], ddof=1) / 2
    assert guarded_choice(payoffs, 0, 0.0) == 1
    assert guarded_choice(payoffs, 0, 0.74 / standard_error) == 1
    assert guarded_choice(payoffs, 0, 0.76 / standard_error) == 0
    # From candidate 1, the others are behind on average: it stays whatever the guard.
    assert guarded_choice(payoffs, 1, 0.0) == 1
    # Of two candidates ahead, the larger margin wins.
    assert guarded_choice(np.array([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]), 0, 1.0) == 2


def test_a_gain_the_same_in_every_deal_has_no_standard_error_and_passes_any_guard():
    assert guarded_choice(np.array([[0.0, 1.0], [2.0, 3.0]]), 0, 1e9) == 1


def test_a_tie_or_a_single_deal_keeps_the_default():
    assert guarded_choice(np.zeros((5, 3)), 2, 0.0) == 2
    assert guarded_choice(np.array([[0.0, 3.0]]), 0, 1.0) == 0
    assert guarded_choice(np.array([[0.0, 3.0]]), 0, 0.0) == 1


def test_guarded_choice_refuses_a_default_outside_the_candidates():
    with pytest.raises(ValueError, match="default one of its columns"):
        guarded_choice(np.zeros((2, 2)), 2, 1.0)


def _decisions(spec: str, hands: int) -> tuple[list[int], list[int], list]:
    """The spec's moves at every decision of seat 0 in seeded hands (the heuristic in the other
    seats), the heuristic's move at the same decisions, and the searched decisions' records."""
    env = madiao_v0.env()
    agent = make_agent(spec, env=env, seed=3)
    heuristic = RoleAwareHeuristicAgent()
    played, heuristic_moves, searched = [], [], []
    for seed in range(hands):
        env.reset(seed=seed)
        for name in env.agent_iter():
            _, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            seen = env.observe(name)
            observation, mask = seen["observation"], seen["action_mask"]
            move = heuristic.act(observation, mask)
            if name == env.possible_agents[0]:
                heuristic_moves.append(int(move))
                move = agent.act(observation, mask)
                played.append(int(move))
                if agent.last_decision is not None:
                    searched.append(agent.last_decision)
            env.step(move)
    return played, heuristic_moves, searched


def test_an_unreachable_guard_plays_exactly_the_policy(monkeypatch):
    # Play-outs that tell the moves apart only by noise: no candidate passes a guard of 1e9.
    noise = np.random.default_rng(0)
    monkeypatch.setattr(
        MadiaoSearchAgent,
        "_play_outs",
        lambda self, snapshots, candidates, seat: noise.normal(size=(len(snapshots), len(candidates))),
    )
    played, heuristic_moves, searched = _decisions("search:samples=4,guard=1e9", hands=6)
    assert played == heuristic_moves
    assert searched and all(d.chosen == d.default for d in searched)


def test_without_a_guard_the_best_mean_is_played_and_the_policy_move_is_among_the_candidates():
    played, heuristic_moves, searched = _decisions("search:samples=4,guard=0,sloughs=1", hands=6)
    assert searched
    for decision in searched:
        assert decision.default in decision.candidates
        best = decision.candidates[int(np.argmax(decision.values))]
        # A tie with the policy's move keeps it; otherwise the best mean is played.
        tied = decision.values[decision.candidates.index(decision.default)] == max(decision.values)
        assert decision.chosen == (decision.default if tied else best)
    assert played != heuristic_moves, "six hands of play-outs never preferred another move"


def _mid_trick():
    """An env five heuristic moves into a seeded hand, the seat to act's observation there, and
    the heuristic's move for it (the guarded search's default with ``policy=heuristic``)."""
    env = madiao_v0.env()
    heuristic = RoleAwareHeuristicAgent()
    env.reset(seed=4)
    for _ in range(5):
        seen = env.observe(env.agent_selection)
        env.step(heuristic.act(seen["observation"], seen["action_mask"]))
    seen = env.observe(env.agent_selection)
    return env, seen, int(heuristic.act(seen["observation"], seen["action_mask"]))


def test_the_policy_move_is_searched_even_when_the_slough_limit_leaves_it_out(monkeypatch):
    env, seen, default = _mid_trick()
    agent = make_agent("search:samples=3,guard=1", env=env, seed=1)
    others = [int(a) for a in np.flatnonzero(seen["action_mask"]) if a != default]
    assert len(others) >= 2
    monkeypatch.setattr(agent, "candidates", lambda observation, mask: list(others))
    agent.act(seen["observation"], seen["action_mask"])
    assert agent.last_decision.default == default
    assert agent.last_decision.candidates == (*others, default)


def _screened_decision(monkeypatch, score_of_other) -> tuple[list, dict, object]:
    """One decision of ``search:samples=6,guard=0,screen=2`` with play-outs faked: every candidate's
    payoff is its score in every deal, the policy's move scoring 0 and the k-th other candidate
    ``score_of_other(k)``. Returns the play-out calls, the scores and the decision."""
    env, seen, default = _mid_trick()
    agent = make_agent("search:samples=6,guard=0,screen=2", env=env, seed=2)
    assert isinstance(agent, MadiaoSearchAgent)
    calls = []
    scores = {default: 0.0}

    def fake_play_outs(snapshots, candidates, seat):
        calls.append((len(snapshots), list(candidates)))
        for move in candidates:
            scores.setdefault(move, score_of_other(len(scores) - 1))
        return np.array([[scores[move] for move in candidates]] * len(snapshots), dtype=float)

    monkeypatch.setattr(agent, "_play_outs", fake_play_outs)
    agent.act(seen["observation"], seen["action_mask"])
    assert agent.last_decision.default == default
    return calls, scores, agent.last_decision


def test_screening_plays_out_only_the_candidates_ahead_of_the_policy_move(monkeypatch):
    # The other candidates: ahead, level with the policy's move, behind, ahead, ...
    calls, scores, decision = _screened_decision(monkeypatch, lambda k: (1.0 + k, 0.0, -1.0 - k)[k % 3])
    (first_deals, first), (rest_deals, rest) = calls
    assert (first_deals, rest_deals) == (2, 4)
    assert first == list(decision.candidates) and len(first) >= 3
    # The candidates that scored above the policy's move, and the policy's move, in their order.
    assert rest == [move for move in first if scores[move] > 0 or move == decision.default]
    assert 1 < len(rest) < len(first)
    assert decision.chosen == max(first, key=scores.__getitem__)


def test_screening_stops_when_no_candidate_is_ahead(monkeypatch):
    calls, _, decision = _screened_decision(monkeypatch, lambda k: -1.0 - k)
    assert len(calls) == 1 and calls[0][0] == 2
    assert decision.chosen == decision.default


def test_model_search_is_the_guarded_search_on_the_shipped_policy_and_takes_options():
    from madiao_mao.agents.learned import LearnedPolicyAgent
    from madiao_mao.agents.madiao import MODEL_SEARCH_OPTIONS

    env = madiao_v0.env()
    agent = make_agent("model-search", env=env, seed=1)
    assert isinstance(agent, MadiaoSearchAgent) and isinstance(agent.playout_policy, LearnedPolicyAgent)
    assert agent.budget == parse_search_options(MODEL_SEARCH_OPTIONS) and agent.name == "model-search"
    changed = make_agent("model-search:samples=64", env=env, seed=1)
    assert changed.budget == SearchBudget(**{**agent.budget.__dict__, "samples": 64})
    assert changed.name == "model-search:samples=64"
    with pytest.raises(ValueError, match="screen must be below samples"):
        make_agent("model-search:samples=16", env=env)
    with pytest.raises(ValueError, match="needs the env it plays in"):
        make_agent("model-search")


def test_the_commands_seat_model_search_on_an_env_of_its_own(capsys):
    from madiao_mao.agents.registry import reads_env
    from madiao_mao.cli.main import main
    from madiao_mao.training.madiao.scorecard import check_policy_spec

    assert reads_env("model-search", "madiao") and reads_env("search:samples=2", "madiao")
    assert not reads_env("model", "madiao") and not reads_env("heuristic", "madiao")
    check_policy_spec("model-search:samples=4,screen=2")
    spec = "model-search:samples=4,screen=2"
    assert main(["evaluate", "--agents", spec, "random", "--deals", "1", "--seed", "0"]) == 0
    assert spec in capsys.readouterr().out


def test_the_policy_reads_its_own_observation_variant_whatever_the_live_envs(monkeypatch):
    # The live env observes histories; the heuristic reads summaries: the guard must hand it one.
    # Play-outs that tie every move keep the policy's move at every decision.
    monkeypatch.setattr(
        MadiaoSearchAgent,
        "_play_outs",
        lambda self, snapshots, candidates, seat: np.zeros((len(snapshots), len(candidates))),
    )
    live, summary = madiao_v0.env(obs_type="history"), madiao_v0.env()
    agent = make_agent("search:samples=2,guard=1e9", env=live, seed=1)
    heuristic = RoleAwareHeuristicAgent()
    compared = 0
    for seed in range(3):
        live.reset(seed=seed)
        summary.reset(seed=seed)
        for name in summary.agent_iter():
            _, _, terminated, truncated, _ = summary.last()
            if terminated or truncated:
                summary.step(None)
                live.step(None)
                continue
            seen = summary.observe(name)
            move = heuristic.act(seen["observation"], seen["action_mask"])
            if name == summary.possible_agents[0]:
                watched = live.observe(name)
                assert watched["observation"].shape != seen["observation"].shape
                assert agent.act(watched["observation"], watched["action_mask"]) == move
                compared += 1
            summary.step(move)
            live.step(move)
    assert compared >= 20
