"""The search player's budget (``madiao_mao.agents.madiao.search``): option parsing, batched play-outs that
match the AEC env's, learned-policy play-outs, and strength growing with the budget."""

from __future__ import annotations

import numpy as np
import pytest

from madiao_env import madiao_v0
from madiao_mao.agents.madiao.heuristic import RoleAwareHeuristicAgent
from madiao_mao.agents.madiao.search import (
    DEFAULT_SAMPLES,
    MadiaoSearchAgent,
    SearchBudget,
    parse_search_options,
)
from madiao_mao.agents.registry import make_agent


def test_an_empty_option_text_is_the_default_budget():
    assert parse_search_options("") == SearchBudget()
    assert SearchBudget().samples == DEFAULT_SAMPLES and SearchBudget().policy == "heuristic"


def test_options_are_read_by_name():
    budget = parse_search_options(" samples=32, policy=runs/x/final_model.zip ,sloughs=2")
    assert budget == SearchBudget(samples=32, sloughs=2, policy="runs/x/final_model.zip")
    assert parse_search_options(budget.label()) == budget


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("samples=0", "search option samples must be a positive integer, got 0"),
        ("samples=many", "search option samples must be a positive integer, got 'many'"),
        ("sloughs=-1", "search option sloughs must be a positive integer"),
        ("depth=3", "unknown search option 'depth'; options are samples, sloughs, policy, inference, pool"),
        ("samples", "search option 'samples' must be written key=value"),
        ("policy=", "search option 'policy=' must be written key=value"),
        ("samples=2,samples=3", "search option 'samples' is given twice"),
    ],
)
def test_bad_options_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        parse_search_options(text)


def test_the_registry_checks_the_budget_and_the_policy_file(tmp_path):
    env = madiao_v0.env()
    with pytest.raises(ValueError, match="samples must be a positive integer"):
        make_agent("search:samples=0", env=env)
    with pytest.raises(ValueError, match="samples must be a positive integer"):
        make_agent("search:samples=0")  # the budget is named before the missing env
    with pytest.raises(FileNotFoundError, match="no saved model at"):
        make_agent(f"search:policy={tmp_path / 'missing.zip'}", env=env)
    agent = make_agent("search:samples=3,sloughs=2", env=env, seed=1)
    assert isinstance(agent, MadiaoSearchAgent)
    assert (agent.n_samples, agent.max_sloughs, agent.name) == (3, 2, "search:samples=3,sloughs=2")


def _mid_hand(env, seed: int, moves: int):
    """``env`` after ``moves`` heuristic decisions of a seeded hand (still in play)."""
    heuristic = RoleAwareHeuristicAgent()
    env.reset(seed=seed)
    for _ in range(moves):
        observation = env.observe(env.agent_selection)
        env.step(heuristic.act(observation["observation"], observation["action_mask"]))
    assert env.table()["phase"] == "play"
    return env


def test_batched_play_outs_equal_the_aec_env_played_out_by_the_heuristic():
    env = _mid_hand(madiao_v0.raw_env(), seed=11, moves=9)
    seat = env.table()["to_act"]
    snapshot = env.get_state()
    legal = [int(a) for a in np.flatnonzero(env.observe(env.agent_selection)["action_mask"])]
    agent = MadiaoSearchAgent(env, seed=0)
    payoffs = agent._play_outs([lambda: snapshot], legal, seat)
    heuristic = RoleAwareHeuristicAgent()
    for index, action in enumerate(legal):
        env.set_state(snapshot)
        total = 0.0
        env.step(action)
        total += env.rewards[f"player_{seat}"]
        while not all(env.terminations.values()):
            observation = env.observe(env.agent_selection)
            env.step(heuristic.act(observation["observation"], observation["action_mask"]))
            total += env.rewards[f"player_{seat}"]
        assert payoffs[0, index] == pytest.approx(total), env.describe_action(action)


def test_policy_play_outs_load_the_model_and_play_legal_moves():
    from madiao_mao.agents.learned import LearnedPolicyAgent
    from madiao_mao.agents.madiao import PRETRAINED_MODEL as PRETRAINED_MADIAO

    env = madiao_v0.env()
    agent = make_agent(f"search:samples=2,policy={PRETRAINED_MADIAO}", env=env, seed=4)
    assert isinstance(agent.playout_policy, LearnedPolicyAgent)
    chosen = []

    def legal_move(action, action_mask):
        assert action_mask[action], action
        chosen.append(action)

    for result in _seat_zero_hands(env, agent, range(2), legal_move):
        assert result.returns.sum() == pytest.approx(0.0)
    assert len(chosen) >= 8


def _seat_zero_hands(env, agent, seeds, on_move) -> list:
    """The hands of ``seeds`` played on ``env`` with ``agent`` in seat 0, each of its moves and
    masks passed to ``on_move``, and the heuristic in the other seats."""
    from madiao_mao.training.madiao.matches import play_episode

    class Watch:
        name = "watch"

        def reset(self) -> None:
            agent.reset()

        def act(self, observation, action_mask):
            action = agent.act(observation, action_mask)
            on_move(action, action_mask)
            return action

    heuristic = RoleAwareHeuristicAgent()
    return [
        play_episode(env, [Watch(), heuristic, heuristic, heuristic], seed=seed, record=False)
        for seed in seeds
    ]


