"""The learned card-location model: its data's labels, its fit, saving and loading, the
capacity-respecting sampler, and the search player drawing deals from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from madiao_env import cards, madiao_v0
from madiao_mao.agents.madiao.card_locations import (
    HISTORY_SIZE,
    N_LOCATIONS,
    PRETRAINED_CARD_LOCATIONS,
    STOCK_LOCATION,
    CardLocationModel,
    sample_places,
)
from madiao_mao.agents.registry import make_agent
from madiao_mao.training.madiao.card_locations import (
    SEEN,
    capacity_prior_loss,
    collect,
    fit,
    held_out_decisions,
    held_out_loss,
)
from tests.madiao.conftest import searched_decisions


@pytest.fixture(scope="module")
def heuristic_data():
    return collect("heuristic", 3000, seed=4, n_envs=32)


def test_every_decision_labels_exactly_the_cards_the_seat_has_not_seen(heuristic_data):
    locations = heuristic_data.locations
    assert heuristic_data.observations.shape == (3000, HISTORY_SIZE)
    unseen = locations != SEEN
    # The stock holds 7 unseen cards (the upcard is seen); the other seats' unseen cards are their
    # 8 less the cards they played face up.
    assert ((locations == STOCK_LOCATION).sum(axis=1) == cards.STOCK_SIZE - 1).all()
    per_seat = np.stack([(locations == place).sum(axis=1) for place in range(3)], axis=1)
    assert (per_seat <= cards.HAND_SIZE).all()
    assert (unseen.sum(axis=1) == per_seat.sum(axis=1) + cards.STOCK_SIZE - 1).all()
    # Early in a hand the seat has seen its 8 cards and the upcard, so 31 are unseen.
    assert unseen.sum(axis=1).max() == cards.N_CARDS - cards.HAND_SIZE - 1


def test_a_fit_beats_the_capacity_prior_on_held_out_hands_and_round_trips(heuristic_data, tmp_path):
    model, report = fit(heuristic_data, epochs=4, seed=0, hidden=64)
    assert np.isfinite(report["model_log_loss"]) and report["held_out_decisions"] > 0
    assert report["capacity_prior_log_loss"] == pytest.approx(
        capacity_prior_loss(heuristic_data.locations[held_out_decisions(heuristic_data, seed=0)]), rel=1e-9
    )
    saved = CardLocationModel.load(model.save(tmp_path / "clm.npz"))
    rows = np.arange(50)
    np.testing.assert_allclose(
        saved.probabilities(heuristic_data.observations[rows]),
        model.probabilities(heuristic_data.observations[rows]),
    )
    assert held_out_loss(saved, heuristic_data, rows) == pytest.approx(
        held_out_loss(model, heuristic_data, rows)
    )


def test_the_shipped_model_places_cards_better_than_the_capacity_prior(heuristic_data):
    model = CardLocationModel.load(PRETRAINED_CARD_LOCATIONS)
    rows = np.arange(heuristic_data.locations.shape[0])
    probabilities = model.probabilities(heuristic_data.observations[:10])
    np.testing.assert_allclose(probabilities.sum(axis=2), 1.0)
    assert held_out_loss(model, heuristic_data, rows) < capacity_prior_loss(heuristic_data.locations) - 0.02


def test_bad_model_files_and_inputs_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no card-location model at"):
        CardLocationModel.load(tmp_path / "missing.npz")
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match="is not a card-location model"):
        CardLocationModel.load(tmp_path / "other.npz")
    with pytest.raises(ValueError, match="history observations of length"):
        CardLocationModel([(np.zeros((5, 160)), np.zeros(160))])
    model = CardLocationModel([(np.zeros((HISTORY_SIZE, cards.N_CARDS * N_LOCATIONS)), np.zeros(160))])
    with pytest.raises(ValueError, match="expected history observations"):
        model.probabilities(np.zeros((2, 10)))


def test_places_fill_every_location_to_its_room_and_follow_the_probabilities():
    rng = np.random.default_rng(0)
    probabilities = np.full((12, 4), 0.25)
    probabilities[0] = [0.97, 0.01, 0.01, 0.01]  # card 0 is almost surely at location 0
    room = np.array([3, 3, 2, 4])
    places = sample_places(probabilities, room, 2000, rng)
    counts = np.stack([(places == place).sum(axis=1) for place in range(4)], axis=1)
    assert (counts == room).all()
    assert (places[:, 0] == 0).mean() > 0.6  # a uniform card is there a quarter of the time
    with pytest.raises(ValueError, match="hold 11 cards, but 12 are to be placed"):
        sample_places(probabilities, np.array([3, 3, 2, 3]), 5, rng)


def test_the_search_draws_consistent_deals_from_the_learned_sampler():
    env = madiao_v0.env(episode="hand")
    agent = make_agent("search:samples=6,sampler=learned", env=env, seed=3)
    heuristic = make_agent("heuristic")
    assert len(searched_decisions(env, agent, "player_2", heuristic, seed=12)) >= 4
    with pytest.raises(FileNotFoundError, match="search option sampler: no card-location model"):
        make_agent("search:sampler=missing.npz", env=env)


def test_the_fit_command_refuses_a_bad_destination_in_one_line(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "madiao_mao.training.madiao.card_locations",
            "fit",
            "--out",
            str(tmp_path / "m.zip"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 2
    assert "--out must name a .npz file" in result.stderr and "Traceback" not in result.stderr
