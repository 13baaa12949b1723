"""Numba random play-outs (madiao_env.rollout) against the AEC env from the same snapshot."""

from __future__ import annotations

import numpy as np
import pytest

from cardgame_core.rng import next_u64_py
from madiao_env import core, madiao_v0
from madiao_env.rollout import new_hand_snapshot, random_playouts
from madiao_env.vector import MadiaoVectorEnv
from tests.madiao.conftest import env_after_random_actions

AGENTS = [f"player_{seat}" for seat in range(4)]


def advanced_snapshot(plays: int, seed: int = 0, **env_kwargs) -> dict:
    """A snapshot after ``plays`` random legal actions from a fresh deal."""
    return env_after_random_actions(plays, seed, **env_kwargs).get_state()


def aec_random_payoffs(snapshot: dict, n: int, seed: int) -> np.ndarray:
    """The same random play with the AEC env: restore, play uniformly at random, sum the rewards."""
    env = madiao_v0.raw_env()
    rng = np.random.default_rng(seed)
    payoffs = np.zeros((n, 4))
    for k in range(n):
        state = {**snapshot, "arrays": [a.copy() for a in snapshot["arrays"]]}
        state["arrays"][0][0, core.CS_RNG] = np.uint64(rng.integers(1, 2**63))  # vary later deals
        env.set_state(state)
        while not all(env.terminations.values()):
            mask = env.observe(env.agent_selection)["action_mask"]
            env.step(int(rng.choice(np.flatnonzero(mask))))
            payoffs[k] += [env.rewards[agent] for agent in AGENTS]
    return payoffs


def test_payoffs_are_zero_sum_float64_and_deterministic_per_seed():
    snapshot = new_hand_snapshot(seed=4)
    payoffs = random_playouts(snapshot, 500, seed=1)
    assert payoffs.shape == (500, 4) and payoffs.dtype == np.float64
    np.testing.assert_allclose(payoffs.sum(axis=1), 0.0, atol=1e-9)
    assert len(np.unique(payoffs, axis=0)) > 5  # the play-outs differ
    np.testing.assert_array_equal(payoffs, random_playouts(snapshot, 500, seed=1))
    assert not np.array_equal(payoffs, random_playouts(snapshot, 500, seed=2))
    # The snapshot itself is not touched by the play-outs.
    np.testing.assert_array_equal(snapshot["arrays"][1], new_hand_snapshot(seed=4)["arrays"][1])


def test_stake_scales_the_payoffs():
    single = random_playouts(new_hand_snapshot(seed=7), 300, seed=3)
    doubled = random_playouts(new_hand_snapshot(seed=7, stake=2.0), 300, seed=3)
    np.testing.assert_array_equal(doubled, 2.0 * single)


def test_last_play_outcomes_are_exactly_the_aec_envs():
    # One play left: each of its legal actions settles the hand; the play-outs can only produce
    # those settlements, and with 200 play-outs every one of them shows up.
    snapshot = advanced_snapshot(plays=31, seed=8)
    env = madiao_v0.raw_env()
    env.set_state(snapshot)
    assert env.table()["trick_number"] == 7 and len(env.table()["current_trick"]) == 3
    expected = set()
    for action in np.flatnonzero(env.observe(env.agent_selection)["action_mask"]):
        env.set_state(snapshot)
        env.step(int(action))
        expected.add(tuple(env.infos["player_0"]["payoffs"]))
    outcomes = {tuple(row) for row in random_playouts(snapshot, 200, seed=0)}
    assert outcomes == expected


@pytest.mark.parametrize("plays", [0, 13])
def test_mean_payoffs_agree_with_aec_random_play(plays):
    snapshot = advanced_snapshot(plays=plays, seed=plays + 1)
    numba_payoffs = random_playouts(snapshot, 20_000, seed=5)
    aec_payoffs = aec_random_payoffs(snapshot, 400, seed=6)
    standard_error = np.sqrt(aec_payoffs.var(axis=0) / 400 + numba_payoffs.var(axis=0) / 20_000)
    difference = np.abs(numba_payoffs.mean(axis=0) - aec_payoffs.mean(axis=0))
    assert (difference <= 4.5 * standard_error + 0.05).all(), (difference, standard_error)
    # The outcomes the AEC env reached are ones the play-outs reach too (no rule is missing).
    numba_outcomes = {tuple(row) for row in numba_payoffs}
    common = sum(tuple(row) in numba_outcomes for row in aec_payoffs)
    assert common >= 0.9 * len(aec_payoffs)


