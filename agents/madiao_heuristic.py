"""Scripted Madiao players that read the documented observation vector.

Two strengths:

- ``GreedyHeuristicAgent`` (weak, role-blind): leads its strongest card, captures with the
  lowest card that captures, otherwise sloughs its weakest card, never forces a redeal.
- ``RoleAwareHeuristicAgent`` (strong): plays its role. A banker plays to win tricks; the three
  players cooperate so that each reaches the two-trick minimum (a player who has its two tricks
  leaves a trick to a partner who still needs one, and plays low leads for partners). Both
  capture with the lowest card that wins for sure (a "boss": no higher card of the suit is still
  unseen), capture the Hundred Myriad from an opponent when they can and protect their own
  (led only when it is a boss, never sloughed while anything else can go), and slough the least
  useful card.

The agents see only what the observation carries (``agents.madiao_view.MadiaoView``): their
hand, the public trick, tricks won, roles, the cards seen face up and the upcard.
"""

from __future__ import annotations

import numpy as np

from agents.base import Agent, legal_actions
from agents.madiao_view import MadiaoView, view_from_observation
from madiao_env import cards

_SUIT_MASKS = [int(m) for m in cards.SUIT_MASK]
_SUIT_FIRST = [int(f) for f in cards.SUIT_FIRST_BIT]
_SUIT_SIZE = [int(s) for s in cards.SUIT_SIZE]
_TOP_CARDS = int(cards.TOP_MASK)
HUNDRED = cards.HUNDRED_MYRIAD
_HIGH_TENS = (1 << cards.THOUSAND_MYRIAD) | (1 << cards.MYRIAD_MYRIAD)
MINIMUM_TRICKS = 2


def suit_of(card: int) -> int:
    return int(cards.CARD_SUIT[card])


def rank_in_suit(card: int) -> float:
    """0 for the lowest card of its suit, 1 for the highest."""
    suit = suit_of(card)
    return (card - _SUIT_FIRST[suit]) / (_SUIT_SIZE[suit] - 1)


def cards_in(mask: int) -> list[int]:
    return [c for c in range(cards.N_CARDS) if mask >> c & 1]


def higher_in_suit(card: int) -> int:
    """The set of cards of ``card``'s suit stronger than it."""
    return _SUIT_MASKS[suit_of(card)] & ~((2 << card) - 1)


class _PlayBook:
    """Facts about one decision derived from the view (shared by both strengths)."""

    def __init__(self, view: MadiaoView, mask: np.ndarray) -> None:
        self.view = view
        self.mask = mask
        self.legal = legal_actions(mask)
        self.plays = [int(a) for a in self.legal if a < cards.ACTION_SLOUGH]
        self.sloughs = [
            int(a) - cards.ACTION_SLOUGH for a in self.legal if cards.ACTION_SLOUGH <= a < cards.ACTION_REDEAL
        ]
        self.redeal_choice = cards.ACTION_REDEAL in self.legal or cards.ACTION_PASS in self.legal
        # Face-up plays that win the trick so far (with the face-up-discard variant a face-up
        # play may also be a losing discard, which the heuristics never choose).
        if view.leading:
            self.captures = self.plays
        else:
            best = view.trick_best_card
            self.captures = [c for c in self.plays if suit_of(c) == suit_of(best) and c > best]
        # Cards that someone else may still hold (or that lie unseen in the stock).
        self.unseen = (
            int(cards.FULL_DECK_MASK)
            & ~view.hand
            & ~view.seen_face_up
            & ~view.own_sloughed
            & ~(1 << view.upcard if view.upcard >= 0 else 0)
        )

    def is_boss(self, card: int) -> bool:
        """No card that beats it can be in another hand."""
        return not (higher_in_suit(card) & self.unseen)

    def usefulness(self, card: int) -> float:
        """How much a card is worth keeping (the card to slough has the lowest value)."""
        value = rank_in_suit(card)
        if self.is_boss(card):
            value += 10
        if card == HUNDRED:
            value += 5
        if _TOP_CARDS >> card & 1:
            value += 2
        return value


class GreedyHeuristicAgent(Agent):
    """Weak baseline: strongest lead, cheapest capture, weakest slough, never a redeal."""

    def __init__(self, name: str = "greedy") -> None:
        self.name = name

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.decide(view_from_observation(observation), action_mask)

    def decide(self, view: MadiaoView, action_mask: np.ndarray) -> int:
        """The move for a decoded view (what ``act`` does after decoding the observation)."""
        book = _PlayBook(view, action_mask)
        if book.redeal_choice:
            return cards.ACTION_PASS if action_mask[cards.ACTION_PASS] else int(book.legal[0])
        if book.view.leading:
            return max(book.plays, key=rank_in_suit)
        if book.captures:
            return min(book.captures)
        return cards.ACTION_SLOUGH + min(book.sloughs, key=rank_in_suit)


