"""The learned caller of players' calls (``madiao_mao.agents.mao.caller``), its fit and its evaluation."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from madiao_mao.agents.mao.beliefs import parse_observation
from madiao_mao.agents.mao.caller import (
    CALL_FEATURES,
    PRETRAINED_CALLER,
    CallerModel,
    LearnedCallerAgent,
    call_candidates,
)
from madiao_mao.agents.mao.players import BaseRulesAgent, BayesianRuleAgent, table_variants
from madiao_mao.agents.registry import make_agent
from madiao_mao.training.mao.caller import (
    TRAINING_CALL_RULES,
    CallData,
    choose_threshold,
    collect_call_data,
    fit_logistic,
    tally,
)
from madiao_mao.training.mao.evaluation import (
    CALL_COUNTS,
    CallStats,
    calls_episodes,
    paired_call_differences,
    play_calls_episode,
)
from madiao_mao.training.stats import paired_ratio_difference
from mao_env import cards
from mao_env.env import raw_env
from mao_env.rules import HELD_OUT_RULES

REPO = Path(__file__).resolve().parents[2]
N_FEATURES = len(CALL_FEATURES)


def belief_model(threshold: float) -> CallerModel:
    """A caller whose P(correct) is the posterior's belief itself: the Bayesian player's rule."""
    weights = np.zeros(N_FEATURES)
    weights[CALL_FEATURES.index("belief_logit")] = 1.0
    return CallerModel(weights, 0.0, np.zeros(N_FEATURES), np.ones(N_FEATURES), threshold, {})


def play_game(env, agents, *, seed, options, on_decision=None, max_steps=4000):
    """Play one game, checking every action against the mask; ``on_decision(seat, observation,
    action)`` sees each decision. Returns the number of decisions made."""
    env.reset(seed=seed, options=options)
    for agent in agents:
        agent.reset()
    for step in range(max_steps):
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            return step
        seat = env.current_seat
        action = int(agents[seat].act(observation["observation"], observation["action_mask"]))
        assert observation["action_mask"][action] == 1, f"seat {seat} took masked action {action}"
        if on_decision is not None:
            on_decision(seat, observation, action)
        env.step(action)
    return max_steps


# ---- legality ---------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["shipped", "eager"])
def test_the_callers_calls_are_legal_in_random_games(model):
    """Seeded games with a base-rules player (who faults) and three learned callers: the shipped
    one, and one that calls whatever its posterior does not rule out (every call path is taken).
    Every action is in the mask, and a call is made only in a call window, for an offered reason."""
    env = raw_env(4, num_rounds=1, calls="players", max_steps=2500)
    variants = table_variants(env, posterior=True)
    kwargs = {} if model == "shipped" else {"model": belief_model(1e-9)}
    callers = [LearnedCallerAgent(seed=s, **kwargs, **variants) for s in (1, 2, 3)]
    agents = [BaseRulesAgent(seed=0, **table_variants(env)), *callers]
    calls = []

    def check(seat, observation, action):
        mask = observation["action_mask"]
        if cards.CALL_0 <= action < cards.NO_CALL:
            assert env.in_call_window() and mask[cards.NO_CALL] == 1
            calls.append(action - cards.CALL_0)
        if mask[cards.NO_CALL]:
            assert cards.CALL_0 <= action <= cards.POINT_OF_ORDER  # a window's decision is a call or a pass

    for plan in calls_episodes(3, seed=5, rules=HELD_OUT_RULES):
        play_game(env, agents, seed=plan[0], options={"rules": plan[1]}, on_decision=check)
    assert calls, "no call was made in three games"
    assert all(0 <= reason < cards.N_CALL_REASONS for reason in calls)


def test_with_the_belief_as_its_model_the_caller_calls_as_the_bayesian_player():
    """The learned call decision is wired where the Bayesian player's is: given a model that
    returns the posterior's belief and the same threshold, every action is the Bayesian player's."""
    env = raw_env(4, num_rounds=1, calls="players", max_steps=2000)
    variants = table_variants(env, posterior=True)
    twins = [LearnedCallerAgent(seed=s, model=belief_model(0.8), **variants) for s in range(4)]
    bayes = [BayesianRuleAgent(seed=s, **variants) for s in range(4)]
    windows = 0

    def compare(seat, observation, action):
        nonlocal windows
        expected = bayes[seat].act(observation["observation"], observation["action_mask"])
        assert action == expected
        windows += int(observation["action_mask"][cards.NO_CALL])

    for env_seed, plan in calls_episodes(2, seed=3, rules=TRAINING_CALL_RULES):
        for agent in bayes:
            agent.reset()
        play_game(env, twins, seed=env_seed, options={"rules": plan}, on_decision=compare)
    assert windows > 50


# ---- the features read the seat's own view only ---------------------------------------------
def test_the_features_do_not_depend_on_secret_rules_behind_the_same_observations():
    """Two tables dealt alike whose secret rules differ (each authored by seat 3): while seats
    0-2 observe the same at both, their callers' candidates and actions are the same. Seat 3 (who
    knows its rules, so observes them) plays one action at both tables."""
    rules_a, rules_b = [(1, 3), (38, 3)], [(13, 3), (42, 3)]
    env_a, env_b = (raw_env(4, num_rounds=1, calls="players", max_steps=2000) for _ in range(2))
    variants = table_variants(env_a, posterior=True)
    callers_a = [LearnedCallerAgent(seed=s, model=belief_model(0.5), **variants) for s in range(4)]
    callers_b = [LearnedCallerAgent(seed=s, model=belief_model(0.5), **variants) for s in range(3)]
    env_a.reset(seed=11, options={"rules": rules_a})
    env_b.reset(seed=11, options={"rules": rules_b})
    assert env_a.active_rules() != env_b.active_rules()
    compared = 0
    for _ in range(2000):
        (obs_a, _, over, cut, _), obs_b = env_a.last(), env_b.last()[0]
        same = all(
            np.array_equal(env_a.observe(agent)["observation"], env_b.observe(agent)["observation"])
            for agent in env_a.agents[:3]
        )
        if not same or over or cut:
            break
        seat = env_a.current_seat
        action = callers_a[seat].act(obs_a["observation"], obs_a["action_mask"])
        if seat < 3:
            assert callers_b[seat].act(obs_b["observation"], obs_b["action_mask"]) == action
            if obs_a["action_mask"][cards.NO_CALL]:
                view = parse_observation(obs_a["observation"])
                found_a = call_candidates(view, obs_a["action_mask"], callers_a[seat].posterior)
                found_b = call_candidates(view, obs_b["action_mask"], callers_b[seat].posterior)
                for x, y in zip(found_a, found_b, strict=True):
                    np.testing.assert_array_equal(x, y)
                compared += 1
        env_a.step(action)
        env_b.step(action)
    assert compared >= 6, f"only {compared} call windows before the tables parted"


# ---- the model ----------------------------------------------------------------------------------
def test_the_shipped_caller_loads_and_saving_it_reproduces_its_predictions(tmp_path):
    model = CallerModel.load(PRETRAINED_CALLER)
    assert 0.5 <= model.threshold <= 1.0
    assert model.provenance["command"].startswith("python -m madiao_mao.training.mao.caller fit")
    assert set(model.provenance["rules"]) == set(TRAINING_CALL_RULES)
    assert not set(model.provenance["rules"]) & set(HELD_OUT_RULES)
    rows = np.random.default_rng(0).normal(size=(20, N_FEATURES)) * model.scale + model.mean
    path = tmp_path / "copy.json"
    model.save(path)
    np.testing.assert_array_equal(CallerModel.load(path).probabilities(rows), model.probabilities(rows))
    # By hand: sigmoid(bias + weights . standardised features).
    z = model.bias + ((rows[0] - model.mean) / model.scale) @ model.weights
    assert model.probabilities(rows[:1])[0] == pytest.approx(1 / (1 + math.exp(-z)))
    # The belief is the main evidence: more of it, a likelier correct call.
    low, high = model.mean.copy(), model.mean.copy()
    low[CALL_FEATURES.index("belief_logit")], high[CALL_FEATURES.index("belief_logit")] = -2.0, 5.0
    chances = model.probabilities(np.stack([low, high]))
    assert chances[0] < chances[1]


@pytest.mark.parametrize(
    "content, match",
    [
        ("not json", "is not a caller model"),
        ('{"features": ["x"]}', "not a caller model for these features"),
        (json.dumps({"features": list(CALL_FEATURES), "weights": [0.0]}), "not a valid caller model"),
        (
            json.dumps(
                {
                    "features": list(CALL_FEATURES),
                    "weights": [0.0] * N_FEATURES,
                    "bias": 0.0,
                    "mean": [0.0] * N_FEATURES,
                    "scale": [0.0] * N_FEATURES,
                    "threshold": 0.5,
                }
            ),
            "every scale must be > 0",
        ),
    ],
)
def test_a_bad_caller_file_is_named(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        CallerModel.load(path)
    with pytest.raises(ValueError, match="no caller model"):
        CallerModel.load(tmp_path / "missing.json")
    with pytest.raises(ValueError, match=match):
        make_agent(f"caller:{path}", "mao")


def test_the_registry_builds_the_caller_for_a_table():
    env = raw_env(4, calls="players", talking=False, seven_phrase="thank you")
    caller = make_agent("caller", "mao", seed=0, env=env)
    assert isinstance(caller, LearnedCallerAgent) and caller.name == "caller"
    assert caller.posterior.players_call and not caller.talking and caller.thank_you


def test_logistic_regression_recovers_known_odds():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20_000, 2))
    truth = np.array([1.5, -0.7])
    y = rng.random(x.shape[0]) < 1 / (1 + np.exp(-(0.3 + x @ truth)))
    weights, bias, mean, scale = fit_logistic(x, y, l2=0.0)
    np.testing.assert_allclose(weights / scale, truth, atol=0.08)
    assert bias - (mean / scale) @ weights == pytest.approx(0.3, abs=0.08)
    with pytest.raises(ValueError, match="only one label"):
        fit_logistic(x, np.zeros(x.shape[0], dtype=bool))


def test_the_threshold_is_the_lowest_as_accurate_as_bayes_with_no_more_bad_calls():
    # Six candidates: (belief, correct, learned P).
    belief = np.array([0.99, 0.9, 0.85, 0.6, 0.3, 0.95])
    correct = np.array([True, True, False, True, False, False])
    learned = np.array([0.97, 0.9, 0.55, 0.75, 0.2, 0.6])
    data = CallData(np.zeros((6, N_FEATURES)), correct, belief, np.zeros(6, dtype=int))
    # Bayes (>= 0.8) calls rows 0, 1, 2, 5: 2 correct of 4. At 0.75 the learned P calls 0, 1, 3:
    # 3 of 3; below 0.6 it adds bad calls (accuracy 3/4 at 0.6 and 0.55 still >= 1/2, bad 1 and
    # 2 <= 2): the lowest such threshold calls the most faults, ties to the higher one.
    threshold, figures = choose_threshold(learned, data, thresholds=(0.5, 0.55, 0.6, 0.75, 0.95))
    assert threshold == 0.75
    assert (figures["bayes calls"], figures["bayes correct"], figures["learned calls"]) == (4, 2, 3)
    assert figures["met the bayes targets"]
    assert tally(learned >= 0.5, correct) == tally(np.array([1, 1, 1, 1, 0, 1], bool), correct)
    assert tally(learned >= 0.5, correct).bad == 2 and tally(learned >= 0.5, correct).accuracy == 0.6


# ---- the recorded data --------------------------------------------------------------------------
def test_recorded_candidates_are_labelled_from_the_window_faults():
    data = collect_call_data(4, seed=0)
    assert data.features.shape == (data.correct.size, N_FEATURES) and data.correct.any()
    assert set(np.unique(data.episode)) == {0, 1, 2, 3}
    # The belief a row was recorded with is the one its feature holds.
    logit = data.features[:, CALL_FEATURES.index("belief_logit")]
    np.testing.assert_allclose(1 / (1 + np.exp(-logit)), np.clip(data.belief, 1e-4, 1 - 1e-4), rtol=1e-9)
    # A strong belief is right almost always; a faint one rarely.
    strong = data.belief >= 0.8
    assert strong.sum() >= 5 and data.correct[strong].mean() > 0.8 > data.correct[data.belief < 0.1].mean()


# ---- the evaluation's arithmetic ----------------------------------------------------------------
class ScriptedAgent:
    """Plays a fixed list of actions given as text."""

    def __init__(self, env, texts):
        self.env, self.texts = env, list(texts)

    def reset(self):
        pass

    def act(self, observation, action_mask):
        return self.env.action_from_text(self.texts.pop(0))


def test_call_stats_count_a_constructed_window_by_hand():
    """Seat 0 plays 9C on 5H (a bad card) and says "Spades" (talking): two faults. Seat 1 calls
    "bad card" (right) and "failure to say 'Last card'" (wrong), seat 2 calls "Mao in vain"
    (wrong, three cards), seat 3 passes: 3 calls, 1 correct, 2 bad; the faulty player takes 1
    card, the callers 1 + 3; the talking nobody called would have cost 1 card."""
    env = raw_env(4, num_rounds=1, calls="players", max_steps=9)  # truncated once the window settles
    texts = {
        0: ["play 9C", "say spades", "end"],
        1: ["call bad-card", "call failure last-card", "no call"],
        2: ["call mao-in-vain", "no call"],
        3: ["no call"],
    }
    agents = [ScriptedAgent(env, texts[s]) for s in range(4)]
    options = {
        "hands": {0: ["9C", "KD", "2D"], 1: ["2C", "3C"], 2: ["4C", "5C"], 3: ["6C", "8C"]},
        "pile": ["5H"], "stack": ["7C", "8D", "9D", "10D"],
    }  # fmt: skip
    stats = CallStats("scripted")
    play_calls_episode(env, agents, stats, seed=0, options=options)
    stats.end_episode()
    assert all(not agent.texts for agent in agents), "the script was not played to its end"
    assert (stats.turns, stats.faults, stats.calls, stats.correct_calls, stats.bad_calls) == (1, 2, 3, 1, 2)
    assert (stats.faults_called, stats.fault_cards) == (1, 1)
    assert (stats.bad_call_cards, stats.unpunished_cards) == (4, 1)
    assert stats.call_accuracy == pytest.approx(1 / 3) and stats.faults_called_rate == pytest.approx(1 / 2)
    assert stats.seat_cards == [1, 1, 3, 0]
    assert stats.per_episode().tolist() == [[getattr(stats, name) for name in CALL_COUNTS]]


def test_paired_call_differences_on_known_episodes():
    ours, theirs = CallStats("ours"), CallStats("theirs")
    # (turns, faults, faults_called, calls, correct_calls, bad_calls, fault_cards, bad_call_cards,
    #  unpunished_cards) per episode.
    for stats, episodes in (
        (ours, [(10, 2, 2, 2, 2, 0, 2, 0, 0), (20, 4, 3, 3, 3, 0, 3, 0, 1)]),
        (theirs, [(10, 2, 2, 3, 2, 1, 2, 1, 0), (20, 4, 3, 4, 3, 1, 3, 1, 1)]),
    ):
        for counts in episodes:
            for name, value in zip(CALL_COUNTS, counts, strict=True):
                setattr(stats, name, getattr(stats, name) + value)
            stats.end_episode()
    differences = paired_call_differences(ours, theirs)
    assert differences["call accuracy"].mean == pytest.approx(5 / 5 - 5 / 7)
    assert differences["faults called"].mean == 0
    bad = differences["bad-call cards/turn"]
    assert bad.mean == pytest.approx(0 - 2 / 30) and bad.n_blocks == 2 and bad.high < 0
    assert differences["unpunished cards/turn"].mean == 0
    with pytest.raises(ValueError, match="did not play the same episodes"):
        paired_call_differences(ours, CallStats("none"))


def test_paired_ratio_difference_resamples_blocks_together():
    same = ([1, 2, 3], [2, 2, 4])
    zero = paired_ratio_difference(same, same)
    assert (zero.mean, zero.low, zero.high, zero.n_blocks) == (0.0, 0.0, 0.0, 3)
    better = paired_ratio_difference(([2, 2, 4], [2, 2, 4]), ([1, 1, 3], [2, 2, 4]))
    assert better.mean == pytest.approx(1 - 5 / 8) and 0 < better.low <= better.mean <= better.high
    assert math.isnan(paired_ratio_difference(([0], [0]), ([1], [1])).mean)


# ---- the command --------------------------------------------------------------------------------
def run_caller(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "madiao_mao.training.mao.caller", *args],
        capture_output=True, text=True, timeout=timeout, cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip


def test_the_fit_command_on_a_tiny_budget_writes_a_caller_that_plays(tmp_path):
    out = tmp_path / "caller.json"
    result = run_caller("fit", "--episodes", "4", "--seed", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    model = CallerModel.load(out)
    assert model.provenance["command"].endswith(f"fit --episodes 4 --seed 2 --out {out}")
    assert model.provenance["fit episodes"] == 3 and f"wrote {out}" in result.stdout
    assert set(model.provenance["validation (correct, calls) by table"]) == {"one kind", "policing"}
    env = raw_env(4, calls="players")
    assert make_agent(f"caller:{out}", "mao", env=env).model.threshold == model.threshold


@pytest.mark.parametrize(
    "args, message",
    [
        (["fit", "--episodes", "0", "--out", "x.json"], "expected a positive integer"),
        (["fit", "--episodes", "3", "--out", "x.json"], "--episodes: at least 4"),
        (["fit", "--episodes", "4", "--out", "caller.txt"], "a caller file ends in .json"),
        (["fit", "--episodes", "4"], "Missing from python -m madiao_mao.training.mao.caller fit: --out FILE"),
        (["evaluate", "--model", "missing.json"], "no caller model at missing.json"),
        (["evaluate", "--episodes", "x"], "--episodes: invalid literal for int()"),
        (["train"], "Unrecognized options: train"),
    ],
)
def test_the_command_refuses_bad_input_in_one_line(args, message, tmp_path):
    result = run_caller(*args)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (REPO / "x.json").exists() and not (REPO / "caller.txt").exists()


def test_the_evaluation_compares_the_callers_on_held_out_rules():
    from madiao_mao.training.mao.caller import evaluate_caller

    text = evaluate_caller(None, episodes=1, seed=1)
    assert text.count("| bayes |") == 2 and text.count("| caller |") == 2
    assert text.count("| caller - bayes |") == 2
    assert ", ".join(map(str, HELD_OUT_RULES)) in text
