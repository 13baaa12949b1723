"""Hand-worked scenarios for every base rule: each sets the table, plays whole turns by text and
checks the Mao Master's calls, the cards that changed hands and whose turn it is next.

Hands are written out per test; ``F`` = filler cards nobody plays. Calls are checked as the exact
formal phrases the default ``reasons="calls"`` mode announces.
"""

from __future__ import annotations

import pytest

from mao_env import cards
from mao_env.layout import SLICES
from tests.mao.mao_helpers import hand_size, play, scenario, turn

FILLER = ["2C", "3C", "4C", "6C", "10C"]
BAD_CARD = ("Bad card", 1)
TALKING = ("Talking", 1)
MAO_IN_VAIN = ("Taking the name of the great Chinese leader in vain", 3)


def failure(phrase_key: str) -> tuple[str, int]:
    return (f"Failure to say '{cards.PHRASES[cards.phrase_id(phrase_key)]}'", 1)


def table(seat0: list[str], pile: list[str], **kwargs):
    """Four seats; seat 0 holds ``seat0``, the others fillers; a known stack."""
    hands = {0: seat0, 1: ["2D", "3D", "4D", "5D", "6D"], 2: ["2H", "3H", "4H", "6H", "10H"], 3: list(FILLER)}
    kwargs.setdefault("stack", ["KC", "QC", "KD", "QD", "KH", "QH", "10D", "10S"])
    return scenario(4, hands=hands, pile=pile, **kwargs)


# ----------------------------------------------------------------------------- matching, bad card


@pytest.mark.parametrize("card", ["9H", "5C"])
def test_same_suit_or_same_rank_is_a_good_card(card):
    env = table([card, "KS", "QS"], ["5H"])
    assert turn(env, f"play {card}", "end") == []
    assert env.top_card() == card
    assert hand_size(env, 0) == 2
    assert env.current_seat == 1


def test_a_card_of_another_suit_and_rank_is_taken_back_with_a_penalty():
    env = table(["9C", "KS", "QS"], ["5H"])
    assert turn(env, "play 9C", "end") == [BAD_CARD]
    assert env.top_card() == "5H"
    assert sorted(env.hand(0)) == sorted(["9C", "KS", "QS", "KC"])  # the card back + the stack's top
    assert env.current_seat == 1


def test_drawing_takes_the_top_of_the_stack_and_ends_nothing_else():
    env = table(["9C", "KS"], ["5H"], stack=["JD", "2S"])
    assert turn(env, "draw", "end") == []
    assert sorted(env.hand(0)) == ["9C", "JD", "KS"]
    assert env.top_card() == "5H"
    assert env.current_seat == 1


# ----------------------------------------------------------------------------- the joker


@pytest.mark.parametrize(("pile", "good"), [("4D", True), ("9S", True), ("4C", False)])
def test_the_joker_is_the_nine_of_diamonds(pile, good):
    env = table(["JK", "KS", "QS"], [pile])
    calls = turn(env, "play JK", "say badger", "end")
    assert calls == ([] if good else [BAD_CARD])
    assert env.top_card() == ("JK" if good else pile)


# ----------------------------------------------------------------------------- ace, eight


def test_an_ace_skips_the_next_player():
    env = table(["AH", "KS", "QS"], ["5H"])
    assert turn(env, "play AH", "end") == []
    assert env.current_seat == 2


def test_an_eight_reverses_the_direction():
    env = table(["8H", "KS", "QS"], ["5H"])
    assert turn(env, "play 8H", "end") == []
    assert env.current_seat == 3
    # The reversed direction holds: seat 3 draws and seat 2 is next.
    assert turn(env, "draw", "end") == []
    assert env.current_seat == 2


def test_skip_and_reverse_compose():
    hands = {0: ["8H", "KS"], 1: ["2D", "3D"], 2: ["2H", "3H"], 3: ["AH", "4C", "6C"]}
    env = scenario(4, hands=hands, pile=["5H"], stack=["KC", "QC", "KD"])
    turn(env, "play 8H", "end")  # reverse: 0 -> 3
    assert env.current_seat == 3
    turn(env, "play AH", "end")  # skip, going down: 3 -> (2 skipped) -> 1
    assert env.current_seat == 1
    turn(env, "draw", "end")
    assert env.current_seat == 0


