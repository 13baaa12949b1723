"""A slow, obviously-correct plain-Python reading of Madiao, for cross-checking the Numba core.

Written from the rules document (``docs``' Madiao rules: the project's reading of the seed text),
not from the compiled core, so that the two implementations can be compared hand by hand. Cards
are plain ``int`` ids (``madiao_env.cards``), a hand is a ``set``; each rule is one small function
whose docstring quotes the rule it implements. Nothing here is fast, and nothing needs to be.

Scope: one episode of ``episode="hand"`` as the PettingZoo env defines it. Automatic declarations
(melds, four lowest) run as soon as a deal is set. Where the rules call for a fresh random deal
(four lowest, a declared redeal) the reference cannot know the env's random generator: its phase
becomes ``"needs_deal"`` and the caller supplies the next deal with :meth:`ReferenceGame.set_deal`
or :meth:`ReferenceGame.deal_from_deck`; the payments made so far are kept.

Example::

    game = ReferenceGame()
    game.deal_from_deck(deck_names, banker=0)
    while game.phase in ("redeal", "play"):
        game.step(min(game.legal_actions()))
    game.settlement()  # [Payment(rule, payer, payee, stakes), ...]
    game.payoffs()     # four floats summing to zero
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from madiao_env import payments
from madiao_env.cards import (
    ACTION_PASS,
    ACTION_PLAY,
    ACTION_REDEAL,
    ACTION_SLOUGH,
    CARD_NAMES,
    N_ACTIONS,
    N_CARDS,
    card_id,
)

N_SEATS = 4
HAND_SIZE = 8
STOCK_SIZE = 8
N_TRICKS = 8
MINIMUM_TRICKS = payments.MINIMUM_TRICKS

# Suits as id ranges, lowest card first (Cash is stored reversed: 9C is id 0, 0C id 10).
SUIT_CARDS: tuple[tuple[int, ...], ...] = (
    tuple(range(0, 11)),  # Cash: 9C 8C ... 1C HC 0C
    tuple(range(11, 20)),  # Strings: 1S .. 9S
    tuple(range(20, 29)),  # Myriads: 1M .. 9M
    tuple(range(29, 40)),  # Tens: 20T .. 90T 100T 1000T 10000T
)


def _rule(code: int) -> str:
    """The settlement name of a rule id (``madiao_env.payments`` holds both)."""
    return payments.RULE_NAMES[code]


def _ids(*names: str) -> frozenset[int]:
    return frozenset(card_id(name) for name in names)


HUNDRED_MYRIAD = card_id("100T")
THOUSAND_MYRIAD = card_id("1000T")
MYRIAD_MYRIAD = card_id("10000T")
ZERO_CASH = card_id("0C")
RED_CARDS = _ids("10000T", "1000T", "100T", "20T", "9M", "1M", "9S", "1S", "0C", "9C")
TOP_CARDS = _ids("0C", "9S", "9M", "10000T")
FOUR_LOWEST = _ids("20T", "1M", "1S", "9C")
MELD_FOUR_TOPS = _ids("10000T", "9M", "9S", "0C")
MELD_FOUR_TOPS_AND_HUNDRED = _ids("10000T", "100T", "9M", "9S", "0C")
MELD_EIGHT_STAKES = _ids("10000T", "20T", "9M", "1M", "9S", "1S", "0C", "9C")

PHASE_REDEAL = "redeal"
PHASE_PLAY = "play"
PHASE_OVER = "over"
PHASE_NEEDS_DEAL = "needs_deal"


class Payment(NamedTuple):
    """One settlement line: ``payer`` pays ``payee`` ``stakes`` stakes under ``rule``."""

    rule: str
    payer: int
    payee: int
    stakes: float


class Play(NamedTuple):
    """One card played to a trick."""

    seat: int
    card: int
    face_up: bool


class ReferenceRuleError(ValueError):
    """An illegal action or a malformed deal given to the reference."""


# --------------------------------------------------------------------------------------------
# Cards and seats
# --------------------------------------------------------------------------------------------


def suit_of(card: int) -> int:
    """The suit index (0 Cash, 1 Strings, 2 Myriads, 3 Tens) of a card id."""
    for suit, members in enumerate(SUIT_CARDS):
        if card in members:
            return suit
    raise ReferenceRuleError(f"not a card id: {card!r}")


def beats(card: int, other: int) -> bool:
    """Within one suit a higher id is a stronger card ("Cash ranks in reverse" is in the ids)."""
    return suit_of(card) == suit_of(other) and card > other


def dealer_of(banker: int) -> int:
    """ "With banker b: the dealer is b+1 (banker's right)"."""
    return (banker + 1) % N_SEATS


def opposite_of(banker: int) -> int:
    """ "... the opposite b+2"."""
    return (banker + 2) % N_SEATS


def shuffler_of(banker: int) -> int:
    """ "... the shuffler b+3 (banker's left)"."""
    return (banker + 3) % N_SEATS


def cut_number(card: int) -> int:
    """The number printed on a card as the cut reads it; 0 for cards without a digit 1..9.

    "Tens 20T..90T count as 2..9"; 0C, HC, 100T, 1000T, 10000T count as no digit.
    """
    name = CARD_NAMES[card]
    if name in ("0C", "HC", "100T", "1000T", "10000T"):
        return 0
    if name.endswith("T"):
        return int(name[:-1]) // 10
    return int(name[:-1])


def first_seat_from_cut(cut_card: int, banker: int) -> int:
    """ "4 or 8 → dealer; 3 or 7 → banker; 2 or 6 → shuffler;
    1, 5, 9, 0C, HC, 100T, 1000T, 10000T → banker's opposite"."""
    number = cut_number(cut_card)
    if number in (4, 8):
        return dealer_of(banker)
    if number in (3, 7):
        return banker
    if number in (2, 6):
        return shuffler_of(banker)
    return opposite_of(banker)


