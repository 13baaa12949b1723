"""Hardening of the Madiao AEC env: snapshots, options and misuse give one clear error and change
nothing; the per-seat render hides what the seat cannot see (issue 9)."""

from __future__ import annotations

import copy
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from madiao_env import cards, core, madiao_v0, state
from tests.madiao.conftest import finish_randomly
from tests.madiao.test_rules import fill_deal

MELD_HAND = ["10000T", "9M", "9S", "0C", "2S", "3S", "2M", "3M"]  # 10000T 9M 9S 0C: 4 stakes


def play_random(env, n_steps: int, seed: int) -> None:
    """Up to ``n_steps`` random legal actions of the raw env (stops at the episode's end)."""
    rng = np.random.default_rng(seed)
    for _ in range(n_steps):
        if not env.agents or env.terminations[env.agent_selection]:
            return
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))


def assert_same_state(a: dict, b: dict) -> None:
    assert pickle.dumps(a["arrays"]) == pickle.dumps(b["arrays"])
    rest = [k for k in a if k != "arrays"]
    assert sorted(rest) == sorted(k for k in b if k != "arrays")
    for key in rest:
        if isinstance(a[key], np.ndarray):
            np.testing.assert_array_equal(a[key], b[key])
        else:
            assert a[key] == b[key], key


def assert_cards_conserved(env) -> None:
    card_sets, ints = env.get_state()["arrays"][:2]
    sets = [int(card_sets[0, c]) for c in range(core.CS_HAND, core.CS_SLOUGHED + 4)]
    stock = [int(c) for c in ints[0, core.I_STOCK : core.I_STOCK + 8]]
    total = sum(bin(s).count("1") for s in sets) + len(stock)
    union = 0
    for s in sets:
        union |= s
    for c in stock:
        union |= 1 << c
    assert total == cards.N_CARDS and union == (1 << cards.N_CARDS) - 1


# ----------------------------------------------------------------------------- item 16: hand numbers


def test_every_reset_starts_at_hand_number_zero_even_after_a_meld_at_the_deal():
    env = madiao_v0.raw_env()
    seen_meld_at_deal = False
    for seed in range(600):
        env.reset(seed=seed)
        assert env.table()["hand_number"] == 0, seed
        pending = env.get_state()["arrays"][3][0, : env.get_state()["arrays"][1][0, core.I_N_PENDING]]
        seen_meld_at_deal |= bool((pending[:, 1] == core.RULE_MELD).any())
    assert seen_meld_at_deal, "no seed dealt a meld at the reset: the check above proved nothing"


@pytest.mark.parametrize("episode", ["hand", "match"])
def test_a_meld_in_the_hands_option_starts_at_hand_zero_and_is_paid_with_hand_zero(episode):
    env = madiao_v0.raw_env(episode=episode, max_redeals=0)
    hands, stock = fill_deal({1: MELD_HAND})
    env.reset(seed=3, options={"hands": hands, "stock": stock, "banker": 0, "first": 0})
    table = env.table()
    assert table["hand_number"] == 0 and table["banker"] == 1  # the holder is the banker
    first_settlement = None
    rng = np.random.default_rng(0)
    while env.agents and not env.terminations[env.agent_selection]:
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
        if first_settlement is None and env.last_settlement is not None:
            first_settlement = copy.deepcopy(env.last_settlement)
    assert first_settlement["hand_number"] == 0
    assert any(line["rule"] == "meld" for line in first_settlement["lines"])


@pytest.mark.parametrize("seed", range(4))
def test_a_match_after_a_meld_at_the_deal_still_has_every_seat_banker_of_a_played_hand(seed):
    env = madiao_v0.raw_env(episode="match")
    hands, stock = fill_deal({1: MELD_HAND})
    env.reset(seed=seed, options={"hands": hands, "stock": stock, "banker": 0, "first": 0})
    bankers_of_played_hands = set()
    rng = np.random.default_rng(seed)
    while env.agents and not env.terminations[env.agent_selection]:
        bankers_of_played_hands.add(env.table()["banker"])
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
    # Seat 0 was only the banker of the meld deal, where nobody played: it must still bank a hand.
    assert bankers_of_played_hands == {0, 1, 2, 3}


