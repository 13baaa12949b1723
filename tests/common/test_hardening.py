"""Hardening of the shared layers (issue 9): copies of the vector envs step like the original, no
action id is reinterpreted whatever its dtype, the Gymnasium adapter passes ``check_env`` with its
defaults, names actions as text and renders, and the first Numba compile is announced once.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import pathlib
import pickle
import subprocess
import textwrap

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cardgame_core.adapters import SingleAgentCardEnv
from cardgame_core.aec import IllegalActionError, check_action
from cardgame_core.vector import NO_ACTION, VectorStep
from madiao_env import cards as madiao_cards
from madiao_env import core as madiao_core
from madiao_env import madiao_v0
from madiao_env.vector import MadiaoVectorEnv
from madiao_mao.agents.base import RandomAgent
from mao_env import core as mao_core
from mao_env import mao_v0
from mao_env.vector import MaoVectorEnv
from tests.common.helpers import run_python

_spec = importlib.util.spec_from_file_location("toy_game", pathlib.Path(__file__).with_name("toy_game.py"))
toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(toy)

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]

# ============================================================================ item 2: vector copies

VECTOR_MAKERS = {
    "madiao": lambda copy_flag: MadiaoVectorEnv(6, seed=5, copy=copy_flag, obs_type="history"),
    "mao": lambda copy_flag: MaoVectorEnv(6, seed=5, copy=copy_flag, n_players=3, max_steps=120),
}


def madiao_cards_conserved(venv: MadiaoVectorEnv, game: int) -> bool:
    """The 40 cards: hands, played and sloughed sets and the stock hold each card exactly once."""
    card_sets, ints = venv.get_game_state(game)["arrays"][:2]
    sets = [int(card_sets[0, column]) for column in range(madiao_core.CS_HAND, madiao_core.CS_SLOUGHED + 4)]
    stock = [int(card) for card in ints[0, madiao_core.I_STOCK : madiao_core.I_STOCK + 8]]
    union = 0
    for card_set in sets:
        union |= card_set
    for card in stock:
        union |= 1 << card
    total = sum(bin(card_set).count("1") for card_set in sets) + len(stock)
    return total == madiao_cards.N_CARDS and union == (1 << madiao_cards.N_CARDS) - 1


def mao_cards_conserved(venv: MaoVectorEnv, game: int) -> bool:
    """Hands + stack + pile + the card on the table hold every card of the decks."""
    hands, scalars = venv._state.hands, venv._state.scalars
    on_table = 1 if scalars[game, mao_core.S_PLAYED] >= 0 else 0
    held = int(hands[game, : venv.n_players].sum()) + int(scalars[game, mao_core.S_STACK_SIZE])
    return held + int(scalars[game, mao_core.S_PILE_SIZE]) + on_table == 54 * venv.n_decks


CONSERVED = {"madiao": madiao_cards_conserved, "mao": mao_cards_conserved}


def random_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A legal action per game, with some games skipped (``-1``) to exercise the skip path."""
    actions = np.array([rng.choice(np.flatnonzero(row)) for row in mask], dtype=np.int64)
    actions[rng.random(len(actions)) < 0.1] = NO_ACTION
    return actions


def snapshot(step) -> tuple[np.ndarray, ...]:
    """A private copy of a step's arrays (with ``copy=False`` they are the env's own buffers)."""
    return tuple(np.array(field, copy=True) for field in step)


@pytest.mark.parametrize("game", sorted(VECTOR_MAKERS))
@pytest.mark.parametrize("copy_flag", [True, False])
def test_deepcopies_and_pickles_of_a_vector_env_step_exactly_like_the_original(game, copy_flag) -> None:
    original = VECTOR_MAKERS[game](copy_flag)
    rng = np.random.default_rng(0)
    step = original.reset()
    for _ in range(25):
        step = original.step(random_actions(step.action_mask, rng))
    mask = step.action_mask.copy()
    clones = {"deepcopy": copy.deepcopy(original), "pickle": pickle.loads(pickle.dumps(original))}
    episodes_ended = 0
    for step_index in range(300):
        if step_index % 50 == 7:
            # An illegal action for game 0 is refused by the original and by both copies alike.
            illegal = np.full(original.n_envs, NO_ACTION, dtype=np.int64)
            illegal[0] = int(np.flatnonzero(~mask[0])[0])
            for env in (original, *clones.values()):
                with pytest.raises(IllegalActionError, match="game 0: action"):
                    env.step(illegal)
        actions = random_actions(mask, rng)
        expected = snapshot(original.step(actions))
        for how, clone in clones.items():
            got = snapshot(clone.step(actions))
            for name, want, have in zip(VectorStep._fields, expected, got, strict=True):
                np.testing.assert_array_equal(have, want, err_msg=f"{how} copy, step {step_index}: {name}")
        mask = expected[1]
        episodes_ended += int((expected[4] | expected[5]).sum())
        if step_index % 25 == 0:
            for env in (original, *clones.values()):
                assert all(CONSERVED[game](env, g) for g in range(env.n_envs)), step_index
    assert episodes_ended > 0, "no episode ended: the auto-reset path of the copies was not exercised"