def test_match_snapshots_play_to_the_end_of_the_match():
    payoffs = random_playouts(new_hand_snapshot(seed=2, episode="match"), 50, seed=0)
    np.testing.assert_allclose(payoffs.sum(axis=1), 0.0, atol=1e-9)
    # A match has a hand per seat at least, so it moves more stakes than one hand on average.
    one_hand = random_playouts(new_hand_snapshot(seed=2), 50, seed=0)
    assert np.abs(payoffs).sum() > np.abs(one_hand).sum()


def test_a_vector_game_state_is_a_valid_snapshot():
    venv = MadiaoVectorEnv(2, seed=0)
    venv.reset()
    payoffs = random_playouts(venv.get_game_state(1), 100, seed=0)
    np.testing.assert_allclose(payoffs.sum(axis=1), 0.0, atol=1e-9)


def test_bad_inputs_raise_clear_errors():
    snapshot = new_hand_snapshot(seed=0)
    with pytest.raises(ValueError, match="n must be a positive int"):
        random_playouts(snapshot, 0, seed=0)
    with pytest.raises(TypeError, match="n must be a positive int"):
        random_playouts(snapshot, 2.5, seed=0)
    with pytest.raises(TypeError, match="seed must be an int"):
        random_playouts(snapshot, 10, seed="0")
    with pytest.raises(ValueError, match="get_state"):
        random_playouts({"version": 99}, 10, seed=0)
    broken = {**snapshot, "arrays": [a.copy() for a in snapshot["arrays"]]}
    broken["arrays"][1] = broken["arrays"][1][:, :5]
    with pytest.raises(ValueError, match=r"\(ints\) is int32 \(1, 5\): must be int32"):
        random_playouts(broken, 10, seed=0)
    # Fields the play-out kernel indexes by are validated as set_state does (these crashed it).
    for column, value in ((core.I_TO_ACT, 7), (core.I_N_PLAYS, 120), (core.I_N_PENDING, 10_000)):
        corrupt = {**snapshot, "arrays": [a.copy() for a in snapshot["arrays"]]}
        corrupt["arrays"][1][0, column] = value
        with pytest.raises(ValueError, match="snapshot ints"):
            random_playouts(corrupt, 10, seed=0)
    env = madiao_v0.raw_env()
    env.reset(seed=0)
    while not all(env.terminations.values()):
        env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    with pytest.raises(ValueError, match="episode is over"):
        random_playouts(env.get_state(), 10, seed=0)


def _xorshift_star_pick(state: int, n: int) -> tuple[int, int]:
    """Python twin of the kernels' RNG step and multiply-shift draw: (new state, 0..n-1)."""
    mask64 = (1 << 64) - 1
    state ^= state >> 12
    state ^= (state << 25) & mask64
    state ^= state >> 27
    output = (state * 0x2545F4914F6CDD1D) & mask64
    return state, ((output >> 32) * n) >> 32


@pytest.mark.parametrize(
    ("plays", "env_kwargs"), [(0, {}), (6, {"face_up_discard": True}), (9, {"episode": "match"})]
)
def test_playouts_take_exactly_the_env_steps_of_the_same_draws(plays, env_kwargs):
    # The play-out loop keeps the trick in local variables but must be the env's rules action for
    # action: replay its draws through the AEC env's step kernel (legal sets from the mask) and
    # compare the payoffs play-out by play-out.
    snapshot = advanced_snapshot(plays=plays, seed=plays + 2, **env_kwargs)
    payoffs = random_playouts(snapshot, 12, seed=11)
    seed_state = 11
    for k in range(12):
        seed_state, rng_state = next_u64_py(seed_state)
        state = {**snapshot, "arrays": [a.copy() for a in snapshot["arrays"]]}
        state["arrays"][0][0, core.CS_RNG] = np.uint64(rng_state)
        env = madiao_v0.raw_env(**env_kwargs)
        env.set_state(state)
        total = np.zeros(4)
        while not all(env.terminations.values()):
            card_sets = env.unwrapped._state.card_sets
            rng_state = int(card_sets[0, core.CS_RNG])
            mask = env.observe(env.agent_selection)["action_mask"]
            legal = np.flatnonzero(mask)  # face up 0..39, face down 40..79, then the redeal pair
            rng_state, pick = _xorshift_star_pick(rng_state, len(legal))
            card_sets[0, core.CS_RNG] = np.uint64(rng_state)
            env.step(int(legal[pick]))
            total += [env.rewards[agent] for agent in AGENTS]
        np.testing.assert_allclose(payoffs[k], total)
