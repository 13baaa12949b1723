"""Inference over the hidden cards in the search player (``madiao_mao.agents.madiao.search``):
weights that sum to one, resampling in proportion, the true deal favoured on constructed hands,
redeal offers that every imagined deal explains, and what a decision reports."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from madiao_env import cards, madiao_v0
from madiao_mao.agents.madiao import PRETRAINED_MODEL
from madiao_mao.agents.madiao.heuristic import RoleAwareHeuristicAgent
from madiao_mao.agents.madiao.search import (
    HEURISTIC_NOISE,
    MadiaoSearchAgent,
    MoveModel,
    SearchBudget,
    effective_sample_size,
    normalized_weights,
    parse_search_options,
    public_hand,
    sample_deal,
    systematic_resample,
)
from madiao_mao.agents.registry import make_agent
from madiao_mao.training.madiao.evaluation import table_obs_type
from tests.madiao.conftest import searched_decisions

log_weight_lists = st.lists(st.floats(min_value=-1e6, max_value=50.0), min_size=1, max_size=60)


@given(log_weight_lists)
@settings(max_examples=60, deadline=None)
def test_weights_sum_to_one_and_keep_the_order_of_the_log_weights(log_weights):
    weights = normalized_weights(np.asarray(log_weights))
    assert weights.sum() == pytest.approx(1.0)
    assert (weights >= 0).all()
    order = np.argsort(log_weights, kind="stable")
    assert (np.diff(weights[order]) >= -1e-12).all()
    assert 1.0 - 1e-9 <= effective_sample_size(weights) <= len(log_weights) + 1e-9


@given(log_weight_lists, st.integers(1, 64), st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_systematic_resampling_keeps_each_deal_in_proportion_to_its_weight(log_weights, n, seed):
    weights = normalized_weights(np.asarray(log_weights))
    picks = systematic_resample(weights, n, np.random.default_rng(seed))
    counts = np.bincount(picks, minlength=len(weights))
    assert counts.sum() == n
    # Systematic resampling keeps every deal within one copy of its expected count.
    assert (np.abs(counts - n * weights) < 1.0 + 1e-9).all()


def test_equal_weights_are_a_full_effective_sample_and_bad_weights_are_refused():
    assert effective_sample_size(np.full(8, 0.125)) == pytest.approx(8.0)
    assert effective_sample_size(np.array([1.0, 0.0, 0.0])) == pytest.approx(1.0)
    for bad in (np.array([]), np.array([0.0, 0.0]), np.array([1.0, np.nan]), np.array([-1.0, 2.0])):
        with pytest.raises(ValueError, match="systematic_resample"):
            systematic_resample(bad, 4, np.random.default_rng(0))


def test_inference_options_are_read_written_and_checked():
    budget = parse_search_options("samples=8,inference=heuristic,pool=3")
    assert budget == SearchBudget(samples=8, inference="heuristic", pool=3)
    assert parse_search_options(budget.label()) == budget
    assert "inference" not in SearchBudget().label()  # the search without inference reads as before
    with pytest.raises(ValueError, match="search option pool must be a positive integer, got 0"):
        parse_search_options("pool=0")
    with pytest.raises(ValueError, match="write inference=none"):
        parse_search_options("inference=random")


def test_a_missing_inference_model_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="search option inference: no saved model at"):
        make_agent(f"search:inference={tmp_path / 'missing.zip'}", env=madiao_v0.env())


def _hand_in_play(seed: int, moves: int, players):
    """A raw env after ``moves`` decisions of a seeded hand by ``players`` (by seat), in play, at
    the observation variant they read."""
    env = madiao_v0.raw_env(episode="hand", obs_type=table_obs_type(players))
    env.reset(seed=seed)
    for _ in range(moves):
        seat = env.possible_agents.index(env.agent_selection)
        seen = env.observe(env.agent_selection)
        env.step(players[seat].act(seen["observation"], seen["action_mask"]))
        if env.table()["phase"] != "play" and not env.table()["history"]:
            continue
    return env


def _true_deal(table: dict, seat: int):
    """The deal as ``sample_deal`` writes it: initial hands, stock, and the face-down sloughs of
    the other seats in the order they were made."""
    hands = [list(table["hands"][s]) for s in range(cards.N_SEATS)]
    sloughs = {s: [] for s in range(cards.N_SEATS) if s != seat}
    for move_seat, name, face_up, _trick in table["history"]:
        hands[move_seat].append(name)
        if not face_up and move_seat != seat:
            sloughs[move_seat].append(name)
    return hands, list(table["stock"]), sloughs


def _rank_of_true_deal(agent: MadiaoSearchAgent, env, n_others: int, seed: int) -> tuple[float, float]:
    """(share of consistent sampled deals the true deal's log-weight beats or ties, the true deal's
    log-weight minus the best other's)."""
    table = env.table()
    seat = table["to_act"]
    knowledge = public_hand(table, seat)
    passed = agent.redeal_passed(table)
    true = agent.imagine(knowledge, *_true_deal(table, seat), passed)
    assert true is not None, "the true deal must explain what happened"
    rng = np.random.default_rng(seed)
    others = []
    while len(others) < n_others:
        deal = agent.imagine(knowledge, *sample_deal(knowledge, rng), passed)
        if deal is not None:
            others.append(deal)
    log_weights = agent.log_weights([true, *others])
    return float((log_weights[0] >= log_weights[1:]).mean()), float(log_weights[0] - log_weights[1:].max())


@pytest.mark.parametrize("seed", [3, 8, 21])
def test_heuristic_inference_weighs_the_true_deal_at_least_as_high_as_any_other(seed):
    # Heuristic players make the heuristic's every move, so no deal can explain them better.
    heuristic = RoleAwareHeuristicAgent()
    env = _hand_in_play(seed, moves=14, players=[heuristic] * 4)
    agent = MadiaoSearchAgent(env, budget=SearchBudget(samples=4, inference="heuristic"), seed=0)
    share, margin = _rank_of_true_deal(agent, env, n_others=60, seed=seed)
    assert share == 1.0 and margin >= 0.0


@pytest.mark.slow
def test_model_inference_ranks_the_true_deal_above_most_sampled_deals():
    model = make_agent("model")
    shares = []
    for seed in (2, 5, 13, 17):
        env = _hand_in_play(seed, moves=18, players=[model] * 4)
        agent = MadiaoSearchAgent(env, budget=SearchBudget(samples=4, inference="model"), seed=0)
        shares.append(_rank_of_true_deal(agent, env, n_others=40, seed=seed)[0])
    # Uniformly placed, the true deal would beat half of them on average.
    assert np.mean(shares) > 0.8, shares


def test_every_imagined_deal_explains_who_passed_a_redeal_offer():
    # Random players pass some redeal offers; nobody asked means nobody holds five of a suit.
    players = [make_agent("random", seed=seat) for seat in range(cards.N_SEATS)]
    accepted, rejected, with_passes = 0, 0, 0
    for seed in range(60):
        env = _hand_in_play(seed, moves=6, players=players)
        table = env.table()
        seat = table["to_act"]
        agent = MadiaoSearchAgent(env, budget=SearchBudget(samples=2), seed=seed)
        passed = agent.redeal_passed(table)
        with_passes += bool(passed - {seat})
        knowledge = public_hand(table, seat)
        assert agent.imagine(knowledge, *_true_deal(table, seat), passed) is not None
        rng = np.random.default_rng(seed)
        for _ in range(10):
            hands, stock, sloughs = sample_deal(knowledge, rng)
            deal = agent.imagine(knowledge, hands, stock, sloughs, passed)
            eligible = {s for s in range(cards.N_SEATS) if max(_suit_counts(hands[s])) >= 5}
            if eligible != passed:
                assert deal is None
                rejected += 1
            accepted += deal is not None
    assert with_passes >= 2 and accepted >= 100 and rejected >= 20, (with_passes, accepted, rejected)


def _suit_counts(hand: list[str]) -> list[int]:
    return np.bincount([cards.CARD_SUIT[cards.card_id(name)] for name in hand], minlength=4).tolist()


def test_the_heuristic_move_model_gives_its_move_most_of_the_probability():
    env = _hand_in_play(4, moves=5, players=[RoleAwareHeuristicAgent()] * 4)
    seen = env.observe(env.agent_selection)
    observation, mask = seen["observation"][None], seen["action_mask"][None].astype(bool)
    model = MoveModel(RoleAwareHeuristicAgent())
    legal = np.flatnonzero(mask[0])
    chosen = RoleAwareHeuristicAgent().act(observation[0], mask[0])
    log_likelihood = np.array([model.log_likelihood(observation, mask, np.array([a]))[0] for a in legal])
    assert np.exp(log_likelihood).sum() == pytest.approx(1.0)
    assert np.exp(log_likelihood[legal == chosen][0]) == pytest.approx(
        1 - HEURISTIC_NOISE + HEURISTIC_NOISE / legal.size
    )
    illegal = int(np.flatnonzero(~mask[0])[0])
    with pytest.raises(ValueError, match="not legal"):
        model.log_likelihood(observation, mask, np.array([illegal]))


def test_a_policy_gives_log_probabilities_of_its_legal_moves_peaking_at_its_greedy_move():
    from madiao_mao.agents.learned import LearnedPolicyAgent

    policy = LearnedPolicyAgent(PRETRAINED_MODEL)
    env = madiao_v0.env(obs_type=table_obs_type([policy]))
    rows, masks = [], []
    for seed in range(6):
        env.reset(seed=seed)
        seen = env.observe(env.agent_selection)
        rows.append(seen["observation"])
        masks.append(seen["action_mask"].astype(bool))
    observations, masks = np.stack(rows), np.stack(masks)
    log_probs = policy.action_log_probs(observations, masks)
    assert np.exp(log_probs).sum(axis=1) == pytest.approx(np.ones(len(rows)))
    assert np.isneginf(log_probs[~masks]).all()
    assert (log_probs.argmax(axis=1) == policy.act_batch(observations, masks)).all()
    with pytest.raises(ValueError, match="at least one legal action"):
        policy.action_log_probs(observations[:1], np.zeros_like(masks[:1]))


def test_a_searched_decision_reports_what_it_weighed():
    heuristic = RoleAwareHeuristicAgent()
    env = madiao_v0.env(episode="hand")
    agent = make_agent("search:samples=4,inference=heuristic,pool=3", env=env, seed=2)
    searched = searched_decisions(env, agent, "player_1", heuristic, seed=6)
    assert searched
    decisions = [decision for decision, _ in searched]
    for decision, action in searched:
        assert decision.action == action
        assert len(decision.values) == len(decision.candidates) >= 2
        assert decision.deals_weighed == 12
        assert 1.0 - 1e-9 <= decision.effective_samples <= 12 + 1e-9
        assert 1 <= decision.distinct_deals <= 4
    summary = agent.inference_summary()
    assert summary["decisions"] == len(decisions)
    assert summary["effective_samples"] == pytest.approx(np.mean([d.effective_samples for d in decisions]))


@pytest.mark.parametrize(("seed", "moves"), [(1, 9), (12, 17), (30, 25)])
def test_the_batched_replay_agrees_with_replaying_each_deal_in_the_aec_env(seed, moves):
    from madiao_env.state import GameView, MadiaoState
    from madiao_mao.agents.madiao.search import sample_deals

    heuristic = RoleAwareHeuristicAgent()
    env = _hand_in_play(seed, moves=moves, players=[heuristic] * 4)
    table = env.table()
    seat = table["to_act"]
    knowledge = public_hand(table, seat)
    agent = MadiaoSearchAgent(env, budget=SearchBudget(samples=4, inference="heuristic"), seed=seed)
    passed = agent.redeal_passed(table)
    agent.rng = np.random.default_rng(7)
    drawn = sample_deals(knowledge, 48, np.random.default_rng(7))
    agent.rng = np.random.default_rng(7)
    batch = agent.imagine_batch(knowledge, 48, passed)
    one_by_one = []
    for k in range(48):
        named = [[cards.CARD_NAMES[c] for c in drawn[0][k, s]] for s in range(cards.N_SEATS)]
        stock_names = [cards.CARD_NAMES[c] for c in drawn[1][k]]
        hidden = [s for s, name, _ in knowledge.moves if name is None]
        sloughs = {s: [] for s in range(cards.N_SEATS) if s != seat}
        for s, card in zip(hidden, drawn[2][k].tolist(), strict=True):
            sloughs[s].append(cards.CARD_NAMES[card])
        deal = agent.imagine(knowledge, named, stock_names, sloughs, passed)
        if deal is not None:
            one_by_one.append(deal)
    assert len(batch) == len(one_by_one) >= 1
    for fast, reference in zip(batch, one_by_one, strict=True):
        assert fast.log_likelihood == pytest.approx(reference.log_likelihood)
        views = [GameView(MadiaoState(*deal.snapshot()["arrays"])) for deal in (fast, reference)]
        for view in views[1:]:
            assert [view.hand(s) for s in range(4)] == [views[0].hand(s) for s in range(4)]
            assert view.plays() == views[0].plays() and view.to_act == views[0].to_act == seat


def test_tempering_flattens_the_weights_and_sweeps_keep_every_deal_consistent():
    heuristic = RoleAwareHeuristicAgent()
    env = _hand_in_play(8, moves=14, players=[heuristic] * 4)
    table = env.table()
    seat = table["to_act"]
    knowledge = public_hand(table, seat)
    effective = {}
    for temper in (1.0, 0.2):
        agent = MadiaoSearchAgent(
            env, budget=SearchBudget(samples=8, inference="heuristic", temper=temper), seed=1
        )
        deals, weights, effective[temper] = agent.posterior(knowledge, agent.redeal_passed(table))
        assert weights.sum() == pytest.approx(1.0) and len(deals) == len(weights) == 32
    assert effective[0.2] > effective[1.0]
    agent = MadiaoSearchAgent(env, budget=SearchBudget(samples=8, inference="heuristic", sweeps=3), seed=1)
    deals, weights, _ = agent.posterior(knowledge, agent.redeal_passed(table))
    np.testing.assert_allclose(weights, 1.0 / len(deals))
    for deal in deals:  # every deal after the Metropolis steps still explains the hand
        snapshot = deal.snapshot()
        assert snapshot["agent_selection"] == env.agent_selection
    true = agent.imagine(knowledge, *_true_deal(table, seat), agent.redeal_passed(table))
    assert min(deal.log_likelihood for deal in deals) <= true.log_likelihood


def test_temper_and_sweeps_options_are_checked():
    assert parse_search_options("inference=model,sweeps=0,temper=0.5") == SearchBudget(
        inference="model", sweeps=0, temper=0.5
    )
    for text, message in (
        ("temper=0", r"temper must be a number in \(0, 1\]"),
        ("temper=1.5", r"temper must be a number in \(0, 1\]"),
        ("temper=hot", r"temper must be a number in \(0, 1\]"),
        ("sweeps=-1", "sweeps must be an integer >= 0"),
        ("sweeps=x", "sweeps must be an integer >= 0"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_search_options(text)


def test_the_inference_quality_report_scores_both_models_on_the_same_decisions():
    from madiao_mao.training.madiao.inference_quality import location_probabilities, measure, quality_markdown

    quality = measure("samples=4,inference=heuristic,temper=0.5", "heuristic", hands=2, seed=3)
    assert len(quality.uniform_loss) == len(quality.inferred_loss) == len(quality.hand) >= 10
    assert np.isfinite(quality.gain().mean)
    assert sum(count for _, count, _, _ in quality.calibration()) == len(quality.predicted)
    report = quality_markdown(quality, "samples=4,inference=heuristic,temper=0.5", "heuristic")
    assert "gain (uniform - inferred)" in report and "Calibration" in report
    # Two deals, one card: half the weight on each place, mixed with 1% of a uniform guess over
    # the five places (four hands and the stock).
    dealt_to = np.zeros((2, cards.N_CARDS), dtype=np.int8)
    dealt_to[1, 0] = 3
    probabilities = location_probabilities(dealt_to, np.array([0.5, 0.5]))
    half, floor = 0.5 * 0.99 + 0.002, 0.002
    assert probabilities[0] == pytest.approx([half, floor, floor, half, floor])


def test_the_inference_quality_command_wants_something_to_compare():
    from madiao_mao.training.madiao.inference_quality import main

    assert main(["--search", "samples=4", "--hands", "1"]) == 2


def test_a_table_dealt_from_a_given_first_seat_is_imagined_one_deal_at_a_time():
    # The batched env deals from the seat the cut card names; a table reset with another "first"
    # seat is replayed in the AEC env instead, and its deals must still explain the hand.
    from madiao_env import core

    heuristic = RoleAwareHeuristicAgent()
    dealt = _hand_in_play(5, moves=0, players=[heuristic] * 4).table()
    banker, upcard = dealt["banker"], cards.card_id(dealt["stock"][0])
    first = (core.first_seat_from_cut(upcard, banker) + 1) % cards.N_SEATS
    env = madiao_v0.raw_env(episode="hand")
    env.reset(
        seed=5, options={"hands": dealt["hands"], "stock": dealt["stock"], "banker": banker, "first": first}
    )
    for _ in range(10):
        seen = env.observe(env.agent_selection)
        env.step(heuristic.act(seen["observation"], seen["action_mask"]))
    table = env.table()
    assert table["phase"] == "play" and table["first"] == first
    agent = MadiaoSearchAgent(env, budget=SearchBudget(samples=4, inference="heuristic"), seed=2)
    knowledge = public_hand(table, table["to_act"])
    deals = agent.imagine_batch(knowledge, 24, agent.redeal_passed(table))
    assert deals
    for deal in deals:
        assert deal.snapshot()["agent_selection"] == env.agent_selection
        assert np.isfinite(deal.log_likelihood) and deal.log_likelihood <= 0.0
