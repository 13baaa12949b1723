"""The Madiao state as one named tuple (issue 10): created by ``madiao_env.state.new_state``, the
one argument every kernel takes, held by the envs, and the snapshot's ``arrays`` in field order."""

from __future__ import annotations

import numpy as np

from cardgame_core.jit import compiled_for
from madiao_env import cards, core, madiao_v0, state
from madiao_env.rollout import new_hand_snapshot, random_playouts
from madiao_env.vector import MadiaoVectorEnv


def test_new_state_is_a_named_tuple_laid_out_like_a_snapshot():
    games = state.new_state(3)
    assert isinstance(games, state.MadiaoState)
    assert tuple(name for name, _, _ in state.ARRAY_LAYOUT) == state.MadiaoState._fields
    for name, shape, dtype in state.ARRAY_LAYOUT:
        field = getattr(games, name)
        assert field.shape == (3, *shape[1:]) and field.dtype == dtype
        assert field.flags.c_contiguous and not field.any()


def test_aec_env_holds_the_named_state_and_snapshots_its_fields_in_order():
    env = madiao_v0.raw_env()
    env.reset(seed=5)
    env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    assert isinstance(env._state, state.MadiaoState)
    snapshot = state.MadiaoState(*env.get_state()["arrays"])
    for name in state.MadiaoState._fields:
        np.testing.assert_array_equal(getattr(snapshot, name), getattr(env._state, name))
    assert int(snapshot.ints[0, core.I_TO_ACT]) == env.possible_agents.index(env.agent_selection)


def test_set_state_writes_every_field_by_name():
    source = madiao_v0.raw_env(episode="match")
    source.reset(seed=9)
    for _ in range(6):
        source.step(int(np.flatnonzero(source.observe(source.agent_selection)["action_mask"])[-1]))
    target = madiao_v0.raw_env(episode="match")
    target.reset(seed=1)
    target.set_state(source.get_state())
    for name in state.MadiaoState._fields:
        np.testing.assert_array_equal(getattr(target._state, name), getattr(source._state, name))
    assert target.table() == source.table()  # the env's GameView reads the restored arrays


def test_vector_env_game_state_is_that_game_rows_of_each_field():
    venv = MadiaoVectorEnv(4, seed=2)
    venv.reset()
    assert isinstance(venv._state, state.MadiaoState)
    snapshot = state.MadiaoState(*venv.get_game_state(2)["arrays"])
    for name in state.MadiaoState._fields:
        np.testing.assert_array_equal(getattr(snapshot, name), getattr(venv._state, name)[2:3])


def test_kernels_take_the_state_as_one_argument():
    # The AEC reset, step and observe of one game through the public kernels with a MadiaoState.
    config = madiao_v0.raw_env().options.config_row()
    games = state.new_state(2)
    obs = np.zeros((2, core.SUMMARY_SIZE), dtype=np.int8)
    masks = np.zeros((2, cards.N_ACTIONS), dtype=np.int8)
    no_decks = np.full((2, cards.N_CARDS), -1, dtype=np.int8)
    seeds = np.array([11, 12], dtype=np.uint64)
    core.reset_games(games, config, seeds, np.array([0, 1]), no_decks, np.array([-1, -1]), obs, masks)
    assert (games.ints[:, core.I_TO_ACT] >= 0).all()
    actions = np.array([np.flatnonzero(masks[0])[0], -1], dtype=np.int64)
    before = games.ints[1].copy()
    core.step_games(games, config, actions, obs, masks)
    np.testing.assert_array_equal(games.ints[1], before)  # a skipped game is untouched
    assert games.ints[0, core.I_DECIDED] == 1


def test_playouts_read_the_named_state_of_a_snapshot():
    snapshot = new_hand_snapshot(seed=3)
    payoffs = random_playouts(snapshot, 5, seed=0)
    assert payoffs.shape == (5, 4)
    np.testing.assert_allclose(payoffs.sum(axis=1), 0.0)
    # The kernel on the snapshot's named state, called directly, gives the same stakes.
    net = np.empty((5, 4), dtype=np.int64)
    games = state.MadiaoState(*snapshot["arrays"])
    assert not core.random_playouts_from(games, snapshot["config"], np.uint64(0), net)
    np.testing.assert_array_equal(net * snapshot["stake"], payoffs)


def test_compiled_entry_point_computes_what_the_dispatching_kernel_does():
    env = madiao_v0.raw_env(obs_type="history")
    env.reset(seed=4)
    seats = np.array([env.possible_agents.index(env.agent_selection)], dtype=np.int64)
    outputs = []
    for compiled in (False, True):
        obs = np.zeros((1, env.options.obs_size), dtype=np.int8)
        masks = np.zeros((1, cards.N_ACTIONS), dtype=np.int8)
        arguments = (env._state, env._config, seats, obs, masks)
        kernel = compiled_for(core.observe_games, *arguments) if compiled else core.observe_games
        kernel(*arguments)
        outputs.append((obs, masks))
    np.testing.assert_array_equal(outputs[0][0], outputs[1][0])
    np.testing.assert_array_equal(outputs[0][1], outputs[1][1])
    assert outputs[0][0].any() and outputs[0][1].any()


def test_card_set_columns_and_config_slots_follow_one_naming_scheme():
    # card_sets columns are CS_*, ints columns I_*, config slots CFG_* (Mao's core: S_*/CFG_*).
    names = [name for name in dir(core) if name.isupper()]
    assert not [name for name in names if name.startswith("C_")]
    columns = {core.CS_HAND: 4, core.CS_FACE_UP: 4, core.CS_SLOUGHED: 4, core.CS_WON_WITH: 4, core.CS_RNG: 1}
    covered = sorted(start + k for start, width in columns.items() for k in range(width))
    assert covered == list(range(core.N_CARD_COLS))
    assert sorted(getattr(core, n) for n in names if n.startswith("CFG_")) == list(range(core.N_CONFIG))


def test_a_seat_gains_or_loses_against_the_other_side_in_one_helper():
    # The banker's lines go to or come from each player in seat order; a player's only the banker's.
    ints = np.zeros((1, core.N_INTS), dtype=np.int32)
    pending = np.zeros((1, core.MAX_PENDING, 5), dtype=np.int32)
    ints[0, core.I_BANKER] = 2
    for seat, gains in ((2, True), (2, False), (0, True), (3, False)):
        core._banker_line(ints, pending, np.int64(0), np.int64(seat), np.int64(5), np.int64(7), gains)
    lines = [tuple(row[2:4]) for row in pending[0, : ints[0, core.I_N_PENDING]].tolist()]
    assert lines == [(0, 2), (1, 2), (3, 2), (2, 0), (2, 1), (2, 3), (2, 0), (3, 2)]
    assert (pending[0, : len(lines), 4] == 5).all() and (pending[0, : len(lines), 1] == 7).all()
