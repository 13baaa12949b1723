"""The secret-rule library: its size and families, a hand-worked scenario for every rule kind of
every family (a play that must be penalised with the right call, one that must not), several
rules at once, how a round's winner adds a rule, and who may see it."""

from __future__ import annotations

import numpy as np
import pytest

from mao_env import cards, core
from mao_env import rules as rule_library
from tests.mao.mao_helpers import make, scenario, turn

BAD_CARD = ("Bad card", 1)
HANDS = {1: ["2D", "3D", "4D", "5D"], 2: ["2H", "3H", "4H", "6H"], 3: ["2C", "3C", "4C", "6C"]}
STACK = ["KC", "QC", "KD", "QD", "10D", "10S"]


def rule_id(description: str) -> int:
    return rule_library.RULE_DESCRIPTIONS.index(description)


def table(seat0: list[str], pile: str, rules: list, **kwargs):
    return scenario(4, hands={0: seat0, **HANDS}, pile=[pile], stack=STACK, rules=rules, **kwargs)


def test_the_library_has_at_least_40_distinct_rules_in_three_families():
    rows = {tuple(row) for row in rule_library.RULE_TABLE.tolist()}
    assert len(rows) == rule_library.N_RULES >= 40
    descriptions = set(rule_library.RULE_DESCRIPTIONS)
    assert len(descriptions) == rule_library.N_RULES
    for family in (rule_library.VALIDITY, rule_library.DYNAMICS, rule_library.SPEECH):
        assert len(rule_library.rules_of_family(family)) >= 10
    # The kernels' table resolves every predicate to its card set (the joker goes with 9D).
    for rule in range(rule_library.N_RULES):
        for column in (rule_library.R_PRED_A, rule_library.R_PRED_B):
            mask = int(rule_library.LIBRARY[rule, column])
            assert mask == int(rule_library.PREDICATE_MASKS[rule_library.RULE_TABLE[rule, column]])
            if (mask >> cards.NINE_OF_DIAMONDS) & 1:
                assert (mask >> cards.JOKER) & 1


# ----------------------------------------------------------------------------- validity


@pytest.mark.parametrize(
    ("description", "pile", "penalised", "accepted"),
    [
        ("hearts may not be played on spades", "5S", "5H", "5C"),
        ("on kings only red cards may be played", "KC", "KS", "KH"),
        ("a card not of the suit to follow must be of the other colour than the top card", "5S", "5C", "5H"),
        (
            "a card not of the suit to follow must rank higher than the top card (not the same)",
            "5H",
            "5C",
            "9C",
        ),
        (
            "a card not of the suit to follow must rank lower than the top card (not the same)",
            "5H",
            "5C",
            "3C",
        ),
        ("odd number cards (3-9) may not be played on even number cards (2-10)", "4H", "9H", "QH"),
    ],
)
def test_validity_rules_make_bad_cards(description, pile, penalised, accepted):
    rule = rule_id(description)
    env = table([penalised, accepted, "KS", "QS"], pile, [(rule, 2)], reasons="revealed")
    assert turn(env, f"play {penalised}", "say card-name", "end")[0][0] == (
        f"Bad card (rule {rule}: {description})"
    )
    assert env.top_card() == pile
    env = table([penalised, accepted, "KS", "QS"], pile, [(rule, 2)])
    assert turn(env, f"play {accepted}", "end") == []
    assert env.top_card() == accepted


def test_without_the_rule_the_same_plays_follow_the_base_rules():
    env = table(["5H", "KS", "QS"], "5S", [])
    assert turn(env, "play 5H", "end") == []


def test_a_wild_rule_lets_a_card_play_on_anything():
    rule = rule_id("queens may be played on anything")
    env = table(["QC", "KS", "QS"], "5H", [rule])
    assert turn(env, "play QC", "say hedgehog", "end") == [("Talking", 1)]  # the queen was played
    assert env.top_card() == "QC"
    env = table(["QC", "KS", "QS"], "5H", [])
    assert turn(env, "play QC", "end") == [BAD_CARD]


