"""MaoOptions: one validated options object that the AEC env and the batched env both build from."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from mao_env import core
from mao_env import env as mao_env_module
from mao_env import rules as rule_library
from mao_env.env import raw_env
from mao_env.options import MaoOptions, starting_rules
from mao_env.vector import MaoVectorEnv

VARIANTS = [
    {},
    {"n_players": 3, "seven_turn_ends": True, "seven_phrase": "thank you", "talking": False},
    {"n_players": 7, "rounds": "cambridge", "num_rounds": 4, "rule_choice": "sampled", "max_sub_actions": 9},
    {"n_players": 5, "rule_choice": "fixed", "mask": "rules", "reasons": "revealed", "n_events": 3},
    {"obs_type": "summary", "win_reward": 2, "penalty_card_reward": -0.5},
    {"n_players": 6, "calls": "players", "forgotten_mao_cards": 1},
]

BAD_OPTIONS = [
    {"n_players": 9},
    {"n_players": True},
    {"num_rounds": 0},
    {"max_steps": 2**31},
    {"mask": "all"},
    {"reasons": ["calls"]},
    {"rule_choice": "random"},
    {"rounds": "london"},
    {"seven_turn_ends": 1},
    {"seven_phrase": "sorry"},
    {"talking": "yes"},
    {"calls": "democratic"},
    {"forgotten_mao_cards": 2},
    {"forgotten_mao_cards": 3.0},
    {"max_sub_actions": 2},
    {"n_events": 17},
    {"obs_type": "full"},
    {"win_reward": float("nan")},
    {"penalty_card_reward": "1"},
]


@pytest.mark.parametrize("kwargs", VARIANTS)
def test_the_env_takes_its_options_from_one_options_object(kwargs):
    options = MaoOptions(**kwargs)
    env = raw_env(**kwargs)
    assert env.options == options
    for field in dataclasses.fields(MaoOptions):
        attribute = "mask_mode" if field.name == "mask" else field.name
        assert getattr(env, attribute) == getattr(options, field.name)
    assert (env.n_decks, env.obs_dim, env.possible_agents) == (
        options.n_decks,
        options.obs_dim,
        options.possible_agents,
    )
    env.reset(seed=3)
    # The env's game runs on the config row the options make (the state columns aside).
    config_columns = [core.S_N_PLAYERS, *range(core.CFG_SEVEN_TURN_ENDS, core.CONFIG_END)]
    assert np.array_equal(env._state[3][0, config_columns], options.config_row()[config_columns])


@pytest.mark.parametrize("kwargs", VARIANTS)
def test_the_config_row_names_every_option(kwargs):
    options = MaoOptions(**kwargs)
    row = options.config_row()
    assert row[core.S_N_PLAYERS] == options.n_players
    assert row[core.CFG_N_ROUNDS] == options.num_rounds
    assert row[core.CFG_MAX_SUB_ACTIONS] == options.max_sub_actions
    assert row[core.CFG_SEVEN_TURN_ENDS] == options.seven_turn_ends
    assert row[core.CFG_THANK_YOU] == (options.seven_phrase == "thank you")
    assert row[core.CFG_TALKING] == options.talking
    assert row[core.CFG_CAMBRIDGE] == (options.rounds == "cambridge")
    assert row[core.CFG_PLAYERS_CALL] == (options.calls == "players")
    assert row[core.CFG_FORGOTTEN_MAO_CARDS] == options.forgotten_mao_cards
    assert row[core.CFG_N_DECKS] == options.n_decks
    env_parameters = inspect.signature(raw_env.__init__).parameters
    assert [name for name in env_parameters if name not in ("self", "render_mode")] == [
        field.name for field in dataclasses.fields(MaoOptions)
    ]
    for field in dataclasses.fields(MaoOptions):
        assert env_parameters[field.name].default == field.default


def test_options_are_frozen_and_normalised():
    options = MaoOptions(n_players=np.int64(3), win_reward=np.float32(2.0), seven_turn_ends=np.bool_(True))
    assert type(options.n_players) is int and type(options.win_reward) is float
    assert type(options.seven_turn_ends) is bool
    assert MaoOptions(obs_type="summary", n_events=5).n_events == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.n_players = 4  # type: ignore[misc]


@pytest.mark.parametrize("bad", BAD_OPTIONS)
def test_bad_options_raise_the_same_error_everywhere(bad):
    with pytest.raises((TypeError, ValueError)) as from_options:
        MaoOptions(**bad)
    name = next(iter(bad))
    assert name in str(from_options.value)
    for build in (lambda: raw_env(**bad), lambda: MaoVectorEnv(2, **bad)):
        with pytest.raises(type(from_options.value)) as raised:
            build()
        assert str(raised.value) == str(from_options.value)


def test_the_vector_env_builds_no_aec_env(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("MaoVectorEnv built an AEC env")

    monkeypatch.setattr(mao_env_module.raw_env, "__init__", refuse)
    venv = MaoVectorEnv(2, seed=0, n_players=3, rules=[4, (20, 1)], rule_choice="fixed", fixed_rules=[7])
    assert venv.options == MaoOptions(n_players=3, rule_choice="fixed")
    venv.reset()
    assert venv.game_rules(0) == [(4, -1), (20, 1)]


@pytest.mark.parametrize(
    ("rules", "fixed_rules", "rule_choice"),
    [((), (), "agent"), ([3, (11, 2)], (), "agent"), ([(0, -1)], [5, 9, 0], "fixed"), ((), [1], "fixed")],
)
def test_starting_rules_are_what_an_aec_reset_leaves(rules, fixed_rules, rule_choice):
    options = MaoOptions(n_players=4, rule_choice=rule_choice)
    env = raw_env(4, rule_choice=rule_choice)
    reset_options = {}
    if rules:
        reset_options["rules"] = list(rules)
    if fixed_rules:
        reset_options["fixed_rules"] = list(fixed_rules)
    env.reset(seed=0, options=reset_options)
    assert np.array_equal(starting_rules(options, rules, fixed_rules), env._state[4][0])


@pytest.mark.parametrize(
    ("rules", "fixed_rules", "message"),
    [
        ("12", (), "rules must be a sequence"),
        ([rule_library.N_RULES], (), "rule id"),
        ([1, 1], (), "listed twice"),
        ([(1, 9)], (), "rule author"),
        ((), [2], "fixed_rules needs rule_choice='fixed'"),
    ],
)
def test_bad_starting_rules_name_the_field(rules, fixed_rules, message):
    with pytest.raises((TypeError, ValueError), match=message):
        starting_rules(MaoOptions(), rules, fixed_rules)
    with pytest.raises((TypeError, ValueError), match=message):
        MaoVectorEnv(2, rules=rules, fixed_rules=fixed_rules)