# ----------------------------------------------------------------------------- item 5: dead steps


def test_stepping_after_every_agent_is_removed_says_the_episode_is_over():
    env = madiao_v0.raw_env()
    env.reset(seed=0)
    finish_randomly(env)
    while env.agents:  # PettingZoo's dead-step convention: None for each terminated agent
        env.step(None)
    for action in (None, 0, 81):
        with pytest.raises(RuntimeError, match=r"episode is over; call reset\(\)"):
            env.step(action)
    env.reset(seed=1)  # and the env is usable again
    play_random(env, 5, seed=0)


def test_dead_step_with_an_action_is_refused_while_agents_remain():
    env = madiao_v0.raw_env()
    env.reset(seed=0)
    finish_randomly(env)
    with pytest.raises(ValueError, match="only valid action is None"):
        env.step(0)


# ----------------------------------------------------------------------------- item 3: rejected reset


@pytest.mark.parametrize(
    "options",
    [
        {"bogus": 1},
        {"banker": 7},
        {"hands": [["9C"] * 8] * 4, "stock": ["1C"] * 8},
        {"deck": ["9C"] * 40},
        {"stock": ["1C"] * 8},
        "not a dict",
    ],
)
@pytest.mark.parametrize("seed", [None, 5])
def test_rejected_reset_changes_nothing(options, seed):
    env = madiao_v0.raw_env()
    env.reset(seed=11)
    play_random(env, 3, seed=0)
    twin = copy.deepcopy(env)
    before = env.get_state()
    with pytest.raises((ValueError, TypeError)):
        env.reset(seed=seed, options=options)
    assert_same_state(env.get_state(), before)
    # Behaviour afterwards equals the untouched copy's: a seedless reset draws from the same RNG.
    env.reset()
    twin.reset()
    assert_same_state(env.get_state(), twin.get_state())


@pytest.mark.parametrize("seed", [-1, 1.5, "7", True])
def test_rejected_seed_changes_nothing(seed):
    env = madiao_v0.raw_env()
    env.reset(seed=11)
    before = env.get_state()
    with pytest.raises((ValueError, TypeError), match="seed"):
        env.reset(seed=seed)
    assert_same_state(env.get_state(), before)


# ----------------------------------------------------------------------------- item 4: numeric options


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_redeals": 10**30}, ValueError, "max_redeals"),
        ({"max_redeals": np.int64(2**40)}, ValueError, "max_redeals"),
        ({"max_redeals": -1}, ValueError, "max_redeals"),
        ({"max_redeals": 2.0}, TypeError, "max_redeals"),
        ({"max_redeals": True}, TypeError, "max_redeals"),
        ({"stake": 10**400}, ValueError, "stake"),
        ({"stake": float("nan")}, ValueError, "stake"),
        ({"stake": float("inf")}, ValueError, "stake"),
        ({"stake": 1e308}, ValueError, "stake"),
        ({"stake": np.float64(-1.0)}, ValueError, "stake"),
        ({"stake": True}, TypeError, "stake"),
        ({"stake": "1"}, TypeError, "stake"),
        ({"face_up_discard": 1}, TypeError, "face_up_discard"),
        ({"obs_type": ["summary"]}, ValueError, "obs_type"),
        ({"episode": None}, ValueError, "episode"),
        ({"render_mode": {}}, ValueError, "render_mode"),
        ({"render_mode": np.array(["ansi", "human"])}, ValueError, "render_mode"),
        ({"obs_type": np.array(["summary", "history"])}, ValueError, "obs_type"),
        ({"episode": np.array(["hand", "match"])}, ValueError, "episode"),
    ],
)
def test_absurd_constructor_options_give_a_clear_error(kwargs, error, match):
    with pytest.raises(error, match=match):
        madiao_v0.raw_env(**kwargs)