def test_a_bad_ace_neither_skips_nor_reverses():
    env = table(["AC", "KS", "QS"], ["5H"])
    assert turn(env, "play AC", "end") == [BAD_CARD]
    assert env.current_seat == 1


# ----------------------------------------------------------------------------- jacks


def test_a_jack_names_the_suit_to_follow():
    hands = {0: ["JH", "KS", "QS"], 1: ["3S", "3H", "QD"], 2: ["2H", "3C"], 3: ["4C", "6C"]}
    env = scenario(4, hands=hands, pile=["5H"], stack=["KC", "QC", "KD"])
    assert turn(env, "play JH", "say spades", "end") == []
    state = env.public_events()[-1]
    assert state["named_suit"] == "spades"
    # Hearts no longer follow (the named suit replaces the Jack's own suit) ...
    assert turn(env, "play 3H", "end") == [BAD_CARD]
    # ... a spade does.
    env2 = scenario(4, hands=hands, pile=["5H"], stack=["KC", "QC", "KD"])
    turn(env2, "play JH", "say spades", "end")
    assert turn(env2, "play 3S", "say card-name", "end") == []


def test_another_jack_still_plays_on_a_named_suit():
    hands = {0: ["JH", "KS", "QS"], 1: ["JD", "3H", "4H"], 2: ["2H", "3C"], 3: ["4C", "6C"]}
    env = scenario(4, hands=hands, pile=["5H"], stack=["KC", "QC", "KD"])
    turn(env, "play JH", "say clubs", "end")
    assert turn(env, "play JD", "end") == []


def test_a_jack_without_a_named_suit_keeps_its_own_suit_and_a_second_suit_is_talking():
    env = table(["JH", "KS", "QS"], ["5H"])
    assert turn(env, "play JH", "say clubs", "say spades", "end") == [TALKING]
    assert env.public_events()[-1]["named_suit"] == "clubs"
    env = table(["JH", "KS", "QS"], ["5H"])
    assert turn(env, "play JH", "end") == []
    assert env.public_events()[-1]["named_suit"] is None


def test_naming_a_suit_without_a_jack_is_talking():
    env = table(["9H", "KS", "QS"], ["5H"])
    assert turn(env, "play 9H", "say spades", "end") == [TALKING]


# ----------------------------------------------------------------------------- sevens


def test_the_seven_chain_grows_and_its_penalty_is_taken_with_penalty_card():
    hands = {0: ["7H", "KS", "QS"], 1: ["7C", "3D", "4D"], 2: ["2H", "3C", "QD"], 3: ["4C", "6C"]}
    stack = ["KC", "QC", "KD", "2S", "4S", "6S"]
    env = scenario(4, hands=hands, pile=["5H"], stack=stack)
    assert turn(env, "play 7H", "say nice-day", "end") == []
    assert env.observe("player_1")["observation"][112] == 1  # one penalty card pending
    assert turn(env, "play 7C", "say nice-day", "end") == []  # "have a very nice day"
    assert env.observe("player_2")["observation"][112] == 2
    # Seat 2 has no seven: it takes the chain's two cards, says "penalty card", then plays on.
    play(env, "draw")
    assert sorted(env.hand(2)) == sorted(["2H", "3C", "QD", "KC", "QC"])
    assert env.current_seat == 2
    assert turn(env, "draw", "say penalty-card", "end") == []
    assert hand_size(env, 2) == 3 + 2 + 1
    assert env.current_seat == 3


def test_after_taking_the_sevens_the_turn_continues_by_default():
    hands = {0: ["7H", "KS", "QS"], 1: ["3C", "3D"], 2: ["2H"], 3: ["4C", "6C"]}
    env = scenario(4, hands=hands, pile=["5H"], stack=["KC", "QC", "KD", "2S"])
    turn(env, "play 7H", "say nice-day", "end")
    play(env, "draw")  # takes the one chain card (KC)
    assert sorted(env.hand(1)) == ["3C", "3D", "KC"]
    # Still seat 1's turn, at its start: it may play a card (the seven is the top card).
    assert env.current_seat == 1
    calls = turn(env, "play 3D", "say penalty-card", "end")
    assert calls == [BAD_CARD]  # 3D is not a heart or a seven: an ordinary bad card
    env = scenario(4, hands={**hands, 1: ["7C", "3D"]}, pile=["5H"], stack=["KC", "QC", "KD", "2S"])
    turn(env, "play 7H", "say nice-day", "end")
    play(env, "draw")
    assert turn(env, "draw", "say penalty-card", "end") == []
    assert hand_size(env, 1) == 4  # two + the chain card + the drawn card


