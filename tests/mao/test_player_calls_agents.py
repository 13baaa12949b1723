"""The scripted players in call windows (``calls="players"``) and the calls evaluation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from madiao_mao.agents.mao.players import BaseRulesAgent, BayesianRuleAgent, OracleAgent, table_variants
from madiao_mao.agents.registry import make_agent
from madiao_mao.training.mao.evaluation import calls_markdown, evaluate_calls
from mao_env import cards
from mao_env import rules as rule_library
from mao_env.env import raw_env
from tests.mao.mao_helpers import play, play_with_agents, scenario


def rule_id(description: str) -> int:
    return rule_library.RULE_DESCRIPTIONS.index(description)


def play_calls_game(env, agents, *, seed, options=None, max_steps=4000):
    """Play one game; returns [(caller, reason, correct)] for every call made."""
    env.reset(seed=seed, options=options)
    made = []
    faults: dict[int, int] = {}

    def record(seat: int, action: int) -> None:
        nonlocal faults
        if action == cards.END_TURN:
            faults = env.window_faults()
        elif cards.CALL_0 <= action < cards.NO_CALL:
            made.append((seat, action - cards.CALL_0, action - cards.CALL_0 in faults))

    play_with_agents(env, agents, max_steps=max_steps, after_step=record)
    return made


@pytest.mark.parametrize("name", ["base", "bayes", "oracle", "random"])
def test_every_agent_acts_legally_in_call_windows(name):
    env = raw_env(4, num_rounds=2, calls="players", rule_choice="agent", max_steps=1500)
    agents = [make_agent(name, "mao", seed=seat, env=env) for seat in range(4)]
    play_calls_game(env, agents, seed=2, options={"rules": [(3, 0), (40, 1)]})


def test_oracle_callers_call_every_fault_and_only_faults():
    """Seat 0 plays by the base rules under secret rules it does not know: it faults. The oracles
    in the other seats know the rules: every fault is called (by the first of them) and none of
    their calls is a bad call."""
    env = raw_env(4, num_rounds=1, calls="players", max_steps=3000)
    agents = [BaseRulesAgent(seed=0), *(OracleAgent(env, seed=s) for s in range(1, 4))]
    rules = [
        (rule_id("hearts may not be played on spades"), 1),
        (rule_id("when playing hearts, say 'Hearts'"), 2),
    ]
    env.reset(seed=4, options={"rules": rules})
    faults_seen = faults_called = 0
    faults: dict[int, int] = {}
    for _ in range(3000):
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            break
        seat = env.current_seat
        action = agents[seat].act(observation["observation"], observation["action_mask"])
        env.step(action)
        if action == cards.END_TURN:
            faults = env.window_faults()
            faults_seen += len(faults)
        elif cards.CALL_0 <= action < cards.NO_CALL:
            correct = action - cards.CALL_0 in faults
            # (The base-rules player calls too, on what it believes: "Hearts" is talking to it.)
            assert correct or seat == 0, "an oracle made a bad call"
            faults_called += correct
    assert faults_seen > 5
    assert faults_called == faults_seen


def test_base_rules_caller_makes_bad_calls_on_a_wild_card_it_does_not_know():
    # Rule 13, "queens may be played on anything" (author seat 3): QS on 5H is good.
    env = scenario(
        4, hands={0: ["QS", "KD", "2D"], 1: ["2C"], 2: ["4C"], 3: ["6C"]}, pile=["5H"], stack=["7C", "8C"],
        rules=[(13, 3)], calls="players",
    )  # fmt: skip
    play(env, "play QS", "say card-name", "end")
    base = BaseRulesAgent(seed=0, **table_variants(env))
    observation = env.observe("player_1")
    action = base.act(observation["observation"], observation["action_mask"])
    assert env.describe_action(action) == "call bad-card"  # under the base rules QS on 5H is bad
    env.step(action)
    assert env.last_calls[0]["bad_call"]
    # The author knows its rule: the oracle, and the Bayesian author, do not call.
    play(env, "no call")
    oracle = OracleAgent(env, seed=2)
    observation = env.observe("player_2")
    assert oracle.act(observation["observation"], observation["action_mask"]) == cards.NO_CALL
    play(env, "no call")
    author = BayesianRuleAgent(seed=3, **table_variants(env, posterior=True))
    observation = env.observe("player_3")
    assert author.act(observation["observation"], observation["action_mask"]) == cards.NO_CALL


def test_a_caller_passes_when_its_belief_is_below_the_threshold():
    env = scenario(
        4, hands={0: ["9C", "KD", "2D"], 1: ["2C"], 2: ["4C"], 3: ["6C"]}, pile=["5H"], stack=["7C", "8C"],
        calls="players",
    )  # fmt: skip
    play(env, "play 9C", "end")
    observation = env.observe("player_1")
    sure = BaseRulesAgent(seed=0).act(observation["observation"], observation["action_mask"])
    assert env.describe_action(sure) == "call bad-card"
    never = BaseRulesAgent(seed=0, call_threshold=1.0)
    assert never.act(observation["observation"], observation["action_mask"]) == sure  # certain: 1 >= 1
    # A Bayesian player unsure of a secret rule (one unknown rule active) calls only above the bar.
    env = scenario(
        4, hands={0: ["9H", "KD", "2D"], 1: ["2C"], 2: ["4C"], 3: ["6C"]}, pile=["5H"], stack=["7C", "8C"],
        rules=[(rule_id("when playing hearts, say 'Hearts'"), 3)], calls="players",
    )  # fmt: skip
    play(env, "play 9H", "end")
    observation = env.observe("player_1")
    bayes = BayesianRuleAgent(seed=1, call_threshold=0.5, **table_variants(env, posterior=True))
    assert bayes.act(observation["observation"], observation["action_mask"]) == cards.NO_CALL  # 1 rule in 45


def test_bayesian_callers_learn_to_call_a_secret_rule_from_the_authors_calls():
    """Seat 3 authored "when playing hearts, say 'Hearts'" and calls it on seat 0, a base-rules
    player who never learns; the Bayesian players in seats 1 and 2 (who call before seat 3) learn
    the rule from those calls and then call it themselves, without bad calls on it."""
    env = raw_env(4, num_rounds=1, calls="players", max_steps=3000)
    variants = table_variants(env, posterior=True)
    agents = [
        BaseRulesAgent(seed=0, **table_variants(env)),
        *(BayesianRuleAgent(seed=s, **variants) for s in (1, 2)),
        OracleAgent(env, seed=3),
    ]
    hearts = cards.SUIT_PHRASE_0 + cards.HEARTS
    learned = 0
    for seed in range(4):
        for agent in agents:
            agent.reset()
        made = play_calls_game(env, agents, seed=seed, options={"rules": [(36, 3)]})
        learned += sum(1 for seat, reason, correct in made if seat != 3 and reason == hearts and correct)
        assert not [m for m in made if m[1] == hearts and not m[2]], "a bad call on the learned rule"
    assert learned > 0


def test_evaluate_calls_counts_add_up_and_the_oracle_is_always_right():
    results = evaluate_calls({"oracle": "oracle", "base": "base"}, episodes=2, n_rules=2, seed=1)
    for stats in results.values():
        assert stats.turns > 0
        assert stats.correct_calls + stats.bad_calls == stats.calls
        assert stats.faults_called <= stats.faults
        assert stats.fault_cards + stats.bad_call_cards == sum(stats.seat_cards)
    oracle = results["oracle"]
    assert oracle.bad_calls == 0 and (oracle.faults == 0 or oracle.faults_called == oracle.faults)
    assert math.isnan(oracle.call_accuracy) or oracle.call_accuracy == 1.0
    text = calls_markdown(results, "test")
    assert "call accuracy" in text and "| oracle |" in text and "| base |" in text


def test_master_mode_evaluation_refuses_a_players_table():
    from madiao_mao.training.mao.evaluation import MaoSeatStats, play_mao_episode

    env = raw_env(3, calls="players")
    with pytest.raises(ValueError, match="evaluate_calls"):
        play_mao_episode(env, [BaseRulesAgent()] * 3, {0: MaoSeatStats("x")}, seed=0)
    np.testing.assert_equal(env.n_players, 3)


def test_a_game_between_agents_prints_the_players_calls_and_the_winner():
    from madiao_mao.training.mao.play import play_mao_game
    from mao_env import mao_v0

    env = mao_v0.env(n_players=3, calls="players", max_steps=3000)
    agents = [BaseRulesAgent(seed=0), OracleAgent(env, seed=1), BaseRulesAgent(seed=2)]
    lines: list[str] = []
    returns = play_mao_game(env, agents, None, seed=6, write=lines.append)
    text = "\n".join(lines)
    assert returns.shape == (3,)
    assert "Mao Master" not in text  # nobody but the players calls
    assert "wins the round" in text
