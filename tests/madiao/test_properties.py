"""Property tests of the Madiao env over random games (hypothesis).

Hypothesis draws the env options (both episode modes, both observation types, the stake, the
redeal cap, the face-up discard variant), the seed and every action choice. Each property is
checked after every step of whole episodes:

- rewards are zero-sum and add up to the settlement lines reported in ``last_settlement`` (and
  the payoffs in ``infos``);
- the 40 cards are conserved (hands + stock + every card played, face up or down);
- the action mask is the reference rules' legal set, and each hand's settlement holds the
  reference's lines, in both episode modes (the reference is dealt from ``table()`` at each deal);
- a seed and a sequence of actions determine everything an agent or a trainer can read;
- ``get_state``/``set_state`` (pickled, into a fresh or unpickled env, or rewinding the same env)
  continue exactly like the original;
- an observation does not change when the cards the observer cannot see are dealt differently;
- garbage actions raise errors that name the problem and leave the game untouched.
"""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cardgame_core.aec import IllegalActionError
from madiao_env import cards, core, madiao_v0
from madiao_env.env import ILLEGAL_ACTION_STAKES
from madiao_env.reference import (
    PHASE_NEEDS_DEAL,
    PHASE_OVER,
    ReferenceGame,
    meld_winner,
)
from tests.madiao.strategies import (
    AGENTS,
    ActionChooser,
    Replay,
    env_configs,
    episode_over,
    play_recorded,
    seats,
    seeds,
    snapshot_of_step,
)

PROPERTY_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
RULES_WITH_UNSEEN_DEALS = ("four_lowest", "meld")


def make_env(config: dict, wrapped: bool = False):
    return madiao_v0.env(**config) if wrapped else madiao_v0.raw_env(**config)


def dealt(config: dict, seed: int, data) -> tuple:
    """A raw env of ``config`` reset with ``seed``, and a chooser of actions drawing from ``data``."""
    env = make_env(config)
    env.reset(seed=seed)
    return env, ActionChooser(data)


def all_played_and_held(table: dict) -> list[str]:
    return (
        [name for hand in table["hands"] for name in hand]
        + list(table["stock"])
        + [name for _, name, _, _ in table["history"]]
    )


# ----------------------------------------------------------------------------- 1. rewards


@PROPERTY_SETTINGS
@given(config=env_configs(), seed=seeds, data=st.data())
def test_rewards_are_zero_sum_and_add_up_to_the_settlement_lines(config, seed, data):
    env, choose = dealt(config, seed, data)
    stake = config["stake"]
    returns = np.zeros(4)
    settled_total = np.zeros(4)
    since_own_move = np.zeros(4)  # PettingZoo's _cumulative_rewards: rewards since the agent acted
    settlements: list[int] = []
    last_info = env.infos[AGENTS[0]]
    while not episode_over(env):
        acting = AGENTS.index(env.agent_selection)
        env.step(choose(env.observe(env.agent_selection)["action_mask"]))
        since_own_move[acting] = 0.0
        step_rewards = np.array([env.rewards[agent] for agent in AGENTS])
        returns += step_rewards
        since_own_move += step_rewards
        assert step_rewards.sum() == pytest.approx(0.0, abs=1e-9)
        assert [env._cumulative_rewards[agent] for agent in AGENTS] == pytest.approx(since_own_move.tolist())
        info = env.infos[AGENTS[0]]
        if info is last_info:  # no settlement at this step: nobody is paid
            assert not step_rewards.any(), (step_rewards, choose.chosen)
            continue
        last_info = info
        assert all(env.infos[agent] == info for agent in AGENTS)
        by_lines = np.zeros(4)
        assert env.unwrapped.last_settlement["payoffs"] == info["payoffs"]
        for line in env.unwrapped.last_settlement["lines"]:
            assert line["rule"] in core.RULE_NAMES
            assert line["payer"] != line["payee"] and {line["payer"], line["payee"]} <= {0, 1, 2, 3}
            units = line["stakes"] / stake
            assert units > 0 and units == round(units), line  # whole stakes times the option
            by_lines[line["payer"]] -= line["stakes"]
            by_lines[line["payee"]] += line["stakes"]
        assert by_lines.tolist() == pytest.approx(info["payoffs"])
        assert step_rewards.tolist() == pytest.approx(info["payoffs"])
        settled_total += info["payoffs"]
        settlements.append(info["hand_number"])
    assert returns.tolist() == pytest.approx(settled_total.tolist())
    assert returns.sum() == pytest.approx(0.0, abs=1e-9)
    assert settlements == sorted(set(settlements)), "each hand is settled once, in order"
    if config["episode"] == "hand":
        assert len(settlements) == 1
    else:
        assert env.table()["hand_number"] + 1 >= 4  # every seat has been banker


