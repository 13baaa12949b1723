"""Both games' ``env()`` as PettingZoo's classic games build theirs (issue 23): an illegal action
ends the episode with the documented penalty and says why, ``raw_env()`` still raises;
``infos`` keep the same keys and shapes at every step; ``render(seat=k)`` works through the
wrappers; the options are explicit and documented once; every package has a ``__version__``.

The third-party libraries that rely on these (PettingZoo's ``parallel_seed_test``, Tianshou,
RLlib) run in ``test_interop_multiagent.py`` and ``tests/distributed/test_rllib_pettingzoo.py``.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import inspect
import pickle

import numpy as np
import pytest
from pettingzoo.utils.env_logger import EnvLogger

from cardgame_core import version
from cardgame_core.aec import IllegalActionError
from cardgame_core.options_doc import field_docs
from madiao_env import madiao_v0
from madiao_env import options as madiao_options
from madiao_env.env import ILLEGAL_ACTION_STAKES
from madiao_mao.agents.base import Agent
from mao_env import mao_v0
from mao_env import options as mao_options
from mao_env.env import ILLEGAL_ACTION_REWARD

MODULES = {"madiao": madiao_v0, "mao": mao_v0}
# Options of each game under which the checks run (Mao's step cap keeps random games short).
CONFIGS = {
    "madiao": [{"stake": 2.0}, {"episode": "match", "obs_type": "history", "face_up_discard": True}],
    "mao": [
        {"n_players": 3, "max_steps": 400},
        {"calls": "players", "reasons": "revealed", "max_steps": 400},
    ],
}
OPTIONS_CLASSES = {"madiao": madiao_options.MadiaoOptions, "mao": mao_options.MaoOptions}
PACKAGES = ("cardgame_core", "madiao_env", "mao_env", "agents", "training", "benchmarks", "madiao_mao_web")


@pytest.fixture(autouse=True)
def quiet_pettingzoo_warnings():
    """PettingZoo's wrapper prints a warning on every illegal move; these tests make them."""
    EnvLogger.suppress_output()
    yield
    EnvLogger.unsuppress_output()


def penalty(game: str, config: dict) -> float:
    if game == "madiao":
        return -ILLEGAL_ACTION_STAKES * config.get("stake", 1.0)
    return ILLEGAL_ACTION_REWARD


def first_illegal(env) -> int:
    return int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"] == 0)[0])


def play_out(env, seed: int) -> tuple[dict[str, float], list]:
    """Random legal play to the end (dead steps included): each agent's total reward and, per
    step, every live agent's info."""
    rng = np.random.default_rng(seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    infos = []
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        totals[agent] += reward
        infos.append({name: dict(info) for name, info in env.infos.items()})
        if terminated or truncated:
            env.step(None)
        else:
            env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
    return totals, infos


# ----------------------------------------------------------------------------- illegal actions


@pytest.mark.parametrize(("game", "config"), [(g, c) for g, configs in CONFIGS.items() for c in configs])
def test_an_illegal_action_ends_the_episode_with_the_penalty_and_the_reason(game, config):
    raw = MODULES[game].raw_env(**config)
    raw.reset(seed=3)
    illegal = first_illegal(raw)
    with pytest.raises(IllegalActionError) as raised:
        raw.step(illegal)
    env = MODULES[game].env(**config)
    env.reset(seed=3)
    offender = env.agent_selection
    quiet = {name: dict(info) for name, info in env.infos.items()}
    env.step(illegal)
    assert all(env.terminations.values()) and all(env.truncations.values())
    assert env.infos[offender] == {
        **quiet[offender],
        "illegal_action": True,
        "illegal_action_error": str(raised.value),
    }
    assert {name: info for name, info in env.infos.items() if name != offender} == {
        name: info for name, info in quiet.items() if name != offender
    }
    totals, _ = play_out(env, seed=0)  # every agent steps out with None
    assert totals == {name: penalty(game, config) if name == offender else 0.0 for name in totals}
    assert not env.agents
    # The next episode is an ordinary one: exactly what a fresh env plays from the same seed.
    env.reset(seed=5)
    fresh = MODULES[game].env(**config)
    fresh.reset(seed=5)
    assert play_out(env, seed=1) == play_out(fresh, seed=1)


@pytest.mark.parametrize("game", sorted(MODULES))
def test_what_is_not_an_action_id_raises_from_env_too_and_changes_nothing(game):
    env = MODULES[game].env(**CONFIGS[game][0])
    env.reset(seed=1)
    before = pickle.dumps(env.unwrapped.get_state())
    legal = int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0])
    # Both pass PettingZoo's AssertOutOfBoundsWrapper (Discrete contains True and 0-d int arrays).
    for garbage in (True, np.array(legal)):
        with pytest.raises(IllegalActionError, match="integer id"):
            env.step(garbage)
        assert pickle.dumps(env.unwrapped.get_state()) == before
    env.step(legal)
    assert not any(env.terminations.values())


@pytest.mark.parametrize("game", sorted(MODULES))
def test_raw_env_still_raises_and_changes_nothing(game):
    raw = MODULES[game].raw_env(**CONFIGS[game][0])
    raw.reset(seed=2)
    before = pickle.dumps(raw.get_state())
    illegal = first_illegal(raw)
    with pytest.raises(IllegalActionError, match=rf"action {illegal} \(.*\) is not legal now"):
        raw.step(illegal)
    assert pickle.dumps(raw.get_state()) == before


@pytest.mark.parametrize(("game", "config"), [(g, c) for g, configs in CONFIGS.items() for c in configs])
def test_env_and_raw_env_play_legal_games_identically(game, config):
    for seed in range(3):
        wrapped, raw = MODULES[game].env(**config), MODULES[game].raw_env(**config)
        wrapped.reset(seed=seed)
        raw.reset(seed=seed)
        assert play_out(wrapped, seed) == play_out(raw, seed)


