"""The batched belief path (``BeliefTracker.inputs`` over many rows: observations parsed for all rows
at once, ``parse_events``, the cached ``plays_validity``) gives bit for bit the belief inputs and
posteriors of the readable one-row path (``parse_observation``, ``parse_event``,
``plays_validity_reference``) over many decisions of real games: training and held-out rules,
several rules at once, the Mao Master's and the players' calls."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from madiao_mao.agents.mao import beliefs
from madiao_mao.agents.mao.belief_inputs import BeliefTracker
from madiao_mao.agents.mao.belief_speed import one_row_path, record
from mao_env import cards
from mao_env import rules as library

ALL_RULES = tuple(range(library.N_RULES))


def decision_kind(mask: np.ndarray) -> str:
    """The decision kinds ``belief_inputs`` tells apart."""
    if mask[cards.CHOOSE_RULE_0 :].any():
        return "choose"
    if mask[cards.NO_CALL]:
        return "call"
    if mask[cards.DRAW]:
        return "start"
    return "speak"


def replay(batches, options: dict) -> list[tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]]:
    """Each batch's belief inputs, and its rows' posterior weights and hypotheses after them."""
    tracker = BeliefTracker(options)
    out = []
    for observations, masks, keys, actions, forget in batches:
        posteriors = tracker.seat_posteriors(masks.shape[0], keys)
        inputs = tracker.inputs(observations, masks, posteriors)
        out.append(
            (inputs, [p.weights.copy() for p in posteriors], [p.hypotheses.copy() for p in posteriors])
        )
        tracker.note_actions(posteriors, actions)
        tracker.forget(forget)
    return out


TABLES = [
    # (rule pool, rules drawn per game, table options, games, steps, least decisions of each kind)
    pytest.param(library.TRAINING_RULES, 1, {}, 16, 100, 300, id="training-rules"),
    pytest.param(library.HELD_OUT_RULES, 1, {}, 16, 100, 300, id="held-out-rules"),
    pytest.param(library.TRAINING_RULES, 1, {"calls": "players"}, 16, 100, 300, id="players-calls"),
    # Several rounds: round wins, rule choices, rules other seats add, the re-deal.
    pytest.param(library.TRAINING_RULES, 1, {"num_rounds": 2}, 8, 250, 300, id="several-rounds"),
    pytest.param(
        library.HELD_OUT_RULES, 1, {"num_rounds": 2, "rounds": "cambridge"}, 8, 250, 300, id="cambridge"
    ),
    # Two unknown rules: about a thousand hypotheses, so fewer decisions.
    pytest.param(ALL_RULES, 2, {}, 6, 50, 100, id="two-rules-at-once"),
]


@pytest.mark.parametrize(("rule_pool", "draws", "table", "games", "steps", "least"), TABLES)
def test_the_batched_belief_path_is_the_one_row_path(rule_pool, draws, table, games, steps, least):
    batches, options = record(games, steps, seed=11, rule_pool=rule_pool, draws=draws, **table)
    batched = replay(batches, options)
    with one_row_path():
        one_row = replay(batches, options)
    kinds = Counter()
    for (_observations, masks, *_rest), (inputs, weights, hypotheses), reference in zip(
        batches, batched, one_row, strict=True
    ):
        ref_inputs, ref_weights, ref_hypotheses = reference
        np.testing.assert_array_equal(inputs, ref_inputs)
        for mine, theirs in zip(weights, ref_weights, strict=True):
            np.testing.assert_array_equal(mine, theirs)
        for mine, theirs in zip(hypotheses, ref_hypotheses, strict=True):
            np.testing.assert_array_equal(mine, theirs)
        kinds.update(decision_kind(mask) for mask in masks if mask.any())
    assert kinds["start"] >= least and kinds["speak"] >= least, kinds
    if table.get("calls") == "players":
        assert kinds["call"] >= least, kinds
    if table.get("num_rounds", 1) > 1:
        assert kinds["choose"] >= 5, kinds
    # The posteriors learned something: not every belief is the uniform prior.
    assert any(np.ptp(w) > 0 for _inputs, weights, _h in batched for w in weights if w.size > 1)


def test_the_batched_parsers_and_validity_are_the_one_row_ones():
    batches, _options = record(8, 250, seed=3, rule_pool=ALL_RULES, draws=1, num_rounds=2)
    round_wins = 0
    for observations, masks, *_rest in batches:
        rows = np.flatnonzero(masks.any(axis=1))
        for row, view in zip(rows, beliefs.parse_observations(observations, rows), strict=True):
            reference = beliefs.parse_observation(observations[row])
            for name in vars(reference):
                mine, theirs = getattr(view, name), getattr(reference, name)
                if name == "event_rows":
                    assert len(mine) == len(theirs)
                    for a, b in zip(mine, theirs, strict=True):
                        np.testing.assert_array_equal(a, b)
                    assert beliefs.parse_events(mine) == [beliefs.parse_event(r) for r in theirs]
                    round_wins += sum(event.won for event in beliefs.parse_events(mine))
                elif isinstance(theirs, np.ndarray):
                    np.testing.assert_array_equal(mine, theirs)
                    assert mine.dtype == theirs.dtype
                else:
                    assert mine == theirs and type(mine) is type(theirs), name
    assert round_wins > 0  # every field of an event is seen set
    rng = np.random.default_rng(0)
    hypotheses = (rng.random((400, library.N_RULES)) < 0.08).astype(np.float32)
    for _ in range(300):
        played = rng.choice(cards.N_CARD_TYPES, size=int(rng.integers(1, 9)), replace=False)
        context = (int(rng.integers(cards.N_CARD_TYPES)), int(rng.integers(4)), int(rng.integers(2)))
        np.testing.assert_array_equal(
            beliefs.plays_validity(hypotheses, played, *context),
            beliefs.plays_validity_reference(hypotheses, played, *context),
        )
