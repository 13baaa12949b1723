"""Nothing left to take (docs/mao-rules.md): an owed card that cannot be taken is not taken, and a
round in which every seat in turn order ends its turn without a card on the pile while nothing can
be taken is blocked (no winner, no new rule, the next round or the end follows). Hand-built tables,
the core against the plain-Python reference on each."""

from __future__ import annotations

import numpy as np
import pytest

from mao_env import cards, core
from mao_env.env import allowed_actions
from tests.mao.mao_helpers import assert_same, hand_size, ref_from_env, scenario

STUCK_RULES = [10, 17]  # on kings only red cards; off-suit cards must rank higher than the top card


def stuck_table(num_rounds: int = 2, **kwargs):
    """3 seats holding every card but the pile's King of spades, no stack: under the two rules no
    card may be played and nothing can be drawn."""
    deck = [name for name in cards.CARD_NAMES for _ in range(2 if name == "JK" else 1)]
    deck.remove("KS")
    hands = {seat: deck[seat::3] for seat in range(3)}
    return scenario(3, hands=hands, pile=["KS"], stack=[], rules=STUCK_RULES, num_rounds=num_rounds, **kwargs)


def step_texts(env, ref, *texts: str) -> None:
    """Play ``texts`` on the env and on its reference twin, the two compared after each."""
    for text in texts:
        action = env.action_from_text(text)
        assert env.observe(env.agent_selection)["action_mask"][action], text
        env.step(action)
        ref.apply(action)
        assert_same(env, ref)


def test_the_stuck_table_has_no_valid_card_for_any_seat():
    for seat in range(3):
        env = stuck_table(current=seat)
        mask = allowed_actions(env.get_state()["arrays"])
        assert not mask[: cards.DRAW].any(), seat


def test_an_owed_draw_with_nothing_to_take_ends_the_turn_as_a_draw():
    env = stuck_table()
    ref = ref_from_env(env)
    before = hand_size(env, 0)
    step_texts(env, ref, "draw", "end")
    assert hand_size(env, 0) == before and env.current_seat == 1
    assert env.game_view.round_blocked == 0 and env.game_view.rounds_finished == 0


def test_an_owed_penalty_with_nothing_to_take_is_announced_and_costs_nothing():
    env = stuck_table()
    ref = ref_from_env(env)
    before = hand_size(env, 0)
    step_texts(env, ref, f"play {env.hand(0)[0]}", "end")
    assert [(call["call"], call["cards"]) for call in env.last_calls][:1] == [("Bad card", 1)]
    assert hand_size(env, 0) == before  # the bad card came back; the penalty card was not there
    assert int(env._state.scalars[0, core.S_PENALTY_TAKEN_0]) == 0
    assert env.current_seat == 1 and env.game_view.round_blocked == 0


def test_the_infos_report_the_step_that_blocked_the_round():
    env = stuck_table(num_rounds=2)
    assert not any(info["round_blocked"] for info in env.infos.values())
    for text in ("draw", "end", "draw", "end", "draw"):
        env.step(env.action_from_text(text))
        assert not any(info["round_blocked"] for info in env.infos.values()), text
    env.step(env.action_from_text("end"))  # the third stuck turn in a row blocks the round
    assert env.game_view.round_blocked == 1
    assert all(info["round_blocked"] is True for info in env.infos.values())
    assert all(info["n_calls"] == 0 for info in env.infos.values())
    snapshot = env.get_state()
    twin = stuck_table(num_rounds=2)
    twin.set_state(snapshot)
    assert twin.infos == env.infos
    env.step(env.action_from_text("draw"))  # the next step reports no block again
    assert not any(info["round_blocked"] for info in env.infos.values())
    # A snapshot taken before infos had the key restores with it False.
    for info in snapshot["infos"].values():
        del info["round_blocked"]
    twin.set_state(snapshot)
    assert not any(info["round_blocked"] for info in twin.infos.values())


def test_every_seat_stuck_in_turn_order_blocks_the_round_and_deals_the_next():
    env = stuck_table(num_rounds=2)
    ref = ref_from_env(env)
    rules_before = env.active_rules()
    step_texts(env, ref, "draw", "end", "draw", "end")
    assert env.game_view.round_blocked == 0  # two of three seats: not yet
    step_texts(env, ref, "draw", "end")
    assert env.game_view.round_blocked == 1 and env.round_won_by == -1
    assert env.game_view.rounds_finished == 1 and env.active_rules() == rules_before  # no new rule
    assert [hand_size(env, seat) for seat in range(3)] == [cards.HAND_SIZE] * 3  # dealt again
    assert env.current_seat == 1  # the next round's starter, as after a round won
    assert not any(env.terminations.values())