# ----------------------------------------------------------------------------- infos


def info_shape(info: dict) -> dict[str, tuple[type, tuple]]:
    return {key: (type(value), np.shape(value)) for key, value in info.items()}


@pytest.mark.parametrize(("game", "config"), [(g, c) for g, configs in CONFIGS.items() for c in configs])
def test_infos_have_the_same_keys_and_shapes_at_every_step(game, config):
    env = MODULES[game].env(**config)
    expected = None
    steps = 0
    for seed in range(3):
        env.reset(seed=seed)
        _, infos = play_out(env, seed)
        for step in infos:
            for info in step.values():
                expected = expected or info_shape(info)
                assert info_shape(info) == expected, (seed, info)
                steps += 1
    assert steps > 100
    assert {"illegal_action", "illegal_action_error"} <= set(expected)


def test_madiao_settlement_lines_are_last_settlement_and_the_infos_summarise_them():
    env = madiao_v0.env(episode="match", stake=0.5)
    env.reset(seed=4)
    assert env.unwrapped.last_settlement is None
    assert env.infos["player_0"]["hand_number"] == -1
    rng = np.random.default_rng(4)
    settlements = 0
    while not all(env.terminations.values()):
        before = env.unwrapped.last_settlement
        env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
        settlement = env.unwrapped.last_settlement
        if settlement is before:
            continue
        settlements += 1
        by_lines = np.zeros(4)
        for line in settlement["lines"]:
            by_lines[line["payer"]] -= line["stakes"]
            by_lines[line["payee"]] += line["stakes"]
        assert by_lines.tolist() == pytest.approx(settlement["payoffs"])
        summary = (settlement["hand_number"], settlement["payoffs"])
        assert all((info["hand_number"], info["payoffs"]) == summary for info in env.infos.values())
    assert settlements >= 4  # a match: every seat banker once


def test_mao_calls_are_last_calls_and_the_infos_count_them():
    env = mao_v0.env(n_players=3, max_steps=400)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    steps_with_calls = 0
    while not (all(env.terminations.values()) or all(env.truncations.values())):
        env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
        calls = env.unwrapped.last_calls
        steps_with_calls += bool(calls)
        for agent, info in env.infos.items():
            taken = sum(call["cards"] for call in calls if call["player"] == agent)
            assert (info["n_calls"], info["call_cards"]) == (len(calls), taken)
    assert steps_with_calls > 5


# ----------------------------------------------------------------------------- render


@pytest.mark.parametrize("game", sorted(MODULES))
def test_render_seat_works_through_the_wrappers(game):
    env = MODULES[game].env(render_mode="ansi")
    with pytest.raises(AssertionError, match="reset"):  # PettingZoo's order check, seat or not
        env.render(seat=0)
    raw = MODULES[game].raw_env(render_mode="ansi")
    env.reset(seed=2)
    raw.reset(seed=2)
    for seat in range(len(env.possible_agents)):
        assert env.render(seat=seat) == raw.render(seat=seat)
    assert env.render() == raw.render()
    assert str(env) == str(raw)


# ----------------------------------------------------------------------------- options and version


@pytest.mark.parametrize("game", sorted(MODULES))
def test_env_and_raw_env_have_the_same_explicit_documented_options(game):
    module = MODULES[game]
    wrapped_parameters = inspect.signature(module.env).parameters
    raw_parameters = inspect.signature(module.raw_env).parameters
    assert list(wrapped_parameters) == list(raw_parameters)
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in wrapped_parameters.values())
    options = [field.name for field in dataclasses.fields(OPTIONS_CLASSES[game])]
    docs = field_docs(OPTIONS_CLASSES[game])
    assert sorted(docs) == sorted(options)  # every option documented once, on its field
    assert set(options) | {"render_mode"} == set(wrapped_parameters)
    for entry in (module.env, module.raw_env):
        for name in wrapped_parameters:
            assert f"\n    {name}: " in entry.__doc__, (entry, name)
        for name in options:
            assert docs[name].split()[0] in entry.__doc__.split(f"\n    {name}: ")[1]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_has_the_distribution_version(package):
    assert importlib.import_module(package).__version__ == importlib.metadata.version("madiao-mao")


def test_an_uninstalled_checkout_reads_its_version_from_pyproject(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "madiao-mao"\nversion = "9.8.7"\n')
    assert version._checkout_version(pyproject) == "9.8.7"
    pyproject.write_text('[project]\nname = "something-else"\nversion = "1.0"\n')
    assert version._checkout_version(pyproject) == version.UNKNOWN_VERSION
    assert version._checkout_version(tmp_path / "missing.toml") == version.UNKNOWN_VERSION


# ----------------------------------------------------------------------------- the project's own play


class IllegalMover(Agent):
    """A buggy agent: the first action its mask forbids."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.flatnonzero(action_mask == 0)[0])


def test_the_projects_play_loops_stop_at_an_agents_illegal_move_rather_than_score_it():
    # Tournaments, match and play run on raw_env(): a bug in an agent raises, it is never a lost hand.
    from madiao_mao.training.madiao.matches import make_env, play_episode
    from madiao_mao.training.mao.play import make_mao_env, play_mao_game

    with pytest.raises(IllegalActionError, match="is not legal now"):
        play_episode(make_env(), [IllegalMover()] * 4, seed=0)
    with pytest.raises(IllegalActionError, match="is not legal now"):
        play_mao_game(make_mao_env(3, 1), [IllegalMover()] * 3, None, seed=0, write=lambda _: None)