def deal_order(first: int) -> list[int]:
    """Seats in deal order: the first seat dealt, then counter-clockwise (= play order)."""
    return [(first + k) % N_SEATS for k in range(N_SEATS)]


def deal_deck(deck: Sequence[int], banker: int) -> tuple[list[list[int]], list[int], int]:
    """Deal a deck listed top to bottom: returns (hands by seat, stock upcard first, first seat).

    "The dealer cuts and reveals a card" (the bottom card, deck[39]); "Deal counter-clockwise
    from that seat: a batch of four cards to each, then singles, 8 cards each"; "The 8 cards left
    are the stock; it is turned so its bottom card (the upcard) is seen by all".
    """
    first = first_seat_from_cut(deck[-1], banker)
    hands: list[list[int]] = [[] for _ in range(N_SEATS)]
    position = 0
    for seat in deal_order(first):
        hands[seat].extend(deck[position : position + 4])
        position += 4
    for _ in range(HAND_SIZE - 4):
        for seat in deal_order(first):
            hands[seat].append(deck[position])
            position += 1
    stock = list(reversed(deck[position:]))
    return hands, stock, first


# --------------------------------------------------------------------------------------------
# Declarations
# --------------------------------------------------------------------------------------------


def meld_stakes(hand: set[int]) -> int:
    """The stakes of the highest meld in a hand, 0 when it holds none.

    "Only the highest applicable meld counts": 10000T 9M 9S 0C: 4; 10000T 100T 9M 9S 0C: 5;
    flush (all 8 cards one suit): 4; flush of Tens holding 100T: 5; eight red cards: 6; eight red
    cards holding 100T: 7; exactly 10000T 20T 9M 1M 9S 1S 0C 9C: 8.
    """
    candidates = [0]
    if hand >= MELD_FOUR_TOPS:
        candidates.append(payments.MELD_FOUR_TOPS)
    if hand >= MELD_FOUR_TOPS_AND_HUNDRED:
        candidates.append(payments.MELD_FOUR_TOPS_WITH_HUNDRED)
    suits = {suit_of(card) for card in hand}
    if len(suits) == 1:
        candidates.append(payments.MELD_FLUSH)
        if suits == {3} and HUNDRED_MYRIAD in hand:
            candidates.append(payments.MELD_TENS_FLUSH_WITH_HUNDRED)
    if hand <= RED_CARDS:
        candidates.append(payments.MELD_EIGHT_RED)
        if HUNDRED_MYRIAD in hand:
            candidates.append(payments.MELD_EIGHT_RED_WITH_HUNDRED)
        if hand == MELD_EIGHT_STAKES:
            candidates.append(payments.MELD_EXACT_EIGHT)
    return max(candidates)


