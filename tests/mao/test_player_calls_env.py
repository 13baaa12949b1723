"""Players' calls through the PettingZoo env: the PettingZoo tests, the core against the reference
on random games of both call modes, and the hand-worked scenarios as the table sees them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, seed_test

from mao_env import cards, core, mao_v0
from mao_env import rules as rule_library
from mao_env.env import allowed_actions
from mao_env.layout import EVENT_SLICES, SLICES
from tests.mao.mao_helpers import assert_same, make, play, random_legal, ref_from_env, scenario, total_cards


@pytest.mark.parametrize("n_players", [3, 4, 8])
def test_pettingzoo_api_and_seed_tests_pass_with_players_calls(n_players):
    api_test(mao_v0.env(n_players=n_players, calls="players", max_steps=400), num_cycles=300)
    seed_test(lambda: mao_v0.env(n_players=n_players, calls="players", max_steps=400), num_cycles=100)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    n_players=st.integers(2, 8),
    n_rules=st.integers(0, 5),
    rules_bias=st.sampled_from([0.0, 0.6, 0.95]),
    calls=st.sampled_from(["master", "players"]),
    forgotten=st.sampled_from([3, 1]),
)
def test_core_matches_reference_in_both_call_modes(seed, n_players, n_rules, rules_bias, calls, forgotten):
    """Every step of a random game: the masks equal the reference's legal sets (physical and by
    the rules), the state and the calls equal the reference's, and the cards are conserved."""
    env = make(n_players, num_rounds=2, calls=calls, forgotten_mao_cards=forgotten, rule_choice="sampled")
    pick = np.random.default_rng(seed)
    chosen = [
        (int(r), int(pick.integers(-1, n_players)))
        for r in pick.choice(rule_library.N_RULES, n_rules, replace=False)
    ]
    env.reset(seed=seed, options={"rules": chosen})
    ref = ref_from_env(env)
    expected = env.n_decks * cards.CARDS_PER_DECK
    for _ in range(500):
        if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            break
        physical = env._mask
        rules_mask = allowed_actions(env.get_state()["arrays"])
        assert np.flatnonzero(physical).tolist() == ref.legal(by_rules=False)
        assert np.flatnonzero(rules_mask).tolist() == ref.legal(by_rules=True)
        use_rules = pick.random() < rules_bias and rules_mask.any()
        action = random_legal(pick, rules_mask if use_rules else physical)
        env.step(action)
        ref.apply(action)
        assert total_cards(env) == expected
        if ref.phase != "over":
            assert_same(env, ref)


def _window_scenario(**kwargs):
    return scenario(
        4,
        hands={0: ["9C", "KD", "QD"], 1: ["2H", "3H"], 2: ["4H", "5D"], 3: ["6D", "8D"]},
        pile=["5H"],
        stack=["7C", "8C", "10C", "JC"],
        calls="players",
        **kwargs,
    )


def _events(env) -> list[dict]:
    return env.public_events()


def test_a_correct_call_as_the_table_sees_it():
    env = _window_scenario()
    play(env, "play 9C", "end")
    assert env.agent_selection == "player_1" and env.window_faults() == {cards.CALL_REASON_BAD_CARD: 1}
    obs = env.observe("player_2")["observation"]
    assert obs[SLICES["phase"]].tolist() == [0, 0, 0, 1]  # everyone sees the call window ...
    assert np.flatnonzero(obs[SLICES["played"]]).tolist() == [cards.card_id("9C")]  # ... the card
    assert np.flatnonzero(obs[SLICES["mover"]]).tolist() == [2]  # ... and whose turn it is
    play(env, "call bad-card")
    assert env.last_calls[0]["player"] == "player_0" and env.last_calls[0]["caller"] == "player_1"
    assert not env.last_calls[0]["bad_call"] and env.last_calls[0]["call"] == "Bad card"
    call_event = _events(env)[-1]
    assert call_event["kind"] == "call" and call_event["seat"] == 1
    play(env, "no call", "no call", "no call")
    assert env.rewards["player_0"] == pytest.approx(-0.1)  # the card moves at the settlement
    assert sorted(env.hand(0)) == ["7C", "9C", "KD", "QD"] and env.top_card() == "5H"
    turn = _events(env)[-1]
    assert turn["kind"] == "bad card" and turn["seat"] == 0 and turn["penalty_cards"] == 1


