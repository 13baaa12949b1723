"""Hardening of the Mao envs: snapshots are validated completely before anything is written (a
corrupted one never crashes the interpreter, and a rejected one changes nothing), rejected reset
options and constructor options change nothing, stepping after the end is a clear error, and the
per-seat view shows only what that seat may know."""

from __future__ import annotations

import copy
import math
import os
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mao_env import cards, core, state
from mao_env import rules as rule_library
from mao_env.env import raw_env
from mao_env.vector import MaoVectorEnv
from tests.mao.mao_helpers import (
    play_randomly_to_the_end,
    random_legal,
    random_play_states,
    scenario,
    total_cards,
)


def states_equal(a: dict, b: dict) -> bool:
    """Whether two get_state() snapshots are identical, arrays compared element by element."""
    if set(a) != set(b) or set(a["arrays"]) != set(b["arrays"]):
        return False
    for key in a["arrays"]:
        x, y = a["arrays"][key], b["arrays"][key]
        if x.dtype != y.dtype or not np.array_equal(x, y):
            return False
    return all(a[key] == b[key] for key in a if key != "arrays")


def play_randomly(env: raw_env, rng: np.random.Generator, n_steps: int) -> None:
    for _ in range(n_steps):
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            return
        env.step(random_legal(rng, env._mask))


def positions(n_players: int, seed: int, **kwargs) -> list[dict]:
    """Snapshots of random play from its start to its end (every phase, several rounds)."""
    return random_play_states(raw_env(n_players, **kwargs), seed)


# ---- item 1: snapshots --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_players": 4, "num_rounds": 3, "max_steps": 600},
        {"n_players": 8, "num_rounds": 2, "rounds": "cambridge", "rule_choice": "sampled", "max_steps": 400},
        {"n_players": 3, "num_rounds": 2, "seven_turn_ends": True, "max_steps": 30},
    ],
)
def test_every_state_reached_in_play_is_accepted_and_restores_exactly(kwargs):
    snapshots = positions(seed=3, **kwargs)
    other = raw_env(**{**kwargs, "reasons": "revealed", "n_events": 4})  # observation options may differ
    other.reset(seed=99)
    for snapshot in [*snapshots[:: max(1, len(snapshots) // 60)], snapshots[-1]]:
        other.set_state(pickle.loads(pickle.dumps(snapshot)))
        assert states_equal(other.get_state(), snapshot)


def _corrupt(snapshot: dict, key: str, index: tuple, value) -> dict:
    bad = copy.deepcopy(snapshot)
    bad["arrays"][key][index] = value
    return bad


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda s: _corrupt(s, "scalars", (0, core.S_STACK_SIZE), 10_000), "S_STACK_SIZE"),
        (lambda s: _corrupt(s, "scalars", (0, core.S_PILE_SIZE), 0), "S_PILE_SIZE"),
        (lambda s: _corrupt(s, "scalars", (0, core.S_PILE_SIZE), 5_000), "S_PILE_SIZE"),
        (lambda s: _corrupt(s, "scalars", (0, core.S_PLAYED), 99), "S_PLAYED"),
        (lambda s: _corrupt(s, "scalars", (0, core.S_CURRENT), 7), "S_CURRENT"),
        (lambda s: _corrupt(s, "scalars", (0, core.S_DIRECTION), 0), "S_DIRECTION"),
        (lambda s: _corrupt(s, "scalars", (0, core.S_NAMED_SUIT), 4), "S_NAMED_SUIT"),
        (lambda s: _corrupt(s, "scalars", (0, core.CFG_N_ROUNDS), 5), "CFG_N_ROUNDS"),
        (lambda s: _corrupt(s, "hands", (0, 1, 5), -1), "hands"),
        (lambda s: _corrupt(s, "hands", (0, 1, 5), 3), "conserved"),
        (lambda s: _corrupt(s, "rules", (0, core.ACTIVE, 0), 45), "active"),
        (lambda s: _corrupt(s, "rules", (0, core.AUTHOR, 0), 2), "author"),
        # Seat 1 cannot have been refused rule 7: no rule is in force.
        (lambda s: _corrupt(s, "scalars", (0, core.S_REFUSED_0 + 1), 1 << 7), r"S_REFUSED_0\+1"),
        (lambda s: _corrupt(s, "events", (0, 0, core.E_SEAT), 9), "events"),
        (lambda s: _corrupt(s, "decks", (0, core.PILE, 0), 60), "pile"),
        (lambda s: {**s, "options": {**s["options"], "max_steps": 10}}, "max_steps"),
        (lambda s: {**s, "options": {**s["options"], "win_reward": 2.0}}, "win_reward"),
        (lambda s: {**s, "version": 0}, "version"),
        (lambda s: {k: v for k, v in s.items() if k != "reset_rng"}, "reset_rng"),
        (lambda s: {**s, "rewards": {**s["rewards"], "player_0": math.nan}}, "rewards"),
        (lambda s: {**s, "agents": s["agents"][1:]}, "agents"),
        (lambda s: {**s, "terminations": dict.fromkeys(s["agents"], True)}, "terminations"),
        (lambda s: {**s, "reset_rng": {"bit_generator": "MT19937"}}, "reset_rng"),
        (lambda s: {**s, "arrays": {**s["arrays"], "hands": s["arrays"]["hands"].astype(np.int64)}}, "hands"),
    ],
)
def test_a_rejected_set_state_names_the_field_and_changes_nothing(mutate, field):
    env = raw_env(4, num_rounds=2)
    env.reset(seed=5)
    play_randomly(env, np.random.default_rng(0), 9)
    source = raw_env(4, num_rounds=2)
    source.reset(seed=6)
    play_randomly(source, np.random.default_rng(1), 13)
    before = env.get_state()
    with pytest.raises(ValueError, match=field):
        env.set_state(mutate(source.get_state()))
    assert states_equal(env.get_state(), before)