def meld_winner(hands: Sequence[set[int]], first: int) -> tuple[int, int] | None:
    """(seat, stakes) of the meld that pays out, or None.

    "Two players with melds: the higher pays out; equal melds: the first in deal order."
    """
    best: tuple[int, int] | None = None
    for seat in deal_order(first):
        stakes = meld_stakes(hands[seat])
        if stakes > 0 and (best is None or stakes > best[1]):
            best = (seat, stakes)
    return best


def meld_payments(hands: Sequence[set[int]], holder: int, stakes: int) -> list[Payment]:
    """ "Each other player pays the holder, except the player who holds the Hundred Myriad (if
    that is not the holder) pays nothing." A banker holding a meld is paid like anyone else."""
    return [
        Payment(_rule(payments.RULE_MELD), seat, holder, float(stakes))
        for seat in range(N_SEATS)
        if seat != holder and HUNDRED_MYRIAD not in hands[seat]
    ]


def four_lowest_holder(hands: Sequence[set[int]]) -> int | None:
    """The seat holding "Four lowest (20T, 1M, 1S, 9C in one hand)", or None."""
    for seat in range(N_SEATS):
        if hands[seat] >= FOUR_LOWEST:
            return seat
    return None


def four_lowest_payments(holder: int) -> list[Payment]:
    """ "The holder wins 1 stake from each other player" (no Hundred Myriad exemption)."""
    return [
        Payment(_rule(payments.RULE_FOUR_LOWEST), seat, holder, float(payments.FOUR_LOWEST))
        for seat in range(N_SEATS)
        if seat != holder
    ]


def may_force_redeal(hand: set[int]) -> bool:
    """ "A player with five or more cards of one suit may force a redeal"."""
    return any(len(hand & set(members)) >= 5 for members in SUIT_CARDS)


# --------------------------------------------------------------------------------------------
# Play
# --------------------------------------------------------------------------------------------


def best_face_up(trick: Sequence[Play]) -> int:
    """The highest face-up card of the suit led so far (the leader's card at least)."""
    led_suit = suit_of(trick[0].card)
    best = trick[0].card
    for play in trick[1:]:
        if play.face_up and suit_of(play.card) == led_suit and play.card > best:
            best = play.card
    return best


def captures(card: int, trick: Sequence[Play]) -> bool:
    """ "captures — plays face up a card of the suit led that is higher than the best face-up
    card so far"."""
    return beats(card, best_face_up(trick))


def trick_winner(trick: Sequence[Play]) -> int:
    """ "The trick goes to the highest face-up card of the suit led. No trumps"."""
    best = best_face_up(trick)
    return next(play.seat for play in trick if play.card == best)


# --------------------------------------------------------------------------------------------
# Settlement
# --------------------------------------------------------------------------------------------


class HandRecord(NamedTuple):
    """Everything settlement needs about a finished hand."""

    banker: int
    dealt_hands: tuple[frozenset[int], ...]
    stock: tuple[int, ...]
    tricks: tuple[tuple[Play, ...], ...]
    winners: tuple[int, ...]
    face_up_discards: tuple[int, ...]  # seat of each non-capturing face-up play (variant)


def tricks_won(record: HandRecord) -> list[int]:
    return [record.winners.count(seat) for seat in range(N_SEATS)]


def winning_cards(record: HandRecord, seat: int) -> list[int]:
    """The cards with which ``seat`` won tricks."""
    return [
        best_face_up(trick)
        for trick, winner in zip(record.tricks, record.winners, strict=True)
        if winner == seat
    ]


def banker_line(rule: str, record: HandRecord, seat: int, stakes: float) -> list[Payment]:
    """ "What a player earns, the banker pays to that player; what the banker earns, each player
    pays to the banker"."""
    banker = record.banker
    if seat != banker:
        return [Payment(rule, banker, seat, stakes)]
    return [Payment(rule, other, banker, stakes) for other in range(N_SEATS) if other != banker]