@pytest.mark.parametrize("game", sorted(VECTOR_MAKERS))
def test_a_copy_of_a_vector_env_refuses_what_the_original_refuses(game) -> None:
    original = VECTOR_MAKERS[game](True)
    step = original.reset()
    rng = np.random.default_rng(1)
    for _ in range(10):
        step = original.step(random_actions(step.action_mask, rng))
    clone = copy.deepcopy(original)
    # Make the masks of the clone and the original drift apart if the clone's mask were stale.
    for _ in range(10):
        actions = random_actions(step.action_mask, rng)
        step = original.step(actions)
        clone.step(actions)
    for game_index in range(original.n_envs):
        for action in np.flatnonzero(~step.action_mask[game_index])[:5]:
            actions = np.full(original.n_envs, NO_ACTION, dtype=np.int64)
            actions[game_index] = action
            with pytest.raises(IllegalActionError):
                clone.step(actions)


# ============================================================================ item 4: action dtypes

INTEGER_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def fresh_toy_env() -> toy.CountdownVectorEnv:
    env = toy.CountdownVectorEnv(3, seed=0)
    env.reset()
    return env


def toy_state(env: toy.CountdownVectorEnv) -> tuple[list[int], list[int]]:
    return env.counter.tolist(), env.seat.tolist()


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=lambda d: np.dtype(d).name)
def test_legal_actions_of_every_integer_dtype_mean_exactly_those_actions(dtype) -> None:
    reference, env = fresh_toy_env(), fresh_toy_env()
    actions = [1, NO_ACTION, 0] if np.dtype(dtype).kind == "i" else [1, 2, 0]
    want = reference.step(np.array(actions, dtype=np.int64))
    got = env.step(np.array(actions, dtype=np.int64).astype(dtype))
    for name, expected, actual in zip(VectorStep._fields, want, got, strict=True):
        np.testing.assert_array_equal(actual, expected, err_msg=name)
    assert toy_state(env) == toy_state(reference)


#: Every value of every integer dtype that is neither an action id nor the skip (-1).
OUT_OF_RANGE = [
    (dtype, value)
    for dtype in INTEGER_DTYPES
    for value in sorted({int(np.iinfo(dtype).max), int(np.iinfo(dtype).min), -2, toy.N_ACTIONS})
    if np.iinfo(dtype).min <= value <= np.iinfo(dtype).max and not NO_ACTION <= value < toy.N_ACTIONS
]


@pytest.mark.parametrize(("dtype", "value"), OUT_OF_RANGE, ids=lambda x: getattr(x, "__name__", str(x)))
def test_out_of_range_values_of_every_integer_dtype_are_refused_not_wrapped(dtype, value) -> None:
    env = fresh_toy_env()
    before = toy_state(env)
    actions = np.array([0, 0, value], dtype=dtype)
    with pytest.raises(IllegalActionError, match=rf"game 2: action {value} is out of range"):
        env.step(actions)
    assert toy_state(env) == before


def test_a_uint64_action_of_two_to_the_64_minus_one_is_not_a_skip_in_the_real_vector_envs() -> None:
    for venv in (MadiaoVectorEnv(2, seed=1), MaoVectorEnv(2, seed=1, n_players=3)):
        step = venv.reset()
        actions = np.array([np.flatnonzero(step.action_mask[0])[0], 2**64 - 1], dtype=np.uint64)
        with pytest.raises(IllegalActionError, match=f"game 1: action {2**64 - 1} is out of range"):
            venv.step(actions)
        # Nothing moved: the legal action of game 0 was not applied either.
        np.testing.assert_array_equal(venv.observe(step.to_act), step.observation)


@pytest.mark.parametrize(
    ("actions", "error", "message"),
    [
        (np.array([0.0, 1.0, 0.0]), TypeError, "integer dtype"),
        (np.array([0, 1, 0], dtype=np.float32), TypeError, "integer dtype"),
        (np.array([True, False, True]), TypeError, "integer dtype"),
        (np.array([0, 1, 0], dtype=object), TypeError, "integer dtype"),
        (np.array(["0", "1", "0"]), TypeError, "integer dtype"),
        (np.array([0j, 1j, 0j]), TypeError, "integer dtype"),
        (np.zeros((3, 1), dtype=np.int64), ValueError, r"shape \(3,\)"),
        (np.zeros((1, 3), dtype=np.int64), ValueError, r"shape \(3,\)"),
        (np.array(0, dtype=np.int64), ValueError, r"shape \(3,\)"),
        (np.zeros(4, dtype=np.int64), ValueError, r"shape \(3,\)"),
        ([0, 0, 0], TypeError, "numpy array"),
        (0, TypeError, "numpy array"),
    ],
)
def test_actions_of_a_wrong_kind_or_shape_are_refused_and_change_nothing(actions, error, message) -> None:
    env = fresh_toy_env()
    before = toy_state(env)
    with pytest.raises(error, match=message):
        env.step(actions)
    assert toy_state(env) == before