@pytest.mark.parametrize(
    "kwargs", [{"max_redeals": np.int64(3)}, {"stake": np.float32(0.5)}, {"stake": 10**6}]
)
def test_numpy_and_large_but_sane_options_work(kwargs):
    env = madiao_v0.raw_env(**kwargs)
    env.reset(seed=0)
    finish_randomly(env)
    assert all(np.isfinite(list(env.rewards.values())))


def test_numpy_seat_options_work():
    env = madiao_v0.raw_env()
    env.reset(seed=0, options={"banker": np.int8(2)})
    hands, stock = fill_deal({})
    env.reset(seed=0, options={"hands": hands, "stock": stock, "banker": np.int64(1), "first": np.uint8(3)})
    assert env.table()["banker"] == 1 and env.table()["first"] == 3


# ----------------------------------------------------------------------------- item 1: set_state


def position(seed: int = 4, n_steps: int = 13, **kwargs):
    env = madiao_v0.raw_env(**kwargs)
    env.reset(seed=seed)
    play_random(env, n_steps, seed=seed)
    return env


def corrupted(snapshot: dict, array: int, index: tuple, value) -> dict:
    bad = copy.deepcopy(snapshot)
    bad["arrays"][array][index] = value
    return bad


INTS, CARD_SETS, HISTORY, PENDING, SETTLED = 1, 0, 2, 3, 4


@pytest.mark.parametrize(
    ("array", "index", "value", "field"),
    [
        (INTS, (0, core.I_TO_ACT), 7, r"ints\[I_TO_ACT\] = 7: seat to act must be -1..3"),
        (INTS, (0, core.I_N_PLAYS), 120, r"ints\[I_N_PLAYS\] = 120"),
        (INTS, (0, core.I_N_PLAYS), 14, r"snapshot (ints|card_sets|history)\["),  # in range: inconsistent
        (INTS, (0, core.I_N_PENDING), 5000, r"ints\[I_N_PENDING\] = 5000"),
        (INTS, (0, core.I_N_SETTLED), -1, r"ints\[I_N_SETTLED\] = -1"),
        (INTS, (0, core.I_BANKER), 4, r"ints\[I_BANKER\] = 4"),
        (INTS, (0, core.I_FIRST), -1, r"ints\[I_FIRST\] = -1"),
        (INTS, (0, core.I_PHASE), 3, r"ints\[I_PHASE\] = 3"),
        (INTS, (0, core.I_TRICK), 9, r"ints\[I_TRICK\] = 9"),
        (INTS, (0, core.I_BEST_CARD), 40, r"ints\[I_BEST_CARD\] = 40"),
        (INTS, (0, core.I_HUNDRED_HOLDER), 5, r"ints\[I_HUNDRED_HOLDER\] = 5"),
        (INTS, (0, core.I_TRICKS_WON + 2), -3, r"ints\[I_TRICKS_WON\+2\] = -3"),
        (INTS, (0, core.I_STOCK + 1), 40, r"ints\[I_STOCK\+1\] = 40"),
        (INTS, (0, core.I_HAND_NUMBER), -1, r"ints\[I_HAND_NUMBER\] = -1"),
        (INTS, (0, core.I_OVERFLOW), 1, r"ints\[I_OVERFLOW\] = 1"),
        (CARD_SETS, (0, core.CS_HAND + 1), np.uint64(2**63), r"card_sets\[CS_HAND\+1\]"),
        (CARD_SETS, (0, core.CS_HAND + 1), np.uint64(0), r"card_sets"),
        (CARD_SETS, (0, core.CS_RNG), np.uint64(0), r"card_sets\[CS_RNG\] = 0"),
        (HISTORY, (0, 0, 1), 45, r"history\[0, 0\]"),
        (HISTORY, (0, 0, 0), -100, r"history\[0, 0\]"),
    ],
)
def test_set_state_rejects_a_corrupted_field_by_name_and_changes_nothing(array, index, value, field):
    env = position()
    snapshot = env.get_state()
    with pytest.raises(ValueError, match=field):
        env.set_state(corrupted(snapshot, array, index, value))
    assert_same_state(env.get_state(), snapshot)


