"""The checked batched-env base (cardgame_core.vector) on the toy countdown game."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

from cardgame_core.aec import IllegalActionError
from cardgame_core.vector import NO_ACTION, VectorStep

_spec = importlib.util.spec_from_file_location("toy_game", pathlib.Path(__file__).with_name("toy_game.py"))
toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(toy)


def test_reset_returns_documented_shapes_and_dtypes():
    env = toy.CountdownVectorEnv(5, seed=0)
    step = env.reset()
    assert isinstance(step, VectorStep)
    assert step.observation.shape == (5, toy.OBS_DIM) and step.observation.dtype == np.float32
    assert step.action_mask.shape == (5, toy.N_ACTIONS) and step.action_mask.dtype == np.bool_
    assert step.to_act.dtype == np.int64
    assert step.rewards.shape == (5, toy.N_SEATS) and step.rewards.dtype == np.float32
    assert step.final_observation.shape == (5, toy.N_SEATS, toy.OBS_DIM)
    assert not step.terminated.any() and not step.truncated.any()


def test_same_seed_same_games_and_reseeding_repeats():
    first = toy.CountdownVectorEnv(8, seed=3).reset()
    second = toy.CountdownVectorEnv(8, seed=3).reset()
    np.testing.assert_array_equal(first.to_act, second.to_act)
    env = toy.CountdownVectorEnv(8, seed=11)
    again = env.reset(seed=3)
    np.testing.assert_array_equal(first.to_act, again.to_act)


@pytest.mark.parametrize(
    ("actions", "error", "message"),
    [
        ([0, 0, 0], TypeError, "numpy array"),
        (np.zeros(3, dtype=np.float64), TypeError, "integer dtype"),
        (np.zeros(2, dtype=np.int64), ValueError, r"shape \(3,\)"),
        (np.array([0, 5, 0]), IllegalActionError, "game 1: action 5 is out of range"),
        (np.array([0, 0, -2]), IllegalActionError, "game 2: action -2 is out of range"),
    ],
)
def test_bad_actions_raise_errors_that_name_the_problem(actions, error, message):
    env = toy.CountdownVectorEnv(3, seed=0)
    env.reset()
    with pytest.raises(error, match=message):
        env.step(actions)


def test_action_outside_the_mask_names_game_action_and_legal_set():
    env = toy.CountdownVectorEnv(2, seed=0)
    env.reset()
    # Bring game 1 down to a counter of 1: only "take 1" (action 0) stays legal.
    env.step(np.array([NO_ACTION, 2]))
    env.step(np.array([NO_ACTION, 2]))
    step = env.step(np.array([NO_ACTION, NO_ACTION]))
    assert step.action_mask[1].tolist() == [True, False, False]
    with pytest.raises(
        IllegalActionError, match=r"game 1: action 1 \(1\) is not legal .* legal actions: 0 \(0\)"
    ):
        env.step(np.array([0, 1]))


def test_skipped_games_are_untouched_and_finished_games_auto_reset():
    env = toy.CountdownVectorEnv(2, seed=0)
    start = env.reset()
    step = env.step(np.array([2, NO_ACTION]))
    np.testing.assert_array_equal(step.observation[1], start.observation[1])
    step = env.step(np.array([2, NO_ACTION]))
    # counter 7 -> 4 -> 1; the third move takes the last unit and ends game 0.
    mover = int(step.to_act[0])
    step = env.step(np.array([0, NO_ACTION]))
    assert step.terminated.tolist() == [True, False]
    expected = np.full(3, -1.0, dtype=np.float32)
    expected[mover] = 2.0
    np.testing.assert_array_equal(step.rewards[0], expected)
    np.testing.assert_array_equal(step.final_payoffs[0], expected)
    assert step.observation[0, toy.START] == 1.0  # the new game's counter is back at START
    assert not step.rewards[1].any()


def test_copy_false_returns_the_env_buffers_and_copy_true_does_not():
    shared = toy.CountdownVectorEnv(2, seed=0, copy=False)
    first = shared.reset()
    second = shared.step(np.array([0, 0]))
    assert first.observation is second.observation
    copied = toy.CountdownVectorEnv(2, seed=0)
    assert copied.reset().observation is not copied.step(np.array([0, 0])).observation


def test_observe_checks_seats_and_gives_each_seat_view():
    env = toy.CountdownVectorEnv(2, seed=0)
    env.reset()
    view = env.observe(np.array([2, 0]))
    assert view[0, toy.START + 1 + 2] == 1.0 and view[1, toy.START + 1 + 0] == 1.0
    with pytest.raises(ValueError, match="seat 3 of game 1 is out of range"):
        env.observe(np.array([0, 3]))


def test_constructor_and_call_order_errors():
    with pytest.raises(ValueError, match="n_envs must be a positive integer"):
        toy.CountdownVectorEnv(0)
    with pytest.raises(RuntimeError, match="reset"):
        toy.CountdownVectorEnv(1).step(np.zeros(1, dtype=np.int64))