def test_a_blocked_last_round_ends_the_episode_by_the_rule_with_no_win_reward():
    env = stuck_table(num_rounds=1)
    ref = ref_from_env(env)
    rewards = np.zeros(3)
    for text in ("draw", "end") * 3:
        step_texts(env, ref, text)
        rewards += [env.rewards[name] for name in env.possible_agents]
    assert all(env.terminations.values()) and not any(env.truncations.values())
    assert rewards.tolist() == [0.0, 0.0, 0.0] and ref.done


def test_a_card_that_stays_on_the_pile_restarts_the_count():
    """Under "on kings only red cards" alone, the Kings of hearts and diamonds (seat 1's) play on
    the King of spades: a turn that puts a card on the pile changes the table, and the count of
    stuck turns starts again."""
    deck = [name for name in cards.CARD_NAMES for _ in range(2 if name == "JK" else 1)]
    for name in ("KS", "KH", "KD"):
        deck.remove(name)
    hands = {seat: deck[seat::3] for seat in range(3)}
    hands[1] += ["KH", "KD"]
    env = scenario(3, hands=hands, pile=["KS"], stack=[], rules=[10], num_rounds=2)
    ref = ref_from_env(env)
    step_texts(env, ref, "draw", "end")
    assert int(env._state.scalars[0, core.S_STUCK_TURNS]) == 1
    step_texts(env, ref, "play KH", "end")
    assert int(env._state.scalars[0, core.S_STUCK_TURNS]) == 0 and env.top_card() == "KH"


def stuck_record() -> dict:
    """A record of the stuck table played to its blocked (and last) round."""
    from mao_env.records import make_record

    env = stuck_table(num_rounds=1)
    options = {
        "hands": {seat: env.hand(seat) for seat in range(3)},
        "pile": ["KS"],
        "stack": [],
        "rules": STUCK_RULES,
    }
    env.reset(seed=0, options=options)
    actions = ["draw", "end"] * 3
    for text in actions:
        env.step(env.action_from_text(text))
    return make_record(env, seed=0, options=options, seats=["a", "b", "c"], actions=actions)


def test_a_blocked_round_is_replayed_from_its_record_and_printed_as_such():
    from madiao_mao.training.mao.play import print_mao_record
    from mao_env.records import BLOCKED_ROUND_TEXT, replay

    record = stuck_record()
    blocked = [env.game_view.round_blocked for env in replay(record)]
    assert blocked == [0] * 6 + [1]
    lines: list[str] = []
    print_mao_record(record, lines.append)
    assert sum(BLOCKED_ROUND_TEXT in line for line in lines) == 1
    assert not any("cut off" in line for line in lines)


def test_the_last_state_of_a_game_won_or_blocked_restores():
    """A game's last snapshot (a replay keeps one every 128 steps) restores: the winning card lies
    on the pile, a blocked round's last card went back to its hand."""
    from mao_env.records import record_game, replay

    env = list(replay(record_game(["base", "base"], seed=0, n_players=2)))[-1]  # one env, moved on
    assert env.round_won_by >= 0
    env.set_state(env.get_state())
    blocked = stuck_table(num_rounds=1)
    for text in ("draw", "end") * 3:
        blocked.step(blocked.action_from_text(text))
    blocked.set_state(blocked.get_state())
    assert blocked.game_view.done == 1


def test_a_seeded_game_of_scripted_players_ends_a_blocked_round_by_the_rule():
    """3 players (Bayesian and base-rules players), seed 194: a round reaches an empty stack and a
    one-card pile with no card played; the rule blocks it and the game ends in its 3 rounds, never
    at the step cap."""
    from mao_env.records import record_game, replay

    record = record_game(["bayes", "base", "base"], seed=194, n_players=3, num_rounds=3, max_steps=6000)
    blocked = 0
    for env in replay(record):
        blocked += env.game_view.round_blocked
    assert blocked == 1 and env.game_view.rounds_finished == 3
    assert env.terminations[env.agent_selection] and not env.truncations[env.agent_selection]


def test_a_snapshot_with_the_blocked_round_columns_out_of_range_is_refused():
    env = stuck_table()
    for column, value in ((core.S_STARVED, 2), (core.S_STUCK_TURNS, 3), (core.S_ROUND_BLOCKED, -1)):
        snapshot = env.get_state()
        snapshot["arrays"]["scalars"][0, column] = value
        with pytest.raises(ValueError, match=r"S_(STARVED|STUCK_TURNS|ROUND_BLOCKED)"):
            env.set_state(snapshot)