def test_set_state_copies_the_snapshot():
    env = raw_env(4)
    env.reset(seed=0)
    snapshot = env.get_state()
    other = raw_env(4)
    other.reset(seed=1)
    other.set_state(snapshot)
    snapshot["arrays"]["scalars"][0, core.S_STACK_SIZE] = 10**6  # the caller's copy, not the env's
    snapshot["rewards"]["player_0"] = 5.0
    assert states_equal(other.get_state(), env.get_state())


_FUZZ_SCRIPT = textwrap.dedent(
    """
    import copy, sys
    import numpy as np
    from hypothesis import HealthCheck, given, settings, strategies as st
    from mao_env import core, state
    from mao_env.env import raw_env
    from mao_env.vector import MaoVectorEnv
    from tests.mao.mao_helpers import random_legal as legal, random_play_states

    KWARGS = [
        dict(n_players=4, num_rounds=2, max_steps=120),
        dict(n_players=3, num_rounds=2, rule_choice="fixed", max_steps=80),
        dict(n_players=7, rounds="cambridge", max_steps=100),
    ]

    def snapshots(kwargs, seed):
        options = {"fixed_rules": [3, 30]} if kwargs.get("rule_choice") == "fixed" else None
        return random_play_states(raw_env(**kwargs), seed, options)

    BASES = [(k, snapshots(kwargs, k)) for k, kwargs in enumerate(KWARGS)]

    def same(a, b):
        if set(a) != set(b):
            return False
        for key in a["arrays"]:
            if not np.array_equal(a["arrays"][key], b["arrays"][key]):
                return False
        return all(a[key] == b[key] for key in a if key != "arrays")

    def conserved(hands, scalars, n_players, n_decks, b=0):
        played = 1 if scalars[b, core.S_PLAYED] >= 0 else 0
        held = int(hands[b, :n_players].sum()) + int(scalars[b, core.S_STACK_SIZE])
        return held + int(scalars[b, core.S_PILE_SIZE]) + played == 54 * n_decks

    WEIRD = [-(2**63), -(2**31), -129, -2, -1, 0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, 44, 45, 52, 53,
             54, 126, 127, 161, 162, 163, 255, 2**31, 2**53, 2**62]

    @st.composite
    def mutation(draw):
        index, bases = draw(st.sampled_from(BASES))
        snap = copy.deepcopy(draw(st.sampled_from(bases)))
        kind = draw(st.sampled_from(["scalar", "scalar", "scalar", "element", "element", "shape",
                                     "dtype", "missing", "bookkeeping", "options"]))
        arrays = snap["arrays"]
        if kind in ("scalar", "element"):
            key = "scalars" if kind == "scalar" else draw(st.sampled_from(sorted(arrays)))
            array = arrays[key]
            flat = draw(st.integers(0, array.size - 1))
            info = np.iinfo(array.dtype)
            value = draw(st.one_of(st.sampled_from(WEIRD), st.integers(int(info.min), int(info.max))))
            array.reshape(-1)[flat] = np.array(value).astype(array.dtype)  # wraps like a corrupt write
        elif kind == "shape":
            key = draw(st.sampled_from(sorted(arrays)))
            arrays[key] = arrays[key].reshape(-1)[: draw(st.integers(0, arrays[key].size))].copy()
        elif kind == "dtype":
            key = draw(st.sampled_from(sorted(arrays)))
            dtype = draw(st.sampled_from([np.int64, np.int32, np.float64, np.uint8]))
            arrays[key] = arrays[key].astype(dtype)
        elif kind == "missing":
            if draw(st.booleans()):
                del snap[draw(st.sampled_from(sorted(k for k in snap if k != "arrays")))]
            else:
                del arrays[draw(st.sampled_from(sorted(arrays)))]
        elif kind == "bookkeeping":
            key = draw(st.sampled_from(["agents", "rewards", "cumulative_rewards", "terminations",
                                        "truncations", "infos", "reset_rng", "last_calls", "version"]))
            snap[key] = draw(st.sampled_from([None, 1, float("nan"), [], {}, "x", {"player_0": float("inf")},
                                              ["player_9"], {"player_0": True}]))
        else:
            name = draw(st.sampled_from(sorted(snap["options"])))
            snap["options"][name] = draw(st.sampled_from([0, 1, 2, 10**6, -1.0, "agent", True, None]))
        return index, snap

    counts = {"rejected": 0, "accepted": 0}

    @settings(max_examples=int(sys.argv[1]), deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutation(), st.integers(0, 2**32 - 1))
    def test_aec(case, seed):
        index, snap = case
        kwargs = KWARGS[index]
        env = raw_env(**kwargs)
        env.set_state(BASES[index][1][len(BASES[index][1]) // 2])
        before = env.get_state()
        try:
            env.set_state(snap)
        except (ValueError, TypeError):
            counts["rejected"] += 1
            assert same(env.get_state(), before)
        else:
            counts["accepted"] += 1
        rng = np.random.default_rng(seed)
        for _ in range(400):  # to the end of the episode (max_steps is small)
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                break
            env.step(legal(rng, env._mask))
            assert conserved(env._state[0], env._state[3], env.n_players, env.n_decks)

    @settings(max_examples=int(sys.argv[1]) // 2, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutation(), st.integers(0, 2**32 - 1))
    def test_vector(case, seed):
        index, snap = case
        kwargs = KWARGS[index]
        venv = MaoVectorEnv(2, seed=1, fixed_rules=[3, 30] if index == 1 else (), **kwargs)
        step = venv.reset()
        before = [np.array(a, copy=True) for a in venv._state]
        try:
            venv.set_game_state(1, snap)
        except (ValueError, TypeError):
            counts["rejected"] += 1
            assert all(np.array_equal(x, y) for x, y in zip(before, venv._state))
        else:
            counts["accepted"] += 1
        rng = np.random.default_rng(seed)
        masks = venv.observe(np.zeros(2, dtype=np.int64)) is not None and venv._action_mask
        for _ in range(200):
            actions = np.array([legal(rng, m) for m in masks])
            step = venv.step(actions)
            masks = step.action_mask
            for b in range(2):
                assert conserved(venv._state[0], venv._state[3], venv.n_players, venv.n_decks, b)

    test_aec()
    test_vector()
    print(counts["rejected"], counts["accepted"])
    """
)


