"""Duplicate matches played in batches (``MadiaoVectorEnv.reset_deals`` and the batched path of
``madiao_mao.training.madiao.evaluation.duplicate_match``) against the one-hand-at-a-time AEC loop.

The AEC loop is the reference: for agents that do not sample, the batched match must give the same
score, the same banker flag and the same deal for every hand, under every rule option.
"""

from __future__ import annotations

import numpy as np
import pytest

from madiao_env import cards, madiao_v0
from madiao_env.vector import MadiaoVectorEnv
from madiao_mao.agents.base import Agent, RandomAgent
from madiao_mao.agents.madiao.heuristic import GreedyHeuristicAgent, RoleAwareHeuristicAgent
from madiao_mao.training.madiao.evaluation import duplicate_match, make_deals
from madiao_mao.training.madiao.matches import make_env

OPTION_SETS = [
    {},
    {"obs_type": "history"},
    {"max_redeals": 0},
    {"face_up_discard": True},
]
#: The scripted players read the summary layout, so their matches use the others.
MATCH_OPTION_SETS = [options for options in OPTION_SETS if options.get("obs_type") != "history"]


def deal_arrays(deals):
    decks = np.array([[cards.card_id(name) for name in deal.deck] for deal in deals], dtype=np.int8)
    return decks, np.array([d.banker for d in deals]), np.array([d.env_seed for d in deals])


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(o) or "defaults")
def test_reset_deals_is_the_aec_reset_with_deck_banker_and_seed(options):
    deals = make_deals(12, seed=3)
    decks, bankers, seeds = deal_arrays(deals)
    venv = MadiaoVectorEnv(len(deals), **options)
    step = venv.reset_deals(decks, bankers, seeds)
    for game, deal in enumerate(deals):
        aec = madiao_v0.raw_env(**options)
        aec.reset(seed=deal.env_seed, options=deal.options())
        seat = int(aec.agent_selection.split("_")[1])
        observed = aec.observe(aec.agent_selection)
        assert step.to_act[game] == seat
        np.testing.assert_array_equal(step.observation[game], observed["observation"])
        np.testing.assert_array_equal(step.action_mask[game], observed["action_mask"].astype(bool))
        assert venv.banker()[game] == aec.table()["banker"] == deal.banker
        for vector_field, aec_field in zip(
            venv.get_game_state(game)["arrays"], aec.get_state()["arrays"], strict=True
        ):
            np.testing.assert_array_equal(vector_field, aec_field)


def test_reset_deals_plays_on_like_the_aec_env_through_redeals():
    """The seed fixes each deal's random stream: whole random games (redeals included, which
    draw from it) stay equal to the AEC env's, step by step."""
    deals = make_deals(16, seed=8)
    decks, bankers, seeds = deal_arrays(deals)
    venv = MadiaoVectorEnv(len(deals))
    step = venv.reset_deals(decks, bankers, seeds)
    mirrors = []
    for deal in deals:
        aec = madiao_v0.raw_env()
        aec.reset(seed=deal.env_seed, options=deal.options())
        mirrors.append(aec)
    rng = np.random.default_rng(0)
    live = np.ones(len(deals), dtype=bool)
    redeals = 0
    while live.any():
        actions = np.full(len(deals), -1, dtype=np.int64)
        for game in np.flatnonzero(live):
            actions[game] = rng.choice(np.flatnonzero(step.action_mask[game]))
        redeals += int((actions == cards.ACTION_REDEAL).sum())
        step = venv.step(actions)
        for game in np.flatnonzero(live):
            aec = mirrors[game]
            aec.step(int(actions[game]))
            if step.terminated[game]:
                assert all(aec.terminations.values())
                payoffs = [aec._cumulative_rewards[agent] for agent in aec.possible_agents]
                np.testing.assert_allclose(step.final_payoffs[game], payoffs)
                live[game] = False
            else:
                observed = aec.observe(aec.agent_selection)
                np.testing.assert_array_equal(step.observation[game], observed["observation"])
    assert redeals > 0  # the deals' own random streams were used


@pytest.mark.parametrize(
    ("decks", "bankers", "seeds", "message"),
    [
        ("duplicate", None, None, "deck of game 1 is not a permutation"),
        ("short", None, None, "decks must be an integer array of shape"),
        (None, [0, 4], None, "banker 4 of game 1 is out of range"),
        (None, [0, -1], None, "banker -1 of game 1"),
        (None, None, [1, -5], "seed -5 of game 1 is out of range"),
        (None, [0.0, 1.0], None, "bankers must be an integer array"),
    ],
)
def test_reset_deals_refuses_bad_deals_and_changes_nothing(decks, bankers, seeds, message):
    deals = make_deals(2, seed=1)
    good_decks, good_bankers, good_seeds = deal_arrays(deals)
    if decks == "duplicate":
        decks = good_decks.copy()
        decks[1, 0] = decks[1, 1]
    elif decks == "short":
        decks = good_decks[:, :39]
    venv = MadiaoVectorEnv(2, seed=0)
    before = venv.reset()
    seeds_before = venv.game_seeds.copy()
    with pytest.raises(ValueError, match=message):
        venv.reset_deals(
            good_decks if decks is None else decks,
            good_bankers if bankers is None else np.array(bankers),
            good_seeds if seeds is None else np.array(seeds),
        )
    after = venv.step(np.full(2, -1, dtype=np.int64))
    np.testing.assert_array_equal(before.observation, after.observation)
    np.testing.assert_array_equal(venv.game_seeds, seeds_before)


