"""What one Madiao seat knows, decoded from its observation vector (for the scripted agents).

Seats in a view are *relative*: 0 is the observing seat, 1 the next to act after it, and so on.
``madiao_mao.agents.madiao.obs_layout.view_from_observation`` decodes a view from an observation vector
through the pieces of ``madiao_env.layout``, so the heuristics never hard-code positions.
"""

from __future__ import annotations

from dataclasses import dataclass

from madiao_env import cards


@dataclass(frozen=True)
class MadiaoView:
    """One seat's knowledge at a decision."""

    hand: int
    """The seat's cards (a card set as a Python int)."""
    seen_face_up: int
    """Every card played face up so far in this hand (earlier tricks and the current one)."""
    own_sloughed: int
    """Cards this seat sloughed face down (known to it, hidden from the others)."""
    upcard: int
    """The stock's upcard (card id), seen by all; -1 if unknown."""
    banker: int
    """Relative seat of the banker (0: this seat is the banker)."""
    tricks_won: tuple[int, int, int, int]
    """Tricks won so far, by relative seat."""
    trick: tuple[tuple[int, int, bool], ...]
    """The current trick in play order: (relative seat, card id or -1 if face down, face up)."""

    @property
    def is_banker(self) -> bool:
        return self.banker == 0

    @property
    def leading(self) -> bool:
        return not self.trick

    @property
    def trick_face_up(self) -> int:
        mask = 0
        for _, card, face_up in self.trick:
            if face_up and card >= 0:
                mask |= 1 << card
        return mask

    @property
    def trick_best_card(self) -> int:
        """The card currently winning the trick (highest face-up card of the suit led); -1 if none."""
        if not self.trick:
            return -1
        led = self.trick[0][1]
        led_suit = int(cards.CARD_SUIT[led])
        best = led
        for _, card, face_up in self.trick[1:]:
            if face_up and card >= 0 and int(cards.CARD_SUIT[card]) == led_suit and card > best:
                best = card
        return best

    @property
    def trick_winner(self) -> int:
        """Relative seat of the card currently winning the trick; -1 if the trick is empty."""
        best = self.trick_best_card
        for seat, card, face_up in self.trick:
            if face_up and card == best:
                return seat
        return -1

    @property
    def last_to_play(self) -> bool:
        return len(self.trick) == cards.N_SEATS - 1

    @property
    def banker_still_to_play(self) -> bool:
        """Whether the banker plays to this trick after this seat."""
        return 1 <= self.banker <= cards.N_SEATS - 1 - len(self.trick)
