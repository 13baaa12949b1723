"""Scripted Madiao players that read the documented observation vector.

Two strengths:

- ``GreedyHeuristicAgent`` (weak, role-blind): leads its strongest card, captures with the
  lowest card that captures, otherwise sloughs its weakest card, never forces a redeal.
- ``RoleAwareHeuristicAgent`` (strong): plays its role. Both roles capture with the lowest card
  that wins for sure (a "boss": no higher card of the suit is still unseen), capture the Hundred
  Myriad from an opponent when they can and protect their own (led only when it is a boss, never
  sloughed while anything else can go), and slough the least useful card. With
  ``cooperative=True`` the three players also share tricks so that each reaches the two-trick
  minimum (a player who has its two tricks leaves a trick to a partner who still needs one and
  leads low for partners). That is good team play but costs the cooperating seat its own third
  trick, and a seat is scored on its own payoff, so the default (not cooperative) is the strongest
  scripted player, the registry's "heuristic" (the tournaments between the variants are in
  docs/results.md).

The agents see only what the observation carries (``madiao_mao.agents.madiao.view.MadiaoView``): their
hand, the public trick, tricks won, roles, the cards seen face up and the upcard.

Speed: the decision rules are one Numba kernel (``_decide``). ``act_batch`` decodes a whole batch
of observation rows and decides every row in one compiled call, which is what makes these agents
cheap opponents for self-play training; ``decide`` runs the same kernel on one decoded
``MadiaoView``.
"""

from __future__ import annotations

import numpy as np

from cardgame_core.jit import njit
from madiao_env import cards
from madiao_env.layout import summary_part
from madiao_mao.agents.base import Agent, act_as_batch_of_one, legal_actions
from madiao_mao.agents.madiao import obs_layout as layout
from madiao_mao.agents.madiao.view import MadiaoView

# Card sets in these kernels are int64 bitmasks: the 40 cards fit, and signed masks keep Numba
# from promoting mixed uint64/int64 expressions to float.
_SUIT_MASKS = np.array([int(m) for m in cards.SUIT_MASK], dtype=np.int64)
_SUIT_FIRST = np.array(cards.SUIT_FIRST_BIT, dtype=np.int64)
_SUIT_SIZE = np.array(cards.SUIT_SIZE, dtype=np.int64)
_CARD_SUIT = np.array(cards.CARD_SUIT, dtype=np.int64)
_TOP_CARDS = int(cards.TOP_MASK)
_FULL_DECK = int(cards.FULL_DECK_MASK)
HUNDRED = cards.HUNDRED_MYRIAD
_HIGH_TENS = (1 << cards.THOUSAND_MYRIAD) | (1 << cards.MYRIAD_MYRIAD)
MINIMUM_TRICKS = 2
N_CARDS = cards.N_CARDS
ACTION_SLOUGH = cards.ACTION_SLOUGH
ACTION_REDEAL = cards.ACTION_REDEAL
ACTION_PASS = cards.ACTION_PASS

#: Policy ids of the kernel.
GREEDY, ROLE_AWARE = 0, 1


def suit_of(card: int) -> int:
    return int(cards.CARD_SUIT[card])


def rank_in_suit(card: int) -> float:
    """0 for the lowest card of its suit, 1 for the highest."""
    return float(_rank(card))


def cards_in(mask: int) -> list[int]:
    return [c for c in range(cards.N_CARDS) if mask >> c & 1]


def higher_in_suit(card: int) -> int:
    """The set of cards of ``card``'s suit stronger than it."""
    return int(_higher_in_suit(card))


# ---------------------------------------------------------------------------------------------
# The kernel: card facts, then the two policies on one decoded view.


@njit
def _rank(card):
    suit = _CARD_SUIT[card]
    return (card - _SUIT_FIRST[suit]) / (_SUIT_SIZE[suit] - 1)


@njit
def _higher_in_suit(card):
    return _SUIT_MASKS[_CARD_SUIT[card]] & ~((np.int64(2) << card) - 1)


@njit
def _unseen(hand, seen, own_sloughed, upcard):
    """Cards that someone else may still hold (or that lie unseen in the stock)."""
    unseen = _FULL_DECK & ~hand & ~seen & ~own_sloughed
    if upcard >= 0:
        unseen &= ~(np.int64(1) << upcard)
    return unseen


@njit
def _is_boss(card, unseen):
    """No card that beats it can be in another hand."""
    return (_higher_in_suit(card) & unseen) == 0


@njit
def _usefulness(card, unseen):
    """How much a card is worth keeping (the card to slough has the lowest value)."""
    value = _rank(card)
    if _is_boss(card, unseen):
        value += 10.0
    if card == HUNDRED:
        value += 5.0
    if (_TOP_CARDS >> card) & 1:
        value += 2.0
    return value