# ----------------------------------------------------------------------------- 2. cards


@PROPERTY_SETTINGS
@given(config=env_configs(), seed=seeds, data=st.data())
def test_the_forty_cards_are_conserved_at_every_step(config, seed, data):
    env, choose = dealt(config, seed, data)
    while True:
        table = env.table()
        assert sorted(all_played_and_held(table), key=cards.card_id) == list(cards.CARD_NAMES), table
        assert len(table["stock"]) == cards.STOCK_SIZE
        played_by = Counter(seat for seat, _, _, _ in table["history"])
        assert [len(hand) + played_by[seat] for seat, hand in enumerate(table["hands"])] == [8] * 4
        in_trick = len(table["history"]) % 4
        open_plays = table["history"][len(table["history"]) - in_trick :] if in_trick else []
        assert table["current_trick"] == [play[:3] for play in open_plays]
        if episode_over(env):
            break
        env.step(choose(env.observe(env.agent_selection)["action_mask"]))


# ----------------------------------------------------------------------------- 3. reference


def reference_for_deal(table: dict, config: dict) -> ReferenceGame:
    """A reference game dealt the env's current deal (taken before anyone acted on it)."""
    assert table["history"] == [], table
    ref = ReferenceGame(
        stake=config["stake"], max_redeals=config["max_redeals"], face_up_discard=config["face_up_discard"]
    )
    ref.redeals = table["redeals"]  # the cap counts the redeals already made in this hand
    hands = [[cards.card_id(name) for name in hand] for hand in table["hands"]]
    ref.set_deal(hands, table["stock"], table["banker"], table["first"])
    return ref


def settled_by_rule_and_pair(lines, unit: float) -> Counter:
    totals: Counter = Counter()
    for rule, payer, payee, stakes in lines:
        totals[(rule, payer, payee)] += stakes / unit
    return totals


@PROPERTY_SETTINGS
@given(config=env_configs(), seed=seeds, data=st.data())
def test_mask_is_the_reference_legal_set_and_settlement_holds_its_lines(config, seed, data):
    env, choose = dealt(config, seed, data)
    ref = reference_for_deal(env.table(), config)
    while not episode_over(env):
        table = env.table()
        assert ref.phase not in (PHASE_NEEDS_DEAL, PHASE_OVER), (table, choose.chosen)
        assert table["to_act"] == ref.to_act == AGENTS.index(env.agent_selection), (table, choose.chosen)
        for seat, agent in enumerate(AGENTS):
            mask = env.observe(agent)["action_mask"]
            expected = ref.legal_actions() if seat == ref.to_act else set()
            assert set(np.flatnonzero(mask).tolist()) == expected, (seat, table, choose.chosen)
        info_before = env.infos[AGENTS[0]]
        action = choose(env.observe(env.agent_selection)["action_mask"])
        env.step(action)
        ref.step(action)
        if ref.phase == PHASE_OVER and ref.winners:  # the reference finished the hand's play
            info = env.infos[AGENTS[0]]
            assert info is not info_before, "the env did not settle the hand the reference finished"
            got = settled_by_rule_and_pair(
                (
                    (line["rule"], line["payer"], line["payee"], line["stakes"])
                    for line in env.unwrapped.last_settlement["lines"]
                ),
                config["stake"],
            )
            expected = settled_by_rule_and_pair(ref.settlement(), 1.0)
            assert expected - got == Counter(), (expected, got, choose.chosen)
            # Extra lines only from deals the env paid before anyone could act on them.
            assert all(rule in RULES_WITH_UNSEEN_DEALS for rule, _, _ in got - expected), (got, expected)
        if ref.phase in (PHASE_NEEDS_DEAL, PHASE_OVER) and not episode_over(env):
            ref = reference_for_deal(env.table(), config)  # a redeal or the match's next hand
    table = env.table()
    assert table["to_act"] is None and table["phase"] == "over"
    assert all(not env.observe(agent)["action_mask"].any() for agent in AGENTS)
    hands = [{cards.card_id(name) for name in hand} for hand in table["hands"]]
    meld_at_the_deal = not table["history"] and meld_winner(hands, table["first"]) is not None
    if ref.phase == PHASE_NEEDS_DEAL or meld_at_the_deal:
        # The last deal held a meld, which ended its hand at once: after a declared redeal, or
        # (a match) as the next hand, whose banker was the last seat still to be banker.
        assert meld_at_the_deal, table
    else:
        assert ref.phase == PHASE_OVER
        assert table["tricks_won"] == ref.tricks_won()