def test_rules_compose_a_forbidding_rule_beats_a_wild_one():
    wild = rule_id("queens may be played on anything")
    forbid = rule_id("spades may not be played on hearts")
    env = table(["QS", "QC", "KS"], "5H", [wild, forbid])
    # (the spade's name belongs to the attempted play: excused, not talking)
    assert turn(env, "play QS", "say card-name", "end") == [BAD_CARD]
    env = table(["QS", "QC", "KS"], "5H", [wild, forbid])
    assert turn(env, "play QC", "end") == []


def test_reasons_calls_mode_names_no_rule_and_hidden_mode_names_nothing():
    rule = rule_id("hearts may not be played on spades")
    env = table(["5H", "KS", "QS"], "5S", [(rule, 2)])
    assert env.last_calls == []
    turn(env, "play 5H", "end")
    expected = {"player": "player_0", "caller": None, "bad_call": False, "call": "Bad card", "cards": 1}
    assert env.last_calls == [{**expected, "code": 0, "reason": "bad card", "phrase": None}]
    env = table(["5H", "KS", "QS"], "5S", [(rule, 2)], reasons="hidden")
    turn(env, "play 5H", "end")
    assert env.last_calls == [{**expected, "call": "Penalty"}]


# ----------------------------------------------------------------------------- dynamics


def test_dynamics_skip_reverse_draw_and_again():
    skip = rule_id("playing kings skips the next player")
    env = table(["KH", "9H", "QS"], "5H", [skip])
    assert turn(env, "play KH", "end") == []
    assert env.current_seat == 2

    reverse = rule_id("playing queens reverses the direction")
    env = table(["QH", "9H", "QS"], "5H", [reverse])
    assert turn(env, "play QH", "end") == []
    assert env.current_seat == 3

    draw_two = rule_id("playing twos makes the next player take 2 cards")
    env = table(["2H", "9H", "QS"], "5H", [draw_two])
    assert turn(env, "play 2H", "end") == []
    assert sorted(env.hand(1)) == sorted([*HANDS[1], "KC", "QC"])
    assert env.current_seat == 1
    event = env.public_events()[-1]
    assert (event["forced_draw"], event["forced_seat"]) == (2, 1)

    again = rule_id("playing fours gives the same player another turn")
    env = table(["4H", "9H", "QS"], "5H", [again])
    assert turn(env, "play 4H", "end") == []
    assert env.current_seat == 0
    # Without the rule the same plays do nothing special.
    env = table(["KH", "9H", "QS"], "5H", [])
    turn(env, "play KH", "end")
    assert env.current_seat == 1


def test_a_dynamics_rule_does_nothing_for_a_bad_card():
    skip = rule_id("playing kings skips the next player")
    env = table(["KC", "9H", "QS"], "5H", [skip])
    assert turn(env, "play KC", "end") == [BAD_CARD]
    assert env.current_seat == 1


def test_dynamics_reverse_cancels_with_an_eight_like_rule():
    reverse_nines = rule_id("playing nines reverses the direction")
    skip_tens = rule_id("playing tens skips the next player")
    env = table(["9H", "10H", "QS"], "5H", [reverse_nines, skip_tens])
    turn(env, "play 9H", "end")  # reversed: 0 -> 3
    assert env.current_seat == 3


# ----------------------------------------------------------------------------- speech


@pytest.mark.parametrize(
    ("phrase", "when", "hand", "top", "move"),
    [
        ("That's the rabbit", "when playing fours", ["4H", "9H", "QS"], "5H", "play 4H"),
        ("All hail the chairman", "when drawing a card", ["4C", "9C", "QS"], "5H", "draw"),
        ("That's the fox", "when playing onto kings", ["4H", "9C", "QS"], "KH", "play 4H"),
    ],
)
def test_a_speech_rule_requires_its_phrase(phrase, when, hand, top, move):
    rule = rule_id(f"{when}, say '{phrase}'")
    key = phrase.split()[-1].lower()  # the phrase's action: "say rabbit"
    assert turn(table(hand, top, [rule]), move, "end") == [(f"Failure to say '{phrase}'", 1)]
    assert turn(table(hand, top, [rule]), move, f"say {key}", "end") == []


