""" "Why did I pay?": the card or trick behind each netted payment of a Madiao settlement.

The env's settlement lines name the rule, the seats and the stakes, not the card or trick behind
them, so this derives it from the hand as the table saw it: each trick's plays and winner, the
upcard and the stock card the stock check turns over. Everything named here is public at the end
of the hand or follows from the payment itself: a trick is won with a face-up card; the seat dealt
100T is the one the Hundred Myriad pays (100T is named only when it won a trick); the seat dealt
the four lowest is the one paid for them (the cards are not named: the rule names them); the stock
card is the top card of the suit whose second-best card the payer played face up. A face-down card
is never named, and a meld's cards are not (the web shows no hand at a meld), so a meld has no
phrase.

The phrases say "seat N" for every seat; the page says "you" for the viewer's own seat, so each
phrase is worded to read either way ("seat 2 made 3 tricks", "you made 3 tricks").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from madiao_env import cards as madiao_cards
from madiao_env import reference as madiao_reference

MINIMUM = madiao_reference.MINIMUM_TRICKS
HONOURS = ("10000T", "1000T", "100T")


def hand_context(
    tricks: Sequence[dict[str, Any]], banker: int, stock: Sequence[str] | None
) -> dict[str, Any]:
    """What the derivation reads: ``tricks`` as ``{"number": 1.., "winner": seat, "plays":
    [(seat, card name, face up), ...]}``, the banker, and the stock (upcard first) as dealt."""
    return {"tricks": list(tricks), "banker": int(banker), "stock": list(stock or [])}


def _winning_card(trick: dict[str, Any]) -> str:
    plays = [madiao_reference.Play(s, madiao_cards.CARD_ID[name], up) for s, name, up in trick["plays"]]
    return madiao_cards.card_name(madiao_reference.best_face_up(plays))


def _won(hand: dict[str, Any], seat: int) -> list[tuple[int, str]]:
    """(trick number, winning card) of each trick ``seat`` won."""
    return [(t["number"], _winning_card(t)) for t in hand["tricks"] if t["winner"] == seat]


def _count(hand: dict[str, Any], seat: int) -> int:
    return sum(1 for t in hand["tricks"] if t["winner"] == seat)


def _and(words: Sequence[str]) -> str:
    words = list(words)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _tricks_phrase(won: Sequence[tuple[int, str]]) -> str:
    """ "tricks 3 and 6 won with 9M, 9S"."""
    numbers = _and([str(n) for n, _ in won])
    return f"trick{'s' if len(won) > 1 else ''} {numbers} won with {', '.join(c for _, c in won)}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _trick_count(hand, payer, payee):
    # The line is always between the banker and one player: it is the player's count that pays.
    player = payee if payer == hand["banker"] else payer
    return f"seat {player} made {_plural(_count(hand, player), 'trick')}"


def _slam(hand, payer, payee):
    slammer = next((s for s in (payee, payer) if _count(hand, s) == madiao_cards.N_TRICKS), None)
    return None if slammer is None else f"seat {slammer} won all eight tricks"


def _boss_card(hand, payer, payee):
    # Either seat of the pair may have earned boss cards (the env settles the rule both ways), so
    # both seats' counted tricks are named; only a seat with at least two tricks counts.
    upcard = hand["stock"][0] if hand["stock"] else None
    tops = set(madiao_reference.TOP_CARDS)
    if upcard:
        tops = madiao_reference.boss_cards(madiao_cards.CARD_ID[upcard])
    parts = []
    for seat in (payee, payer):
        if _count(hand, seat) < MINIMUM:
            continue
        won = [(n, c) for n, c in _won(hand, seat) if madiao_cards.CARD_ID[c] in tops]
        if won:
            parts.append(f"{_tricks_phrase(won)} by seat {seat}")
    if not parts:
        return None
    text = "; ".join(parts)
    if upcard and madiao_cards.CARD_ID[upcard] in madiao_reference.TOP_CARDS:
        promoted = madiao_cards.card_name(madiao_cards.CARD_ID[upcard] - 1)
        text += f" ({promoted} counts as top: the upcard is {upcard})"
    return text


def _hundred_myriad(hand, payer, payee):
    # The tier is paid to the seat dealt 100T, banker or player: the payee. 100T is named only
    # when it won a trick (face up); otherwise it may have been sloughed face down, and the rule's
    # own name says which card it is.
    won = [n for n, c in _won(hand, payee) if c == "100T"]
    tricks = _plural(_count(hand, payee), "trick")
    if won:
        return f"dealt to seat {payee}, who made {tricks} and won trick {won[0]} with 100T"
    return f"dealt to seat {payee}, who made {tricks} and won no trick with it"


def _honours(hand, payer, payee):
    parts = []
    for seat in (payee, payer):
        won = _won(hand, seat)
        if set(HONOURS) <= {c for _, c in won}:
            honours = [(n, c) for n, c in won if c in (*HONOURS, "0C")]
            parts.append(f"{_tricks_phrase(honours)} by seat {seat}")
    return "; ".join(parts) or None


def _two_tricks_hundred_myriad(hand, payer, payee):
    won = [n for n, c in _won(hand, payee) if c == "100T"]
    return f"seat {payee} made two tricks, trick {won[0]} won with 100T" if won else None


def _stock_check(hand, payer, payee):
    if len(hand["stock"]) < 2:
        return None
    exposed = hand["stock"][1]
    second = madiao_cards.card_name(madiao_cards.CARD_ID[exposed] - 1)
    for trick in hand["tricks"]:
        for seat, name, up in trick["plays"]:
            if seat == payer and name == second and up:
                return (
                    f"stock card {exposed} (top of its suit); "
                    f"seat {payer} played {second} face up in trick {trick['number']}"
                )
    return None


def _four_lowest(hand, payer, payee):
    # The rule's name says which four cards; they may lie in other hands of the next deal.
    return f"seat {payee} was dealt all four"


def _face_up_discards(hand: dict[str, Any], seat: int) -> list[tuple[int, str]]:
    """(trick number, card) of each face-up card ``seat`` played that did not capture."""
    found = []
    for trick in hand["tricks"]:
        best = None
        for index, (s, name, up) in enumerate(trick["plays"]):
            card = madiao_cards.CARD_ID[name]
            if not up:
                continue
            if index == 0:
                best = card
            elif madiao_cards.CARD_SUIT[card] == madiao_cards.CARD_SUIT[best] and card > best:
                best = card  # a capture
            elif s == seat:
                found.append((trick["number"], name))
    return found


def _face_up_discard(hand, payer, payee):
    parts = [
        f"seat {seat} played {name} face up in trick {n} without capturing"
        for seat in (payer, payee)
        for n, name in _face_up_discards(hand, seat)
    ]
    return "; ".join(parts) or None


_PHRASES = {
    "trick_count": _trick_count,
    "slam": _slam,
    "boss_card": _boss_card,
    "hundred_myriad": _hundred_myriad,
    "honours": _honours,
    "two_tricks_hundred_myriad": _two_tricks_hundred_myriad,
    "stock_check": _stock_check,
    "four_lowest": _four_lowest,
    "face_up_discard": _face_up_discard,
}


def behind(rule: str, payer: int, payee: int, hand: dict[str, Any]) -> str | None:
    """A short phrase naming the card or trick behind a (netted) payment of ``rule`` from
    ``payer`` to ``payee``, or None where the hand does not determine one (a meld)."""
    phrase = _PHRASES.get(rule)
    return phrase(hand, int(payer), int(payee)) if phrase else None
