"""The mao_v0 PettingZoo env: API conformance, options, masks, rewards, text helpers, scenarios,
clone/restore, rendering and clear errors for bad input."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from cardgame_core.aec import IllegalActionError
from mao_env import cards, core, mao_v0
from mao_env import rules as rule_library
from tests.mao.mao_helpers import make, play_randomly_to_the_end, random_legal, scenario, turn

HANDS = {1: ["2D", "3D", "4D", "5D"], 2: ["2H", "3H", "4H", "6H"], 3: ["2C", "3C", "4C", "6C"]}


@pytest.mark.parametrize("n_players", [3, 4, 8])
def test_pettingzoo_api_test(n_players):
    api_test(mao_v0.env(n_players=n_players), num_cycles=300)


@pytest.mark.parametrize("n_players", [3, 4, 8])
def test_pettingzoo_seed_test(n_players):
    seed_test(lambda: mao_v0.env(n_players=n_players, num_rounds=2), num_cycles=300)


def test_api_test_with_the_rules_mask_and_revealed_reasons():
    api_test(mao_v0.env(n_players=4, mask="rules", reasons="revealed", rounds="cambridge"), num_cycles=200)


def test_import_loads_no_numba():
    code = "import sys, mao_env; print('numba' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_spaces_and_observation_layout_match_the_docstring():
    env = make(4)
    env.reset(seed=3)
    n_actions = 57 + cards.N_PHRASES + cards.N_CALL_REASONS + rule_library.N_RULES
    assert env.action_space("player_0").n == n_actions
    assert core.OFF_EVENTS == 253 and core.EVENT_FEATURES == 132
    assert env.obs_dim == 253 + 8 * 132
    assert make(4, reasons="revealed").obs_dim == 253 + 8 * (132 + rule_library.N_RULES)
    assert make(4, obs_type="summary").obs_dim == 253
    observation = env.observe(env.agent_selection)["observation"]
    hand = observation[:53]
    assert hand.sum() == 5 and [cards.CARD_NAMES[c] for c in np.flatnonzero(hand)] == sorted(
        set(env.hand(env.current_seat)), key=cards.card_id
    )
    assert cards.CARD_NAMES[int(np.argmax(observation[53:106]))] == env.top_card()
    assert observation[196:200].tolist() == [5, 5, 5, 5]


def test_masks_physical_and_rules():
    env = scenario(4, hands={0: ["9C", "9H", "KS"], **HANDS}, pile=["5H"])
    physical = env.observe("player_0")["action_mask"]
    assert sorted(env.describe_action(a) for a in np.flatnonzero(physical)) == [
        "draw",
        "play 9C",
        "play 9H",
        "play KS",
    ]
    ruled = scenario(4, hands={0: ["9C", "9H", "KS"], **HANDS}, pile=["5H"], mask="rules")
    assert [ruled.describe_action(a) for a in np.flatnonzero(ruled.observe("player_0")["action_mask"])] == [
        "play 9H",
        "draw",
    ]
    assert ruled.observe("player_1")["action_mask"].sum() == 0  # all zeros off turn


def test_sub_action_cap_forces_the_end_of_a_turn():
    env = scenario(4, hands={0: ["9H", "KS", "QS"], **HANDS}, pile=["5H"], max_sub_actions=4)
    env.step(env.action_from_text("play 9H"))
    env.step(env.action_from_text("say rabbit"))
    env.step(env.action_from_text("say fox"))
    assert [env.describe_action(a) for a in np.flatnonzero(env.observe("player_0")["action_mask"])] == ["end"]


def test_penalty_rewards_are_configurable():
    env = scenario(4, hands={0: ["9C", "KS", "QS"], **HANDS}, pile=["5H"], penalty_card_reward=-0.5)
    turn(env, "play 9C", "say rabbit", "end")
    assert env.rewards == {"player_0": -1.0, "player_1": 0.0, "player_2": 0.0, "player_3": 0.0}
    assert env.last_calls[0]["reason"] == "bad card" and env.last_calls[0]["player"] == "player_0"
    assert env.infos["player_0"] == {
        "n_calls": 2,
        "call_cards": 2,
        "round_blocked": False,
        "illegal_action": False,
        "illegal_action_error": "",
    }
    assert (env.infos["player_2"]["n_calls"], env.infos["player_2"]["call_cards"]) == (2, 0)


def test_step_cap_truncates():
    env = make(4, max_steps=25)
    env.reset(seed=1)
    play_randomly_to_the_end(env, np.random.default_rng(0), max_iter=200)
    assert not env.agents


def test_text_helpers_round_trip():
    for action in range(cards.n_actions(rule_library.N_RULES)):
        text = cards.action_to_text(action, rule_library.N_RULES)
        assert cards.text_to_action(text, rule_library.N_RULES) == action
    assert cards.text_to_action("say That's the badger", rule_library.N_RULES) == cards.SAY_0 + cards.BADGER
    assert cards.text_to_action("play td", rule_library.N_RULES) == cards.card_id("10D")
    assert cards.card_name(cards.JOKER) == "JK" and cards.card_id("jk") == cards.JOKER
    assert cards.n_decks_for(3) == 1 and cards.n_decks_for(4) == 2 and cards.n_decks_for(8) == 3


def test_clone_and_restore_continue_identically():
    env = make(4, num_rounds=2, rule_choice="sampled")
    env.reset(seed=9)
    rng = np.random.default_rng(2)
    for _ in range(40):
        env.step(random_legal(rng, env.observe(env.agent_selection)["action_mask"]))
    snapshot = pickle.loads(pickle.dumps(env.get_state()))
    trail = []
    for _ in range(80):
        if not env.agents or env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            break
        action = random_legal(rng, env.observe(env.agent_selection)["action_mask"])
        env.step(action)
        trail.append((action, env.observe(env.agent_selection)["observation"].tobytes(), dict(env.rewards)))
    other = make(4, num_rounds=2, rule_choice="sampled")
    other.set_state(snapshot)
    for action, observation, rewards in trail:
        other.step(action)
        assert other.observe(other.agent_selection)["observation"].tobytes() == observation
        assert other.rewards == rewards


def test_render_announces_the_calls_as_the_mao_master():
    env = scenario(
        4, hands={0: ["5S", "KS", "QS"], **HANDS}, pile=["5H"], render_mode="ansi", named_suit="hearts"
    )
    turn(env, "play 5S", "end")
    text = env.render()
    assert "player_0 plays 5S." in text
    assert "Mao Master: \"Failure to say '<name of the card>'.\" (player_0 takes 1 card)" in text
    assert "> player_1: 2D 3D 4D 5D" in text
    turn(env, "draw", "say card-name", "end")
    assert "player_1 draws, saying 'Two of diamonds'" not in env.render()  # names only for a card played


# ----------------------------------------------------------------------------- bad input


def test_illegal_actions_raise_errors_naming_them():
    env = scenario(4, hands={0: ["9H", "KS", "QS"], **HANDS}, pile=["5H"])
    last = cards.n_actions(rule_library.N_RULES) - 1
    with pytest.raises(IllegalActionError, match=rf"action 200 is out of range 0\.\.{last}"):
        env.step(200)
    with pytest.raises(IllegalActionError, match=r"action 2 \(play 3C\) is not legal now"):
        env.step(2)
    with pytest.raises(IllegalActionError, match="must be an integer id"):
        env.step("draw")
    with pytest.raises(IllegalActionError, match=r"\(end\) is not legal"):
        env.step(cards.END_TURN)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n_players": 9}, ValueError, "n_players must be in 2..8"),
        ({"n_players": "4"}, TypeError, "n_players must be an integer"),
        ({"mask": "legal"}, ValueError, "mask must be one of"),
        ({"reasons": "all"}, ValueError, "reasons must be one of"),
        ({"rule_choice": "vote"}, ValueError, "rule_choice must be one of"),
        ({"rounds": "oxford"}, ValueError, "rounds must be one of"),
        ({"talking": "yes"}, TypeError, "talking must be a bool"),
        ({"seven_phrase": "thanks"}, ValueError, "seven_phrase must be one of"),
        ({"obs_type": "full"}, ValueError, "obs_type must be one of"),
        ({"win_reward": "1"}, TypeError, "win_reward must be a number"),
        ({"max_sub_actions": 2}, ValueError, "max_sub_actions must be in 3"),
        ({"render_mode": "rgb_array"}, ValueError, "render_mode must be None or one of"),
    ],
)
def test_wrong_options_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        mao_v0.raw_env(**kwargs)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"hands": {0: ["9X"]}}, ValueError, "unknown card name '9X'"),
        ({"pile": ["QQ"]}, ValueError, "unknown card name 'QQ'"),
        ({"pile": "5H"}, TypeError, "pile must be a list of card names"),
        ({"hands": {0: ["5H"] * 3}}, ValueError, "more copies of 5H than 2 deck"),
        ({"hands": {7: ["5H"]}}, ValueError, "hands seat must be in 0..3"),
        ({"rules": [99]}, ValueError, r"rule id must be in 0\.\.44"),
        ({"rules": [3, 3]}, ValueError, "rule 3 is listed twice"),
        ({"fixed_rules": [1]}, ValueError, "fixed_rules needs rule_choice='fixed'"),
        ({"named_suit": "stars"}, ValueError, "named_suit must be one of"),
        ({"direction": 2}, ValueError, "direction must be 1 or -1"),
        ({"dealer": 1}, ValueError, r"unknown reset option\(s\) \['dealer'\]"),
        ("hands", TypeError, "options must be a dict"),
    ],
)
def test_wrong_scenarios_are_named(options, error, message):
    env = make(4)
    with pytest.raises(error, match=message):
        env.reset(seed=0, options=options)


def test_unknown_card_and_action_texts_are_named():
    with pytest.raises(ValueError, match="unknown card name '1Z'"):
        cards.text_to_action("play 1Z", rule_library.N_RULES)
    with pytest.raises(ValueError, match="unknown phrase 'hello'"):
        cards.text_to_action("say hello", rule_library.N_RULES)
    with pytest.raises(ValueError, match="cannot read action 'jump'"):
        cards.text_to_action("jump", rule_library.N_RULES)
    with pytest.raises(ValueError, match=r"rule 45 is out of range 0\.\.44"):
        cards.text_to_action("rule 45", rule_library.N_RULES)
    with pytest.raises(TypeError, match="card name must be a string"):
        cards.card_id(5)
    with pytest.raises(ValueError, match="rule must be an integer"):
        rule_library.describe_rule(45)


def test_set_state_rejects_foreign_states():
    env = make(4)
    env.reset(seed=0)
    with pytest.raises(TypeError, match="expects the dict returned by get_state"):
        env.set_state({"hands": 1})
    three = make(3)
    three.reset(seed=0)
    with pytest.raises(ValueError, match="different number of players"):
        env.set_state(three.get_state())