def test_a_speech_rule_phrase_without_the_rule_is_talking():
    env = table(["4H", "9H", "QS"], "5H", [])
    assert turn(env, "play 4H", "say rabbit", "end") == [("Talking", 1)]


def test_a_bad_card_excuses_the_phrases_of_the_attempted_play():
    rabbit = rule_id("when playing fours, say 'That's the rabbit'")
    env = table(["4C", "9H", "QS"], "5H", [rabbit])
    assert turn(env, "play 4C", "say rabbit", "end") == [BAD_CARD]


def test_two_speech_rules_each_need_their_phrase():
    rabbit = rule_id("when playing fours, say 'That's the rabbit'")
    hearts = rule_id("when playing hearts, say 'Hearts'")
    env = table(["4H", "9H", "QS"], "5H", [rabbit, hearts])
    assert turn(env, "play 4H", "say hearts", "end") == [("Failure to say 'That's the rabbit'", 1)]
    env = table(["4H", "9H", "QS"], "5H", [rabbit, hearts])
    assert turn(env, "play 4H", "say hearts", "say rabbit", "end") == []


# ----------------------------------------------------------------------------- new rules


def _win_round(env) -> None:
    """Seat 0 holds one heart on a heart: play it, say Mao."""
    turn(env, "play 9H", "say mao", "end")


def test_the_round_winner_chooses_a_rule_and_only_the_author_sees_it():
    env = scenario(4, hands={0: ["9H"], **HANDS}, pile=["5H"], stack=STACK, num_rounds=2)
    _win_round(env)
    assert env.current_seat == 0
    mask = env.observe("player_0")["action_mask"]
    assert np.flatnonzero(mask).tolist() == [cards.CHOOSE_RULE_0 + r for r in range(rule_library.N_RULES)]
    assert env.observe("player_1")["action_mask"].sum() == 0
    before = {agent: env.observe(agent)["observation"] for agent in env.possible_agents}
    env.step(env.action_from_text("rule 7"))
    assert env.active_rules() == [(7, 0)]
    known = slice(core.OFF_KNOWN, core.OFF_KNOWN + rule_library.N_RULES)
    after = {agent: env.observe(agent)["observation"] for agent in env.possible_agents}
    assert after["player_0"][known].tolist() == [float(r == 7) for r in range(rule_library.N_RULES)]
    for agent in ("player_1", "player_2", "player_3"):
        assert after[agent][known].sum() == 0
    assert before["player_1"][core.OFF_ROUND] == 1
    # A plain round: everyone re-dealt five, one card on the pile, seat (round % n) starts.
    assert [len(env.hand(s)) for s in range(4)] == [5, 5, 5, 5]
    assert env.current_seat == 1
    assert env.public_events()[-1]["kind"] == "new rule"


# Rules 0..30 leave the winning play (9H on 5H, "Mao") as it is: none asks a phrase of it or
# forbids it; they fill 31 of the 32 slots.
MANY_RULES = [(rule, 1 + rule % 3) for rule in range(31)]


