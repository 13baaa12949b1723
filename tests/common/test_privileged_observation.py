"""The privileged state a critic may read during training (issue 33, groundwork of the privileged
critic): each batched env's ``privileged_observation`` is the hidden state of the AEC env holding
the same game, every hand and the face-down cards (Madiao) or every hand and the secret rules in
force (Mao), seats relative to the seat asked for; and an agent built from a checkpoint can reach
no env, so it has no path to that state."""

from __future__ import annotations

import gc
import types
from collections.abc import Callable, Iterator

import numpy as np
import pytest

pytest.importorskip("madiao_env.madiao_v0")

from cardgame_core.vector import VectorCardEnv

#: Games of each batched env, and the random steps the test looks after.
N_GAMES, STEPS, LOOKS = 4, 60, (0, 7, 23, 59)


def _positions(vector_env, seed: int) -> Iterator[None]:
    """Steps ``vector_env`` with seeded random legal actions, stopping (yielding) at ``LOOKS``."""
    rng = np.random.default_rng(seed)
    step = vector_env.reset(seed=seed)
    for index in range(STEPS):
        if index in LOOKS:
            yield
        keys = np.where(step.action_mask, rng.random(step.action_mask.shape), -1.0)
        step = vector_env.step(np.where(step.action_mask.any(axis=1), keys.argmax(axis=1), -1))


def _madiao_expected(aec, seat: int) -> np.ndarray:
    from madiao_env import cards

    table = aec.table()
    planes = np.zeros((9, cards.N_CARDS), dtype=np.float32)  # 4 hands, the stock, 4 sloughed
    for relative in range(cards.N_SEATS):
        for name in table["hands"][(seat + relative) % cards.N_SEATS]:
            planes[relative, cards.card_id(name)] = 1
    for name in table["stock"]:
        planes[cards.N_SEATS, cards.card_id(name)] = 1
    for player, name, face_up, _trick in table["history"]:
        if not face_up:
            planes[cards.N_SEATS + 1 + (player - seat) % cards.N_SEATS, cards.card_id(name)] = 1
    return planes.reshape(-1)


def _mao_expected(aec, seat: int) -> np.ndarray:
    from mao_env import cards
    from mao_env.rules import N_RULES

    n_players = aec.n_players
    hands = np.zeros((n_players, cards.N_CARD_TYPES), dtype=np.float32)
    for relative in range(n_players):
        for name in aec.hand((seat + relative) % n_players):
            hands[relative, cards.CARD_NAMES.index(name)] += 1
    rules = np.zeros(N_RULES, dtype=np.float32)
    for rule, _author in aec.active_rules():
        rules[rule] = 1
    return np.concatenate([hands.reshape(-1), rules])


def _madiao_envs() -> tuple[VectorCardEnv, Callable[[], object]]:
    from madiao_env import madiao_v0
    from madiao_env.vector import MadiaoVectorEnv

    return MadiaoVectorEnv(N_GAMES), madiao_v0.raw_env


def _mao_envs() -> tuple[VectorCardEnv, Callable[[], object]]:
    from mao_env.env import raw_env
    from mao_env.rules import HELD_OUT_RULES
    from mao_env.vector import MaoVectorEnv

    rules = [int(rule) for rule in HELD_OUT_RULES[:2]]
    return MaoVectorEnv(N_GAMES, rules=rules), raw_env


GAMES = {"madiao": (_madiao_envs, _madiao_expected), "mao": (_mao_envs, _mao_expected)}


@pytest.mark.parametrize("game", GAMES)
def test_the_privileged_observation_is_the_aec_envs_hidden_state(game) -> None:
    make_envs, expected = GAMES[game]
    vector_env, make_aec = make_envs()
    seen_hidden = 0.0
    for _ in _positions(vector_env, seed=5):
        for seat in range(vector_env.n_players):
            privileged = vector_env.privileged_observation(np.full(N_GAMES, seat))
            assert privileged.shape == (N_GAMES, vector_env.privileged_dim)
            assert privileged.dtype == np.float32
            for index in range(N_GAMES):
                aec = make_aec()
                aec.set_state(vector_env.get_game_state(index))
                np.testing.assert_array_equal(privileged[index], expected(aec, seat), err_msg=f"game {index}")
            seen_hidden += privileged.sum()
    assert seen_hidden > 0


@pytest.mark.parametrize("game", GAMES)
def test_a_bad_seat_or_an_env_before_reset_is_refused(game) -> None:
    vector_env, _ = GAMES[game][0]()
    with pytest.raises(RuntimeError, match=r"call reset\(\) before privileged_observation\(\)"):
        vector_env.privileged_observation(np.zeros(N_GAMES, dtype=np.int64))
    vector_env.reset(seed=0)
    with pytest.raises(ValueError, match="out of range"):
        vector_env.privileged_observation(np.full(N_GAMES, vector_env.n_players))


# ---- a checkpoint's agent has no path to the env


def _reaches(root: object, wanted: tuple[type, ...]) -> list[str]:
    """Type names of the ``wanted`` objects reachable from ``root`` through instance attributes,
    containers and closures (modules, classes and functions' globals are not followed: they are
    shared code, not the agent's state)."""
    found, seen, stack = [], set(), [root]
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, (types.ModuleType, type, str, bytes, np.ndarray)):
            continue
        seen.add(id(item))
        if isinstance(item, wanted):
            found.append(type(item).__name__)
            continue
        if isinstance(item, types.FunctionType):
            stack.extend(cell.cell_contents for cell in item.__closure__ or () if _filled(cell))
            continue
        stack.extend(
            referent for referent in gc.get_referents(item) if not isinstance(referent, types.FrameType)
        )
    return found


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


def _envs_and_states() -> tuple[type, ...]:
    from pettingzoo.utils.env import AECEnv

    from madiao_env.state import MadiaoState
    from mao_env.state import MaoState

    return (AECEnv, VectorCardEnv, MadiaoState, MaoState)


@pytest.mark.parametrize("game", GAMES)
def test_an_agent_built_from_a_checkpoint_reaches_no_env(game) -> None:
    from madiao_mao.agents.registry import make_agent
    from madiao_mao.games import get_game

    env = GAMES[game][0]()[1]()
    path = get_game(game).layer("agents").PRETRAINED_MODEL
    agent = make_agent(f"model:{path}", game, seed=0, env=env)
    assert _reaches(agent, _envs_and_states()) == []


def test_the_reach_check_finds_an_agent_that_holds_its_env() -> None:
    from madiao_env import madiao_v0
    from madiao_mao.agents.registry import make_agent

    search = make_agent("search", "madiao", seed=0, env=madiao_v0.raw_env())
    assert _reaches(search, _envs_and_states())


def test_each_privileged_layout_is_documented_in_its_module() -> None:
    from madiao_env import privileged as madiao_privileged
    from mao_env import privileged as mao_privileged

    for module in (madiao_privileged, mao_privileged):
        assert module.table_text() in module.__doc__
    assert madiao_privileged.PRIVILEGED_SIZE == 360
    assert mao_privileged.privileged_size(4) == 4 * 53 + mao_privileged.N_RULES