def test_hundreds_of_corrupted_snapshots_never_crash_and_rejections_change_nothing(tmp_path):
    script = tmp_path / "fuzz_snapshots.py"
    script.write_text(_FUZZ_SCRIPT)
    repo = str(Path(__file__).resolve().parents[2])  # the script imports the tests' Mao helpers
    python_path = os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, str(script), "400"],
        capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, "PYTHONPATH": python_path},
    )  # fmt: skip
    # A SIGSEGV in a kernel shows as a negative return code.
    assert result.returncode == 0, (
        f"return code {result.returncode}\n{result.stdout}\n{result.stderr[-5000:]}"
    )
    rejected, accepted = (int(x) for x in result.stdout.split()[-2:])
    assert rejected >= 300 and accepted >= 10, (rejected, accepted)


def test_vector_set_game_state_rejects_a_corrupt_or_finished_game_and_changes_nothing():
    venv = MaoVectorEnv(3, seed=0, num_rounds=1)
    venv.reset()
    before = [a.copy() for a in venv._state]
    good = venv.get_game_state(0)
    bad = copy.deepcopy(good)
    bad["arrays"]["scalars"][0, core.S_STACK_SIZE] = 200
    with pytest.raises(ValueError, match="S_STACK_SIZE"):
        venv.set_game_state(1, bad)
    aec = raw_env(4, num_rounds=1)
    aec.reset(seed=0)
    rng = np.random.default_rng(0)
    play_randomly(aec, rng, 10_000)
    with pytest.raises(ValueError, match="over"):
        venv.set_game_state(1, aec.get_state())
    other = raw_env(4, num_rounds=2)
    other.reset(seed=0)
    with pytest.raises(ValueError, match="num_rounds"):
        venv.set_game_state(1, other.get_state())
    assert all(np.array_equal(x, y) for x, y in zip(before, venv._state, strict=True))
    venv.set_game_state(1, good)
    assert states_equal(venv.get_game_state(1), good)