def test_set_state_rejects_bad_settlement_lines():
    env = position(seed=0, n_steps=0)
    finish_randomly(env)  # a settlement: lines in the settled buffer
    snapshot = env.get_state()
    assert snapshot["arrays"][1][0, core.I_N_SETTLED] > 0
    for column, value in ((1, 10), (2, 4), (3, -1), (4, 0), (4, 9)):
        with pytest.raises(ValueError, match=r"settled\[0, 0\]"):
            env.set_state(corrupted(snapshot, SETTLED, (0, 0, column), value))
    assert_same_state(env.get_state(), snapshot)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda s: s.update(arrays=[0] * 5), r"arrays\[0\] \(card_sets\)"),
        (lambda s: s.update(arrays=s["arrays"][:4]), "arrays"),
        (lambda s: s["arrays"].__setitem__(1, s["arrays"][1].astype(np.int64)), r"arrays\[1\] \(ints\)"),
        (lambda s: s["arrays"].__setitem__(2, s["arrays"][2][:, :31]), r"arrays\[2\] \(history\)"),
        (lambda s: s["arrays"].__setitem__(0, s["arrays"][0][0]), r"arrays\[0\] \(card_sets\)"),
        (lambda s: s.pop("rng"), "missing key"),
        (lambda s: s.update(version=1), "version"),
        (lambda s: s.update(version=True), "version"),
        (lambda s: s.update(stake=2.0), "stake"),
        (lambda s: s.update(stake=10**400), "stake"),
        (lambda s: s.update(config=s["config"].astype(np.int64)), "config"),
        (lambda s: s["config"].__setitem__(core.CFG_MATCH, 1), "config"),
        (lambda s: s.update(agent_selection="player_7"), "agent_selection"),
        (lambda s: s.update(agent_selection="player_2"), "agent_selection"),
        (lambda s: s.update(agents=["player_0", "player_1"]), "agents"),
        (lambda s: s.update(agents=["player_1", "player_0", "player_2", "player_3"]), "agents"),
        (lambda s: s["rewards"].pop("player_3"), "rewards"),
        (lambda s: s["rewards"].__setitem__("player_0", float("nan")), "rewards"),
        (lambda s: s["terminations"].__setitem__("player_0", True), "terminations"),
        (lambda s: s["infos"].__setitem__("player_0", {"settlement": 1}), "infos"),
        (lambda s: s["infos"]["player_0"].__setitem__("hand_number", -2), "hand_number"),
        (lambda s: s["infos"]["player_0"].__setitem__("payoffs", [0.0] * 3), "payoffs"),
        (lambda s: s["infos"]["player_0"].__setitem__("illegal_action", "no"), "illegal_action"),
        (lambda s: s["infos"]["player_0"].__setitem__("illegal_action_error", None), "illegal_action_error"),
        (lambda s: s.update(last_settlement={"lines": []}), "last_settlement"),
        (
            lambda s: s.update(
                last_settlement={"hand_number": 0, "lines": [{"rule": "x"}], "payoffs": [0.0] * 4}
            ),
            r"last_settlement\['lines'\]\[0\]",
        ),
        (lambda s: s.update(rng={"bit_generator": "PCG64", "state": 5}), "rng"),
        (lambda s: s.update(rng="x"), "rng"),
        (lambda s: s.update(rewards_pending_zero="no"), "rewards_pending_zero"),
    ],
)
def test_set_state_rejects_a_malformed_snapshot_by_name_and_changes_nothing(change, field):
    env = position()
    snapshot = env.get_state()
    bad = copy.deepcopy(snapshot)
    change(bad)
    with pytest.raises(ValueError, match=field):
        env.set_state(bad)
    assert_same_state(env.get_state(), snapshot)