@njit
def _lowest_rank(candidates):
    """The first card of a card set (ascending ids) with the lowest rank in its suit; -1 if empty."""
    best, best_rank = -1, 2.0
    for card in range(N_CARDS):
        if (candidates >> card) & 1:
            rank = _rank(card)
            if rank < best_rank:
                best, best_rank = card, rank
    return best


@njit
def _highest_rank(candidates):
    best, best_rank = -1, -1.0
    for card in range(N_CARDS):
        if (candidates >> card) & 1:
            rank = _rank(card)
            if rank > best_rank:
                best, best_rank = card, rank
    return best


@njit
def _lowest_card(candidates):
    for card in range(N_CARDS):
        if (candidates >> card) & 1:
            return card
    return -1


@njit
def _least_useful(candidates, unseen):
    best, best_value = -1, 1e9
    for card in range(N_CARDS):
        if (candidates >> card) & 1:
            value = _usefulness(card, unseen)
            if value < best_value:
                best, best_value = card, value
    return best


@njit
def _low_lead(candidates, unseen):
    """A low lead for partners: non-bosses first, then not the Hundred Myriad, then lowest rank."""
    best, best_key = -1, 1e9
    for card in range(N_CARDS):
        if (candidates >> card) & 1:
            # Lexicographic (boss, hundred, rank) as one number: rank < 1 never outweighs a flag.
            key = 4.0 * _is_boss(card, unseen) + 2.0 * (card == HUNDRED) + _rank(card)
            if key < best_key:
                best, best_key = card, key
    return best


@njit
def _bosses(candidates, unseen):
    out = np.int64(0)
    for card in range(N_CARDS):
        if (candidates >> card) & 1 and _is_boss(card, unseen):
            out |= np.int64(1) << card
    return out


@njit
def _take(captures, sure, hundred_at_stake):
    """Capture: a high Ten for a Hundred Myriad at stake, a sure 100T, else the cheapest sure card."""
    if hundred_at_stake and captures & _HIGH_TENS:
        return _lowest_card(captures & _HIGH_TENS)
    if (sure >> HUNDRED) & 1:
        return HUNDRED
    return _lowest_rank(sure if sure else captures)


