"""What is behind each settlement payment (issue 34, item 9: "why did I pay?"): derived from a
hand-built hand's tricks, and from a seeded live hand, naming only cards every seat has seen."""

from __future__ import annotations

from madiao_mao_web.madiao.behind import behind, hand_context
from madiao_mao_web.madiao.live import MadiaoGame, madiao_settlement_view


def trick(number, winner, *plays):
    return {"number": number, "winner": winner, "plays": list(plays)}


# Banker 0. Seat 1 wins tricks 1, 3 and 6 (9M, then 10000T, then 100T after 1000T won trick 4
# for it too); seat 2 wins trick 2 with 0C and sloughs its 8S face down; seat 3 plays 8M face up.
TRICKS = [
    trick(1, 1, (0, "5M", True), (1, "9M", True), (2, "3C", False), (3, "2C", False)),
    trick(2, 2, (2, "0C", True), (3, "4C", False), (0, "5C", False), (1, "6C", False)),
    trick(3, 1, (1, "10000T", True), (2, "8S", False), (3, "7C", False), (0, "8C", False)),
    trick(4, 1, (1, "1000T", True), (2, "2S", False), (3, "8M", True), (0, "9C", False)),
    trick(5, 0, (0, "4S", True), (1, "1S", False), (2, "3S", False), (3, "2M", False)),
    trick(6, 1, (1, "100T", True), (2, "6S", False), (3, "3M", False), (0, "4M", False)),
]
HAND = hand_context(TRICKS, banker=0, stock=["1C", "9M", "2T"])


def test_each_rule_names_the_trick_or_card_behind_it():
    assert behind("trick_count", 0, 1, HAND) == "seat 1 made 4 tricks"
    assert behind("trick_count", 3, 0, HAND) == "seat 3 made 0 tricks"
    assert behind("boss_card", 0, 1, HAND) == "tricks 1 and 3 won with 9M, 10000T by seat 1"
    assert (
        behind("hundred_myriad", 0, 1, HAND) == "dealt to seat 1, who made 4 tricks and won trick 6 with 100T"
    )
    assert behind("honours", 0, 1, HAND) == "tricks 3, 4 and 6 won with 10000T, 1000T, 100T by seat 1"
    assert behind("stock_check", 3, 0, HAND) == (
        "stock card 9M (top of its suit); seat 3 played 8M face up in trick 4"
    )
    assert behind("four_lowest", 2, 3, HAND) == "seat 3 was dealt all four"
    assert behind("face_up_discard", 3, 0, HAND) == "seat 3 played 8M face up in trick 4 without capturing"
    assert behind("meld", 2, 3, HAND) is None  # a meld's cards are not shown at the table


def test_a_boss_card_needs_two_tricks_and_follows_the_promotion():
    # Seat 2 won one trick (0C): under the minimum, so its boss card is not what the payment is for.
    assert behind("boss_card", 2, 1, HAND) == "tricks 1 and 3 won with 9M, 10000T by seat 1"
    # The upcard 9M promotes 8M: seat 1's 9M no longer counts, its 10000T does.
    promoted = hand_context(TRICKS, banker=0, stock=["9M", "1C"])
    assert behind("boss_card", 0, 1, promoted) == (
        "trick 3 won with 10000T by seat 1 (8M counts as top: the upcard is 9M)"
    )


def test_a_face_down_card_is_never_named():
    texts = [
        behind(rule, payer, payee, HAND) or ""
        for rule in ("boss_card", "honours", "face_up_discard")
        for payer in range(4)
        for payee in range(4)
        if payer != payee
    ]
    assert not any("8S" in text or "2S" in text for text in texts)


def test_the_live_settlement_says_what_is_behind_each_payment():
    game = MadiaoGame(watch=1, seed=0)
    game._advance()
    while not game.over:
        game._agent_move()
    (settled,) = game.settlements
    view = game.view()
    for rule in settled["rules"]:
        for payment in rule["payments"]:
            assert payment["behind"], (rule["rule"], payment)
    # Every card a phrase names was played face up in this hand (or is the upcard).
    shown = {
        play["card"]["name"]
        for frame in view["frames"]
        if frame.get("last_trick")
        for play in frame["last_trick"]["plays"]
        if play["face_up"]
    }
    named = {
        word.strip(",;()") for r in settled["rules"] for p in r["payments"] for word in p["behind"].split()
    }
    cards = {w for w in named if w[:-1].isdigit() and w[-1] in "CSMT"}
    assert cards <= shown, cards - shown


def test_without_the_hand_a_settlement_has_no_behind():
    lines = [{"rule": "trick_count", "payer": 1, "payee": 0, "stakes": 1.0}]
    view = madiao_settlement_view(lines, [1.0, -1.0, 0.0, 0.0], banker=0)
    assert "behind" not in view["rules"][0]["payments"][0]
    view = madiao_settlement_view(lines, [1.0, -1.0, 0.0, 0.0], banker=0, hand=HAND)
    assert view["rules"][0]["payments"][0]["behind"] == "seat 1 made 4 tricks"


def test_a_replay_says_the_same_as_the_live_table():
    from madiao_mao_web.madiao.replay import MadiaoReplay

    game = MadiaoGame(watch=1, seed=0)
    game._advance()
    while not game.over:
        game._agent_move()
    replay = MadiaoReplay(game.record())
    frame = replay.frame(replay.n_steps, None)
    assert frame["settlement"]["rules"] == game.settlements[-1]["rules"]