# ----------------------------------------------------------------------------- 4. determinism


@PROPERTY_SETTINGS
@given(config=env_configs(), seed=seeds, other_seed=seeds, wrapped=st.booleans(), data=st.data())
def test_a_seed_and_the_actions_determine_everything(config, seed, other_seed, wrapped, data):
    first = make_env(config, wrapped)
    first.reset(seed=seed)
    choose = ActionChooser(data)
    trace = play_recorded(first, choose)
    first.reset()  # a seedless reset continues the seeded generator: also reproducible
    choose_next = ActionChooser(data)
    trace_next = play_recorded(first, choose_next)

    second = make_env(config, wrapped)
    second.reset(seed=other_seed)  # an unrelated episode first: a seeded reset must clear all of it
    play_recorded(second, ActionChooser(data))
    second.reset(seed=seed)
    assert play_recorded(second, Replay(choose.chosen)) == trace
    second.reset()
    assert play_recorded(second, Replay(choose_next.chosen)) == trace_next


# ----------------------------------------------------------------------------- 5. snapshots


@PROPERTY_SETTINGS
@given(config=env_configs(), seed=seeds, steps_before=st.integers(0, 80), data=st.data())
def test_snapshots_continue_exactly_like_the_original(config, seed, steps_before, data):
    env = make_env(config)
    env.reset(seed=seed)
    lead_in = ActionChooser(data)
    for _ in range(steps_before):
        if episode_over(env):
            break
        env.step(lead_in(env.observe(env.agent_selection)["action_mask"]))
    snapshot = env.get_state()
    snapshot_bytes = pickle.dumps(snapshot)
    env_bytes = pickle.dumps(env)  # EzPickle: the constructor options (the game state is in snapshots)

    choose = ActionChooser(data)
    expected = play_recorded(env, choose)
    env.reset()  # the generator was part of the snapshot: the next episode must match too
    expected_next = env.table()
    assert pickle.dumps(snapshot) == snapshot_bytes, "the snapshot changed with the env it came from"

    fresh = make_env(config)
    unpickled = pickle.loads(env_bytes)
    assert unpickled.env_kwargs == env.env_kwargs
    for restored in (fresh, unpickled, env):  # a new env, an unpickled env, the same env rewound
        restored.set_state(pickle.loads(snapshot_bytes))
        assert play_recorded(restored, Replay(choose.chosen)) == expected
        restored.reset()
        assert restored.table() == expected_next


# ----------------------------------------------------------------------------- 6. hidden information


def public_key(table: dict) -> tuple:
    """What every seat sees of the table: whose turn, the phase, and the plays without the cards
    of face-down sloughs (an observer's own sloughs are compared through its observation)."""
    return (
        table["phase"],
        table["to_act"],
        table["hand_number"],
        table["redeals"],
        tuple(table["tricks_won"]),
        tuple((seat, name if up else None, up) for seat, name, up, _ in table["history"]),
    )


def swapped_order(size: int, swaps: list[tuple[int, int]]) -> list[int]:
    order = list(range(size))
    for a, b in swaps:
        order[a], order[b] = order[b], order[a]
    return order