@pytest.mark.parametrize("rules", [[], [(3, 1), (30, 2), (44, -1)], MANY_RULES])
def test_the_rule_choice_offers_every_library_rule_whatever_is_in_force(rules):
    env = scenario(4, hands={0: ["9H"], **HANDS}, pile=["5H"], stack=STACK, rules=rules, num_rounds=2)
    _win_round(env)
    mask = env.observe("player_0")["action_mask"]
    assert np.flatnonzero(mask).tolist() == [cards.CHOOSE_RULE_0 + r for r in range(rule_library.N_RULES)]
    # Only the rules in force, with the oracle's mask (it leaks the secret rules by design).
    oracle = scenario(
        4, hands={0: ["9H"], **HANDS}, pile=["5H"], stack=STACK, rules=rules, num_rounds=2, mask="rules"
    )
    _win_round(oracle)
    in_force = {rule for rule, _ in oracle.active_rules()}
    offered = np.flatnonzero(oracle.observe("player_0")["action_mask"]) - cards.CHOOSE_RULE_0
    assert offered.tolist() == [r for r in range(rule_library.N_RULES) if r not in in_force]


def test_a_winner_is_not_offered_its_own_rules():
    env = scenario(
        4, hands={0: ["9H"], **HANDS}, pile=["5H"], stack=STACK, rules=[(3, 0), (30, 2)], num_rounds=2
    )
    _win_round(env)
    offered = np.flatnonzero(env.observe("player_0")["action_mask"]) - cards.CHOOSE_RULE_0
    assert offered.tolist() == [r for r in range(rule_library.N_RULES) if r != 3]  # 30 is offered


def test_a_rule_in_force_is_refused_to_the_proposer_alone_who_proposes_again():
    env = scenario(
        4,
        hands={0: ["9H"], **HANDS},
        pile=["5H"],
        stack=STACK,
        rules=[(3, 1), (30, 2), (44, -1)],
        num_rounds=2,
    )
    _win_round(env)
    known = slice(core.OFF_KNOWN, core.OFF_KNOWN + rule_library.N_RULES)
    before = env.get_state()
    seen = {agent: env.observe(agent)["observation"] for agent in env.possible_agents}
    events = env.public_events()
    env.step(env.action_from_text("rule 30"))  # seat 2's rule
    # Refused: the same seat chooses again, with 30 no longer offered; nothing else moved.
    assert env.current_seat == 0 and env.agent_selection == "player_0"
    assert env.active_rules() == [(3, 1), (30, 2), (44, -1)]
    offered = np.flatnonzero(env.observe("player_0")["action_mask"]) - cards.CHOOSE_RULE_0
    assert offered.tolist() == [r for r in range(rule_library.N_RULES) if r != 30]
    assert env.refused_rules(0) == [30] and env.refused_rules(2) == []
    assert env.public_events() == events and env.last_calls == []
    assert all(reward == 0.0 for reward in env.rewards.values())
    for agent in ("player_1", "player_2", "player_3"):  # the other seats observe nothing new
        assert np.array_equal(env.observe(agent)["observation"], seen[agent]), agent
    now = env.observe("player_0")["observation"]
    changed = np.flatnonzero(now != seen["player_0"])
    assert changed.tolist() == [core.OFF_KNOWN + 30] and now[known].sum() == 1.0
    after = env.get_state()
    for key, array in before["arrays"].items():
        moved = np.argwhere(after["arrays"][key] != array).tolist()
        if key == "scalars":  # one more step (the last one's round winner cleared), the refusal
            columns = [core.S_SUB_ACTIONS, core.S_STEP, core.S_ROUND_WON, core.S_REFUSED_0]
            assert moved == [[0, column] for column in columns]
            assert after["arrays"][key][0, core.S_REFUSED_0] == 1 << 30
        else:
            assert moved == [], key
    assert "rule 30:" in env.seat_view(0) and "rule 30:" not in env.seat_view(1)
    # Refused again (a rule nobody at the table made), then a rule not in force is added as ever.
    env.step(env.action_from_text("rule 44"))
    assert env.refused_rules(0) == [30, 44] and env.current_seat == 0
    env.step(env.action_from_text("rule 7"))
    assert env.active_rules() == [(3, 1), (30, 2), (44, -1), (7, 0)]
    assert env.public_events()[-1]["kind"] == "new rule" and env.public_events()[:-1] == events
    assert env.current_seat == 1 and [len(env.hand(s)) for s in range(4)] == [5, 5, 5, 5]
    assert np.flatnonzero(env.observe("player_0")["observation"][known]).tolist() == [7, 30, 44]
    assert env.observe("player_2")["observation"][known].tolist() == [float(r == 30) for r in range(45)]