def aec_match(agent, opponent, deals, **options):
    """The reference: the one-at-a-time loop (recording every hand forces it)."""
    return duplicate_match(agent, opponent, deals, env_kwargs=options, on_hand=lambda hand: None)


@pytest.mark.parametrize("options", MATCH_OPTION_SETS, ids=lambda o: ",".join(o) or "defaults")
def test_batched_match_is_the_aec_match_for_deterministic_agents(options):
    deals = make_deals(30, seed=4)
    for agent, opponent in (
        (RoleAwareHeuristicAgent(), GreedyHeuristicAgent()),
        (GreedyHeuristicAgent(), RoleAwareHeuristicAgent(cooperative=True)),
    ):
        batched = duplicate_match(agent, opponent, deals, env_kwargs=options)
        reference = aec_match(agent, opponent, deals, **options)
        assert batched.score == reference.score
        assert batched.banker == reference.banker
        assert batched.deal_index == reference.deal_index
        assert sum(batched.banker) == len(deals)  # one banker rotation per deal


def test_batched_match_splits_into_batches_like_one(monkeypatch):
    """Deals spread over several vector envs give the same hands in the same order."""
    import madiao_mao.training.madiao.evaluation as evaluation

    deals = make_deals(9, seed=6)
    whole = duplicate_match(RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), deals)
    monkeypatch.setattr(evaluation, "HANDS_PER_BATCH", 5)
    pieces = duplicate_match(RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), deals)
    assert pieces.score == whole.score and pieces.banker == whole.banker
    assert pieces.deal_index == whole.deal_index == [d for d in range(9) for _ in range(4)]


def test_batched_match_with_a_stake_scores_whole_stakes():
    deals = make_deals(10, seed=2)
    plain = duplicate_match(RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), deals)
    staked = duplicate_match(
        RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), deals, env_kwargs={"stake": 2.5}
    )
    assert staked.score == plain.score


def test_sampling_agents_are_reproducible_in_batches():
    deals = make_deals(20, seed=9)
    first = duplicate_match(RandomAgent(seed=1), RoleAwareHeuristicAgent(), deals)
    second = duplicate_match(RandomAgent(seed=1), RoleAwareHeuristicAgent(), deals)
    other = duplicate_match(RandomAgent(seed=2), RoleAwareHeuristicAgent(), deals)
    assert first.score == second.score
    assert first.score != other.score
    assert first.overall().mean < 0  # random play loses to the heuristic


class CountingAgent(Agent):
    """A greedy heuristic that counts its one-at-a-time decisions and keeps a memory flag off:
    an agent that does not declare ``decides_from_observation`` is never batched."""

    name = "counting"

    def __init__(self) -> None:
        self.inner = GreedyHeuristicAgent()
        self.decisions = 0

    def act(self, observation, action_mask) -> int:
        self.decisions += 1
        return self.inner.act(observation, action_mask)


def test_agents_that_may_remember_play_one_hand_at_a_time():
    deals = make_deals(3, seed=0)
    agent = CountingAgent()
    result = duplicate_match(agent, RoleAwareHeuristicAgent(), deals)
    assert agent.decisions > 0
    reference = duplicate_match(GreedyHeuristicAgent(), RoleAwareHeuristicAgent(), deals)
    assert result.score == reference.score  # the same games, played the slow way


def test_recorded_matches_play_one_hand_at_a_time():
    deals = make_deals(2, seed=0)
    hands = []
    result = duplicate_match(RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), deals, on_hand=hands.append)
    assert len(hands) == 8 and all(hand.events for hand in hands)
    assert result.score == duplicate_match(RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), deals).score


def test_a_partial_record_plays_only_its_deals_one_hand_at_a_time(monkeypatch):
    """``record_hands=6``: six hands recorded (the first two deals one at a time), the other deals
    in batches, and the same scores as the whole match recorded."""
    import madiao_mao.training.madiao.evaluation as evaluation

    deals = make_deals(7, seed=5)
    reference = aec_match(RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), deals)
    batched_deals = []
    play_in_batches = evaluation._play_in_batches

    def spy(agent, opponent, deals, *args, **kwargs):
        batched_deals.extend(deals)
        return play_in_batches(agent, opponent, deals, *args, **kwargs)

    monkeypatch.setattr(evaluation, "_play_in_batches", spy)
    hands = []
    result = duplicate_match(
        RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), deals, on_hand=hands.append, record_hands=6
    )
    assert len(hands) == 6 and all(hand.events for hand in hands)
    assert batched_deals == deals[2:]
    assert result.score == reference.score and result.deal_index == reference.deal_index
    assert result.banker == reference.banker
    with pytest.raises(ValueError, match="record_hands must be a non-negative integer, got -1"):
        duplicate_match(
            RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), deals, on_hand=hands.append, record_hands=-1
        )