@PROPERTY_SETTINGS
@given(config=env_configs(), seed=seeds, observer=seats, data=st.data())
def test_observations_do_not_depend_on_cards_the_observer_cannot_see(config, seed, observer, data):
    probe = make_env(config)
    probe.reset(seed=seed)
    deal = probe.table()
    # Cards the observer cannot see: the other seats' hands and the stock below its two top cards
    # (stock[0] is the upcard, shown to all; stock[1] is exposed by the stock check at the end).
    positions = [(seat, i) for seat in range(4) if seat != observer for i in range(8)]
    positions += [("stock", i) for i in range(2, 8)]

    def card_at(table: dict, position) -> str:
        owner, i = position
        return table["stock"][i] if owner == "stock" else table["hands"][owner][i]

    hidden = [card_at(deal, position) for position in positions]
    # A new deal puts at hidden position p the card of hidden position order[p]. A few swaps keep
    # most cards in place, so that the two games stay publicly identical for long; a full shuffle
    # of the hidden cards catches a leak of any one card at once.
    n_hidden = len(positions)
    few_swaps = st.lists(
        st.tuples(st.integers(0, n_hidden - 1), st.integers(1, n_hidden - 1)), min_size=1, max_size=6
    ).map(lambda pairs: swapped_order(n_hidden, [(a, (a + offset) % n_hidden) for a, offset in pairs]))
    order = data.draw(few_swaps | st.permutations(range(n_hidden)), label="new order of the hidden cards")
    moved = [hidden[source] for source in order]
    assume(moved != hidden)
    relabel = dict(zip(hidden, moved, strict=True))  # a seat that held card c now holds relabel[c]
    moved_cards = [cards.card_id(card) for card in hidden if relabel[card] != card]
    new_hands = [list(hand) for hand in deal["hands"]]
    new_stock = list(deal["stock"])
    for (owner, i), name in zip(positions, moved, strict=True):
        if owner == "stock":
            new_stock[i] = name
        else:
            new_hands[owner][i] = name
    scenario_seed = data.draw(seeds, label="scenario seed")
    original, swapped = make_env(config), make_env(config)
    fixed = {"banker": deal["banker"], "first": deal["first"]}
    original.reset(seed=scenario_seed, options={"hands": deal["hands"], "stock": deal["stock"], **fixed})
    swapped.reset(seed=scenario_seed, options={"hands": new_hands, "stock": new_stock, **fixed})
    # A meld or the four lowest in the new deal is announced to all: not the same public history.
    kept = [sorted(hand, key=cards.card_id) for hand in new_hands]
    assume(swapped.table()["hands"] == kept and swapped.table()["hand_number"] == 0)
    # So is a redeal offer to a seat that only now holds five cards of one suit (or no longer does).
    assume(public_key(original.table()) == public_key(swapped.table()))
    assert original.table()["hands"] == deal["hands"]
    start_of_deal = (original.table()["hand_number"], original.table()["redeals"])

    viewer = AGENTS[observer]
    choose = ActionChooser(data)
    compared = 0
    while True:
        before, after = original.table(), swapped.table()
        if public_key(before) != public_key(after):
            break  # e.g. a redeal offer to a seat that only now holds five cards of a suit
        if (before["hand_number"], before["redeals"]) != start_of_deal:
            break  # a new deal: the property is about one deal
        for key in ("observation", "action_mask"):
            assert original.observe(viewer)[key].tolist() == swapped.observe(viewer)[key].tolist(), (
                key,
                observer,
                order,
                choose.chosen,
            )
        compared += 1
        if episode_over(original):
            assert episode_over(swapped)
            break
        seat = AGENTS.index(original.agent_selection)
        mask = original.observe(original.agent_selection)["action_mask"].copy()
        if seat != observer:
            # Another seat playing a moved card face up would make the public histories differ:
            # keep to the plays that both deals allow to look the same (sloughs, unmoved cards).
            mask[moved_cards] = 0
            if not mask.any():
                break  # a leader holding only moved cards: the histories part here
        action = choose(mask)
        counterpart = action
        if seat != observer and cards.ACTION_SLOUGH <= action < cards.ACTION_REDEAL:
            # The same seat sloughs, face down, the card it holds in the other deal instead.
            counterpart = cards.ACTION_SLOUGH + cards.card_id(
                relabel[cards.CARD_NAMES[action - cards.ACTION_SLOUGH]]
            )
        assert swapped.observe(swapped.agent_selection)["action_mask"][counterpart], (
            "a publicly identical play is illegal in the re-dealt game",
            cards.action_to_text(counterpart),
            choose.chosen,
        )
        original.step(action)
        swapped.step(counterpart)
    assert compared >= 1