@pytest.mark.parametrize("not_a_snapshot", [None, 5, "state", [1, 2], {}])
def test_set_state_rejects_what_is_not_a_snapshot(not_a_snapshot):
    env = position()
    snapshot = env.get_state()
    with pytest.raises(ValueError, match="snapshot"):
        env.set_state(not_a_snapshot)
    assert_same_state(env.get_state(), snapshot)


def test_a_snapshot_that_lies_about_cards_is_rejected_whole():
    """Every field in range, cards moved between hands: caught by the consistency checks, and
    the bookkeeping written after the arrays in the old code is not half applied either."""
    env = position(n_steps=0)
    snapshot = env.get_state()
    bad = copy.deepcopy(snapshot)
    card_sets = bad["arrays"][0]
    moved = int(card_sets[0, core.CS_HAND]) & -int(card_sets[0, core.CS_HAND])  # lowest card of seat 0
    card_sets[0, core.CS_HAND] &= np.uint64(~moved & (2**64 - 1))
    card_sets[0, core.CS_HAND + 1] |= np.uint64(moved)
    bad["agents"] = []
    with pytest.raises(ValueError, match=r"card_sets\[CS_HAND\+"):
        env.set_state(bad)
    assert_same_state(env.get_state(), snapshot)


@pytest.mark.parametrize(
    "kwargs", [{}, {"episode": "match"}, {"face_up_discard": True}, {"obs_type": "history"}]
)
def test_valid_snapshots_of_every_phase_are_accepted_and_replay(kwargs):
    for seed in range(15):
        env = madiao_v0.raw_env(**kwargs)
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while True:
            snapshot = env.get_state()
            twin = madiao_v0.raw_env(**kwargs)
            twin.set_state(pickle.loads(pickle.dumps(snapshot)))
            assert_same_state(twin.get_state(), snapshot)
            if not env.agents:
                break
            agent = env.agent_selection
            if env.terminations[agent]:
                env.step(None)
                continue
            action = int(rng.choice(np.flatnonzero(env.observe(agent)["action_mask"])))
            env.step(action)
            twin.step(action)
            assert_same_state(twin.get_state(), env.get_state())


def test_validation_returns_a_copy_sharing_nothing():
    env = position()
    snapshot = env.get_state()
    valid = state.validate_snapshot(snapshot, snapshot["config"], snapshot["stake"])
    for mine, theirs in zip(valid["arrays"], snapshot["arrays"], strict=True):
        assert not np.shares_memory(mine, theirs)
    assert valid["infos"] is not snapshot["infos"] and valid["agents"] is not snapshot["agents"]


# ----------------------------------------------------------------------------- item 1: the fuzz test