def test_strided_and_byte_swapped_int64_actions_mean_the_same_actions() -> None:
    reference, strided_env, swapped_env = fresh_toy_env(), fresh_toy_env(), fresh_toy_env()
    actions = np.array([1, NO_ACTION, 2], dtype=np.int64)
    want = reference.step(actions)
    strided = np.repeat(actions, 2)[::2]
    assert not strided.flags.c_contiguous
    swapped = actions.astype(actions.dtype.newbyteorder(">"))
    for env, given in ((strided_env, strided), (swapped_env, swapped)):
        got = env.step(given)
        np.testing.assert_array_equal(got.observation, want.observation)
        assert toy_state(env) == toy_state(reference)


@pytest.mark.parametrize(
    ("actions", "error", "message"),
    [
        (
            np.array([0, 2**64 - 1, 0], dtype=np.uint64),
            IllegalActionError,
            f"action {2**64 - 1} is out of range",
        ),
        (np.array([0, -1, 0]), IllegalActionError, "action -1 is out of range"),
        (np.array([0.0, 1.7, 0.0]), TypeError, "integer"),
        (np.array([True, False, True]), TypeError, "integer"),
        (np.zeros(4, dtype=np.int64), ValueError, "3 games"),
    ],
)
def test_the_sb3_learner_env_refuses_learner_actions_it_would_have_to_reinterpret(actions, error, message):
    from madiao_mao.training.sb3.adapter import LearnerVecEnv

    venv = LearnerVecEnv(toy.CountdownVectorEnv(3), lambda obs, masks: np.zeros(len(masks), np.int64), seed=0)
    venv.reset()
    before = (venv.vector_env.counter.tolist(), venv.vector_env.seat.tolist())
    with pytest.raises(error, match=message):
        venv.step(actions)
    assert (venv.vector_env.counter.tolist(), venv.vector_env.seat.tolist()) == before


# -- the AEC envs' action check ------------------------------------------------------------------
AEC_MAKERS = {"madiao": lambda: madiao_v0.raw_env(), "mao": lambda: mao_v0.raw_env(n_players=3)}


def aec_signature(env) -> tuple:
    agent = env.agent_selection
    observed = env.observe(agent)
    return agent, observed["observation"].tobytes(), observed["action_mask"].tobytes()


#: Values that are not an action id in range: each must be refused, none reinterpreted.
NOT_ACTION_IDS = [np.uint64(2**64 - 1), np.int8(-1), np.int64(-1), -1, True, False, np.bool_(True), 3.0, 3.5,
                  np.float64(3.0), "3", "play 9S", None, [3], 2**70]  # fmt: skip


@pytest.mark.parametrize("game", sorted(AEC_MAKERS))
@pytest.mark.parametrize("bad", NOT_ACTION_IDS, ids=repr)
def test_the_aec_envs_refuse_an_action_that_is_not_an_integer_id_in_range(game, bad) -> None:
    env = AEC_MAKERS[game]()
    env.reset(seed=3)
    before = aec_signature(env)
    with pytest.raises(IllegalActionError, match="action"):
        env.step(bad)
    assert aec_signature(env) == before


@pytest.mark.parametrize("game", sorted(AEC_MAKERS))
@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=lambda d: np.dtype(d).name)
def test_the_aec_envs_take_a_legal_numpy_integer_as_exactly_that_action(game, dtype) -> None:
    reference, env = AEC_MAKERS[game](), AEC_MAKERS[game]()
    reference.reset(seed=3)
    env.reset(seed=3)
    # The largest legal id that the dtype can hold (int8 holds 0..127 only).
    legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
    action = int(legal[legal <= np.iinfo(dtype).max][-1])
    reference.step(action)
    env.step(dtype(action))
    assert aec_signature(env) == aec_signature(reference)


def test_check_action_never_wraps_a_huge_unsigned_id_onto_a_legal_one() -> None:
    mask = np.ones(5, dtype=np.int8)
    # 2**64 - 1 wraps to -1, 2**64 + 2 would wrap to 2: both must be refused, not taken as ids.
    for value in (np.uint64(2**64 - 1), 2**64 + 2, np.uint64(2**63 + 2)):
        with pytest.raises(IllegalActionError, match="out of range"):
            check_action(value, mask, str)
    assert check_action(np.uint64(4), mask, str) == 4


