"""MadiaoOptions: one validated options object that the AEC env, the vector env and the play-outs
build from (issue 10)."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from madiao_env import env as env_module
from madiao_env import madiao_v0, state
from madiao_env.options import MadiaoOptions
from madiao_env.vector import MadiaoVectorEnv

BAD_OPTIONS = [
    ({"obs_type": "pixels"}, ValueError, "obs_type"),
    ({"obs_type": ["summary"]}, ValueError, "obs_type"),
    ({"episode": "season"}, ValueError, "episode"),
    ({"stake": "1"}, TypeError, "stake"),
    ({"stake": True}, TypeError, "stake"),
    ({"stake": 0}, ValueError, "stake"),
    ({"stake": float("nan")}, ValueError, "stake"),
    ({"stake": 10**400}, ValueError, "stake"),
    ({"max_redeals": 1.5}, TypeError, "max_redeals"),
    ({"max_redeals": -1}, ValueError, "max_redeals"),
    ({"max_redeals": 2**31}, ValueError, "max_redeals"),
    ({"face_up_discard": 1}, TypeError, "face_up_discard"),
]
VARIANTS = [
    {},
    {"obs_type": "history"},
    {"obs_type": "record", "episode": "match"},
    {"episode": "match", "face_up_discard": True},
    {"max_redeals": 2, "stake": 3},
    {"max_redeals": np.int64(0), "face_up_discard": np.bool_(True), "stake": np.float32(0.5)},
]


@pytest.mark.parametrize(("kwargs", "error", "field"), BAD_OPTIONS)
def test_every_env_rejects_a_bad_option_with_the_options_message(kwargs, error, field):
    with pytest.raises(error, match=field) as from_options:
        MadiaoOptions(**kwargs)
    for build in (lambda: madiao_v0.raw_env(**kwargs), lambda: MadiaoVectorEnv(2, **kwargs)):
        with pytest.raises(error) as from_env:
            build()
        assert str(from_env.value) == str(from_options.value)


@pytest.mark.parametrize("kwargs", VARIANTS)
def test_config_row_and_obs_size_are_the_envs(kwargs):
    options = MadiaoOptions(**kwargs)
    env = madiao_v0.raw_env(**kwargs)
    env.reset(seed=0)
    snapshot = env.get_state()
    row = options.config_row()
    assert row.dtype == np.int32 and np.array_equal(row, snapshot["config"])
    assert snapshot["stake"] == options.stake and isinstance(options.stake, float)
    assert env.observation_space("player_0")["observation"].shape == (options.obs_size,)
    venv = MadiaoVectorEnv(2, seed=0, **kwargs)
    assert venv.obs_dim == options.obs_size
    venv.reset()
    assert np.array_equal(venv.get_game_state(0)["config"], row)
    assert venv.env_kwargs == options.as_kwargs()
    assert {k: v for k, v in env.env_kwargs.items() if k != "render_mode"} == options.as_kwargs()


def test_options_are_frozen_normalised_and_picklable():
    options = MadiaoOptions(stake=2, max_redeals=np.int32(3), face_up_discard=np.bool_(False))
    normalised_types = (type(options.stake), type(options.max_redeals), type(options.face_up_discard))
    assert normalised_types == (float, int, bool)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.stake = 5.0  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(options)) == options


def test_vector_env_builds_without_an_aec_env(monkeypatch):
    def no_aec_env(*args, **kwargs):
        raise AssertionError("MadiaoVectorEnv built an AEC env")

    monkeypatch.setattr(env_module.raw_env, "__init__", no_aec_env)
    venv = MadiaoVectorEnv(3, seed=5, episode="match")
    step = venv.reset()
    snapshot = venv.get_game_state(1)
    assert snapshot["agents"] == list(state.AGENTS)
    assert snapshot["agent_selection"] == state.AGENTS[int(step.to_act[1])]


def test_the_state_version_has_one_home():
    # vector.py and rollout.py used to read the env's private copy of it.
    assert not hasattr(env_module, "_STATE_VERSION")


@pytest.mark.parametrize("kwargs", VARIANTS)
def test_a_config_row_gives_back_its_options(kwargs):
    options = MadiaoOptions(**kwargs)
    assert MadiaoOptions.from_config_row(options.config_row(), options.stake) == options


@pytest.mark.parametrize(("column", "value"), [(0, 2), (1, -2), (2, 5), (3, -1), (3, 3)])
def test_playouts_reject_a_snapshot_config_no_options_make(column, value):
    from madiao_env.rollout import new_hand_snapshot, random_playouts

    snapshot = new_hand_snapshot(seed=1)
    snapshot["config"] = snapshot["config"].copy()
    snapshot["config"][column] = value
    with pytest.raises(ValueError, match="config"):
        random_playouts(snapshot, 2, seed=0)