def test_forgetting_penalty_card_and_have_a_nice_day_are_called():
    hands = {0: ["7H", "KS", "QS"], 1: ["3C", "3D"], 2: ["2H"], 3: ["4C", "6C"]}
    env = scenario(4, hands=hands, pile=["5H"], stack=["KC", "QC", "KD", "2S"])
    assert turn(env, "play 7H", "end") == [failure("nice-day")]
    play(env, "draw")
    assert turn(env, "draw", "end") == [failure("penalty-card")]
    assert hand_size(env, 1) == 2 + 1 + 1 + 1  # chain card, drawn card, penalty card


def test_ignoring_the_seven_chain_is_a_bad_card_and_the_chain_is_taken_anyway():
    hands = {0: ["7H", "KS", "QS"], 1: ["9H", "3D"], 2: ["2H"], 3: ["4C", "6C"]}
    env = scenario(4, hands=hands, pile=["5H"], stack=["KC", "QC", "KD", "2S"])
    turn(env, "play 7H", "say nice-day", "end")
    assert turn(env, "play 9H", "say penalty-card", "end") == [BAD_CARD]
    assert hand_size(env, 1) == 2 + 1 + 1  # the card back, the chain card, the penalty card
    assert env.top_card() == "7H"
    assert env.current_seat == 2
    assert env.observe("player_2")["observation"][112] == 0  # the chain is over


def test_seven_turn_ends_variant_and_thank_you_variant():
    hands = {0: ["7H", "KS", "QS"], 1: ["3C", "3D"], 2: ["2H"], 3: ["4C", "6C"]}
    env = scenario(
        4, hands=hands, pile=["5H"], stack=["KC", "QC"], seven_turn_ends=True, seven_phrase="thank you"
    )
    turn(env, "play 7H", "say nice-day", "end")
    play(env, "draw")
    mask = env.observe("player_1")["action_mask"]
    assert not mask[: cards.DRAW + 1].any()  # no second play or draw: only speech and the end
    assert turn(env, "say penalty-card", "end") == [failure("thank-you"), TALKING]
    assert env.current_seat == 2


# ----------------------------------------------------------------------------- speech


def test_a_spade_must_be_named():
    env = table(["5S", "KS", "QS"], ["5H"])
    assert turn(env, "play 5S", "end") == [failure("card-name")]
    env = table(["5S", "KS", "QS"], ["5H"])
    assert turn(env, "play 5S", "say card-name", "end") == []


def test_the_nine_of_diamonds_is_the_badger():
    env = table(["9D", "KS", "QS"], ["5D"])
    assert turn(env, "play 9D", "end") == [failure("badger")]
    env = table(["9D", "KS", "QS"], ["5D"])
    assert turn(env, "play 9D", "say badger", "end") == []


def test_phrases_for_one_card_are_all_required_in_any_order():
    env = table(["7S", "KS", "QS"], ["5S"])
    assert turn(env, "play 7S", "end") == [failure("nice-day"), failure("card-name")]
    env = table(["7S", "KS", "QS"], ["5S"])
    assert turn(env, "play 7S", "say card-name", "say nice-day", "end") == []


def test_last_card_is_required_with_one_card_left_and_talking_otherwise():
    env = table(["9H", "KS"], ["5H"])
    assert turn(env, "play 9H", "end") == [failure("last-card")]
    env = table(["9H", "KS"], ["5H"])
    assert turn(env, "play 9H", "say last-card", "end") == []
    env = table(["9H", "KS", "QS"], ["5H"])
    assert turn(env, "play 9H", "say last-card", "end") == [TALKING]


def test_a_bad_card_from_two_cards_needs_no_last_card_and_saying_it_is_excused():
    env = table(["9C", "KS"], ["5H"])
    assert turn(env, "play 9C", "end") == [BAD_CARD]
    env = table(["9C", "KS"], ["5H"])
    assert turn(env, "play 9C", "say last-card", "end") == [BAD_CARD]