# ============================================================================ item 14: Gymnasium adapter

ADAPTED_GAMES = {
    "madiao": lambda **kwargs: madiao_v0.env(**kwargs),
    "mao": lambda **kwargs: mao_v0.env(n_players=3, max_steps=400, **kwargs),
}
ACTION_TEXT = {
    "madiao": madiao_cards.action_to_text,
    "mao": lambda action: mao_v0.raw_env(n_players=3).describe_action(action),
}


@pytest.mark.parametrize("game", sorted(ADAPTED_GAMES))
@pytest.mark.parametrize("render_mode", [None, "ansi"])
def test_the_single_agent_adapter_passes_check_env_with_its_default_settings(game, render_mode) -> None:
    env = SingleAgentCardEnv(ADAPTED_GAMES[game](render_mode=render_mode), RandomAgent(seed=0))
    check_env(env)  # the checker's defaults too: render checks included


@pytest.mark.parametrize("game", sorted(ADAPTED_GAMES))
def test_an_illegal_action_is_named_as_text_when_raised_and_when_terminating(game) -> None:
    strict = SingleAgentCardEnv(ADAPTED_GAMES[game](), RandomAgent(seed=0), illegal_action="raise")
    strict.reset(seed=4)
    illegal = int(np.flatnonzero(~strict.action_masks())[0])
    text = ACTION_TEXT[game](illegal)
    with pytest.raises(IllegalActionError, match=rf"action {illegal} \({text}\) is not legal"):
        strict.step(illegal)
    lenient = SingleAgentCardEnv(ADAPTED_GAMES[game](), RandomAgent(seed=0))
    lenient.reset(seed=4)
    _, reward, terminated, truncated, info = lenient.step(illegal)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    assert f"action {illegal} ({text}) is not legal" in info["illegal_action_error"]


def test_the_adapter_takes_a_zero_dimensional_integer_array_as_the_action() -> None:
    # What model.predict() returns for a single observation.
    env, reference = (SingleAgentCardEnv(madiao_v0.env(), RandomAgent(seed=0)) for _ in range(2))
    env.reset(seed=2)
    reference.reset(seed=2)
    action = int(np.flatnonzero(env.action_masks())[0])
    got, want = env.step(np.array(action)), reference.step(action)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:4] == want[1:4]


@pytest.mark.parametrize("game", sorted(ADAPTED_GAMES))
def test_the_adapter_renders_through_the_wrapped_env(game, capsys) -> None:
    env = SingleAgentCardEnv(ADAPTED_GAMES[game](render_mode="ansi"), RandomAgent(seed=0))
    assert env.render_mode == "ansi"
    assert "ansi" in env.metadata["render_modes"]
    env.reset(seed=1)
    table = env.render()
    assert isinstance(table, str) and table == env.aec_env.render()
    human = SingleAgentCardEnv(ADAPTED_GAMES[game](render_mode="human"), RandomAgent(seed=0))
    human.reset(seed=1)
    capsys.readouterr()
    assert human.render() is None
    assert capsys.readouterr().out.strip() == table.strip()
    silent = SingleAgentCardEnv(ADAPTED_GAMES[game](), RandomAgent(seed=0))
    assert silent.render_mode is None


# ============================================================================ item 15: compile notice

COMPILE_NOTICE = "compiling the Numba kernels (first run only"

# One Madiao hand's first steps (the smallest use that compiles a game's kernels), then a user's
# own @njit function, which is no kernel of this project and must stay silent.
FIRST_USE = textwrap.dedent(
    """
    import numba
    from madiao_env import madiao_v0
    env = madiao_v0.raw_env()
    env.reset(seed=0)
    for _ in range(3):
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(mask.nonzero()[0][0]))
    print("ok")
    numba.njit(lambda x: x + 1)(1)
    """
)


def run_child(cache_dir: pathlib.Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    return run_python(["-c", FIRST_USE], env=env, timeout=600)


def test_the_first_compile_is_announced_once_and_a_cached_start_is_silent(tmp_path) -> None:
    cache_dir = tmp_path / "numba-cache"
    cache_dir.mkdir()
    first = run_child(cache_dir)
    assert first.returncode == 0 and first.stdout.strip() == "ok", first.stderr[-3000:]
    assert first.stderr.count(COMPILE_NOTICE) == 1, first.stderr[-3000:]
    assert any(cache_dir.rglob("*.nbi")), "the child did not use the temporary cache"
    second = run_child(cache_dir)
    assert second.returncode == 0 and second.stdout.strip() == "ok", second.stderr[-3000:]
    assert COMPILE_NOTICE not in second.stderr