# Runs in a child process: a snapshot that slipped through and crashed a kernel would take the
# interpreter down (SIGSEGV: a negative return code), which pytest itself cannot catch.
FUZZ_CHILD = textwrap.dedent(
    """
    import copy
    import pickle
    import sys

    import numpy as np
    from hypothesis import HealthCheck, given, settings, strategies as st

    from madiao_env import core, madiao_v0

    ENV_KWARGS = [
        {},
        {"episode": "match"},
        {"face_up_discard": True, "max_redeals": 1},
        {"obs_type": "history", "max_redeals": 0},
    ]
    ENVS = [madiao_v0.raw_env(**kwargs) for kwargs in ENV_KWARGS]
    FULL = (1 << 40) - 1
    INTERESTING = [-2**31, -129, -2, -1, 0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 31, 32, 33, 39, 40, 41,
                   127, 128, 129, 255, 256, 257, 2**31 - 1]
    WEIRD = [None, 0, 7, -1, "player_7", "x", [], {}, [0] * 5, float("nan"), np.zeros(3), True]
    KEYS = ["version", "config", "stake", "arrays", "rng", "agents", "agent_selection", "rewards",
            "cumulative_rewards", "terminations", "truncations", "infos", "rewards_pending_zero"]
    counts = {"rejected": 0, "accepted": 0}


    def cards_conserved(env):
        card_sets, ints = env.get_state()["arrays"][:2]
        union, total = 0, 0
        for column in range(core.CS_HAND, core.CS_SLOUGHED + 4):
            union |= int(card_sets[0, column])
            total += bin(int(card_sets[0, column])).count("1")
        for card in ints[0, core.I_STOCK : core.I_STOCK + 8]:
            union |= 1 << int(card)
        assert total + 8 == 40 and union == FULL, "cards not conserved"


    def play_to_the_end(env, rng, limit=2000):
        for _ in range(limit):
            if not env.agents:
                return
            agent = env.agent_selection
            if env.terminations[agent]:
                env.step(None)
                continue
            mask = env.observe(agent)["action_mask"]
            env.step(int(rng.choice(np.flatnonzero(mask))))
            cards_conserved(env)


    int_value = st.one_of(st.sampled_from(INTERESTING), st.integers(-2**31, 2**31 - 1))
    set_value = st.one_of(
        st.sampled_from([0, 1 << 40, 2**64 - 1, FULL]),
        st.integers(0, 39).map(lambda c: 1 << c),
        st.integers(0, 2**64 - 1),
    )
    mutation = st.one_of(
        st.tuples(st.just("ints"), st.integers(0, core.N_INTS - 1), int_value),
        st.tuples(st.just("ints"), st.integers(0, core.N_INTS - 1), int_value),
        st.tuples(st.just("card_sets"), st.integers(0, core.N_CARD_COLS - 1), set_value),
        st.tuples(st.just("move_card"), st.integers(0, 11), st.integers(0, 11), st.integers(0, 39)),
        st.tuples(st.just("history"), st.integers(0, 31), st.integers(0, 2), st.integers(-128, 127)),
        st.tuples(st.sampled_from(["pending", "settled"]), st.integers(0, 4), st.integers(0, 4), int_value),
        st.tuples(st.just("shape"), st.integers(0, 4), st.integers(0, 4)),
        st.tuples(st.just("dtype"), st.integers(0, 4),
                  st.sampled_from([np.int8, np.int32, np.int64, np.uint64, np.float64])),
        st.tuples(st.just("missing"), st.sampled_from(KEYS)),
        st.tuples(st.just("set"), st.sampled_from(KEYS), st.integers(0, len(WEIRD) - 1)),
        st.tuples(st.just("agent_selection"), st.integers(0, 3)),
        st.tuples(st.just("drop_agent"), st.integers(0, 3)),
    )
    ARRAY_INDEX = {"card_sets": 0, "ints": 1, "history": 2, "pending": 3, "settled": 4}


    def mutate(snapshot, change):
        kind = change[0]
        arrays = snapshot["arrays"]
        if kind in ("ints", "pending", "settled", "history", "card_sets"):
            target = arrays[ARRAY_INDEX[kind]]
            index = (0, *change[1:-1])
            target[index] = np.array(change[-1]).astype(target.dtype)
        elif kind == "move_card":
            _, source, dest, card = change
            bit = np.uint64(1 << card)
            arrays[0][0, source] &= ~bit
            arrays[0][0, dest] |= bit
        elif kind == "shape":
            _, which, how = change
            array = arrays[which]
            arrays[which] = [array[0], array[:, :-1], array[None], np.zeros(()), [0] * 5][how]
        elif kind == "dtype":
            arrays[change[1]] = arrays[change[1]].astype(change[2])
        elif kind == "missing":
            del snapshot[change[1]]
        elif kind == "set":
            snapshot[change[1]] = copy.deepcopy(WEIRD[change[2]])
        elif kind == "agent_selection":
            snapshot["agent_selection"] = f"player_{change[1]}"
        elif kind == "drop_agent":
            name = f"player_{change[1]}"
            if name in snapshot["agents"]:
                snapshot["agents"].remove(name)


    @settings(max_examples=int(sys.argv[1]), deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.integers(0, len(ENVS) - 1), st.integers(0, 10**6), st.integers(0, 70), mutation)
    def check(which_env, seed, n_steps, change):
        env = ENVS[which_env]
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        for _ in range(n_steps):
            if env.terminations[env.agent_selection]:
                break
            env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
        before = env.get_state()
        frozen = pickle.dumps(before)
        bad = copy.deepcopy(before)
        mutate(bad, change)
        try:
            env.set_state(bad)
        except ValueError:
            counts["rejected"] += 1
            assert pickle.dumps(env.get_state()) == frozen, "a rejected set_state changed the env"
            twin = copy.deepcopy(env)
            play_to_the_end(env, np.random.default_rng(seed))
            play_to_the_end(twin, np.random.default_rng(seed))
            assert pickle.dumps(env.get_state()) == pickle.dumps(twin.get_state())
            return
        counts["accepted"] += 1
        cards_conserved(env)
        play_to_the_end(env, rng)


    check()
    print(counts)
    assert counts["rejected"] > 0 and counts["accepted"] > 0, counts
    """
)