# ---- item 3: a rejected reset changes nothing -------------------------------------------------
BAD_RESET_OPTIONS = [
    "hands",
    {"hands": {0: ["9X"]}},
    {"hands": {0: ["5H"] * 3}},
    {"hands": {9: ["5H"]}},
    {"hands": {0: "5H"}},
    {"hands": [["5H"]]},
    {"hands": {True: ["5H"]}},
    {"pile": []},
    {"pile": "5H"},
    {"pile": ["5H", 3]},
    {"stack": ["ZZ"]},
    {"stack": None},
    {"hands": {0: ["5H"]}, "pile": ["5H"], "stack": ["5H"]},
    {"rules": [45]},
    {"rules": [3, 3]},
    {"rules": [(3, 9)]},
    {"rules": [(3, 1, 2)]},
    {"rules": "3"},
    {"rules": list(range(33))},
    {"rules": [3.0]},
    {"fixed_rules": [1]},
    {"current": 4},
    {"current": -1},
    {"current": 1.0},
    {"direction": 0},
    {"direction": 1.0},
    {"direction": True},
    {"pending_seven": -1},
    {"pending_seven": 10**30},
    {"named_suit": "stars"},
    {"named_suit": ["hearts"]},
    {"dealer": 1},
    {"hands": {0: ["5H"]}, "current": 9},  # a valid part before an invalid one
    {"rules": [3], "named_suit": "stars"},
]


@pytest.mark.parametrize("options", BAD_RESET_OPTIONS, ids=[repr(o)[:40] for o in BAD_RESET_OPTIONS])
def test_a_rejected_reset_changes_nothing(options):
    env = raw_env(4, num_rounds=2)
    env.reset(seed=3)
    play_randomly(env, np.random.default_rng(0), 7)
    twin = pickle.loads(pickle.dumps(env))
    with pytest.raises((ValueError, TypeError)):
        env.reset(seed=11, options=options)
    assert states_equal(env.get_state(), twin.get_state())
    assert np.array_equal(env._mask, twin._mask)
    # Later behaviour is the untouched copy's: a seedless reset draws the same deal, and play goes on.
    env.reset()
    twin.reset()
    rng, twin_rng = np.random.default_rng(4), np.random.default_rng(4)
    play_randomly(env, rng, 30)
    play_randomly(twin, twin_rng, 30)
    assert states_equal(env.get_state(), twin.get_state())


def test_a_rejected_first_reset_leaves_the_env_unreset():
    env = raw_env(4)
    with pytest.raises(ValueError, match="current"):
        env.reset(seed=0, options={"current": 9})
    with pytest.raises(RuntimeError, match="reset"):
        env.get_state()


def test_scenario_reset_still_places_every_card():
    env = raw_env(4)
    env.reset(
        seed=0, options={"hands": {0: ["9D", "JK"]}, "pile": ["5H"], "stack": ["2C"], "pending_seven": 2}
    )
    assert env.hand(0) == ["9D", "JK"] and env.top_card() == "5H"
    assert total_cards(env) == 108
    assert int(env._state[3][0, core.S_PENDING_SEVEN]) == 2