def test_a_tournament_records_its_first_hands_and_batches_the_rest(monkeypatch):
    import madiao_mao.training.madiao.evaluation as evaluation

    agents = {"heuristic": RoleAwareHeuristicAgent(), "greedy": GreedyHeuristicAgent()}
    played_one_at_a_time = []
    play_episode = evaluation.play_episode

    def spy(*args, **kwargs):
        played_one_at_a_time.append(kwargs["record"])
        return play_episode(*args, **kwargs)

    monkeypatch.setattr(evaluation, "play_episode", spy)
    hands = []
    report = evaluation.run_tournament(agents, n_deals=5, seed=2, on_hand=hands.append, record_hands=10)
    assert len(hands) == 10
    # All from the first pairing: the heuristic in one seat, the greedy player in three.
    assert all(sorted(hand.seats) == ["greedy"] * 3 + ["heuristic"] for hand in hands)
    # The first pairing's first three deals (12 hands, 10 recorded) went one at a time; nothing else.
    assert played_one_at_a_time == [True] * 10 + [False] * 2
    with pytest.raises(ValueError, match=r"record_hands must be a non-negative integer, got 2\.5"):
        evaluation.run_tournament(agents, n_deals=5, on_hand=hands.append, record_hands=2.5)
    assert len(hands) == 10  # refused before any hand
    unrecorded = evaluation.run_tournament(agents, n_deals=5, seed=2)
    assert [pair.score for pair in report.pairs] == [pair.score for pair in unrecorded.pairs]


def test_learned_policy_batched_equals_aec(tmp_path):
    from madiao_mao.agents.learned import pretrained_agent

    deals = make_deals(8, seed=12)
    model = pretrained_agent("madiao")
    heuristic = RoleAwareHeuristicAgent()
    batched = duplicate_match(model, heuristic, deals)
    reference = aec_match(model, heuristic, deals)
    assert batched.score == reference.score and batched.banker == reference.banker


def test_scripted_players_refuse_history_observations():
    """They would misread them (and could declare redeals forever): one clear error instead."""
    deals = make_deals(1, 0)
    with pytest.raises(ValueError, match=r"reads summary observations \(484 entries, or 968 with the record"):
        duplicate_match(
            RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), deals, env_kwargs={"obs_type": "history"}
        )


def test_scripted_players_play_a_record_observation_as_its_summary():
    """A record observation begins with the summary, which is all they read: the same games."""
    deals = make_deals(12, 5)
    results = [
        duplicate_match(
            RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), deals, env_kwargs={"obs_type": obs_type}
        )
        for obs_type in ("summary", "record")
    ]
    assert results[0].score == results[1].score and results[0].banker == results[1].banker


class DuckTypedPlayer:
    """Not an ``Agent`` subclass: only ``act`` and ``name`` (what the one-at-a-time loop needs)."""

    name = "duck"

    def __init__(self) -> None:
        self.inner = GreedyHeuristicAgent()

    def reset(self) -> None:
        pass

    def act(self, observation, action_mask) -> int:
        return self.inner.act(observation, action_mask)


def test_duck_typed_players_play_one_hand_at_a_time():
    deals = make_deals(2, seed=3)
    result = duplicate_match(DuckTypedPlayer(), RoleAwareHeuristicAgent(), deals)
    assert result.score == duplicate_match(GreedyHeuristicAgent(), RoleAwareHeuristicAgent(), deals).score


def test_a_tournament_env_serves_only_the_pairings_that_need_it():
    """With an env given (as for the search player), pairings of agents that decide from their
    observation are still batched, under its options; the others are played in that env, one
    hand at a time."""
    from madiao_mao.training.madiao.evaluation import run_tournament

    env = make_env(stake=1.0, max_redeals=1)
    resets = []
    original_reset = env.reset

    def counting_reset(*args, **kwargs):
        resets.append(1)
        return original_reset(*args, **kwargs)

    env.reset = counting_reset
    agents = {
        "heuristic": RoleAwareHeuristicAgent(),
        "greedy": GreedyHeuristicAgent(),
        "counting": CountingAgent(),
    }
    report = run_tournament(agents, n_deals=3, seed=5, env=env)
    assert len(resets) == 4 * 3 * 4  # the four pairings with the counting agent, 12 hands each
    batched = {(p.agent, p.opponent): p for p in report.pairs}
    reference = duplicate_match(
        RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), make_deals(3, 5), env_kwargs={"max_redeals": 1}
    )
    assert batched[("heuristic", "greedy")].score == reference.score
    slow = aec_match(RoleAwareHeuristicAgent(), GreedyHeuristicAgent(), make_deals(3, 5), max_redeals=1)
    assert reference.score == slow.score