def test_a_winner_proposing_rules_in_force_one_by_one_ends_with_a_new_rule():
    # 31 rules in force, 32 slots: each proposal of the lowest rule offered is refused until the
    # first rule not in force, 31; each refusal takes one rule off the offer, so the choice ends.
    env = scenario(4, hands={0: ["9H"], **HANDS}, pile=["5H"], stack=STACK, rules=MANY_RULES, num_rounds=2)
    _win_round(env)
    proposals = 0
    while env.current_seat == 0 and env.observe("player_0")["action_mask"][cards.CHOOSE_RULE_0 :].any():
        mask = env.observe("player_0")["action_mask"]
        assert mask[cards.CHOOSE_RULE_0 :].sum() == rule_library.N_RULES - proposals
        env.step(int(np.flatnonzero(mask)[0]))
        proposals += 1
    assert proposals == 32 and env.refused_rules(0) == list(range(31))
    assert env.active_rules() == [*MANY_RULES, (31, 0)]


def test_with_every_library_rule_in_force_the_winner_has_no_rule_to_choose():
    # The library (45 rules) outgrows the 32 slots, so no table holds it all; the kernels take the
    # library as an argument, so a library of three can be all in force. The round then goes on
    # without a rule choice; with one of the three not in force, the winner chooses.
    library = rule_library.LIBRARY[[19, 20, 21]]  # twos, kings, tens skip: 9H on 5H as ever
    for in_force, choosing in (([0, 1, 2], False), ([0, 1], True)):
        env = scenario(4, hands={0: ["9H"], **HANDS}, pile=["5H"], stack=STACK, rules=in_force, num_rounds=2)
        mask = np.zeros(env.n_actions, dtype=np.int8)
        for text in ("play 9H", "say mao", "end"):
            core.step_game(env._state, library, 0, env.action_from_text(text), False, 3000, mask)
        scalars = env._state.scalars[0]
        assert scalars[core.S_ROUND] == 1 and scalars[core.S_ROUND_WON] == 0
        assert (scalars[core.S_PHASE] == core.PH_CHOOSE_RULE) == choosing
        offered = np.flatnonzero(mask[cards.CHOOSE_RULE_0 :]).tolist()
        assert offered == ([0, 1, 2] if choosing else [])


def test_sampled_and_fixed_rule_choice():
    env = scenario(
        4, hands={0: ["9H"], **HANDS}, pile=["5H"], stack=STACK, num_rounds=2, rule_choice="sampled"
    )
    _win_round(env)
    (rule, author), *rest = env.active_rules()
    assert rest == [] and author == 0 and 0 <= rule < rule_library.N_RULES
    env = raw_fixed = make(4, num_rounds=3, rule_choice="fixed")
    raw_fixed.reset(
        seed=0,
        options={"hands": {0: ["9H"], **HANDS}, "pile": ["5H"], "stack": STACK, "fixed_rules": [12, 30]},
    )
    _win_round(env)
    assert env.active_rules() == [(12, 0)]


def test_cambridge_round_the_winner_re_enters_with_five_cards_and_play_goes_on():
    env = scenario(
        4, hands={0: ["9H"], **HANDS}, pile=["5H"], stack=[*STACK, "2S", "3S"], num_rounds=2,
        rounds="cambridge", rule_choice="sampled",
    )  # fmt: skip
    _win_round(env)
    assert len(env.hand(0)) == 5
    assert sorted(env.hand(0)) == sorted(["KC", "QC", "KD", "QD", "10D"])  # the stack's top five
    assert env.top_card() == "9H"  # the pile stays
    assert env.current_seat == 1
    assert [len(env.hand(s)) for s in (1, 2, 3)] == [4, 4, 4]  # nobody else is re-dealt
