"""Gymnasium / SB3 adapters (cardgame_core.adapters): API checks and the learner's reward.

The reward tests use the toy countdown game, where most games end on another seat's move: the
learner must still receive its own terminal payoff (the PettingZoo SB3 tutorial bug, issue 1147).
"""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cardgame_core.adapters import SingleAgentCardEnv
from cardgame_core.aec import IllegalActionError
from madiao_mao.training.sb3.adapter import LearnerVecEnv

_spec = importlib.util.spec_from_file_location("toy_game", pathlib.Path(__file__).with_name("toy_game.py"))
toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(toy)


def take_one(observation, action_mask):
    """An opponent that always takes a single unit (legal whenever the game is running)."""
    return 0


def take_one_batch(observations, masks):
    return np.zeros(len(masks), dtype=np.int64)


def counter_of(observation: np.ndarray) -> int:
    return int(np.argmax(observation[: toy.START + 1]))


# -- Gymnasium single-agent env ------------------------------------------------------------------
def test_single_agent_env_passes_gymnasium_check_env():
    env = SingleAgentCardEnv(
        toy.CountdownAECEnv(), take_one, learner_seat="rotate", illegal_action="terminate"
    )
    check_env(env, skip_render_check=True)


def test_single_agent_learner_gets_terminal_reward_when_an_opponent_ends_the_game():
    # Seat 0 starts (seed 0): 7 -(seat 0 takes 3)-> 4 -(1)-> 3 -(1)-> 2 -(seat 0 takes 1)-> 1,
    # then seat 1 takes the last unit and wins: seat 0 pays 1 although seat 1 moved last.
    env = SingleAgentCardEnv(toy.CountdownAECEnv(), take_one, learner_seat=0)
    observation, info = env.reset(seed=0)
    assert counter_of(observation) == 7 and info["learner_seat"] == 0
    observation, reward, terminated, _, _ = env.step(2)
    assert (counter_of(observation), reward, terminated) == (2, 0.0, False)
    observation, reward, terminated, truncated, _ = env.step(0)
    assert terminated and not truncated
    assert reward == -1.0
    assert counter_of(observation) == 0


def test_single_agent_illegal_action_terminates_by_default_and_raises_on_request():
    # Terminating is the default: Gymnasium's step must accept every action of the action space.
    env = SingleAgentCardEnv(toy.CountdownAECEnv(), take_one, learner_seat=0, illegal_action="raise")
    env.reset(seed=0)
    env.step(2)  # counter 2 when the learner is next asked
    with pytest.raises(IllegalActionError, match="action 2"):
        env.step(2)
    lenient = SingleAgentCardEnv(toy.CountdownAECEnv(), take_one, illegal_reward=-5)
    lenient.reset(seed=0)
    lenient.step(2)
    _, reward, terminated, _, info = lenient.step(2)
    assert (reward, terminated, info["illegal_action"]) == (-5.0, True, True)


def test_single_agent_rotation_and_action_masks():
    env = SingleAgentCardEnv(toy.CountdownAECEnv(), take_one, learner_seat="rotate")
    seats = [env.reset(seed=None if i else 1)[1]["learner_seat"] for i in range(4)]
    assert seats == [0, 1, 2, 0]
    assert env.action_masks().dtype == np.bool_
    with pytest.raises(ValueError, match="learner_seat 5 is out of range"):
        SingleAgentCardEnv(toy.CountdownAECEnv(), take_one, learner_seat=5)


# -- SB3 VecEnv ----------------------------------------------------------------------------------
def play_learner_vec_env(n_envs, learner_seat, n_steps, seed=0):
    """Random learner moves; returns per-step records (observations before, actions, results)."""
    venv = LearnerVecEnv(toy.CountdownVectorEnv(n_envs), take_one_batch, learner_seat=learner_seat, seed=seed)
    rng = np.random.default_rng(seed)
    observations = venv.reset()
    records = []
    for _ in range(n_steps):
        masks = venv.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        next_observations, rewards, dones, infos = venv.step(actions)
        records.append((observations, actions, rewards, dones, infos))
        observations = next_observations
    return venv, records


def test_vec_env_learner_reward_includes_terminal_payoff_of_a_game_ended_by_an_opponent():
    _, records = play_learner_vec_env(n_envs=6, learner_seat=0, n_steps=60)
    ended_by_opponent = 0
    for observations, actions, rewards, dones, infos in records:
        for game in np.flatnonzero(dones):
            payoff = infos[game]["final_payoffs"][0]
            learner_ended_it = counter_of(observations[game]) == actions[game] + 1
            if not learner_ended_it:
                ended_by_opponent += 1
                # The learner lost to the seat that moved last: its own -1 must reach it.
                assert payoff == -1.0
                assert rewards[game] == -1.0
            else:
                assert rewards[game] == 2.0
    assert ended_by_opponent >= 5


def test_vec_env_episode_returns_equal_the_learner_seat_payoffs_in_every_role():
    venv, records = play_learner_vec_env(n_envs=4, learner_seat="rotate", n_steps=80)
    episode_sum = np.zeros(4)
    seats_seen = set()
    finished = 0
    for _, _, rewards, dones, infos in records:
        episode_sum += rewards
        for game in np.flatnonzero(dones):
            info = infos[game]
            seat = info["learner_seat"]
            seats_seen.add(seat)
            assert episode_sum[game] == pytest.approx(info["final_payoffs"][seat])
            assert info["episode"]["r"] == pytest.approx(info["final_payoffs"][seat])
            assert info["terminal_observation"].shape == (toy.OBS_DIM,)
            assert counter_of(info["terminal_observation"]) == 0
            episode_sum[game] = 0.0
            finished += 1
    assert finished > 10 and seats_seen == {0, 1, 2}
    assert venv.action_masks().shape == (4, toy.N_ACTIONS)
    assert len(venv.env_method("action_masks")) == 4


def test_vec_env_pool_draws_opponents_per_seat_and_checks_their_output():
    calls = {"one": 0, "two": 0}

    def one(observations, masks):
        calls["one"] += 1
        return np.zeros(len(masks), dtype=np.int64)

    def two(observations, masks):
        calls["two"] += 1
        # The largest legal take.
        return masks.shape[1] - 1 - np.argmax(masks[:, ::-1], axis=1)

    venv = LearnerVecEnv(toy.CountdownVectorEnv(8), [one, two], learner_seat=0, seed=1)
    venv.reset()
    venv.step(np.zeros(8, dtype=np.int64))
    assert calls["one"] > 0 and calls["two"] > 0

    def wrong_shape(observations, masks):
        return np.zeros(len(masks) + 1, dtype=np.int64)

    with pytest.raises(ValueError, match="returned actions of shape"):
        LearnerVecEnv(toy.CountdownVectorEnv(2), wrong_shape, learner_seat=0, seed=0).reset()


def test_maskable_ppo_trains_on_the_learner_vec_env_and_records_episodes():
    from sb3_contrib import MaskablePPO

    venv = LearnerVecEnv(toy.CountdownVectorEnv(8), take_one_batch, seed=0)
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=128, n_epochs=2, seed=0, device="cpu")
    model.learn(1024)
    assert model.num_timesteps >= 1024
    # SB3's monitor statistics come from infos[i]["episode"].
    assert len(model.ep_info_buffer) > 20
    assert all(-1.0 <= info["r"] <= 2.0 for info in model.ep_info_buffer)
