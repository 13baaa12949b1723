"""The Mao state as one named tuple (issue 10): created by ``mao_env.state.new_state``, the one
argument every kernel takes, held by the envs, and a snapshot's ``arrays`` in field order; the
compiled entry points the envs call compute exactly what Numba's dispatching kernels do."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from cardgame_core.jit import compiled_for
from mao_env import cards, core, mao_v0, state
from mao_env import rules as rule_library
from mao_env.options import MaoOptions
from mao_env.vector import MaoVectorEnv

LIBRARY = rule_library.LIBRARY
PUBLIC_KERNELS = (
    core.reset_game,
    core.step_game,
    core.step_rewards,
    core.action_mask,
    core.observe,
    core.vector_reset,
    core.vector_step,
    core.observe_games,
)


def _first_legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def _copy(games: state.MaoState) -> state.MaoState:
    return state.MaoState(*(field.copy() for field in games))


def _assert_same_state(a: state.MaoState, b: state.MaoState) -> None:
    for name in state.MaoState._fields:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_new_state_is_a_named_tuple_laid_out_like_a_snapshot():
    games = state.new_state(3)
    assert isinstance(games, state.MaoState)
    assert state.MaoState._fields == state.STATE_KEYS
    for name in state.MaoState._fields:
        field = getattr(games, name)
        dtype, shape = state.ARRAY_SPECS[name]
        assert field.shape == (3, *shape) and field.dtype == dtype and field.flags.c_contiguous
    assert (games.rules == -1).all()  # no rule active, no author, an empty queue
    assert not any(field.any() for name, field in zip(games._fields, games, strict=True) if name != "rules")


def test_every_public_kernel_takes_the_state_first_and_a_handful_of_arguments():
    for kernel in PUBLIC_KERNELS:
        parameters = list(inspect.signature(kernel.py_func).parameters)
        assert parameters[0] == "state", kernel.__name__
        assert len(parameters) <= 7, (kernel.__name__, parameters)
    # vector_step took 29 positional arrays and scalars before the state was one argument.
    assert list(inspect.signature(core.vector_step.py_func).parameters) == [
        "state",
        "library",
        "actions",
        "settings",
        "out",
    ]


def test_config_slots_and_state_columns_follow_one_naming_scheme():
    # Config slots of the scalars row are CFG_*, scalars columns S_*; C_ means nothing in Mao.
    names = [name for name in dir(core) if name.isupper()]
    assert not [name for name in names if name.startswith("C_")]
    config = sorted(getattr(core, name) for name in names if name.startswith("CFG_"))
    assert config == list(range(core.CFG_SEVEN_TURN_ENDS, core.CFG_SEVEN_TURN_ENDS + len(config)))
    assert not {getattr(core, n) for n in names if n.startswith("S_")} & set(config)  # no slot shared
    assert config[-1] < core.N_SCALARS


def test_the_kernels_step_a_game_of_a_named_state_and_leave_the_other_alone():
    options = MaoOptions(n_players=4, num_rounds=2)
    games = state.new_state(2)
    options.write_config(games.scalars)
    core.reset_game(games, 0, 11)
    core.reset_game(games, 1, 12)
    untouched = [field[1].copy() for field in games]
    mask = np.zeros(cards.n_actions(rule_library.N_RULES), dtype=np.int8)
    core.action_mask(games, LIBRARY, 0, False, mask)
    rng = np.random.default_rng(0)
    rewards = np.zeros(options.n_players)
    observation = np.zeros(options.obs_dim, dtype=np.float32)
    for _ in range(200):
        flags = core.step_game(games, LIBRARY, 0, _first_legal(mask, rng), False, 10_000, mask)
        if flags & core.STEP_REWARDS:
            core.step_rewards(games, 0, 1.0, -0.1, rewards)
        if flags & core.STEP_DONE:
            break
    core.observe(games, LIBRARY, 0, 1, options.n_events, options.reasons_code, observation)
    assert games.scalars[0, core.S_STEP] > 0 and observation.any()
    for before, after in zip(untouched, games, strict=True):
        np.testing.assert_array_equal(after[1], before)


def test_the_aec_env_holds_the_named_state_and_snapshots_its_fields_in_order():
    env = mao_v0.raw_env(n_players=3)
    env.reset(seed=5)
    env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    assert isinstance(env._state, state.MaoState)
    arrays = env.get_state()["arrays"]
    assert tuple(arrays) == state.MaoState._fields
    _assert_same_state(state.MaoState(**arrays), env._state)


def test_a_snapshot_round_trips_and_the_game_continues_identically():
    source = mao_v0.raw_env(n_players=4, num_rounds=3, rule_choice="sampled")
    source.reset(seed=9)
    rng = np.random.default_rng(1)
    for _ in range(60):
        source.step(_first_legal(source.observe(source.agent_selection)["action_mask"], rng))
    target = mao_v0.raw_env(n_players=4, num_rounds=3, rule_choice="sampled")
    target.reset(seed=1)
    target.set_state(source.get_state())
    _assert_same_state(target._state, source._state)
    for _ in range(300):
        if not source.agents:
            break
        agent = source.agent_selection
        assert target.agent_selection == agent
        seen, seen_again = source.observe(agent), target.observe(agent)
        np.testing.assert_array_equal(seen["observation"], seen_again["observation"])
        np.testing.assert_array_equal(seen["action_mask"], seen_again["action_mask"])
        if source.terminations[agent] or source.truncations[agent]:
            action = None
        else:
            action = _first_legal(seen["action_mask"], rng)
        source.step(action)
        target.step(action)
        assert source.rewards == target.rewards
    _assert_same_state(target._state, source._state)


def test_a_vector_game_state_is_that_game_rows_of_each_field():
    venv = MaoVectorEnv(4, seed=2, n_players=3)
    venv.reset()
    assert isinstance(venv._state, state.MaoState)
    arrays = venv.get_game_state(2)["arrays"]
    for name in state.MaoState._fields:
        np.testing.assert_array_equal(arrays[name], getattr(venv._state, name)[2:3])


def test_compiled_entry_points_compute_what_the_dispatching_kernels_do():
    options = MaoOptions(n_players=5, num_rounds=3, reasons="revealed", rule_choice="sampled")
    games = state.new_state(1)
    options.write_config(games.scalars)
    core.reset_game(games, 0, 123)
    twin = _copy(games)
    n_actions = cards.n_actions(rule_library.N_RULES)
    masks = [np.zeros(n_actions, dtype=np.int8) for _ in range(2)]
    core.action_mask(games, LIBRARY, 0, False, masks[0])
    core.action_mask(twin, LIBRARY, 0, False, masks[1])
    step_arguments = (games, LIBRARY, 0, 0, False, 10_000, masks[0])
    compiled_step = compiled_for(core.step_game, *step_arguments)
    observations = [np.zeros(options.obs_dim, dtype=np.float32) for _ in range(2)]
    observe_arguments = (games, LIBRARY, 0, 0, options.n_events, options.reasons_code, observations[0])
    compiled_observe = compiled_for(core.observe, *observe_arguments)
    rng = np.random.default_rng(3)
    calls_seen = 0
    for _ in range(400):
        np.testing.assert_array_equal(masks[0], masks[1])
        action = _first_legal(masks[0], rng)
        flags = compiled_step(games, LIBRARY, 0, action, False, 10_000, masks[0])
        assert core.step_game(twin, LIBRARY, 0, action, False, 10_000, masks[1]) == flags
        seat = int(games.scalars[0, core.S_CURRENT])
        compiled_observe(games, LIBRARY, 0, seat, options.n_events, options.reasons_code, observations[0])
        core.observe(twin, LIBRARY, 0, seat, options.n_events, options.reasons_code, observations[1])
        np.testing.assert_array_equal(observations[0], observations[1])
        calls_seen += int(flags & core.STEP_CALLS != 0)
        if flags & core.STEP_DONE:
            break
    _assert_same_state(games, twin)
    assert calls_seen > 0  # the judge ran through both entry points, not only quiet steps


def test_the_vector_envs_compiled_step_computes_what_the_dispatching_kernel_does():
    kwargs = {"n_players": 4, "num_rounds": 1, "max_steps": 300}
    stepped, dispatched = (MaoVectorEnv(6, seed=4, copy=False, **kwargs) for _ in range(2))
    stepped.reset()
    dispatched.reset()
    rng = np.random.default_rng(5)
    ended = 0
    for _ in range(600):
        mask = stepped._action_mask
        actions = np.array([_first_legal(mask[game], rng) for game in range(6)], dtype=np.int64)
        actions[rng.integers(6)] = -1  # a skipped game too
        out = stepped.step(actions)
        core.vector_step(dispatched._state, LIBRARY, actions, dispatched._settings, dispatched._buffers)
        for name in out._fields:
            np.testing.assert_array_equal(getattr(out, name), getattr(dispatched, f"_{name}"), err_msg=name)
        ended += int((out.terminated | out.truncated).sum())
    _assert_same_state(stepped._state, dispatched._state)
    assert ended > 0  # auto-resets happened through both paths


@pytest.mark.parametrize("copy_kind", ["deepcopy", "pickle"])
def test_a_copied_vector_env_writes_masks_its_checks_read(copy_kind):
    import copy
    import pickle

    venv = MaoVectorEnv(3, seed=8, n_players=3)
    venv.reset()
    clone = copy.deepcopy(venv) if copy_kind == "deepcopy" else pickle.loads(pickle.dumps(venv))
    # The buffers the kernels write are the clone's own, the mask a view of its bool mask.
    assert clone._buffers.mask.base is clone._action_mask
    assert clone._buffers.observation is clone._observation
    rng = np.random.default_rng(0)
    for _ in range(50):
        actions = np.array([_first_legal(venv._action_mask[g], rng) for g in range(3)], dtype=np.int64)
        a, b = venv.step(actions), clone.step(actions)
        for name in a._fields:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_per_game_methods_share_the_base_class_checks_of_a_game_index():
    venv = MaoVectorEnv(2, seed=0, n_players=3)
    for method in ("game_rules", "get_game_state"):
        with pytest.raises(RuntimeError, match=rf"call reset\(\) before {method}\(\)"):
            getattr(venv, method)(0)
    venv.reset()
    snapshot = venv.get_game_state(np.int64(1))
    for call in (venv.game_rules, venv.get_game_state, lambda game: venv.set_game_state(game, snapshot)):
        with pytest.raises(TypeError, match="game must be an int, got bool True"):
            call(True)
        with pytest.raises(ValueError, match=r"game 2 is out of range 0\.\.1"):
            call(2)
    again = MaoVectorEnv(2, seed=0, n_players=3)
    again.reset()
    np.testing.assert_array_equal(again.game_seeds, venv.game_seeds)  # kept by the base class
    assert venv.game_seeds.dtype == np.uint64 and venv.game_seeds.any()