@njit
def _decide(
    policy,
    redeal_threshold,
    cooperative,
    hand,
    seen,
    own_sloughed,
    upcard,
    banker,
    tricks_won,
    n_trick,
    trick_seat,
    trick_card,
    trick_up,
    mask,
):
    """One move of ``policy`` (GREEDY or ROLE_AWARE) for a decoded view; -1 if nothing is legal.

    ``tricks_won`` is by relative seat; the trick is ``n_trick`` plays of (relative seat, card id
    or -1 face down, face up)."""
    plays = np.int64(0)
    sloughs = np.int64(0)
    any_legal = False
    for action in range(mask.shape[0]):
        if mask[action]:
            any_legal = True
            if action < ACTION_SLOUGH:
                plays |= np.int64(1) << action
            elif action < ACTION_REDEAL:
                sloughs |= np.int64(1) << (action - ACTION_SLOUGH)
    if not any_legal:
        return -1
    if mask[ACTION_REDEAL] or mask[ACTION_PASS]:
        if policy == GREEDY or not mask[ACTION_REDEAL]:
            if mask[ACTION_PASS]:
                return ACTION_PASS
            for action in range(mask.shape[0]):
                if mask[action]:
                    return action
        unseen = _unseen(hand, seen, own_sloughed, upcard)
        # Sure tricks at the deal: bosses, counting the cards above them we hold ourselves.
        strength = 0
        for card in range(N_CARDS):
            if (hand >> card) & 1 and _is_boss(card, unseen):
                strength += 1
        if (hand >> HUNDRED) & 1:
            strength += 1
        return ACTION_REDEAL if strength < redeal_threshold else ACTION_PASS

    leading = n_trick == 0
    # The card winning the trick so far (highest face-up card of the suit led) and its seat.
    best, winner, trick_face_up = -1, -1, np.int64(0)
    if not leading:
        best, winner = trick_card[0], trick_seat[0]
        led_suit = _CARD_SUIT[best]
        for i in range(n_trick):
            if trick_up[i] and trick_card[i] >= 0:
                trick_face_up |= np.int64(1) << trick_card[i]
                if _CARD_SUIT[trick_card[i]] == led_suit and trick_card[i] > best:
                    best, winner = trick_card[i], trick_seat[i]
    # Leading, any card "captures"; following, only a higher card of the suit led does.
    captures = plays if leading else plays & _SUIT_MASKS[_CARD_SUIT[best]] & ~((np.int64(2) << best) - 1)

    if policy == GREEDY:
        if leading:
            return _highest_rank(plays)
        if captures:
            return _lowest_card(captures)
        return ACTION_SLOUGH + _lowest_rank(sloughs)

    unseen = _unseen(hand, seen, own_sloughed, upcard)
    is_banker = banker == 0
    my_tricks = tricks_won[0]
    if leading:
        bosses = _bosses(plays, unseen)
        if (bosses >> HUNDRED) & 1:
            return HUNDRED  # a sure trick with the Hundred Myriad pays the top tier
        if is_banker or not cooperative:
            if bosses:
                return _lowest_rank(bosses)
            return _least_useful(plays, unseen)
        if my_tricks < MINIMUM_TRICKS and bosses:
            return _lowest_rank(bosses)
        if my_tricks >= MINIMUM_TRICKS:
            # Made the minimum: lead low so a partner who still needs a trick can capture.
            return _low_lead(plays, unseen)
        return _least_useful(plays, unseen)

    last_to_play = n_trick == 3
    sure = captures if last_to_play else _bosses(captures, unseen)
    hundred_at_stake = ((trick_face_up >> HUNDRED) & 1) != 0 and winner != 0
    if is_banker or winner == banker or not cooperative:
        if captures:
            return _take(captures, sure, hundred_at_stake)
        return ACTION_SLOUGH + _least_useful(sloughs, unseen)

    # A partner is winning the trick (cooperative players only).
    partner_needs = tricks_won[winner] < MINIMUM_TRICKS
    partner_card = best
    banker_still_to_play = 1 <= banker <= 3 - n_trick
    partner_safe = _is_boss(partner_card, unseen) or not banker_still_to_play
    i_need = my_tricks < MINIMUM_TRICKS
    if captures:
        if partner_safe:
            # Take it over only if I need the trick and my partner does not.
            if i_need and not partner_needs and partner_card != HUNDRED:
                return _lowest_rank(sure if sure else captures)
        else:
            # The banker may still beat my partner: secure the trick for the team with a boss,
            # unless the partner needs it more than I do and my capture would not be sure anyway.
            bosses = _bosses(captures, unseen)
            if bosses and (i_need or not partner_needs or partner_card != HUNDRED):
                return _lowest_rank(bosses)
    return ACTION_SLOUGH + _least_useful(sloughs, unseen)


@njit
def _decide_rows(policy, redeal_threshold, cooperative, observations, masks, starts, out):
    """Decode every observation row (slice starts: hand, seen face up, own sloughed, upcard,
    banker, tricks won, trick leader, trick plays) and decide it into ``out``."""
    hand_at, seen_at, sloughed_at, upcard_at = starts[0], starts[1], starts[2], starts[3]
    banker_at, tricks_at, leader_at, plays_at = starts[4], starts[5], starts[6], starts[7]
    tricks_won = np.zeros(4, dtype=np.int64)
    trick_seat = np.zeros(3, dtype=np.int64)
    trick_card = np.zeros(3, dtype=np.int64)
    trick_up = np.zeros(3, dtype=np.bool_)
    for row in range(observations.shape[0]):
        obs = observations[row]
        hand, seen, sloughed, upcard = np.int64(0), np.int64(0), np.int64(0), -1
        for card in range(N_CARDS):
            if obs[hand_at + card] > 0:
                hand |= np.int64(1) << card
            if obs[seen_at + card] > 0:
                seen |= np.int64(1) << card
            if obs[sloughed_at + card] > 0:
                sloughed |= np.int64(1) << card
            if upcard < 0 and obs[upcard_at + card] > 0:
                upcard = card
        banker = 0
        for seat in range(4):
            if obs[banker_at + seat] > 0:
                banker = seat
                break
        for seat in range(4):
            tricks_won[seat] = obs[tricks_at + seat]
        n_trick, seat = 0, -1
        for relative in range(4):
            if obs[leader_at + relative] > 0:
                seat = relative
                break
        if seat >= 0:
            for play in range(3):
                at = plays_at + play * (N_CARDS + 1)
                card = -1
                for c in range(N_CARDS):
                    if obs[at + c] > 0:
                        card = c
                        break
                face_down = obs[at + N_CARDS] > 0
                if card < 0 and not face_down:
                    break  # an empty play slot: the trick ends here
                trick_seat[n_trick] = seat
                trick_card[n_trick] = -1 if face_down else card
                trick_up[n_trick] = not face_down
                n_trick += 1
                seat = (seat + 1) % 4
        out[row] = _decide(
            policy,
            redeal_threshold,
            cooperative,
            hand,
            seen,
            sloughed,
            upcard,
            banker,
            tricks_won,
            n_trick,
            trick_seat,
            trick_card,
            trick_up,
            masks[row],
        )


