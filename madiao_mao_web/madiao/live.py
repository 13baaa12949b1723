"""A live Madiao hand or match (``MadiaoGame``) and the pieces of its views that replays share."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from madiao_env import cards as madiao_cards
from madiao_env import payments as madiao_payments
from madiao_env import reference as madiao_reference
from madiao_mao_web.games import (
    LOG_LENGTH,
    LiveGame,
    agent_loading,
    bool_param,
    seat_and_names,
    seed_param,
)
from madiao_mao_web.madiao.behind import behind, hand_context

MADIAO_DEFAULT_AGENT = "heuristic"
REDEAL_EXPLANATION = (
    "You hold five or more cards of one suit, so you may ask for a redeal: every hand is dealt "
    "again and the banker stays. Pass to play the cards you hold."
)


def madiao_card(name: str) -> dict[str, str]:
    card = madiao_cards.CARD_ID[name]
    return {
        "name": name,
        "chinese": madiao_cards.CARD_CHINESE[card],
        "suit": madiao_cards.SUIT_LETTERS[int(madiao_cards.CARD_SUIT[card])],
    }


def madiao_sorted(names: Sequence[str]) -> list[str]:
    """Grouped by suit, strongest first within a suit (as the terminal game shows a hand)."""
    return sorted(
        names,
        key=lambda n: (madiao_cards.CARD_SUIT[madiao_cards.CARD_ID[n]], -madiao_cards.CARD_ID[n]),
    )


def madiao_role(seat: int, banker: int) -> str:
    return ("banker", "dealer", "opposite", "shuffler")[(seat - banker) % 4]


def _card_words(name: str) -> str:
    return f"{madiao_cards.CARD_CHINESE[madiao_cards.CARD_ID[name]]} {name}"


def madiao_trick_view(plays: Sequence[tuple[int, str, bool]], seat: int | None) -> dict[str, Any]:
    """A trick as a seat sees it: the plays (another seat's face-down card a back), the suit led
    and the seat whose card is winning it (best face-up card of the suit led, no trumps)."""
    if not plays:
        return {"plays": [], "led_suit": None, "winning_seat": None}
    trick = [madiao_reference.Play(s, madiao_cards.CARD_ID[name], up) for s, name, up in plays]
    winning = madiao_reference.trick_winner(trick)
    led = madiao_cards.SUIT_NAMES[int(madiao_cards.CARD_SUIT[trick[0].card])]
    return {
        "plays": [
            {
                "seat": s,
                "face_up": bool(up),
                # Another seat's face-down card is a back: no name, no Chinese name.
                "card": madiao_card(name) if up or seat is None or s == seat else None,
                "winning": s == winning,
            }
            for s, name, up in plays
        ],
        "led_suit": led,
        "winning_seat": winning,
    }


def madiao_settlement_view(
    lines: Sequence[dict[str, Any]],
    payoffs: Sequence[float],
    banker: int,
    hand: dict[str, Any] | None = None,
) -> dict:
    """A settlement by rule: each rule's payments netted between each two seats (the env may
    settle a rule both ways between two seats: one payment says who pays whom on balance; lines
    that cancel out leave none and mark the rule ``cancelled``), in the order the env settled
    them (the rule's spoken name and explanation are in :func:`rule_texts`), and every seat's
    payoff. Given the ``hand`` (:func:`madiao_mao_web.madiao.behind.hand_context`), each payment
    also says what is ``behind`` it: the card or trick, where the hand determines one."""
    flows: dict[str, dict[tuple[int, int], float]] = {}
    for line in lines:
        pairs = flows.setdefault(line["rule"], {})
        payer, payee = int(line["payer"]), int(line["payee"])
        pairs[(payer, payee)] = pairs.get((payer, payee), 0.0) + float(line["stakes"])
    rules = []
    for rule, pairs in flows.items():
        payments, cancelled = [], False
        for low, high in dict.fromkeys(tuple(sorted(pair)) for pair in pairs):
            net = pairs.get((low, high), 0.0) - pairs.get((high, low), 0.0)
            if net == 0:
                cancelled = True
                continue
            payer, payee = (low, high) if net > 0 else (high, low)
            payment = {"payer": payer, "payee": payee, "stakes": abs(net)}
            if hand is not None:
                payment["behind"] = behind(rule, payer, payee, hand)
            payments.append(payment)
        rules.append({"rule": rule, "payments": payments, "cancelled": cancelled})
    return {"banker": banker, "rules": rules, "payoffs": [float(p) for p in payoffs]}


def madiao_deal_fingerprint(event: dict[str, Any]) -> str:
    """A fingerprint of a deal event's cards: every hand (in seat order) and the stock."""
    cards = json.dumps([[sorted(hand) for hand in event["hands"]], list(event["stock"])])
    return "madiao:" + hashlib.sha256(cards.encode()).hexdigest()[:32]


def rule_texts() -> dict[str, Any]:
    """Madiao's payment rules in words, by name (settlements name them by rule)."""
    return {
        "payments": [
            {"rule": rule, "name": name, "explanation": explanation}
            for rule, name, explanation in zip(
                madiao_payments.RULE_NAMES,
                madiao_payments.SPOKEN_NAMES,
                madiao_payments.EXPLANATIONS,
                strict=True,
            )
        ]
    }


class _EpisodeResult:
    """What ``madiao_env.records.make_record`` reads of the game played."""

    def __init__(self, returns: Sequence[float], events: list[dict], seats: list[str]) -> None:
        self.returns = np.asarray(returns, dtype=np.float64)
        self.events = events
        self.seats = seats


class MadiaoGame(LiveGame):
    """A Madiao hand, or a match (``match=True``: every seat banker once, running totals): the
    person in ``seat`` and agents in the other three, or agents in all four (``watch=True``).

    Its page: ``/play/madiao?seat=0&agents=heuristic&seed=7&match=1`` (``seat`` 0..3; ``agents``
    one registered name for the three other seats, or three comma-separated); ``/watch/madiao``
    with the same options but ``seat``."""

    game = "madiao"
    parameters = ("seat", "agents", "seed", "match", "watch")
    move_example = "play 9S"
    episode_word = "hand"

    def __init__(
        self, *, seat: Any = None, agents: Any = None, seed: Any = None, match: Any = None, watch: Any = None
    ) -> None:
        # Imported here: keeps Numba and PettingZoo off this module's import path.
        from madiao_env.records import EventRecorder
        from madiao_mao.training.madiao.evaluation import agents_at_their_table

        super().__init__()
        self.match = bool_param("match", match)
        self.seat, self.seat_names = seat_and_names(
            seat, agents, bool_param("watch", watch), "madiao", 4, MADIAO_DEFAULT_AGENT
        )
        self.seed = seed_param(seed)
        self.env_kwargs = {"episode": "match"} if self.match else {}
        # The table is the one the agents read (a policy may read the record observation).
        with agent_loading(self.seat_names):
            table = agents_at_their_table(
                {s: (self.seat_names[s], self.seed + s) for s in range(4) if s != self.seat},
                env_kwargs=self.env_kwargs,
                make_env_always=True,
            )
        self.env, self.agents = table.env, table.agents
        for agent in self.agents.values():
            agent.reset()
        self.env.reset(seed=self.seed)
        self.log: list[str] = []
        self.settlements: list[dict[str, Any]] = []
        self.totals = [0.0] * 4
        # The public table as the events tell it (the env may have dealt the next hand in the
        # step that ended this one: its table is then already the next deal's).
        self._hands: list[list[str]] = [[], [], [], []]
        self._banker = 0
        self._upcard: str | None = None
        self._stock: list[str] = []
        # This hand's completed tricks, for what is behind each settlement payment.
        self._hand_tricks: list[dict[str, Any]] = []
        self._trick: list[tuple[int, str, bool]] = []
        self._last_trick: dict[str, Any] | None = None
        self._tricks_won = [0, 0, 0, 0]
        self._hand_number = 0
        self._deal: frozenset[str] = frozenset()
        self._recorder = EventRecorder(self.env, self._on_event)
        self._recorder.deal()
        if not self.watch:
            self._advance()

    @property
    def deal(self) -> frozenset[str]:
        """A fingerprint of the first deal's cards (every hand and the stock), whatever the
        options: a match and a single hand of one seed are dealt the same first hand."""
        return self._deal

    # ------------------------------------------------------------------ playing
    @property
    def over(self) -> bool:
        return all(self.env.terminations.values()) or all(self.env.truncations.values())

    def _to_act(self) -> int | None:
        return None if self.over else int(self.env.agent_selection.rsplit("_", 1)[1])

    def _action_from_text(self, text: str) -> int:
        return madiao_cards.text_to_action(text)

    def _action_text(self, action: int) -> str:
        return madiao_cards.action_to_text(action)

    def _step(self, seat: int, action: int) -> None:
        self.env.step(int(action))
        self._recorder.step(seat, int(action))

    # ------------------------------------------------------------------ what happened, in words
    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        trick_winner = None
        if kind == "deal":
            if not self._deal:  # the first deal: every later one follows from it and the moves
                self._deal = frozenset({madiao_deal_fingerprint(event)})
            self._hands = [list(h) for h in event["hands"]]
            self._banker = int(event["banker"])
            self._upcard = event["stock"][0]
            self._stock, self._hand_tricks = list(event["stock"]), []
            self._trick, self._last_trick, self._tricks_won = [], None, [0, 0, 0, 0]
            self._hand_number = int(event["hand_number"])
            banker = "you are" if self._banker == self.seat else f"{self._who(self._banker)} is"
            if event["redeals"]:
                text = f"Cards dealt again (redeal {event['redeals']}); {banker} still the banker."
            else:
                text = f"Hand {self._hand_number + 1} dealt; {banker} the banker."
        elif kind == "move":
            seat, (verb, _, card) = int(event["seat"]), event["text"].partition(" ")
            if card:
                self._hands[seat].remove(card)
                self._trick.append((seat, card, verb == "play"))
            text = self._move_text(seat, verb, card)
        elif kind == "trick":
            trick_winner = int(event["winner"])
            self._tricks_won = [int(t) for t in event["tricks_won"]]
            winning = next(name for s, name, _ in self._trick if s == trick_winner)
            self._last_trick = {
                "number": int(event["trick"]) + 1,
                "winner": trick_winner,
                **madiao_trick_view(self._trick, self.seat),
            }
            self._hand_tricks.append(
                {"number": int(event["trick"]) + 1, "winner": trick_winner, "plays": list(self._trick)}
            )
            wins = "win" if trick_winner == self.seat else "wins"
            number = int(event["trick"]) + 1
            text = f"{self._who(trick_winner)} {wins} trick {number} with {_card_words(winning)}."
        else:  # a settlement
            payoffs = [float(p) for p in event["payoffs"]]
            self.totals = [t + p for t, p in zip(self.totals, payoffs, strict=True)]
            hand = hand_context(self._hand_tricks, self._banker, self._stock)
            settled = madiao_settlement_view(event["lines"], payoffs, self._banker, hand)
            settled["hand_number"] = int(event["hand_number"])
            self.settlements.append(settled)
            text = f"Hand {int(event['hand_number']) + 1} settled: " + self._result_words(payoffs)
        self.log.append(text)
        del self.log[:-LOG_LENGTH]
        frame = self._table(self._trick, trick_winner, with_hand=self.watch)
        frame["text"] = text
        self._add_frame(frame)
        if kind == "trick":
            self._trick = []

    def _move_text(self, seat: int, verb: str, card: str) -> str:
        who = self._who(seat)
        you = seat == self.seat
        if verb == "redeal":
            return f"{who}: redeal! (five or more cards of one suit)"
        if verb == "pass":
            return f"{who}: pass (no redeal)."
        if verb == "slough":
            shown = f" {_card_words(card)}" if you or self.watch else " a card"
            return f"{who} slough{'' if you else 's'}{shown} face down."
        if len(self._trick) == 1:
            return f"{who} lead{'' if you else 's'} {_card_words(card)}."
        return f"{who} capture{'' if you else 's'} with {_card_words(card)}."

    def _result_words(self, payoffs: Sequence[float]) -> str:
        if self.watch:
            return ", ".join(f"seat {s} {_signed(p)}" for s, p in enumerate(payoffs)) + " stakes."
        return result_sentence(payoffs[self.seat])

    # ------------------------------------------------------------------ the seat's view
    def _table(
        self, trick: list[tuple[int, str, bool]], trick_winner: int | None, with_hand: bool = True
    ) -> dict[str, Any]:
        """The public table now, and with ``with_hand`` the viewer's own hand (every hand when
        watched). A frame has no hand of the person's: a hand held before a redeal is not theirs
        now, and those cards may lie in another hand (the page shows the hand it had)."""
        banker = self._banker
        view: dict[str, Any] = {
            "seats": [
                {
                    "seat": s,
                    "name": self.seat_names[s],
                    "role": madiao_role(s, banker),
                    "side": "banker" if s == banker else "player",
                    "tricks_won": self._tricks_won[s],
                    "cards": len(self._hands[s]),
                }
                for s in range(4)
            ],
            "banker": banker,
            "upcard": madiao_card(self._upcard) if self._upcard else None,
            "hand_number": self._hand_number,
            "trick": madiao_trick_view(trick, self.seat) | {"winner": trick_winner},
            "last_trick": self._last_trick,
            "totals": list(self.totals),
        }
        if self.watch:
            view["hands"] = [[madiao_card(n) for n in madiao_sorted(hand)] for hand in self._hands]
        elif with_hand:
            view["hand"] = [madiao_card(n) for n in madiao_sorted(self._hands[self.seat])]
        return view

    def view(self) -> dict[str, Any]:
        legal = [madiao_cards.action_to_text(a) for a in self._legal()]
        table = self.env.table()
        view = self._table(self._trick, None) | {
            "game": "madiao",
            "mode": "match" if self.match else "hand",
            "watch": self.watch,
            "version": self.version,
            "seat": self.seat,
            "first": table["first"],
            "phase": table["phase"],
            "to_act": self._to_act(),
            "trick_number": min(sum(self._tricks_won) + 1, madiao_cards.N_TRICKS),
            "legal": legal,
            "decision": REDEAL_EXPLANATION if "redeal" in legal else None,
            "frames": self.frames,
            "log": self.log,
            "over": self.over,
            "settlements": self.settlements,
        }
        return view

    def _record(self) -> dict[str, Any]:
        """``madiao_env.records``' format, as ``match --record`` writes."""
        # Imported here: keeps Numba and PettingZoo off this module's import path.
        from madiao_env.records import make_record

        result = _EpisodeResult(self.totals, self._recorder.events, self.seat_names)
        return make_record(self.seat_names, self.env_kwargs, self.seed, [result])


def _signed(number: float) -> str:
    text = f"{number:+g}"
    return "0" if number == 0 else text


def result_sentence(stakes: float) -> str:
    """ "You won 3 stakes." from the person's payoff."""
    amount = f"{abs(stakes):g} stake{'' if abs(stakes) == 1 else 's'}"
    if stakes > 0:
        return f"you won {amount}."
    if stakes < 0:
        return f"you lost {amount}."
    return "you broke even."
