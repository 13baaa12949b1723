"""Mao's rules in plain Python (no Numba): the slow, obviously-correct twin of ``mao_env.core``.

A :class:`RefGame` holds the game as lists and ints, built from one game of the core's state
arrays; :meth:`RefGame.apply` plays one action id and :meth:`RefGame.legal` gives the physical or
rules mask. Both call modes are here: the Mao Master calls every fault at ``END_TURN``
(:meth:`RefGame.judge`); with ``options["calls"] == "players"`` a call window follows each turn
(:meth:`RefGame.call`, :meth:`RefGame.settle`; ``docs/mao-rules.md``, "Players' calls variant").
Each call is ``(call, phrase, cards, rule, player, caller)``: ``player`` takes the cards, ``caller``
is -1 for the Master; a bad call is ``("bad call", reason, cards, -1, caller, caller)``.
``tests/mao/test_mao_reference.py`` plays random games with both and compares everything after every
step (hands, stack and pile order, turn state, calls), secret rules included. The
random stream is the same SplitMix64 (``cardgame_core.rng``), so reshuffles agree card for card.

The Mao Master's judgement of a turn's phrases is written once, here, on phrase bit sets
(:func:`base_card_phrases`, :func:`judge_phrases`, :func:`mao_is_due`, :func:`missing_phrases`,
:func:`talking_phrases`): :meth:`RefGame.requirements` and :meth:`RefGame.judge` use it, and so
does the Bayesian player's judge over many hypothetical rule sets
(``madiao_mao.agents.mao.beliefs.judge_turn``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from cardgame_core.rng import random_below_py, shuffle_prefix_py
from mao_env import cards
from mao_env import rules as rule_library

RANK = [int(r) for r in cards.CARD_RANK]
SUIT = [int(s) for s in cards.CARD_SUIT]
PRED = [int(m) for m in rule_library.PREDICATE_MASKS]
TABLE = [tuple(int(x) for x in row) for row in rule_library.RULE_TABLE]
RED = int(cards.RED_MASK)


def _in(card: int, pred: int) -> bool:
    return bool((PRED[pred] >> card) & 1)


def _bits(phrases) -> int:
    return sum(1 << p for p in phrases)


def _phrases(bits: int) -> list[int]:
    return [p for p in range(cards.N_PHRASES) if (bits >> p) & 1]


_MAO_BIT = 1 << cards.MAO


# ---- the Mao Master's judgement of a turn's phrases (shared with madiao_mao.agents.mao.beliefs) ------------
def base_card_phrases(card: int) -> int:
    """Bit set of the phrases the base rules require for a good play of ``card``: "Have a nice
    day" for a seven, the card's name for a spade, "Badger" for the joker and the nine of diamonds."""
    bits = 0
    if RANK[card] == cards.SEVEN:
        bits |= 1 << cards.NICE_DAY
    if card != cards.JOKER and SUIT[card] == cards.SPADES:
        bits |= 1 << cards.CARD_NAME
    if card in (cards.JOKER, cards.NINE_OF_DIAMONDS):
        bits |= 1 << cards.BADGER
    return bits


class TurnPhrases(NamedTuple):
    """Phrase bit sets of a judged turn (Mao aside: see :func:`mao_is_due`)."""

    required: int  # must be said (a missing one is "failure to say")
    excused: int  # belong to a bad card: not required, not talking either
    allowed: int  # optional (the suit named with a Jack)
    seven_due: bool  # the seven chain's phrase is required ("penalty card" / "thank you")