def test_fuzzed_snapshots_never_crash_and_a_rejection_changes_nothing(tmp_path):
    pytest.importorskip("hypothesis")
    script = tmp_path / "fuzz_madiao_set_state.py"
    script.write_text(FUZZ_CHILD)
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, str(script), "400"], cwd=root, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, (
        f"child exited {result.returncode} (negative: killed by a signal)\n"
        f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    )


# ----------------------------------------------------------------------------- item 18: seat view


def card_tokens(text: str) -> set[str]:
    return set(re.findall(r"[0-9A-Z]+", text)) & set(cards.CARD_NAMES)


@pytest.mark.parametrize("seed", range(6))
def test_seat_render_shows_no_card_the_seat_cannot_see(seed):
    env = madiao_v0.raw_env(render_mode="ansi", face_up_discard=seed % 2 == 1)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    checked_a_slough = False
    for _ in range(40):
        if env.terminations[env.agent_selection]:
            break
        card_sets = env.get_state()["arrays"][0][0]
        table = env.table()
        for seat in range(4):
            text = env.render(seat=seat)
            hidden = set(table["stock"][1:])
            for other in range(4):
                if other != seat:
                    hidden |= set(table["hands"][other])
                    hidden |= set(cards.names_of(card_sets[core.CS_SLOUGHED + other]))
            assert not card_tokens(text) & hidden, (seat, text)
            assert set(table["hands"][seat]) <= card_tokens(text)  # its own hand is shown
            if seat == 0:
                assert f"view of seat {seat}" in text
        checked_a_slough |= any(not face_up for _, _, face_up in table["current_trick"])
        env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
    assert checked_a_slough or seed % 2 == 1  # the default rules force sloughs early


def test_seat_render_counts_hidden_hands_and_marks_face_down_plays():
    env = madiao_v0.raw_env(render_mode="ansi")
    env.reset(seed=2)
    rng = np.random.default_rng(2)
    while not any(not up for _, _, up in env.table()["current_trick"]):
        env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
    table = env.table()
    sloughing_seat = next(s for s, _, up in table["current_trick"] if not up)
    viewer = (sloughing_seat + 1) % 4
    text = env.render(seat=viewer)
    assert f"{len(table['hands'][sloughing_seat])} cards" in text
    assert "face down" in text
    full = env.render()
    assert all(name in card_tokens(full) for hand in table["hands"] for name in hand)  # full view unchanged


@pytest.mark.parametrize(
    ("seat", "error"), [(4, ValueError), (-1, ValueError), ("0", TypeError), (True, TypeError)]
)
def test_seat_render_rejects_a_bad_seat(seat, error):
    env = madiao_v0.raw_env(render_mode="ansi")
    env.reset(seed=0)
    with pytest.raises(error, match="seat"):
        env.render(seat=seat)


def test_seat_render_human_prints(capsys):
    env = madiao_v0.raw_env(render_mode="human")
    env.reset(seed=0)
    assert env.render(seat=np.int64(1)) is None
    assert "view of seat 1" in capsys.readouterr().out