def trick_count_and_slam_lines(record: HandRecord) -> list[Payment]:
    """Trick count: "t ≤ 1: p pays the banker 1; t = 2: nothing; t ≥ 3: the banker pays p 1".
    Slam: "all eight tricks: 8 instead of the trick-count line (a banker's slam: 8 from each
    player; a player's slam: 8 from the banker, and the two others, with no tricks, still pay the
    banker 1)"."""
    banker = record.banker
    won = tricks_won(record)
    if won[banker] == N_TRICKS:
        return banker_line(_rule(payments.RULE_SLAM), record, banker, float(payments.SLAM))
    lines: list[Payment] = []
    for seat in range(N_SEATS):
        if seat == banker:
            continue
        if won[seat] == N_TRICKS:
            lines.append(Payment(_rule(payments.RULE_SLAM), banker, seat, float(payments.SLAM)))
        elif won[seat] < MINIMUM_TRICKS:
            lines.append(Payment(_rule(payments.RULE_TRICK_COUNT), seat, banker, float(payments.TRICK_COUNT)))
        elif won[seat] > MINIMUM_TRICKS:
            lines.append(Payment(_rule(payments.RULE_TRICK_COUNT), banker, seat, float(payments.TRICK_COUNT)))
    return lines


def boss_cards(upcard: int) -> set[int]:
    """The cards that count as a suit's top card: "Promotion: if the upcard is the top card of
    its suit, the second-highest card of that suit counts as that suit's top card"."""
    tops = set(TOP_CARDS)
    if upcard in tops:
        tops.discard(upcard)
        tops.add(upcard - 1)  # the next lower card of the same suit
    return tops


def boss_card_lines(record: HandRecord) -> list[Payment]:
    """ "Boss card: 1 per trick won with the top card of a suit, only for a seat (banker too) that
    made the minimum"."""
    won = tricks_won(record)
    tops = boss_cards(record.stock[0])
    lines: list[Payment] = []
    for seat in range(N_SEATS):
        if won[seat] < MINIMUM_TRICKS:
            continue
        for card in winning_cards(record, seat):
            if card in tops:
                lines += banker_line(
                    _rule(payments.RULE_BOSS_CARD), record, seat, float(payments.BOSS_CARD_PER_TRICK)
                )
    return lines


def hundred_myriad_holder(record: HandRecord) -> int | None:
    """ "the seat dealt 100T (none if it lies in the stock)"."""
    for seat, hand in enumerate(record.dealt_hands):
        if HUNDRED_MYRIAD in hand:
            return seat
    return None


def hundred_myriad_lines(record: HandRecord) -> list[Payment]:
    """ "one tier only: failed the minimum: 1 (consolation, even if it won a trick with 100T); made
    the minimum without winning a trick with 100T: 2; made the minimum and won a trick with 100T:
    3". A banker collects the tier from each player (the symmetric reading)."""
    holder = hundred_myriad_holder(record)
    if holder is None:
        return []
    if tricks_won(record)[holder] < MINIMUM_TRICKS:
        stakes = payments.HUNDRED_MYRIAD_CONSOLATION
    elif HUNDRED_MYRIAD in winning_cards(record, holder):
        stakes = payments.HUNDRED_MYRIAD_WON_WITH_IT
    else:
        stakes = payments.HUNDRED_MYRIAD_MINIMUM
    return banker_line(_rule(payments.RULE_HUNDRED_MYRIAD), record, holder, float(stakes))


def honours_lines(record: HandRecord) -> list[Payment]:
    """ "Honours: won tricks with each of 10000T, 1000T and 100T: 3; with those three and 0C: 4
    instead" (0C as named: no promotion)."""
    lines: list[Payment] = []
    for seat in range(N_SEATS):
        cards = set(winning_cards(record, seat))
        if {MYRIAD_MYRIAD, THOUSAND_MYRIAD, HUNDRED_MYRIAD} <= cards:
            stakes = payments.HONOURS_FOUR if ZERO_CASH in cards else payments.HONOURS_THREE
            lines += banker_line(_rule(payments.RULE_HONOURS), record, seat, float(stakes))
    return lines


def won_two_with_hundred_myriad(record: HandRecord, seat: int) -> bool:
    """ "wins a trick with 100T and makes exactly two tricks"."""
    return tricks_won(record)[seat] == MINIMUM_TRICKS and HUNDRED_MYRIAD in winning_cards(record, seat)


def two_tricks_hundred_myriad_lines(record: HandRecord) -> list[Payment]:
    """ "a non-banker who wins a trick with 100T and makes exactly two tricks also takes 1 from
    each of the other two non-bankers (the 3 from the banker is the tier above, not extra)". A
    banker who does so gets only the tier's 3 (and stays banker), so no line here."""
    banker = record.banker
    lines: list[Payment] = []
    for seat in range(N_SEATS):
        if seat != banker and won_two_with_hundred_myriad(record, seat):
            lines += [
                Payment(
                    _rule(payments.RULE_TWO_TRICKS_HUNDRED_MYRIAD),
                    other,
                    seat,
                    float(payments.TWO_TRICKS_HUNDRED_MYRIAD),
                )
                for other in range(N_SEATS)
                if other not in (seat, banker)
            ]
    return lines