def judge_phrases(
    *,
    played: int,
    valid: bool,
    card_phrases: int,
    first_suit: int,
    took_seven: int,
    pending_seven: int,
    thank_you: bool,
    drew: bool,
    draw_phrases: int,
    hand_after: int | None,
) -> TurnPhrases:
    """Which phrases a turn requires, excuses and allows. ``card_phrases``: what a good play of
    ``played`` calls for (:func:`base_card_phrases` plus the speech rules); ``draw_phrases``: what
    the speech rules ask of a seat that drew (who may also say "Pass": allowed); ``hand_after``:
    cards held at the end of the turn (``None``: unknown, then "Last card" is neither required nor
    excused)."""
    required = excused = allowed = 0
    if played >= 0:
        jack_suit = (
            1 << (cards.SUIT_PHRASE_0 + first_suit) if RANK[played] == cards.JACK and first_suit >= 0 else 0
        )
        if valid:
            required |= card_phrases
            allowed |= jack_suit
        else:
            excused |= card_phrases | jack_suit
            # The bad card goes back to the hand (then a penalty card follows), so the hand never
            # drops to one card: "Last card" is not due, but saying it is not talking either.
            if hand_after == 1:
                excused |= 1 << cards.LAST_CARD
    seven_due = bool(took_seven or (pending_seven and not valid))
    if seven_due:
        required |= 1 << (cards.THANK_YOU if thank_you else cards.PENALTY_CARD)
    if drew:
        required |= draw_phrases
        allowed |= 1 << cards.PASS  # "pass" after a draw is not talking
    if hand_after == 1 and (played < 0 or valid):
        required |= 1 << cards.LAST_CARD
    return TurnPhrases(required, excused, allowed, seven_due)


def missing_phrases(required, said):
    """Required phrases not said, Mao aside (each one is a "failure to say"). Bit sets: Python
    ints, or numpy int64 arrays of them (one per hypothesis)."""
    return required & ~said & ~_MAO_BIT


def talking_phrases(said, required, excused, allowed):
    """Phrases said that nothing required, excused or allowed, Mao aside (each one is "talking"
    when the talking rule is on). Bit sets as in :func:`missing_phrases`."""
    return said & ~required & ~excused & ~allowed & ~_MAO_BIT


def mao_is_due(*, valid, hand_after, required, allowed, said, talking: bool):
    """ "Mao" is due only for a flawless winning turn: a good card that empties the hand, every
    required phrase said and (with the talking rule) nothing extra. One turn (a bool and ints), or
    elementwise over numpy arrays of them (one per hypothesis)."""
    flawless = missing_phrases(required, said) == 0
    if talking:
        flawless = flawless & ((said & ~required & ~allowed & ~_MAO_BIT) == 0)
    return valid & flawless & (hand_after == 0)


