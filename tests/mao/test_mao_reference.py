"""The Numba core against the plain-Python reference, and properties of random games."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mao_env import cards, core
from mao_env import rules as rule_library
from mao_env.env import allowed_actions
from tests.mao.mao_helpers import assert_same, make, random_legal, ref_from_env, total_cards

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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
    chosen = [int(r) for r in pick.choice(rule_library.N_RULES, size=n_rules, replace=False)]
    options = {"rules": chosen}
    if variant == "fixed":
        options["fixed_rules"] = [int(r) for r in pick.choice(rule_library.N_RULES, size=3, replace=False)]
    env.reset(seed=seed, options=options)
    _play_and_compare(env, seed, 600, pick, rules_bias)


def test_core_matches_reference_through_refused_rule_proposals():
    # Twenty speech and dynamics rules in force from the start (they forbid no card, so rounds are
    # won); a turn plays a good card when it can (the rules mask), a rule choice proposes any rule
    # the physical mask offers: every library rule the winner does not know, often one in force.
    refusals = choices = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        n_players = 2 + seed % 4
        env = make(n_players, num_rounds=5, max_steps=700, calls=("master", "players")[seed % 2])
        chosen = rng.choice(np.arange(19, rule_library.N_RULES), size=20, replace=False)
        env.reset(seed=seed, options={"rules": [(int(r), int(rng.integers(-1, n_players))) for r in chosen]})
        ref = ref_from_env(env)
        while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
            assert sorted(np.flatnonzero(env._mask)) == ref.legal(by_rules=False)
            seat, in_force = env.current_seat, [rule for rule, _ in env.active_rules()]
            if ref.phase == "choose":
                action = random_legal(rng, env._mask)
                refused = action - cards.CHOOSE_RULE_0 in in_force
                choices += 1
                refusals += refused
            else:
                allowed = allowed_actions(env.get_state()["arrays"])
                plays = np.flatnonzero(allowed[: cards.DRAW])
                action = int(rng.choice(plays)) if plays.size else random_legal(rng, allowed)
            env.step(action)
            ref.apply(action)
            if ref.phase != "over":
                assert_same(env, ref)
            if action >= cards.CHOOSE_RULE_0:  # refused: the same seat proposes again
                assert (ref.phase == "choose" and env.current_seat == seat) == refused
    assert refusals >= 3 and choices - refusals >= 10


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), n_players=st.sampled_from([3, 4, 8]))
def test_cards_are_conserved_and_hands_and_rules_stay_private(seed, n_players):
    env = make(n_players, max_steps=300, num_rounds=2)
    env.reset(seed=seed, options={"rules": [(3, 1), (30, 2), (40, 0)]})
    expected = env.n_decks * cards.CARDS_PER_DECK
    rng = np.random.default_rng(seed)
    known = slice(core.OFF_KNOWN, core.OFF_KNOWN + rule_library.N_RULES)
    hands, rules = env._state[0], env._state[4]
    while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        assert total_cards(env) == expected
        seat = env.current_seat
        observer = (seat + 1) % n_players
        before = env.observe(env.possible_agents[observer])["observation"]
        saved_hands, saved_rules = hands.copy(), rules.copy()
        # Another seat's cards (same count) and rules the observer did not author are invisible.
        hands[0, seat] = np.roll(hands[0, seat], 1)
        for slot in range(rule_library.MAX_ACTIVE_RULES):
            if rules[0, core.ACTIVE, slot] >= 0 and rules[0, core.AUTHOR, slot] != observer:
                rules[0, core.ACTIVE, slot] = (rules[0, core.ACTIVE, slot] + 1) % rule_library.N_RULES
        after = env.observe(env.possible_agents[observer])["observation"]
        hands[...], rules[...] = saved_hands, saved_rules
        assert np.array_equal(before, after)
        own = [r for r, author in env.active_rules() if author == observer]
        assert np.flatnonzero(before[known]).tolist() == sorted(own + env.refused_rules(observer))
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


def _oracle_episode(env, seed: int) -> None:
    rng = np.random.default_rng(seed)
    while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        mask = allowed_actions(env.get_state()["arrays"])
        # Prefer playing over drawing so the round finishes.
        plays = [a for a in np.flatnonzero(mask) if a < cards.DRAW]
        env.step(int(rng.choice(plays)) if plays else random_legal(rng, mask))
        assert env.last_calls == []


def test_oracle_play_ends_episodes_by_winning():
    """Following the rules mask never draws a call, and some seat wins within the step cap."""
    env = make(4, num_rounds=2, rule_choice="sampled", max_steps=4000)
    env.reset(seed=5, options={"rules": [0, 20, 35]})
    _oracle_episode(env, 0)
    assert all(env.terminations.values())


def test_no_library_rule_locks_a_round():
    """With any single secret rule active, oracle play still wins a round well within the cap
    (a rule like "red may not follow red" read strictly would leave rounds that never end)."""
    for rule in range(rule_library.N_RULES):
        env = make(4, max_steps=3000)
        env.reset(seed=rule, options={"rules": [rule]})
        _oracle_episode(env, rule)
        assert all(env.terminations.values()), rule_library.RULE_DESCRIPTIONS[rule]