def stock_check_lines(record: HandRecord) -> list[Payment]:
    """ "after the eighth trick the upcard is removed, exposing the next stock card. If that card
    is the top card of its suit (as named, no promotion), the player who played the
    second-highest card of that suit face up pays each other player 1 (nothing if it was sloughed
    face down or lies in the stock)"."""
    exposed = record.stock[1]
    if exposed not in TOP_CARDS:
        return []
    second_highest = exposed - 1
    for trick in record.tricks:
        for play in trick:
            if play.card == second_highest and play.face_up:
                return [
                    Payment(_rule(payments.RULE_STOCK_CHECK), play.seat, other, float(payments.STOCK_CHECK))
                    for other in range(N_SEATS)
                    if other != play.seat
                ]
    return []


def face_up_discard_lines(record: HandRecord) -> list[Payment]:
    """Variant: a face-up card that does not capture is allowed, "and the player pays 2 stakes
    (to the banker; a banker pays each player 2)"."""
    lines: list[Payment] = []
    for seat in record.face_up_discards:
        if seat == record.banker:
            lines += [
                Payment(_rule(payments.RULE_FACE_UP_DISCARD), seat, other, float(payments.FACE_UP_DISCARD))
                for other in range(N_SEATS)
                if other != seat
            ]
        else:
            lines.append(
                Payment(
                    _rule(payments.RULE_FACE_UP_DISCARD), seat, record.banker, float(payments.FACE_UP_DISCARD)
                )
            )
    return lines


def settle_hand(record: HandRecord) -> list[Payment]:
    """ "All lines that apply add up, except where a line says 'instead'"."""
    return (
        trick_count_and_slam_lines(record)
        + boss_card_lines(record)
        + hundred_myriad_lines(record)
        + honours_lines(record)
        + two_tricks_hundred_myriad_lines(record)
        + stock_check_lines(record)
        + face_up_discard_lines(record)
    )


def payoffs_of(lines: Iterable[Payment], stake: float = 1.0) -> list[float]:
    """Net payoff by seat (zero-sum by construction: every line moves stakes between two seats)."""
    totals = [0.0] * N_SEATS
    for line in lines:
        totals[line.payer] -= line.stakes * stake
        totals[line.payee] += line.stakes * stake
    return totals


# --------------------------------------------------------------------------------------------
# The game
# --------------------------------------------------------------------------------------------


def _as_card(card: int | str) -> int:
    if isinstance(card, str):
        return card_id(card)
    if isinstance(card, bool) or not 0 <= int(card) < N_CARDS:
        raise ReferenceRuleError(f"not a card: {card!r}")
    return int(card)


def _check_seat(name: str, seat: int) -> int:
    if isinstance(seat, bool) or not 0 <= int(seat) < N_SEATS:
        raise ReferenceRuleError(f"{name} must be a seat 0..3, got {seat!r}")
    return int(seat)


