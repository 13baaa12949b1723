"""The Numba core against the plain-Python reference, and properties of random games."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mao_helpers import assert_same, make, random_legal, ref_from_env, total_cards

from mao_env import cards as C
from mao_env import rules as R
from mao_env.env import allowed_actions

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _play_and_compare(
    env, seed: int, steps: int, rng_actions: np.random.Generator, rules_bias: float
) -> None:
    ref = ref_from_env(env)
    for _ in range(steps):
        if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            break
        physical = env._mask
        rules_mask = allowed_actions(env.get_state()["arrays"])
        assert sorted(np.flatnonzero(physical)) == ref.legal(by_rules=False)
        assert sorted(np.flatnonzero(rules_mask)) == ref.legal(by_rules=True)
        use_rules = rng_actions.random() < rules_bias and rules_mask.any()
        action = random_legal(rng_actions, rules_mask if use_rules else physical)
        env.step(action)
        ref.apply(action)
        if ref.phase != "over":
            assert_same(env, ref)


@SETTINGS
@given(
    seed=st.integers(0, 2**31 - 1),
    n_players=st.integers(2, 8),
    n_rules=st.integers(0, 6),
    rules_bias=st.sampled_from([0.0, 0.7, 0.95]),
    variant=st.sampled_from(
        ["default", "seven_turn_ends", "thank_you", "quiet", "cambridge", "sampled", "fixed"]
    ),
)
def test_core_matches_reference(seed, n_players, n_rules, rules_bias, variant):
    kwargs = {"num_rounds": 3}
    if variant == "seven_turn_ends":
        kwargs["seven_turn_ends"] = True
    elif variant == "thank_you":
        kwargs["seven_phrase"] = "thank you"
    elif variant == "quiet":
        kwargs["talking"] = False
    elif variant == "cambridge":
        kwargs["rounds"] = "cambridge"
    elif variant in ("sampled", "fixed"):
        kwargs["rule_choice"] = variant
    env = make(n_players, **kwargs)
    pick = np.random.default_rng(seed)
    chosen = [int(r) for r in pick.choice(R.N_RULES, size=n_rules, replace=False)]
    options = {"rules": chosen}
    if variant == "fixed":
        options["fixed_rules"] = [int(r) for r in pick.choice(R.N_RULES, size=3, replace=False)]
    env.reset(seed=seed, options=options)
    _play_and_compare(env, seed, 600, pick, rules_bias)


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), n_players=st.sampled_from([3, 4, 8]))
def test_cards_are_conserved_and_hands_stay_private(seed, n_players):
    env = make(n_players, max_steps=400)
    env.reset(seed=seed, options={"rules": [(3, 1), (30, 2)]})
    expected = env.n_decks * C.CARDS_PER_DECK
    rng = np.random.default_rng(seed)
    while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        assert total_cards(env) == expected
        seat = env.current_seat
        other = (seat + 1) % n_players
        # The other seat's observation must not change when only this seat's hand changes.
        before = env.observe(env.possible_agents[other])["observation"]
        hands = env._state[0]
        saved = hands.copy()
        hands[0, seat] = np.roll(hands[0, seat], 1)
        after = env.observe(env.possible_agents[other])["observation"]
        hands[...] = saved
        assert np.array_equal(before, after)
        # Authored-rule block: only the author sees its rule.
        from mao_env import core as K

        authored = env.observe(env.possible_agents[0])["observation"][
            K.OFF_AUTHORED : K.OFF_AUTHORED + R.N_RULES
        ]
        assert authored.sum() == 0
        env.step(random_legal(rng, env._mask))
    assert total_cards(env) == expected


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1))
def test_same_seed_same_game_and_clone_continues_identically(seed):
    env_a, env_b = make(4, max_steps=300), make(4, max_steps=300)
    env_a.reset(seed=seed)
    env_b.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(60):
        action = random_legal(rng, env_a._mask)
        env_a.step(action)
        env_b.step(action)
    saved = pickle.loads(pickle.dumps(env_a.get_state()))
    trail_a = []
    rng_a = np.random.default_rng(1)
    for _ in range(150):
        if env_a.truncations[env_a.agent_selection] or env_a.terminations[env_a.agent_selection]:
            break
        action = random_legal(rng_a, env_a._mask)
        env_a.step(action)
        trail_a.append((action, env_a.observe(env_a.agent_selection)["observation"].tobytes()))
    env_b.set_state(saved)
    rng_b = np.random.default_rng(1)
    for action_a, obs_a in trail_a:
        action = random_legal(rng_b, env_b._mask)
        assert action == action_a
        env_b.step(action)
        assert env_b.observe(env_b.agent_selection)["observation"].tobytes() == obs_a


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_players=st.integers(3, 8))
def test_episodes_always_end(seed, n_players):
    env = make(n_players, max_steps=500)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    steps = 0
    for agent in env.agent_iter(max_iter=10_000):
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else random_legal(rng, env.observe(agent)["action_mask"]))
        steps += 1
    assert not env.agents
    assert steps <= 500 + n_players


def test_oracle_play_ends_episodes_by_winning():
    """Following the rules mask never draws a call, and some seat wins within the step cap."""
    env = make(4, num_rounds=2, rule_choice="sampled", max_steps=4000)
    env.reset(seed=5, options={"rules": [0, 20, 35]})
    rng = np.random.default_rng(0)
    while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        mask = allowed_actions(env.get_state()["arrays"])
        # Prefer playing over drawing so the round finishes.
        plays = [a for a in np.flatnonzero(mask) if a < C.DRAW]
        env.step(int(rng.choice(plays)) if plays else random_legal(rng, mask))
        assert env.last_calls == []
    assert all(env.terminations.values())