def test_a_bad_call_as_the_table_sees_it():
    env = scenario(
        3, hands={0: ["9H", "KD", "QD"], 1: ["2C", "3C"], 2: ["4C"]}, pile=["5H"], stack=["7C"],
        calls="players",
    )  # fmt: skip
    play(env, "play 9H", "end", "call bad-card")
    assert env.last_calls == [
        {"player": "player_1", "caller": "player_1", "bad_call": True, "call": "Bad call", "cards": 1,
         "code": core.CALL_BAD_CALL, "reason": "bad call", "phrase": None, "called": "bad-card"}
    ]  # fmt: skip
    row = env.observe("player_2")["observation"][core.OFF_EVENTS :]
    assert row[EVENT_SLICES["kind"]][core.KIND_CALL] == 1
    assert row[EVENT_SLICES["bad_calls"]][cards.CALL_REASON_BAD_CARD] == 1
    play(env, "no call", "no call")
    assert env.rewards["player_1"] == pytest.approx(-0.1) and env.rewards["player_0"] == 0
    assert env.top_card() == "9H"


def test_an_offence_nobody_calls_goes_unpunished_through_the_env():
    env = _window_scenario()
    play(env, "play 9C", "end", "no call", "no call", "no call")
    assert env.top_card() == "9C" and sorted(env.hand(0)) == ["KD", "QD"]
    assert all(reward == 0 for reward in env.rewards.values())
    assert _events(env)[-1]["kind"] == "play"


def test_a_point_of_order_through_the_env():
    env = _window_scenario()
    play(env, "play 9C", "say rabbit", "end", "call talking", "point of order")
    kinds = [event["kind"] for event in _events(env)[-3:]]
    assert kinds == ["call", "point of order", "play"]
    assert env.agent_selection == "player_1" and env.top_card() == "9C"
    assert sorted(env.hand(0)) == ["7C", "KD", "QD"]


def test_pass_and_the_forgotten_mao_through_the_env():
    env = scenario(3, hands={0: ["9H"], 1: ["2C", "3C"], 2: ["4C"]}, pile=["5H"], stack=["7C", "8C", "10C"])
    play(env, "play 9H", "end")
    assert [(c["call"], c["cards"]) for c in env.last_calls] == [("Failure to say 'Mao'", 3)]
    env = scenario(
        3,
        hands={0: ["9H"], 1: ["2C", "3C"], 2: ["4C"]},
        pile=["5H"],
        stack=["7C", "8C"],
        forgotten_mao_cards=1,
    )
    play(env, "play 9H", "end")
    assert [(c["call"], c["cards"]) for c in env.last_calls] == [("Failure to say 'Mao'", 1)]
    env = scenario(3, hands={0: ["KD", "QD"], 1: ["2C"], 2: ["4C"]}, pile=["5H"], stack=["7C"])
    play(env, "draw", "say pass", "end")
    assert env.last_calls == []


def test_master_mode_never_offers_calls():
    env = make(4)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(300):
        if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            break
        assert not env._mask[cards.CALL_0 : cards.CHOOSE_RULE_0].any()
        env.step(random_legal(rng, env._mask))


def test_a_snapshot_in_a_call_window_restores_and_continues_identically():
    env = _window_scenario()
    play(env, "play 9C", "say rabbit", "end", "call talking")
    saved = env.get_state()
    twin = make(4, calls="players")
    twin.reset(seed=1)
    twin.set_state(saved)
    for game in (env, twin):
        play(game, "no call", "call bad-card", "no call", "no call")
    assert env.hand(0) == twin.hand(0) and env.public_events() == twin.public_events()
    assert sorted(env.hand(0)) == ["7C", "8C", "9C", "KD", "QD"]  # the card back, talking, bad card


def test_a_corrupted_call_window_is_named_and_changes_nothing():
    env = _window_scenario()
    play(env, "play 9C", "end")
    saved = env.get_state()
    bad = env.get_state()
    bad["arrays"]["scalars"][0, core.S_MOVER] = env.current_seat  # the caller as its own mover
    with pytest.raises(ValueError, match="S_MOVER"):
        env.set_state(bad)
    bad = env.get_state()
    bad["arrays"]["scalars"][0, core.S_CORRECT] = 1 << cards.CALL_REASON_TALKING  # never called
    with pytest.raises(ValueError, match="S_CORRECT"):
        env.set_state(bad)
    assert np.array_equal(env.get_state()["arrays"]["scalars"], saved["arrays"]["scalars"])
    master = make(4)
    master.reset(seed=0)
    with pytest.raises(ValueError, match="calls"):
        master.set_state(saved)