class RoleAwareHeuristicAgent(Agent):
    """Strong baseline: role-aware captures, cooperation to two tricks, Hundred Myriad care."""

    def __init__(self, name: str = "heuristic", redeal_threshold: int = 1) -> None:
        self.name = name
        self.redeal_threshold = redeal_threshold

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.decide(view_from_observation(observation), action_mask)

    def decide(self, view: MadiaoView, action_mask: np.ndarray) -> int:
        """The move for a decoded view (what ``act`` does after decoding the observation)."""
        book = _PlayBook(view, action_mask)
        if book.redeal_choice:
            return self._redeal(book)
        if view.leading:
            return self._lead(book)
        return self._follow(book)

    # -- declarations
    def _redeal(self, book: _PlayBook) -> int:
        if not book.mask[cards.ACTION_REDEAL]:
            return cards.ACTION_PASS
        # Sure tricks at the deal: bosses counting the cards above them we hold ourselves.
        strength = sum(1 for c in cards_in(book.view.hand) if book.is_boss(c))
        if book.view.hand >> HUNDRED & 1:
            strength += 1
        return cards.ACTION_REDEAL if strength < self.redeal_threshold else cards.ACTION_PASS

    # -- leading
    def _lead(self, book: _PlayBook) -> int:
        view = book.view
        bosses = [c for c in book.plays if book.is_boss(c)]
        my_tricks = view.tricks_won[0]
        if HUNDRED in bosses:
            return HUNDRED  # a sure trick with the Hundred Myriad pays the top tier
        if view.is_banker:
            if bosses:
                return min(bosses, key=rank_in_suit)
            return self._least_useful(book, book.plays)
        if my_tricks < MINIMUM_TRICKS and bosses:
            return min(bosses, key=rank_in_suit)
        if my_tricks >= MINIMUM_TRICKS:
            # Made the minimum: lead low so a partner who still needs a trick can capture.
            return min(book.plays, key=lambda c: (book.is_boss(c), c == HUNDRED, rank_in_suit(c)))
        return self._least_useful(book, book.plays)

    # -- following
    def _follow(self, book: _PlayBook) -> int:
        view = book.view
        captures = book.captures
        sure = [c for c in captures if book.is_boss(c) or view.last_to_play]
        winner = view.trick_winner  # relative seat of the best face-up card so far
        hundred_at_stake = view.trick_face_up >> HUNDRED & 1 and winner != 0

        if view.is_banker:
            if captures:
                if hundred_at_stake and any(c in captures for c in cards_in(_HIGH_TENS)):
                    return min(c for c in captures if _HIGH_TENS >> c & 1)
                if HUNDRED in sure:
                    return HUNDRED
                return min(sure or captures, key=rank_in_suit)
            return self._slough(book)

        winner_is_banker = winner == view.banker
        my_tricks = view.tricks_won[0]
        if winner_is_banker:
            if captures:
                if hundred_at_stake and any(_HIGH_TENS >> c & 1 for c in captures):
                    return min(c for c in captures if _HIGH_TENS >> c & 1)
                if HUNDRED in sure:
                    return HUNDRED
                return min(sure or captures, key=rank_in_suit)
            return self._slough(book)

        # A partner is winning the trick.
        partner_tricks = view.tricks_won[winner]
        partner_card = view.trick_best_card
        partner_safe = book.is_boss(partner_card) or not view.banker_still_to_play
        i_need = my_tricks < MINIMUM_TRICKS
        partner_needs = partner_tricks < MINIMUM_TRICKS
        if not captures:
            return self._slough(book)
        if partner_safe:
            # Take it over only if I need the trick and my partner does not.
            if i_need and not partner_needs and partner_card != HUNDRED:
                return min(sure or captures, key=rank_in_suit)
            return self._slough(book)
        # The banker may still beat my partner: secure the trick for the team with a boss,
        # unless the partner needs it more than I do and my capture would not be sure anyway.
        bosses = [c for c in captures if book.is_boss(c)]
        if bosses and (i_need or not partner_needs or partner_card != HUNDRED):
            return min(bosses, key=rank_in_suit)
        return self._slough(book)

    # -- sloughing
    def _slough(self, book: _PlayBook) -> int:
        return cards.ACTION_SLOUGH + self._least_useful(book, book.sloughs)

    @staticmethod
    def _least_useful(book: _PlayBook, candidates: list[int]) -> int:
        return min(candidates, key=book.usefulness)