# ---- item 4: numeric options ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"win_reward": math.nan}, ValueError, "win_reward must be finite"),
        ({"win_reward": math.inf}, ValueError, "win_reward must be finite"),
        ({"penalty_card_reward": -math.inf}, ValueError, "penalty_card_reward must be finite"),
        ({"penalty_card_reward": np.float32("nan")}, ValueError, "penalty_card_reward must be finite"),
        ({"num_rounds": 10**30}, ValueError, "num_rounds must be in 1..2147483647"),
        ({"max_steps": 2**70}, ValueError, "max_steps must be in 1..2147483647"),
        ({"max_sub_actions": 10**30}, ValueError, "max_sub_actions must be in 3..2147483647"),
        ({"n_players": np.int64(99)}, ValueError, "n_players must be in 2..8"),
        ({"num_rounds": True}, TypeError, "num_rounds must be an integer"),
        ({"max_steps": np.bool_(True)}, TypeError, "max_steps must be an integer"),
        ({"n_events": 2.0}, TypeError, "n_events must be an integer"),
        ({"seven_turn_ends": 1}, TypeError, "seven_turn_ends must be a bool"),
        ({"reasons": ["calls"]}, ValueError, "reasons must be one of"),
        ({"rule_choice": {}}, ValueError, "rule_choice must be one of"),
        ({"win_reward": True}, TypeError, "win_reward must be a number"),
    ],
)
def test_absurd_numeric_options_are_named(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        raw_env(**kwargs)
    with pytest.raises(error, match=re.escape(message)):
        MaoVectorEnv(2, **kwargs)


def test_numpy_numbers_are_accepted_as_options():
    env = raw_env(
        np.int64(3), num_rounds=np.int32(2), max_steps=np.int64(2**31 - 1), win_reward=np.float32(2)
    )
    env.reset(seed=0)
    assert env.n_players == 3 and env.num_rounds == 2 and env.win_reward == 2.0
    assert type(env.n_players) is int and type(env.win_reward) is float


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rules": [3, 4], "rule_pool": [3, 4]}, "rule_pool has 0 rule"),
        ({"rules": [3], "rule_pool": [3, 4], "pool_draws": 2}, "rule_pool has 1 rule"),
        ({"rules": list(range(31)), "rule_pool": [40, 41], "pool_draws": 2}, "at most 32"),
    ],
)
def test_rules_and_a_rule_pool_together_never_drop_the_pool_silently(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MaoVectorEnv(2, seed=0, **kwargs)


@pytest.mark.parametrize("name", ["rules", "fixed_rules"])
def test_rule_lists_of_the_vector_env_must_be_sequences(name):
    with pytest.raises(TypeError, match=f"{name} must be a sequence"):
        MaoVectorEnv(2, seed=0, rule_choice="fixed", **{name: np.array([3, 4])})


def test_rules_and_a_rule_pool_together_draw_from_the_pool_every_episode():
    venv = MaoVectorEnv(4, seed=0, rules=[3], rule_pool=[3, 4, 5], pool_draws=2)
    venv.reset()
    for game in range(4):
        assert sorted(rule for rule, _ in venv.game_rules(game)) == [3, 4, 5]


# ---- item 5: stepping after the end -----------------------------------------------------------
def test_stepping_after_every_agent_is_done_is_a_clear_error():
    env = raw_env(3, max_steps=5)
    env.reset(seed=0)
    play_randomly_to_the_end(env, np.random.default_rng(0), max_iter=100)
    assert env.agents == []
    before = env.get_state()
    with pytest.raises(RuntimeError, match=r"the episode is over: call reset\(\)"):
        env.step(0)
    with pytest.raises(RuntimeError, match=r"the episode is over: call reset\(\)"):
        env.step(None)
    assert states_equal(env.get_state(), before)
    env.reset(seed=1)
    assert env.agents == env.possible_agents


def test_a_live_action_for_a_dead_agent_is_a_clear_error():
    env = raw_env(3, max_steps=2)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    play_randomly(env, rng, 10)
    assert env.truncations[env.agent_selection]
    with pytest.raises(ValueError, match="None"):
        env.step(0)


# ---- item 18: the per-seat view ----------------------------------------------------------------
def _card_tokens(text: str) -> set[str]:
    return {token for token in re.findall(r"\b(?:10|[2-9AJQK])[CDHS]\b|\bJK\b", text)}


def _rule_texts(rule: int) -> list[str]:
    return [rule_library.RULE_DESCRIPTIONS[rule], f"rule {rule}:"]


@pytest.mark.parametrize("seed", range(4))
def test_the_seat_view_shows_only_what_the_seat_may_know(seed):
    env = raw_env(4, num_rounds=3, rule_choice="agent", render_mode="ansi")
    env.reset(seed=seed, options={"rules": [(3, 0), (20, 1), (35, 2), (44, -1)]})
    rng = np.random.default_rng(seed)
    checked = 0
    for step in range(400):
        if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            break
        if step % 7 == 0:
            for seat in range(4):
                text = env.seat_view(seat)
                assert env.render(seat=seat) == text
                public = {env.top_card()} | {
                    event["card"] for event in env.public_events() if event["card"] is not None
                }
                played = int(env._state[3][0, core.S_PLAYED])
                if env.current_seat == seat and played >= 0:  # its own card on the table this turn
                    public.add(cards.CARD_NAMES[played])
                assert _card_tokens(text) <= set(env.hand(seat)) | public, text
                # Every card of the seat's hand is shown, and the hand sizes of the others.
                assert set(env.hand(seat)) <= _card_tokens(text)
                for other in range(4):
                    if other != seat:
                        assert f"player_{other}: {len(env.hand(other))} card" in text
                known = {rule for rule, author in env.active_rules() if author == seat}
                known |= set(env.refused_rules(seat))
                for rule in range(rule_library.N_RULES):
                    for snippet in _rule_texts(rule):
                        assert (snippet in text) == (rule in known), (seat, rule, text)
                checked += 1
        env.step(random_legal(rng, env._mask))
    assert checked > 20


def test_the_seat_view_shows_the_table_state_and_the_calls():
    env = scenario(
        4,
        hands={0: ["9C", "9H"], 1: ["2H", "KS"], 2: ["2C", "3C"], 3: ["2D", "3D"]},
        pile=["5H"],
        named_suit="spades",
        direction=-1,
        pending_seven=0,
    )
    env.step(env.action_from_text("play 9C"))
    env.step(env.action_from_text("end"))
    text = env.seat_view(1)
    assert "your hand (2): 2H KS" in text
    assert "top card 5H" in text and "suit to follow spades" in text and "direction -" in text
    assert "player_0: 3 cards" in text  # 9C taken back, 9H and the penalty card
    assert "Bad card" in text and "player_0 plays 9C" in text
    assert "9H" not in text
    with pytest.raises(ValueError, match="seat must be"):
        env.seat_view(4)
    with pytest.raises(TypeError, match="seat must be an integer"):
        env.render(seat=True)


def test_render_without_a_seat_still_shows_the_whole_table():
    env = raw_env(4, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    for seat in range(4):
        assert " ".join(env.hand(seat)) in text
    assert raw_env(4).render() is None  # no render mode: nothing
    assert isinstance(state.SNAPSHOT_VERSION, int) and cards.N_CARD_TYPES == 53


def test_allowed_actions_checks_the_arrays_it_is_given():
    from mao_env.env import allowed_actions

    env = raw_env(4, num_rounds=2)
    env.reset(seed=0)
    arrays = env.get_state()["arrays"]
    assert np.array_equal(allowed_actions(arrays), env.allowed_actions())
    for key, index, value, field in [
        ("scalars", (0, core.S_PILE_SIZE), 10**9, "S_PILE_SIZE"),
        ("scalars", (0, core.S_N_PLAYERS), 40, "S_N_PLAYERS"),
        ("scalars", (0, core.CFG_N_DECKS), 9, "CFG_N_DECKS"),
        ("rules", (0, core.ACTIVE, 0), 10**6, "active"),
        ("hands", (0, 0, 0), -5, "hands"),
    ]:
        bad = copy.deepcopy(arrays)
        bad[key][index] = value
        with pytest.raises(ValueError, match=field):
            allowed_actions(bad)
    with pytest.raises(ValueError, match=r"game must be an int in 0\.\.0"):
        allowed_actions(arrays, game=1)