@dataclass
class RefGame:
    n_players: int
    hands: list[list[int]]  # counts per card type, per seat
    stack: list[int]  # bottom .. top (top is drawn next)
    pile: list[int]  # bottom .. top
    rng: int
    rules: list[tuple[int, int]]  # (rule id, author) in slot order
    queue: list[int]
    options: dict
    current: int = 0
    direction: int = 1
    named_suit: int = -1
    pending_seven: int = 0
    played: int = -1
    drew: bool = False
    took_seven: int = 0
    said: set = field(default_factory=set)
    first_suit: int = -1
    sub_actions: int = 0
    phase: str = "start"
    round: int = 0
    queue_next: int = 0
    done: bool = False
    next_seat: int = -1
    calls: list = field(default_factory=list)
    last_cards: list = field(default_factory=list)
    round_won: int = -1
    # "Nothing left to take": whether the turn under way started with no card to take, the turns
    # in a row that started so and left no card on the pile, and whether the last action blocked
    # the round (that many turns as there are seats).
    starved: bool = False
    stuck_turns: int = 0
    round_blocked: bool = False
    # The call window (calls="players"): the seat whose turn is judged, the faults it committed
    # ({reason: the Master's calls}), the reasons called so far and those called correctly.
    mover: int = -1
    valid: bool = False
    offences: dict = field(default_factory=dict)
    called: set = field(default_factory=set)
    correct: set = field(default_factory=set)
    owed: list = field(default_factory=list)  # penalty cards each seat takes at the settlement
    # Per seat, the rules the Mao Master refused when that seat proposed them (already in force).
    refused: list = field(default_factory=lambda: [set() for _ in range(cards.MAX_PLAYERS)])

    # ---- cards ---------------------------------------------------------------------------
    def draw(self, seat: int) -> bool:
        if not self.stack:
            if len(self.pile) <= 1:
                return False
            moved = self.pile[:-1]
            self.pile = self.pile[-1:]
            self.rng = shuffle_prefix_py(moved, len(moved), self.rng)
            self.stack = moved
        self.hands[seat][self.stack.pop()] += 1
        return True

    def draw_n(self, seat: int, n: int) -> int:
        return sum(1 for _ in range(n) if self.draw(seat))

    def deal(self, starter: int) -> None:
        deck = []
        for _ in range(self.options["n_decks"]):
            deck += [*range(cards.N_CARD_TYPES), cards.JOKER]
        self.rng = shuffle_prefix_py(deck, len(deck), self.rng)
        self.hands = [[0] * cards.N_CARD_TYPES for _ in range(len(self.hands))]
        self.stack, self.pile = deck, []
        for seat in range(self.n_players):
            self.draw_n(seat, cards.HAND_SIZE)
        self.pile = [self.stack.pop()]
        self.direction, self.named_suit, self.pending_seven = 1, -1, 0
        self.stuck_turns = 0
        self.start_turn(starter)

    def nothing_to_take(self) -> bool:
        return not self.stack and len(self.pile) <= 1

    def start_turn(self, seat: int) -> None:
        self.starved = self.nothing_to_take()
        self.current, self.phase, self.played, self.drew, self.took_seven = seat, "start", -1, False, 0
        self.said, self.first_suit, self.sub_actions = set(), -1, 0

    # ---- rules ---------------------------------------------------------------------------
    def validity(self, card: int) -> tuple[bool, int]:
        top = self.pile[-1]
        if self.pending_seven and RANK[card] != 7:
            return False, -1
        suit_needed = self.named_suit if self.named_suit >= 0 else SUIT[top]
        suit_match = SUIT[card] == suit_needed
        rank_match = RANK[card] == RANK[top]
        wild = False
        order_rules = []  # (rule, satisfied) of the active RANK_ORDER rules
        forbidding = []
        for rule, _ in self.rules:
            family, kind, a, b, param = TABLE[rule]
            if family != rule_library.VALIDITY:
                continue
            if kind == rule_library.WILD:
                wild = wild or _in(card, a)
            elif kind == rule_library.RANK_ORDER:
                wanted = RANK[card] > RANK[top] if param > 0 else RANK[card] < RANK[top]
                order_rules.append((rule, wanted))
            elif kind == rule_library.FORBID_ON:
                if _in(card, a) and _in(top, b):
                    forbidding.append(rule)
            elif kind == rule_library.ONLY_AFTER:
                if _in(top, b) and not _in(card, a):
                    forbidding.append(rule)
            elif kind == rule_library.ALTERNATE_COLOUR:
                same_colour = bool((RED >> card) & 1) == bool((RED >> top) & 1)
                if not suit_match and same_colour:
                    forbidding.append(rule)
        rank_clause = all(ok for _, ok in order_rules) if order_rules else rank_match
        if not (suit_match or rank_clause or wild):
            if rank_match:
                return False, next(rule for rule, ok in order_rules if not ok)
            return False, -1
        if forbidding:
            return False, forbidding[0]
        return True, -1

    def card_phrases(self, card: int) -> dict[int, int]:
        """Phrase -> rule (-1 base) required by a valid play of ``card``."""
        top = self.pile[-1]
        need: dict[int, int] = dict.fromkeys(_phrases(base_card_phrases(card)), -1)
        for rule, _ in self.rules:
            family, kind, a, b, param = TABLE[rule]
            if family != rule_library.SPEECH:
                continue
            hits = (kind == rule_library.SAY_ON_PLAY and _in(card, a) and _in(card, b)) or (
                kind == rule_library.SAY_ON_TOP and _in(top, a) and _in(top, b)
            )
            if hits:
                need.setdefault(param, rule)
        return need

    def draw_phrases(self) -> dict[int, int]:
        """Phrase -> rule required by the speech rules of a seat that drew a card."""
        need: dict[int, int] = {}
        for rule, _ in self.rules:
            family, kind, _a, _b, param = TABLE[rule]
            if family == rule_library.SPEECH and kind == rule_library.SAY_ON_DRAW:
                need.setdefault(param, rule)
        return need

    def requirements(self):
        """(valid, bad_rule, required {phrase: rule}, excused set, allowed set), judged by
        :func:`judge_phrases` and :func:`mao_is_due`; the rule behind each required phrase is the
        first source's that asks for it: the card, then the seven chain (a base rule), then drawing."""
        valid, bad_rule = self.validity(self.played) if self.played >= 0 else (False, -1)
        card_rules = self.card_phrases(self.played) if self.played >= 0 else {}
        draw_rules = self.draw_phrases() if self.drew else {}
        hand_after = sum(self.hands[self.current])
        verdict = judge_phrases(
            played=self.played,
            valid=valid,
            card_phrases=_bits(card_rules),
            first_suit=self.first_suit,
            took_seven=self.took_seven,
            pending_seven=self.pending_seven,
            thank_you=self.options["thank_you"],
            drew=self.drew,
            draw_phrases=_bits(draw_rules),
            hand_after=hand_after,
        )
        required_bits = verdict.required
        if mao_is_due(
            valid=valid,
            hand_after=hand_after,
            required=required_bits,
            allowed=verdict.allowed,
            said=_bits(self.said),
            talking=self.options["talking"],
        ):
            required_bits |= _MAO_BIT
        seven_rules = {cards.THANK_YOU if self.options["thank_you"] else cards.PENALTY_CARD: -1}
        required: dict[int, int] = {}
        for source in (card_rules if valid else {}, seven_rules if verdict.seven_due else {}, draw_rules):
            for phrase, rule in source.items():
                if (required_bits >> phrase) & 1:
                    required.setdefault(phrase, rule)
        for phrase in _phrases(required_bits):
            required.setdefault(phrase, -1)
        return valid, bad_rule, required, set(_phrases(verdict.excused)), set(_phrases(verdict.allowed))

    # ---- actions -------------------------------------------------------------------------
    def legal(self, by_rules: bool) -> list[int]:
        seat = self.current
        if self.phase == "start":
            held = [c for c in range(cards.N_CARD_TYPES) if self.hands[seat][c] > 0]
            if by_rules:
                held = [c for c in held if self.validity(c)[0]]
            return [*held, cards.DRAW]
        if self.phase == "speak":
            if self.sub_actions >= self.options["max_sub_actions"] - 1 or cards.MAO in self.said:
                return [cards.END_TURN]
            if not by_rules:
                return [cards.SAY_0 + p for p in range(cards.N_PHRASES) if p not in self.said] + [
                    cards.END_TURN
                ]
            valid, _, required, _, _ = self.requirements()
            missing = set(required) - self.said
            others = missing - {cards.MAO}
            sayable = set(others) if others else set(missing)
            if valid and RANK[self.played] == cards.JACK and self.first_suit < 0:
                sayable |= {cards.SUIT_PHRASE_0 + s for s in range(4)}
            if self.drew and cards.PASS not in self.said:
                sayable.add(cards.PASS)
            return [cards.SAY_0 + p for p in sorted(sayable)] + ([cards.END_TURN] if not missing else [])
        if self.phase == "call":
            reasons = self.offences if by_rules else range(cards.N_CALL_REASONS)
            calls = [cards.CALL_0 + r for r in sorted(reasons) if r not in self.called]
            return [*calls, cards.NO_CALL, cards.POINT_OF_ORDER]
        if self.phase == "choose":
            # Physical: every rule the seat does not know to be in force (its own, those refused to
            # it); by the rules: the rules not in force.
            if by_rules:
                known = {r for r, _ in self.rules}
            else:
                known = {r for r, author in self.rules if author == seat} | self.refused[seat]
            return [cards.CHOOSE_RULE_0 + r for r in range(rule_library.N_RULES) if r not in known]
        return []

    def apply(self, action: int) -> None:
        self.calls, self.last_cards, self.round_won = [], [0] * self.n_players, -1
        self.round_blocked = False
        self.sub_actions += 1
        seat = self.current
        if self.phase == "start":
            if action < cards.DRAW:
                self.hands[seat][action] -= 1
                self.played, self.phase = action, "speak"
            elif self.pending_seven:
                chain, self.pending_seven = self.pending_seven, 0
                self.took_seven = chain
                self.last_cards[seat] += self.draw_n(seat, chain)
                if self.options["seven_turn_ends"]:
                    self.phase = "speak"
            else:
                self.draw(seat)
                self.drew, self.phase = True, "speak"
        elif self.phase == "speak":
            if action < cards.END_TURN:
                phrase = action - cards.SAY_0
                self.said.add(phrase)
                if cards.SUIT_PHRASE_0 <= phrase < cards.SUIT_PHRASE_0 + 4 and self.first_suit < 0:
                    self.first_suit = phrase - cards.SUIT_PHRASE_0
            else:
                self.judge()
        elif self.phase == "call":
            if action < cards.NO_CALL:
                self.call(action - cards.CALL_0)
            elif action == cards.NO_CALL and (seat + 1) % self.n_players != self.mover:
                self.current = (seat + 1) % self.n_players
            else:  # the last seat passed, or a point of order: the calls are settled now
                self.settle()
        elif self.phase == "choose":
            rule = action - cards.CHOOSE_RULE_0
            if any(r == rule for r, _ in self.rules):
                self.refused[seat].add(rule)  # "That rule is in force": the seat proposes again
            else:
                self.rules.append((rule, seat))
                self.next_round(seat)

    # ---- the judgement of a turn and the calls on it ---------------------------------------
    def faults(self) -> tuple[bool, dict[int, list[tuple[str, int, int, int]]]]:
        """The truth of the turn just ended, as the Mao Master sees it: (valid, {call reason:
        the Master's calls for it, each ``(call, phrase, cards, rule)``}), reasons in the order the
        Master announces them (bad card, failures, talking, then the two Mao calls)."""
        valid, bad_rule, required, excused, allowed = self.requirements()
        played = self.played
        found: dict[int, list[tuple[str, int, int, int]]] = {}
        if played >= 0 and not valid:
            found[cards.CALL_REASON_BAD_CARD] = [("bad card", -1, 1, bad_rule)]
        said = _bits(self.said)
        for p in _phrases(missing_phrases(_bits(required), said)):
            found[p] = [("failure to say", p, 1, required[p])]
        if self.options["talking"]:
            extra = _phrases(talking_phrases(said, _bits(required), _bits(excused), _bits(allowed)))
            if extra:
                found[cards.CALL_REASON_TALKING] = [("talking", p, 1, -1) for p in extra]
        if cards.MAO in self.said and cards.MAO not in required:
            found[cards.CALL_REASON_MAO] = [("mao", cards.MAO, cards.MAO_PENALTY_CARDS, -1)]
        elif cards.MAO in required and cards.MAO not in self.said:
            found[cards.MAO] = [("failure to say", cards.MAO, self.options["forgotten_mao_cards"], -1)]
        return valid, found

    def bad_call_cards(self, reason: int) -> int:
        """What a bad call on ``reason`` costs the caller: the card(s) it meant to give."""
        if reason == cards.CALL_REASON_MAO:
            return cards.MAO_PENALTY_CARDS
        if reason == cards.MAO:
            return self.options["forgotten_mao_cards"]
        return 1

    def judge(self) -> None:
        """``END_TURN``: the Master calls every fault now, or (players' calls) the window opens."""
        self.mover = self.current
        self.valid, self.offences = self.faults()
        if self.options["calls"] == "players":
            self.called, self.correct, self.owed = set(), set(), [0] * self.n_players
            self.phase = "call"
            self.current = (self.mover + 1) % self.n_players
            return
        self.correct = set(self.offences)
        self.owed = [0] * self.n_players
        for entries in self.offences.values():
            for entry in entries:
                self.calls.append((*entry, self.mover, -1))
                self.owed[self.mover] += entry[2]
        self.settle()

    def call(self, reason: int) -> None:
        """The acting seat calls ``reason`` on the mover; the verdict is announced now, the cards
        are taken when the turn is settled (:meth:`settle`)."""
        caller = self.current
        self.called.add(reason)
        if reason in self.offences:
            self.correct.add(reason)
            for entry in self.offences[reason]:
                self.calls.append((*entry, self.mover, caller))
                self.owed[self.mover] += entry[2]
        else:
            cost = self.bad_call_cards(reason)
            self.calls.append(("bad call", reason, cost, -1, caller, caller))
            self.owed[caller] += cost

    def settle(self) -> None:
        """The turn's outcome from the faults that were called (``self.correct``): a called bad
        card goes back, an uncalled one stays and acts as a good card. The mover takes the seven
        chain and the penalties of the correct calls (as from the Master), then each bad caller,
        in window order, the cards of its bad calls."""
        seat, played = self.mover, self.played
        self.current = seat
        bad_card_called = cards.CALL_REASON_BAD_CARD in self.correct
        kept = played >= 0 and not bad_card_called
        if played >= 0 and not kept:
            self.hands[seat][played] += 1
        chain = 0
        if self.pending_seven and not (kept and RANK[played] == cards.SEVEN):
            chain, self.pending_seven = self.pending_seven, 0
        skips, reverse, again, forced = 0, False, False, 0
        if kept:
            self.pile.append(played)
            self.named_suit = self.first_suit if RANK[played] == cards.JACK and self.first_suit >= 0 else -1
            if RANK[played] == cards.SEVEN:
                self.pending_seven += 1
            elif RANK[played] == cards.ACE:
                skips += 1
            elif RANK[played] == cards.EIGHT:
                reverse = not reverse
            for rule, _ in self.rules:
                family, kind, a, b, param = TABLE[rule]
                if family != rule_library.DYNAMICS or not (_in(played, a) and _in(played, b)):
                    continue
                if kind == rule_library.SKIP:
                    skips += 1
                elif kind == rule_library.REVERSE:
                    reverse = not reverse
                elif kind == rule_library.DRAW:
                    forced += param
                else:
                    again = True
        self.last_cards[seat] += self.draw_n(seat, chain + self.owed[seat])
        for k in range(1, self.n_players):
            caller = (seat + k) % self.n_players
            self.last_cards[caller] += self.draw_n(caller, self.owed[caller])
        # A win: "Mao" said, the card stayed, the hand empty and no fault called on the turn (with
        # the Master every fault is called, so that is exactly a flawless winning turn).
        won = cards.MAO in self.said and kept and not self.correct and sum(self.hands[seat]) == 0
        if reverse:
            self.direction = -self.direction
        if again:
            next_seat = seat
        else:
            next_seat = (seat + self.direction * (1 + skips)) % self.n_players
            self.draw_n(next_seat, forced)
        self.offences, self.called, self.correct, self.owed = {}, set(), set(), [0] * self.n_players
        self.stuck_turns = self.stuck_turns + 1 if self.starved and not kept else 0
        if won:
            self.next_seat = next_seat
            self.round_over(seat)
        elif self.stuck_turns >= self.n_players:
            self.round_block()
        else:
            self.start_turn(next_seat)

    def round_block(self) -> None:
        """Every seat in turn order ended its turn with no card on the pile while nothing could
        be taken: no winner, no new rule; everyone is dealt again, or the episode ends."""
        self.round += 1
        self.round_blocked, self.stuck_turns = True, 0
        if self.round >= self.options["n_rounds"]:
            self.phase, self.done, self.played = "over", True, -1
            return
        self.deal(self.round % self.n_players)

    def round_over(self, winner: int) -> None:
        self.round += 1
        self.round_won = winner
        if self.round >= self.options["n_rounds"]:
            self.phase, self.done = "over", True
            return
        if len(self.rules) < min(rule_library.MAX_ACTIVE_RULES, rule_library.N_RULES):
            mode = self.options["rule_choice"]
            active = [r for r, _ in self.rules]
            if mode == "agent":
                self.start_turn(winner)
                self.phase = "choose"
                return
            if mode == "sampled":
                free = [r for r in range(rule_library.N_RULES) if r not in active]
                self.rng, pick = random_below_py(self.rng, len(free))
                self.rules.append((free[pick], winner))
            elif self.queue_next < len(self.queue):
                rule = self.queue[self.queue_next]
                self.queue_next += 1
                if rule not in active:
                    self.rules.append((rule, winner))
        self.next_round(winner)

    def next_round(self, winner: int) -> None:
        if self.options["cambridge"]:
            self.draw_n(winner, cards.HAND_SIZE)
            self.start_turn(self.next_seat)
        else:
            self.deal(self.round % self.n_players)
