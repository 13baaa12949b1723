"""The Madiao PettingZoo env: API conformance, observations, options, errors, snapshots, render."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from cardgame_core.aec import IllegalActionError
from madiao_env import cards, core, madiao_v0
from madiao_env import env as env_module
from tests.madiao.conftest import finish_randomly, play_script

TRICKS_3_1_2_2 = ["0:2S", "0:3S", "0:4S 1:5S", "1:2M 2:3M", "2:4M", "2:30T 3:40T", "3:50T", "3:2C 0:1C"]


# ----------------------------------------------------------------------------- PettingZoo tests


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"obs_type": "history"},
        {"obs_type": "record"},
        {"episode": "match"},
        {"face_up_discard": True, "stake": 2.0},
    ],
)
def test_api_test(kwargs):
    api_test(madiao_v0.env(**kwargs), num_cycles=200)


@pytest.mark.parametrize("kwargs", [{}, {"obs_type": "history", "episode": "match"}])
def test_seed_test(kwargs):
    seed_test(lambda: madiao_v0.env(**kwargs), num_cycles=100)


def test_import_compiles_nothing():
    code = "import sys, madiao_env; print('numba' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# ----------------------------------------------------------------------------- episodes, rewards


@pytest.mark.parametrize("episode", ["hand", "match"])
def test_rewards_are_zero_sum_and_equal_the_settlement_lines(episode):
    env = madiao_v0.raw_env(episode=episode, stake=0.5)
    env.reset(seed=11)
    rng = np.random.default_rng(1)
    returns = np.zeros(4)
    settled_sum = np.zeros(4)
    while env.agents and not env.terminations[env.agent_selection]:
        before = env.last_settlement
        env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
        returns += [env.rewards[f"player_{s}"] for s in range(4)]
        settlement = env.last_settlement
        if settlement is not before:
            info = env.infos["player_0"]
            assert (info["hand_number"], info["payoffs"]) == (
                settlement["hand_number"],
                settlement["payoffs"],
            )
            settled_sum += settlement["payoffs"]
            by_lines = np.zeros(4)
            for line in settlement["lines"]:
                assert line["rule"] in core.RULE_NAMES and line["stakes"] > 0
                by_lines[line["payer"]] -= line["stakes"]
                by_lines[line["payee"]] += line["stakes"]
            np.testing.assert_allclose(by_lines, settlement["payoffs"])
    assert returns.sum() == pytest.approx(0.0)
    np.testing.assert_allclose(returns, settled_sum)
    assert env.table()["phase"] == "over"


def test_stake_multiplies_every_line():
    one = play_script(TRICKS_3_1_2_2)
    three = play_script(TRICKS_3_1_2_2, stake=3.0)
    assert [x * 3 for x in one.infos["player_0"]["payoffs"]] == three.infos["player_0"]["payoffs"]
    assert [three.rewards[f"player_{s}"] for s in range(4)] == [3.0, -3.0, 0.0, 0.0]


def test_terminal_rewards_reach_every_agent_through_last():
    env = madiao_v0.env()
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        _, reward, terminated, truncated, info = env.last()
        totals[agent] += reward
        if terminated or truncated:
            assert info["hand_number"] == 0 and sum(info["payoffs"]) == pytest.approx(0.0)
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(env.last()[0]["action_mask"]))))
    assert sum(totals.values()) == pytest.approx(0.0)


def test_random_deal_is_a_full_deck():
    env = madiao_v0.raw_env()
    for seed in range(5):
        env.reset(seed=seed)
        table = env.table()
        dealt = [c for hand in table["hands"] for c in hand] + table["stock"]
        assert sorted(dealt, key=cards.card_id) == list(cards.CARD_NAMES)
        assert all(len(hand) == 8 for hand in table["hands"]) and len(table["stock"]) == 8


# ----------------------------------------------------------------------------- observations


def test_summary_observation_layout():
    env = play_script(TRICKS_3_1_2_2, stop_before=11)  # seat 3 to act; trick 2: 4S, 5S, a slough
    table = env.table()
    obs = env.observe("player_3")["observation"]
    assert obs.dtype == np.int8 and env.observation_space("player_3")["observation"].contains(obs)
    assert (
        cards.names_of(cards.mask_of(np.array(cards.CARD_NAMES)[obs[env_module.OBS_HAND] == 1]))
        == table["hands"][3]
    )
    assert np.flatnonzero(obs[env_module.OBS_UPCARD]).tolist() == [cards.card_id(table["stock"][0])]
    seen = {c for seat, c, face_up, _ in table["history"] if face_up}
    assert {cards.CARD_NAMES[i] for i in np.flatnonzero(obs[env_module.OBS_SEEN_FACE_UP])} == seen
    own_sloughs = {c for seat, c, face_up, _ in table["history"] if seat == 3 and not face_up}
    assert {cards.CARD_NAMES[i] for i in np.flatnonzero(obs[env_module.OBS_OWN_SLOUGHED])} == own_sloughs
    by_seat = obs[env_module.OBS_TRICK_FACE_UP].reshape(4, 40)
    # Relative seats from seat 3: seat 0 is 1, seat 1 is 2, seat 2 is 3.
    assert np.flatnonzero(by_seat[1]).tolist() == [cards.card_id("4S")]
    assert np.flatnonzero(by_seat[2]).tolist() == [cards.card_id("5S")]
    assert not by_seat[0].any() and not by_seat[3].any()
    assert obs[env_module.OBS_TRICK_FACE_DOWN].tolist() == [0, 0, 0, 1]
    assert obs[env_module.OBS_TRICK_FACE_DOWN_COUNT].tolist() == [1]
    assert obs[env_module.OBS_TRICK_LEADER].tolist() == [0, 1, 0, 0]
    plays = obs[env_module.OBS_TRICK_PLAYS].reshape(3, 41)
    assert np.flatnonzero(plays[0]).tolist() == [cards.card_id("4S")]
    assert np.flatnonzero(plays[1]).tolist() == [cards.card_id("5S")]
    assert np.flatnonzero(plays[2]).tolist() == [40]
    assert obs[env_module.OBS_TRICKS_WON].tolist() == [0, 2, 0, 0]  # seat 0 (relative 1) won two
    assert obs[env_module.OBS_BANKER].tolist() == [0, 1, 0, 0]
    assert obs[env_module.OBS_FIRST].tolist() == [0, 1, 0, 0]
    assert np.flatnonzero(obs[env_module.OBS_TRICK_NUMBER]).tolist() == [2]
    assert obs[env_module.OBS_PHASE].tolist() == [0, 1, 0]
    assert env_module.OBS_REDEAL_PASSED.stop == core.SUMMARY_SIZE


def test_history_observation_hides_other_seats_face_down_cards():
    env = play_script(TRICKS_3_1_2_2, stop_before=11, obs_type="history")
    table = env.table()
    for seat in range(4):
        obs = env.observe(f"player_{seat}")["observation"]
        assert obs.shape == (core.HISTORY_SIZE,)
        slots = obs[env_module.HIST_PLAYS].reshape(32, 45)
        for k, (player, name, face_up, _) in enumerate(table["history"]):
            assert np.flatnonzero(slots[k, :4]).tolist() == [(player - seat) % 4]
            card_part = np.flatnonzero(slots[k, 4:44]).tolist()
            if face_up or player == seat:
                assert card_part == [cards.card_id(name)]
            else:
                assert card_part == []
            assert slots[k, 44] == (0 if face_up else 1)
        assert not slots[len(table["history"]) :].any()
        dealt = set(table["hands"][seat]) | {c for p, c, _, _ in table["history"] if p == seat}
        assert {cards.CARD_NAMES[i] for i in np.flatnonzero(obs[env_module.HIST_HAND_DEALT])} == dealt


def test_record_observation_is_the_summary_then_each_seats_record():
    # Tricks 1-2: seat 0 leads 2S then 3S and wins both, the others slough; trick 3 so far: seat 0
    # leads 4S, seat 1 captures with 5S, seat 2 sloughs. Seat 3 (relative 0) is to act.
    summary = play_script(TRICKS_3_1_2_2, stop_before=11)
    env = play_script(TRICKS_3_1_2_2, stop_before=11, obs_type="record")
    obs = env.observe("player_3")["observation"]
    assert obs.shape == (core.RECORD_SIZE,) and env.observation_space("player_3")["observation"].contains(obs)
    assert obs[: core.SUMMARY_SIZE].tolist() == summary.observe("player_3")["observation"].tolist()

    def by_seat(piece):  # relative seat -> card names
        planes = obs[piece].reshape(4, 40)
        return [{cards.CARD_NAMES[i] for i in np.flatnonzero(plane)} for plane in planes]

    # Relative seats from seat 3: seat 0 is 1, seat 1 is 2, seat 2 is 3.
    assert by_seat(env_module.OBS_FACE_UP_BY_SEAT) == [set(), {"2S", "3S", "4S"}, {"5S"}, set()]
    assert by_seat(env_module.OBS_WON_WITH_BY_SEAT) == [set(), {"2S", "3S"}, set(), set()]
    under = [{"2S", "3S"}, set(), {"2S", "3S"}, {"2S", "3S", "5S"}]
    assert by_seat(env_module.OBS_SLOUGHED_UNDER_BY_SEAT) == under
    assert obs[env_module.OBS_SLOUGHS_BY_SEAT].tolist() == [2, 0, 2, 3]
    assert env_module.OBS_SLOUGHS_BY_SEAT.stop == core.RECORD_SIZE


def expected_record(history: list, observer: int) -> tuple[list[set], list[set], list[set], list[int]]:
    """The record pieces worked out from ``table()["history"]`` in plain Python: per relative seat,
    the cards played face up, the cards that won its tricks, the best face-up card under each of
    its sloughs, and its slough count."""
    face_up, won_with, under = ([set() for _ in range(4)] for _ in range(3))
    sloughs = [0] * 4
    for start in range(0, len(history), 4):
        trick = history[start : start + 4]
        best_seat, best = trick[0][0], trick[0][1]
        for seat, name, up, _ in trick:
            relative = (seat - observer) % 4
            if up:
                face_up[relative].add(name)
                same_suit = cards.CARD_SUIT[cards.card_id(name)] == cards.CARD_SUIT[cards.card_id(best)]
                if same_suit and cards.card_id(name) > cards.card_id(best):
                    best_seat, best = seat, name
            else:
                under[relative].add(best)
                sloughs[relative] += 1
        if len(trick) == 4:
            won_with[(best_seat - observer) % 4].add(best)
    return face_up, won_with, under, sloughs


@pytest.mark.parametrize("face_up_discard", [False, True])
def test_record_observations_agree_with_the_play_history_in_random_games(face_up_discard):
    env = madiao_v0.raw_env(obs_type="record", face_up_discard=face_up_discard)
    rng = np.random.default_rng(7)
    checked = 0
    for seed in range(30):
        env.reset(seed=seed)
        while env.agents:
            history = env.table()["history"]
            for observer in range(4):
                obs = env.observe(f"player_{observer}")["observation"]
                planes = [
                    [set(np.asarray(cards.CARD_NAMES)[plane == 1]) for plane in obs[piece].reshape(4, 40)]
                    for piece in (
                        env_module.OBS_FACE_UP_BY_SEAT,
                        env_module.OBS_WON_WITH_BY_SEAT,
                        env_module.OBS_SLOUGHED_UNDER_BY_SEAT,
                    )
                ]
                face_up, won_with, under, sloughs = expected_record(history, observer)
                assert planes == [face_up, won_with, under], (seed, observer, history)
                assert obs[env_module.OBS_SLOUGHS_BY_SEAT].tolist() == sloughs
                checked += 1
            mask = env.observe(env.agent_selection)["action_mask"]
            env.step(int(rng.choice(np.flatnonzero(mask))) if mask.any() else None)
    assert checked > 30 * 4 * 30


def test_observations_handed_out_are_not_overwritten_by_later_steps():
    env = madiao_v0.raw_env()
    env.reset(seed=0)
    first = env.observe(env.agent_selection)
    kept = {key: value.copy() for key, value in first.items()}
    env.step(int(np.flatnonzero(first["action_mask"])[0]))
    for key in kept:
        np.testing.assert_array_equal(first[key], kept[key])


# ----------------------------------------------------------------------------- table, state


def test_table_fields():
    env = play_script(TRICKS_3_1_2_2, stop_before=9)
    table = env.table()
    assert table["phase"] == "play" and table["to_act"] == 1 and table["trick_number"] == 2
    assert table["current_trick"] == [(0, "4S", True)]
    assert table["tricks_won"] == [2, 0, 0, 0] and table["banker"] == 0 and table["first"] == 0
    assert [h[3] for h in table["history"]] == [0] * 4 + [1] * 4 + [2]
    assert table["hand_number"] == 0 and table["redeals"] == 0
    env = play_script(TRICKS_3_1_2_2)
    assert env.table()["phase"] == "over" and env.table()["to_act"] is None


def _random_continuation(env, seed, steps=400):
    rng = np.random.default_rng(seed)
    trace = []
    for _ in range(steps):
        if not env.agents or env.terminations[env.agent_selection]:
            break
        agent = env.agent_selection
        obs = env.observe(agent)
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
        trace.append((agent, action, obs["observation"].tobytes(), dict(env.rewards), str(env.table())))
    return trace


@pytest.mark.parametrize("episode", ["hand", "match"])
def test_get_state_set_state_replays_exactly(episode):
    env = madiao_v0.raw_env(episode=episode)
    env.reset(seed=5)
    _random_continuation(env, 0, steps=45)
    snapshot = pickle.loads(pickle.dumps(env.get_state()))
    expected = _random_continuation(env, 1)
    fresh = madiao_v0.raw_env(episode=episode)
    fresh.set_state(snapshot)
    assert _random_continuation(fresh, 1) == expected
    env.set_state(snapshot)  # the same env, rewound
    assert _random_continuation(env, 1) == expected


def test_set_state_rejects_other_options():
    snapshot = madiao_v0.raw_env()
    snapshot.reset(seed=0)
    with pytest.raises(ValueError, match="other options"):
        madiao_v0.raw_env(face_up_discard=True).set_state(snapshot.get_state())
    with pytest.raises(ValueError, match="snapshot"):
        madiao_v0.raw_env().set_state({"bad": 1})


def test_reset_seed_is_deterministic_and_seedless_reset_continues():
    a, b = madiao_v0.raw_env(), madiao_v0.raw_env()
    a.reset(seed=42)
    b.reset(seed=42)
    assert a.table() == b.table()
    a.reset()
    b.reset()
    assert a.table() == b.table()


# ----------------------------------------------------------------------------- errors


def test_raw_env_illegal_action_names_the_action():
    env = madiao_v0.raw_env()
    env.reset(seed=0)
    mask = env.observe(env.agent_selection)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    with pytest.raises(IllegalActionError, match=cards.action_to_text(illegal)):
        env.step(illegal)


@pytest.mark.parametrize(("action", "match"), [(82, "out of range"), (-1, "out of range"), ("x", "integer")])
def test_raw_env_rejects_bad_action_ids(action, match):
    env = madiao_v0.raw_env()
    env.reset(seed=0)
    with pytest.raises(IllegalActionError, match=match):
        env.step(action)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"obs_type": "pixels"}, ValueError, "obs_type"),
        ({"episode": "game"}, ValueError, "episode"),
        ({"stake": 0}, ValueError, "stake"),
        ({"stake": "1"}, TypeError, "stake"),
        ({"max_redeals": -1}, ValueError, "max_redeals"),
        ({"max_redeals": 1.5}, TypeError, "max_redeals"),
        ({"face_up_discard": "yes"}, TypeError, "face_up_discard"),
        ({"render_mode": "rgb_array"}, ValueError, "render_mode"),
    ],
)
def test_bad_constructor_options(kwargs, error, match):
    with pytest.raises(error, match=match):
        madiao_v0.raw_env(**kwargs)


_HANDS = [list(cards.CARD_NAMES[8 * s : 8 * s + 8]) for s in range(4)]
_STOCK = list(cards.CARD_NAMES[32:])


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"hand": _HANDS}, ValueError, "unknown reset option"),
        ({"hands": _HANDS}, ValueError, "stock"),
        ({"hands": _HANDS, "stock": _STOCK[:7]}, ValueError, "8 cards"),
        ({"hands": _HANDS[:3], "stock": _STOCK}, ValueError, "4 hands"),
        ({"hands": [*_HANDS[:3], [*_HANDS[3][:7], "9C"]], "stock": _STOCK}, ValueError, "9C appears more"),
        ({"hands": [*_HANDS[:3], [*_HANDS[3][:7], "11C"]], "stock": _STOCK}, ValueError, "unknown card name"),
        ({"hands": _HANDS, "stock": _STOCK, "banker": 4}, ValueError, "banker"),
        ({"hands": _HANDS, "stock": _STOCK, "first": "0"}, TypeError, "first"),
        ({"deck": list(cards.CARD_NAMES[:39])}, ValueError, "40 cards"),
        ({"deck": list(cards.CARD_NAMES), "first": 0}, ValueError, "deck"),
        ({"banker": True}, TypeError, "banker"),
        ({"stock": _STOCK}, ValueError, "hands"),
        ("hands", TypeError, "options"),
        # Absurd values: out of range, of the wrong type, not a number.
        ({"banker": 10**30}, ValueError, "banker"),
        ({"banker": np.int64(-1)}, ValueError, "banker"),
        ({"banker": 1.0}, TypeError, "banker"),
        ({"banker": float("nan")}, TypeError, "banker"),
        ({"hands": "x", "stock": ["1C"] * 8}, ValueError, "hands"),
        ({"deck": [10**30] * 40}, (ValueError, TypeError), "card"),
        ({"deck": [float("nan")] * 40}, (ValueError, TypeError), "card"),
    ],
)
def test_bad_reset_options(options, error, match):
    env = madiao_v0.raw_env()
    with pytest.raises(error, match=match):
        env.reset(seed=0, options=options)


def test_banker_option_is_used():
    env = madiao_v0.raw_env()
    for banker in range(4):
        env.reset(seed=0, options={"banker": banker})
        table = env.table()
        assert table["banker"] == banker or table["hand_number"] > 0


# ----------------------------------------------------------------------------- render


def test_render_ansi_and_human(capsys):
    env = play_script(TRICKS_3_1_2_2, render_mode="ansi")
    text = env.render()
    assert "trick_count" in text and "seat 1 pays seat 0 1" in text and "upcard: 5M" in text
    human = madiao_v0.raw_env(render_mode="human")
    human.reset(seed=0)
    finish_randomly(human)
    assert "Madiao hand" in capsys.readouterr().out