def _layout_starts() -> np.ndarray:
    """Start of each observation slice the kernel reads (``madiao_obs_layout.REQUIRED`` order)."""

    slices = layout.layout()
    return np.array([slices[name].start for name in layout.REQUIRED], dtype=np.int64)


class _ScriptedAgent(Agent):
    """Shared plumbing: one kernel call for a batch, or for one decoded view."""

    decides_from_observation = True

    policy = GREEDY
    redeal_threshold = 0
    cooperative = False

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal_actions(action_mask)
        return act_as_batch_of_one(self, observation, action_mask)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        observations = np.asarray(observations)
        masks = np.asarray(masks)
        if observations.ndim != 2 or masks.ndim != 2 or observations.shape[0] != masks.shape[0]:
            raise ValueError(
                f"expected observations [M, obs_dim] and masks [M, {cards.N_ACTIONS}] with the same M, "
                f"got shapes {observations.shape} and {masks.shape}"
            )
        if masks.shape[1] != cards.N_ACTIONS:
            raise ValueError(f"a Madiao action mask has {cards.N_ACTIONS} entries, got {masks.shape[1]}")
        # The kernel reads the summary layout's pieces; another layout would be misread.
        observations = summary_part(observations, f"the {self.name} player")
        if observations.dtype != np.int8:
            # Observation entries are small counts (0/1 flags, tricks 0..8): int8 is exact.
            observations = np.rint(observations).astype(np.int8)
        observations = np.ascontiguousarray(observations)  # a record's summary part is a strided view
        actions = np.empty(masks.shape[0], dtype=np.int64)
        _decide_rows(
            self.policy,
            self.redeal_threshold,
            self.cooperative,
            observations,
            masks.astype(np.bool_, copy=False),
            _layout_starts(),
            actions,
        )
        return actions

    def decide(self, view: MadiaoView, action_mask: np.ndarray) -> int:
        """The move for a decoded view (what ``act`` does after decoding the observation)."""
        legal_actions(action_mask)
        trick = list(view.trick) + [(0, -1, False)] * (3 - len(view.trick))
        return int(
            _decide(
                self.policy,
                self.redeal_threshold,
                self.cooperative,
                np.int64(view.hand),
                np.int64(view.seen_face_up),
                np.int64(view.own_sloughed),
                view.upcard,
                view.banker,
                np.array(view.tricks_won, dtype=np.int64),
                len(view.trick),
                np.array([t[0] for t in trick[:3]], dtype=np.int64),
                np.array([t[1] for t in trick[:3]], dtype=np.int64),
                np.array([t[2] for t in trick[:3]], dtype=np.bool_),
                np.asarray(action_mask, dtype=np.bool_),
            )
        )


class GreedyHeuristicAgent(_ScriptedAgent):
    """Weak baseline: strongest lead, cheapest capture, weakest slough, never a redeal."""

    policy = GREEDY

    def __init__(self, name: str = "greedy") -> None:
        self.name = name


class RoleAwareHeuristicAgent(_ScriptedAgent):
    """Strong baseline: sure captures, Hundred Myriad care, optional cooperation to two tricks.

    ``redeal_threshold``: declare a redeal (when offered) with fewer sure tricks than this.
    ``cooperative``: players share tricks so that each makes the minimum (module doc).
    """

    policy = ROLE_AWARE

    def __init__(self, name: str = "heuristic", redeal_threshold: int = 2, cooperative: bool = False) -> None:
        if (
            isinstance(redeal_threshold, bool)
            or not isinstance(redeal_threshold, int)
            or redeal_threshold < 0
        ):
            raise ValueError(f"redeal_threshold must be an integer >= 0, got {redeal_threshold!r}")
        self.name = name
        self.redeal_threshold = redeal_threshold
        self.cooperative = bool(cooperative)


class PlayBook:
    """Card facts of one decision from a view (the search player ranks its sloughs with it)."""

    def __init__(self, view: MadiaoView, mask: np.ndarray) -> None:
        self.view = view
        self.mask = mask
        self.legal = legal_actions(mask)
        self.unseen = int(_unseen(view.hand, view.seen_face_up, view.own_sloughed, view.upcard))

    def usefulness(self, card: int) -> float:
        """How much a card is worth keeping (the card to slough has the lowest value)."""
        return float(_usefulness(card, self.unseen))


__all__ = [
    "GreedyHeuristicAgent",
    "RoleAwareHeuristicAgent",
    "cards_in",
    "higher_in_suit",
    "rank_in_suit",
    "suit_of",
]