class ReferenceGame:
    """One ``episode="hand"`` of Madiao: declarations, eight tricks and the settlement.

    ``payments`` collects every settlement line of the episode (four lowest and melds as they
    happen, the play's lines at the end of the hand).
    """

    def __init__(
        self, stake: float = 1.0, max_redeals: int | None = None, face_up_discard: bool = False
    ) -> None:
        self.stake = float(stake)
        self.max_redeals = max_redeals
        self.face_up_discard = bool(face_up_discard)
        self.payments: list[Payment] = []
        self.redeals = 0
        self.phase = PHASE_NEEDS_DEAL
        self.needs_deal_reason: str | None = "start"
        self.banker: int | None = None
        self.first: int | None = None
        self.hands: list[set[int]] = [set() for _ in range(N_SEATS)]
        self.dealt_hands: list[frozenset[int]] = []
        self.stock: list[int] = []
        self.tricks: list[list[Play]] = []
        self.winners: list[int] = []
        self.face_up_discards: list[int] = []
        self.redeal_askers: list[int] = []
        self.to_act: int | None = None
        self.meld: tuple[int, int] | None = None
        self._stays_banker = False

    # ---- dealing -----------------------------------------------------------------------------

    def deal_from_deck(self, deck: Sequence[int | str], banker: int) -> None:
        """Deal a 40-card deck (top to bottom) through the cut and the batch-then-singles deal."""
        cards = [_as_card(card) for card in deck]
        if len(cards) != N_CARDS or len(set(cards)) != N_CARDS:
            raise ReferenceRuleError("a deck must list each of the 40 cards once")
        banker = _check_seat("banker", banker)
        hands, stock, first = deal_deck(cards, banker)
        self.set_deal(hands, stock, banker, first)

    def set_deal(
        self,
        hands: Sequence[Sequence[int | str]],
        stock: Sequence[int | str],
        banker: int,
        first: int,
    ) -> None:
        """Set a deal exactly (hands by seat, stock upcard first), then run the automatic
        declarations. Allowed at the start and whenever the phase is ``"needs_deal"``."""
        if self.phase != PHASE_NEEDS_DEAL:
            raise ReferenceRuleError(f"a new deal is not due in phase {self.phase!r}")
        banker = _check_seat("banker", banker)
        first = _check_seat("first", first)
        if self.needs_deal_reason in ("redeal", "new_hand") and banker != self.banker:
            raise ReferenceRuleError(
                f"the next deal's banker must be seat {self.banker} ({self.needs_deal_reason}), got {banker}"
            )
        new_hands = [{_as_card(card) for card in hand} for hand in hands]
        new_stock = [_as_card(card) for card in stock]
        if len(new_hands) != N_SEATS or any(len(hand) != HAND_SIZE for hand in new_hands):
            raise ReferenceRuleError("a deal has four hands of 8 distinct cards")
        if len(new_stock) != STOCK_SIZE or len(set().union(*new_hands, new_stock)) != N_CARDS:
            raise ReferenceRuleError("hands and the 8-card stock must hold each of the 40 cards once")
        self.banker, self.first = banker, first
        self.hands = new_hands
        self.dealt_hands = [frozenset(hand) for hand in new_hands]
        self.stock = new_stock
        self.tricks, self.winners, self.face_up_discards = [], [], []
        self.needs_deal_reason = None
        self._declare()

    def _declare(self) -> None:
        """ "Declarations, before the first trick (in this order)": melds, four lowest, redeal."""
        meld = meld_winner(self.hands, self.first)
        if meld is not None:
            # "Melds win the hand at once; the holder becomes the next banker."
            self.meld = meld
            self.payments += meld_payments(self.hands, *meld)
            self.phase, self.to_act = PHASE_OVER, None
            return
        holder = four_lowest_holder(self.hands)
        if holder is not None:
            # "the cards are dealt again and the banker is drawn again"
            self.payments += four_lowest_payments(holder)
            self.phase, self.to_act = PHASE_NEEDS_DEAL, None
            self.needs_deal_reason = "four_lowest"
            return
        redeals_allowed = self.max_redeals is None or self.redeals < self.max_redeals
        self.redeal_askers = [
            seat for seat in deal_order(self.first) if redeals_allowed and may_force_redeal(self.hands[seat])
        ]
        if self.redeal_askers:
            self.phase, self.to_act = PHASE_REDEAL, self.redeal_askers[0]
        else:
            self._start_play()

    def _start_play(self) -> None:
        """ "The first player dealt leads the first trick"."""
        self.phase, self.to_act = PHASE_PLAY, self.first
        self.tricks = [[]]

    # ---- acting ------------------------------------------------------------------------------

    def legal_actions(self) -> set[int]:
        """The legal action ids for the seat to act (empty when nobody acts)."""
        if self.phase == PHASE_REDEAL:
            return {ACTION_REDEAL, ACTION_PASS}
        if self.phase != PHASE_PLAY:
            return set()
        hand = self.hands[self.to_act]
        trick = self.tricks[-1]
        if not trick:
            # "The leader plays face up, any card."
            return {ACTION_PLAY + card for card in hand}
        # "Each follower ... either captures ... or sloughs one card face down (any card)".
        legal = {ACTION_SLOUGH + card for card in hand}
        if self._barred_from_capturing(self.to_act):
            # "they may only slough"
            return legal
        for card in hand:
            if captures(card, trick) or self.face_up_discard:
                legal.add(ACTION_PLAY + card)
        return legal

    def _barred_from_capturing(self, seat: int) -> bool:
        """ "Last trick: a player who won none of the first seven tricks cannot capture in the
        eighth; they may only slough"."""
        return len(self.tricks) == N_TRICKS and seat not in self.winners

    def step(self, action: int) -> None:
        """Apply one action of the seat to act; raises ReferenceRuleError when it is illegal."""
        legal = self.legal_actions()
        if isinstance(action, bool) or not hasattr(action, "__index__") or int(action) not in legal:
            raise ReferenceRuleError(
                f"action {action!r} is not legal in phase {self.phase!r} for seat {self.to_act}; "
                f"legal: {sorted(legal)}"
            )
        if self.phase == PHASE_REDEAL:
            self._decide_redeal(int(action))
        else:
            self._play(int(action))

    def _decide_redeal(self, action: int) -> None:
        """ "action 80 forces a redeal (same banker, new random deal ...), 81 passes. If all
        eligible pass, play starts with the first seat dealt leading"."""
        if action == ACTION_REDEAL:
            self.redeals += 1
            self.phase, self.to_act = PHASE_NEEDS_DEAL, None
            self.needs_deal_reason = "redeal"
            return
        self.redeal_askers.pop(0)
        if self.redeal_askers:
            self.to_act = self.redeal_askers[0]
        else:
            self._start_play()

    def _play(self, action: int) -> None:
        seat = self.to_act
        face_up = action < ACTION_SLOUGH
        card = action - ACTION_PLAY if face_up else action - ACTION_SLOUGH
        trick = self.tricks[-1]
        if face_up and trick and not captures(card, trick):
            self.face_up_discards.append(seat)
        trick.append(Play(seat, card, face_up))
        self.hands[seat].discard(card)
        if len(trick) < N_SEATS:
            self.to_act = (seat + 1) % N_SEATS
            return
        # "the winner of a trick leads the next"
        winner = trick_winner(trick)
        self.winners.append(winner)
        if len(self.winners) < N_TRICKS:
            self.tricks.append([])
            self.to_act = winner
            return
        self.phase, self.to_act = PHASE_OVER, None
        record = self.record()
        self.payments += settle_hand(record)
        self._stays_banker = won_two_with_hundred_myriad(record, self.banker)

    # ---- results -----------------------------------------------------------------------------

    def record(self) -> HandRecord:
        return HandRecord(
            banker=self.banker,
            dealt_hands=tuple(self.dealt_hands),
            stock=tuple(self.stock),
            tricks=tuple(tuple(trick) for trick in self.tricks),
            winners=tuple(self.winners),
            face_up_discards=tuple(self.face_up_discards),
        )

    def tricks_won(self) -> list[int]:
        return [self.winners.count(seat) for seat in range(N_SEATS)]

    def settlement(self) -> list[Payment]:
        """Every settlement line of the episode so far, in stakes (before the ``stake`` factor)."""
        return list(self.payments)

    def payoffs(self) -> list[float]:
        """Net result by seat, in stakes times the ``stake`` option."""
        return payoffs_of(self.payments, self.stake)

    def next_banker(self) -> int | None:
        """ "Next hand's banker is b+1", except: a meld's holder "becomes the next banker"; a
        banker who wins a trick with 100T and makes exactly two tricks "stays banker"; after four
        lowest "the banker is drawn again" (None: random)."""
        if self.phase != PHASE_OVER:
            return None
        if self.meld is not None:
            return self.meld[0]
        if self._stays_banker:
            return self.banker
        return (self.banker + 1) % N_SEATS

    def new_hand(self) -> None:
        """Start the next hand of the same episode after a meld ended one at the deal (the env
        deals again so that an episode has a decision); the payments so far are kept."""
        if self.phase != PHASE_OVER:
            raise ReferenceRuleError(f"the hand is not over (phase {self.phase!r})")
        self.banker = self.next_banker()
        self.meld, self._stays_banker, self.redeals = None, False, 0
        self.phase, self.needs_deal_reason = PHASE_NEEDS_DEAL, "new_hand"

    def played(self) -> list[Play]:
        return [play for trick in self.tricks for play in trick]


__all__ = [
    "N_ACTIONS",
    "PHASE_NEEDS_DEAL",
    "PHASE_OVER",
    "PHASE_PLAY",
    "PHASE_REDEAL",
    "HandRecord",
    "Payment",
    "Play",
    "ReferenceGame",
    "ReferenceRuleError",
    "deal_deck",
    "first_seat_from_cut",
    "meld_stakes",
    "settle_hand",
]