def test_deals_copied_from_their_replay_batch_play_out_as_their_checked_snapshots(monkeypatch):
    # The play-out table takes a replayed deal straight from the replay's env
    # (MadiaoVectorEnv.copy_game_from); through its checked snapshot it must decide the same.
    from madiao_env.vector import MadiaoVectorEnv

    def searched(spec: str) -> list:
        env = madiao_v0.env()
        agent = make_agent(spec, env=env, seed=6)
        values = []

        def note_search(action, action_mask):
            if agent.last_decision is not None:
                values.append((action, agent.last_decision.values.tolist()))

        _seat_zero_hands(env, agent, range(2), note_search)
        return values

    copied = []
    copy_game_from = MadiaoVectorEnv.copy_game_from

    def counted(self, source, source_game, game):
        copied.append(game)
        copy_game_from(self, source, source_game, game)

    monkeypatch.setattr(MadiaoVectorEnv, "copy_game_from", counted)
    for spec in ("search:samples=4", "search:samples=6,policy=heuristic,guard=0,screen=2"):
        copied.clear()
        fast = searched(spec)
        assert fast and copied, "no deal was copied from its replay batch"
        monkeypatch.setattr(
            MadiaoVectorEnv,
            "copy_game_from",
            lambda self, source, source_game, game: self.set_game_state(
                game, source.get_game_state(source_game)
            ),
        )
        assert searched(spec) == fast, spec
        monkeypatch.setattr(MadiaoVectorEnv, "copy_game_from", counted)


def test_the_same_seed_makes_the_same_decisions():
    from madiao_mao.training.madiao.evaluation import duplicate_match, make_deals

    env = madiao_v0.env()
    deals = make_deals(2, seed=9)
    scores = [
        duplicate_match(
            make_agent("search:samples=2", env=env, seed=5), make_agent("heuristic"), deals, env=env
        ).score
        for _ in range(2)
    ]
    assert scores[0] == scores[1]


def test_strength_increases_with_the_budget_on_a_fixed_deal_set():
    # One sample per decision judges each move by a single guess of the hidden cards; sixteen
    # average the guesses out. Same deals, same seeds: a deterministic comparison, paired by hand.
    from madiao_mao.training.madiao.evaluation import duplicate_match, make_deals

    env = madiao_v0.env()
    deals = make_deals(25, seed=21)
    heuristic = make_agent("heuristic")
    small = duplicate_match(make_agent("search:samples=1", env=env, seed=2), heuristic, deals, env=env)
    large = duplicate_match(make_agent("search:samples=16", env=env, seed=2), heuristic, deals, env=env)
    assert np.mean(large.score) > np.mean(small.score) + 0.2


def _cli(*args: str):
    import os
    import subprocess
    import sys
    from pathlib import Path

    return subprocess.run(
        [sys.executable, "-m", "madiao_mao.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_the_search_budget_flag_names_the_search_agents_it_sets():
    result = _cli("evaluate", "--agents", "greedy", "search", "--search-budget", "samples=2", "--deals", "1")
    assert result.returncode == 0, result.stderr
    assert "| greedy | search:samples=2 | 4 |" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["evaluate", "--agents", "greedy", "search", "--search-budget", "samples=x"],
            "samples must be a positive",
        ),
        (
            ["evaluate", "--agents", "greedy", "heuristic", "--search-budget", "samples=2"],
            "no agent named 'search'",
        ),
        (["evaluate", "--agents", "greedy", "search:depth=2"], "unknown search option 'depth'"),
        (
            ["match", "--agents", "search:samples=0", "greedy", "greedy", "greedy"],
            "samples must be a positive",
        ),
        (
            ["evaluate", "--game", "mao", "--search-budget", "samples=2"],
            "--search-budget: an option of madiao",
        ),
    ],
)
def test_bad_search_budgets_are_one_line_exit_2(args, message):
    result = _cli(*args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_the_budget_table_plays_each_budget_on_the_same_deals_and_checks_all_first():
    from madiao_mao.training.madiao.exploit import search_budget_table

    with pytest.raises(ValueError, match="unknown search option 'depth'"):
        search_budget_table(["samples=1", "depth=2"], deals=1, seed=0)
    table = search_budget_table(["samples=1", ""], deals=1, seed=0)
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert [row.split("|")[1].strip() for row in rows] == [
        "`samples=1,sloughs=3,policy=heuristic`",
        f"`samples={DEFAULT_SAMPLES},sloughs=3,policy=heuristic`",
    ]
    assert all(row.split("|")[2].strip() == "4" for row in rows)  # 1 deal x 4 seat rotations


def test_play_outs_use_the_observation_their_policy_reads_whatever_the_live_env_shows():
    # The heuristic decodes summary observations; a table showing history observations must not
    # reach it (nor a model trained on summaries).
    from madiao_mao.training.madiao.matches import play_episode

    env = madiao_v0.env(obs_type="history")
    search = make_agent("search:samples=2", env=env, seed=3)
    seen = []

    class Watch:
        name = "watch"

        def reset(self) -> None:
            pass

        def act(self, observation, action_mask):
            action = search.act(observation, action_mask)
            assert action_mask[action]
            seen.append(action)
            return action

    random = make_agent("random", seed=0)
    play_episode(env, [Watch(), random, random, random], seed=5, record=False)
    assert len(seen) >= 8
    assert all(table.env.obs_type == "summary" for table in search._tables.values())