def test_talking_variant_off_lets_extra_phrases_pass_but_not_mao():
    env = table(["9H", "KS", "QS"], ["5H"], talking=False)
    assert turn(env, "play 9H", "say rabbit", "say clubs", "end") == []
    env = table(["9H", "KS", "QS"], ["5H"], talking=False)
    assert turn(env, "play 9H", "say mao", "end") == [MAO_IN_VAIN]


# ----------------------------------------------------------------------------- Mao


def test_mao_on_the_winning_play_wins_the_round():
    env = table(["9H"], ["5H"], win_reward=1.0, penalty_card_reward=-0.1)
    assert turn(env, "play 9H", "say mao", "end") == []
    assert env.rewards["player_0"] == 1.0
    assert all(env.terminations.values())  # one round per episode by default


def test_forgetting_mao_costs_three_cards_and_the_round_goes_on():
    """The seed: "'forgetting to say Mao' ... is a good way to earn yourself 3 penalty cards"."""
    env = table(["9H"], ["5H"], penalty_card_reward=-0.1)
    assert turn(env, "play 9H", "end") == [("Failure to say 'Mao'", 3)]
    assert env.top_card() == "9H"
    assert hand_size(env, 0) == 3
    assert env.rewards["player_0"] == pytest.approx(-0.3)
    assert not any(env.terminations.values())


def test_forgetting_mao_costs_one_card_with_the_option():
    env = table(["9H"], ["5H"], penalty_card_reward=-0.1, forgotten_mao_cards=1)
    assert turn(env, "play 9H", "end") == [failure("mao")]
    assert hand_size(env, 0) == 1
    assert env.rewards["player_0"] == pytest.approx(-0.1)


def test_mao_at_the_wrong_time_costs_three_cards():
    env = table(["9H", "KS"], ["5H"], penalty_card_reward=-0.1)
    assert turn(env, "play 9H", "say last-card", "say mao", "end") == [MAO_IN_VAIN]
    assert hand_size(env, 0) == 1 + 3
    assert env.rewards["player_0"] == pytest.approx(-0.3)


def test_mao_after_a_flawed_winning_play_is_in_vain():
    # The last card is a spade, but its name was not said: no win, and Mao was said in vain.
    env = table(["5S"], ["5H"])
    assert turn(env, "play 5S", "say mao", "end") == [failure("card-name"), MAO_IN_VAIN]
    assert hand_size(env, 0) == 4
    assert not any(env.terminations.values())
    # With a bad last card, too.
    env = table(["9C"], ["5H"])
    assert turn(env, "play 9C", "say mao", "end") == [BAD_CARD, MAO_IN_VAIN]
    assert hand_size(env, 0) == 1 + 1 + 3


def test_extra_talking_spoils_a_winning_play():
    env = table(["9H"], ["5H"])
    assert turn(env, "play 9H", "say rabbit", "say mao", "end") == [TALKING, MAO_IN_VAIN]


# ----------------------------------------------------------------------------- the stack


def test_an_empty_stack_is_rebuilt_from_the_pile_but_its_top_card():
    hands = {0: ["9C", "KS", "QS"], 1: ["2D", "3D", "4D"], 2: ["2H"], 3: ["4C"]}
    pile = ["2S", "3S", "4S", "5H"]  # bottom .. top
    env = scenario(4, hands=hands, pile=pile, stack=["JD"])
    turn(env, "draw", "end")  # takes JD, the stack's last card
    assert "JD" in env.hand(0)
    observation = env.observe("player_1")["observation"]
    stack, pile_size = SLICES["stack"].start, SLICES["pile"].start
    assert (observation[stack], observation[pile_size]) == (0, len(pile) + _placed_nowhere(env))
    turn(env, "draw", "end")  # the pile under 5H becomes the stack, shuffled, and one is drawn
    observation = env.observe("player_2")["observation"]
    assert observation[pile_size] == 1 and env.top_card() == "5H"
    drawn = sorted(set(env.hand(1)) - {"2D", "3D", "4D"})
    assert len(drawn) == 1 and drawn[0] != "5H"
    assert observation[stack] == len(pile) - 1 + _placed_nowhere(env) - 1


def _placed_nowhere(env) -> int:
    """Cards the scenario left out go under the pile (two decks minus the cards listed above)."""
    return 2 * cards.CARDS_PER_DECK - (3 + 3 + 1 + 1) - 4 - 1