# ----------------------------------------------------------------------------- 7. bad input


@st.composite
def garbage_actions(draw: st.DrawFn, mask: np.ndarray) -> tuple[object, str]:
    """An action the raw env must refuse, with a word its error message must contain."""
    illegal = np.flatnonzero(mask == 0)
    kinds = ["low", "high", "numpy", "float", "text", "none", "bool", "container"]
    if illegal.size:
        kinds.append("illegal")
    kind = draw(st.sampled_from(kinds))
    if kind == "low":
        return draw(st.integers(max_value=-1)), "out of range"
    if kind == "high":
        return draw(st.integers(min_value=cards.N_ACTIONS)), "out of range"
    if kind == "numpy":
        value = draw(st.sampled_from([-1, -128, cards.N_ACTIONS, 127]))
        return draw(st.sampled_from([np.int8, np.int64, np.int32]))(value), "out of range"
    if kind == "float":
        return draw(st.floats(allow_nan=True) | st.sampled_from([0.0, 3.0, np.float64(1.0)])), "integer"
    if kind == "text":
        return draw(st.text(max_size=8) | st.sampled_from(["play 9S", "0", "pass"])), "integer"
    if kind == "none":
        return None, "integer"
    if kind == "bool":
        return draw(st.sampled_from([True, False, np.bool_(True)])), "integer"
    if kind == "container":
        return draw(st.sampled_from([[0], (1,), np.array([0]), {"action": 0}, b"\x00"])), "integer"
    action = int(draw(st.sampled_from(illegal)))
    return (np.int64(action) if draw(st.booleans()) else action), cards.action_to_text(action)


@PROPERTY_SETTINGS
@given(config=env_configs(), seed=seeds, wrapped=st.booleans(), data=st.data())
def test_garbage_actions_are_refused_and_change_nothing(config, seed, wrapped, data):
    env, twin = make_env(config, wrapped), make_env(config, wrapped)
    env.reset(seed=seed)
    twin.reset(seed=seed)
    choose = ActionChooser(data)
    while not episode_over(env):
        if data.draw(st.integers(0, 3), label="try garbage") == 0:
            before = snapshot_of_step(env)
            state_before = pickle.dumps(env.unwrapped.get_state())
            garbage, words = data.draw(garbage_actions(env.observe(env.agent_selection)["action_mask"]))
            if wrapped and words not in ("out of range", "integer"):
                # env(): an id the mask forbids is a move that ends the episode (PettingZoo's
                # TerminateIllegalWrapper), the offender penalised and told why.
                offender = env.agent_selection
                env.step(garbage)
                assert all(env.terminations.values()) and all(env.truncations.values())
                assert env.rewards[offender] == -ILLEGAL_ACTION_STAKES * env.unwrapped.stake
                assert (
                    env.infos[offender]["illegal_action"]
                    and words in env.infos[offender]["illegal_action_error"]
                )
                return
            if wrapped:  # PettingZoo's AssertOutOfBoundsWrapper stops what is not in Discrete(82)
                # (an int beyond int64 makes gymnasium's Discrete.contains raise OverflowError)
                with pytest.raises((AssertionError, IllegalActionError, OverflowError)):
                    env.step(garbage)
            else:
                with pytest.raises(IllegalActionError) as raised:
                    env.step(garbage)
                assert words in str(raised.value), (garbage, str(raised.value))
            assert snapshot_of_step(env) == before
            assert pickle.dumps(env.unwrapped.get_state()) == state_before
        action = choose(env.observe(env.agent_selection)["action_mask"])
        env.step(action)
        twin.step(action)
        assert snapshot_of_step(env) == snapshot_of_step(twin)
    if not wrapped:  # a finished agent may only pass None (PettingZoo's dead-step rule)
        with pytest.raises(ValueError, match="None"):
            env.step(0)
        assert snapshot_of_step(env) == snapshot_of_step(twin)
