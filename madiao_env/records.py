"""Madiao game records: the JSON format, its checks, and its text printer.

A *game record* is plain JSON (written by ``play``/``match``/``evaluate --record``, read by
``replay`` through :func:`read_record`, which checks every event)::

    {"game": "madiao", "format": 2, "env_kwargs": {...}, "seed": 7, "seats": ["you", ...],
     "events": [ {"type": "deal", "hand_number": 0, "redeals": 0, "banker": 2, "first": 0,
                  "hands": [[8 names] x 4], "stock": [8 names, upcard first]},
                 {"type": "move", "seat": 0, "action": 12, "text": "play 2S", "trick": 0},
                 {"type": "trick", "trick": 0, "winner": 3, "tricks_won": [4 ints]},
                 {"type": "settlement", "hand_number": 0, "hands_settled": [0], "lines": [...],
                  "payoffs": [4 floats]} ],
     "returns": [4 floats]}

The events come from what the env reports while playing (see :class:`EventRecorder`): each seat's
action, the winner of each completed trick, the env's settlements (``last_settlement``; one
settlement event per settlement; ``hands_settled`` lists the hands it closes: one, or two when
the next deal held a meld that the env settled in the same step), and a deal event whenever the
env deals. The last trick and its winner come before the settlement. A deal event may carry
``"seats"`` (the names of that hand's seats when they change from hand to hand, as in a
tournament's rotations); hand numbers run on through a record of several episodes. Format 2
replaced format 1, whose records repeated each settlement at the next deal.

The play loop with agents (``madiao_mao.training.madiao.matches.play_episode``) hands each event to an
``on_event`` callback as it happens, which is how ``match`` and ``play`` print the game live;
``replay`` prints the same events again with :class:`EventPrinter`. This module sits beside the
game (as ``mao_env.records`` does for Mao) and imports neither agents nor training.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from cardgame_core.files import atomic_write_json
from madiao_env import cards, payments, reference

RECORD_FORMAT = 2
Event = dict[str, Any]


class RecordedEpisode(Protocol):
    """What :func:`make_record` reads of a played episode
    (``madiao_mao.training.madiao.matches.EpisodeResult``)."""

    returns: np.ndarray
    events: list[Event]
    seats: list[str] | None


class EventRecorder:
    """Builds the record from what the env reports as the game goes, never by comparing tables.

    The sources: the action each seat takes (a move; a trick is complete after four plays, and
    its winner follows from those plays by the rules' ``trick_winner``), the env's
    ``last_settlement`` when it settles a hand (a new ``hand_number`` there means a new
    settlement: the env keeps the last one until the next), and ``table()`` only to read a
    new deal (after ``reset``, after a redeal, and after a settlement that did not end the episode).
    So the last trick's plays and its winner come before the hand's settlement, and every
    settlement is recorded once.
    """

    def __init__(self, env, on_event: Callable[[Event], None] | None) -> None:
        self.env = env
        self.on_event = on_event
        self.events: list[Event] = []
        self.trick_plays: list[reference.Play] = []
        self.trick = 0
        self.tricks_won = [0] * cards.N_SEATS
        self.hand_number = 0
        self.last_settled_hand: int | None = None

    def emit(self, event: Event) -> None:
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def deal(self) -> None:
        """Record the deal on the table (called when the env has just dealt one)."""
        table = self.env.unwrapped.table()
        self.hand_number = int(table["hand_number"])
        self.trick_plays = []
        self.trick = 0
        self.tricks_won = [0] * cards.N_SEATS
        self.emit(
            {
                "type": "deal",
                "hand_number": self.hand_number,
                "redeals": int(table["redeals"]),
                "banker": int(table["banker"]),
                "first": int(table["first"]),
                "hands": [list(h) for h in table["hands"]],
                "stock": list(table["stock"]),
            }
        )

    def step(self, seat: int, action: int) -> None:
        """Record one seat's action; call it right after ``env.step(action)``."""
        action = int(action)
        self.emit(
            {
                "type": "move",
                "seat": seat,
                "action": action,
                "text": cards.action_to_text(action),
                "trick": self.trick,
            }
        )
        if action < cards.ACTION_REDEAL:
            card = action % cards.N_CARDS
            self.trick_plays.append(reference.Play(seat, card, action < cards.ACTION_SLOUGH))
            if len(self.trick_plays) == cards.N_SEATS:
                winner = reference.trick_winner(self.trick_plays)
                self.tricks_won[winner] += 1
                self.emit(
                    {
                        "type": "trick",
                        "trick": self.trick,
                        "winner": winner,
                        "tricks_won": list(self.tricks_won),
                    }
                )
                self.trick += 1
                self.trick_plays = []
        settled = self._settlement()
        unwrapped = self.env.unwrapped
        episode_over = any(unwrapped.terminations.values()) or any(unwrapped.truncations.values())
        if (settled or action == cards.ACTION_REDEAL) and not episode_over:
            self.deal()

    def _settlement(self) -> bool:
        """Emit the settlement the last step made, if it made one; returns whether it did."""
        settlement = self.env.unwrapped.last_settlement
        if settlement is None or settlement["hand_number"] == self.last_settled_hand:
            return False
        settled_hand = int(settlement["hand_number"])
        self.last_settled_hand = settled_hand
        # A hand dealt and ended by a meld within the same step (the next deal after a settlement)
        # is settled together with it: the env reports one set of lines for both.
        hands = list(range(min(self.hand_number, settled_hand), settled_hand + 1))
        self.emit(
            {
                "type": "settlement",
                "hand_number": hands[0],
                "hands_settled": hands,
                "lines": [dict(line) for line in settlement["lines"]],
                "payoffs": [float(p) for p in settlement["payoffs"]],
            }
        )
        return True


# ----------------------------------------------------------------------------- records


def write_record(path: str | Path, record: dict) -> Path:
    """Write a game record as JSON (atomically: temp file then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, record)
    return path


def make_record(
    seat_names: Sequence[str], env_kwargs: dict, seed: int | None, results: Sequence[RecordedEpisode]
) -> dict:
    """The record of one or more episodes played in a row (hand numbers run on across them)."""
    events: list[Event] = []
    next_hand = 0
    for result in results:
        numbers = [e["hand_number"] for e in result.events if "hand_number" in e]
        offset = next_hand - min(numbers) if numbers and len(results) > 1 else 0
        for event in result.events:
            event = dict(event)
            if "hand_number" in event:
                event["hand_number"] += offset
            if "hands_settled" in event:
                event["hands_settled"] = [number + offset for number in event["hands_settled"]]
            if event["type"] == "deal" and result.seats is not None:
                event["seats"] = list(result.seats)
            events.append(event)
        if numbers:
            next_hand = max(numbers) + offset + 1
    totals = np.sum([r.returns for r in results], axis=0) if results else np.zeros(4)
    return {
        "game": "madiao",
        "format": RECORD_FORMAT,
        "env_kwargs": dict(env_kwargs),
        "seed": seed,
        "seats": list(seat_names),
        "events": events,
        "returns": [float(x) for x in totals],
    }


_SEAT_LIST_KEYS = {"hands", "tricks_won", "payoffs"}
#: The keys every event type needs, with the type their values must have.
_EVENT_KEYS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "deal": {"hand_number": int, "banker": int, "first": int, "hands": list, "stock": list},
    "move": {"seat": int, "action": int, "text": str, "trick": int},
    "trick": {"trick": int, "winner": int, "tricks_won": list},
    "settlement": {"hand_number": int, "lines": list, "payoffs": list},
}
_LINE_KEYS: dict[str, type | tuple[type, ...]] = {
    "rule": str,
    "payer": int,
    "payee": int,
    "stakes": (int, float),
}


def _check_event(index: int, event: Any) -> None:
    """Raise ValueError naming what is wrong with event ``index`` (so ``replay`` never crashes)."""
    where = f"event {index}"
    if not isinstance(event, dict) or event.get("type") not in _EVENT_KEYS:
        raise ValueError(f"{where} is not a deal, move, trick or settlement event")
    for key, kind in _EVENT_KEYS[event["type"]].items():
        value = event.get(key)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"{where} ({event['type']}) lacks a valid {key!r}")
        if key in _SEAT_LIST_KEYS and len(value) != cards.N_SEATS:
            raise ValueError(f"{where} ({event['type']}): {key!r} needs one entry per seat")
    for key in ("seat", "banker", "first", "winner"):
        if key in event and not 0 <= event[key] < cards.N_SEATS:
            raise ValueError(f"{where} ({event['type']}): {key!r} is not a seat (0..3)")
    if event["type"] == "deal":
        for hand in [*event["hands"], event["stock"]]:
            if not isinstance(hand, list) or not all(name in cards.CARD_ID for name in hand):
                raise ValueError(f"{where} (deal) holds something that is not a card name")
        if not event["stock"]:
            raise ValueError(f"{where} (deal) has an empty stock")
        if "seats" in event and not (
            isinstance(event["seats"], list) and len(event["seats"]) == cards.N_SEATS
        ):
            raise ValueError(f"{where} (deal): 'seats' needs one name per seat")
    if event["type"] == "settlement":
        for line in event["lines"]:
            if not isinstance(line, dict) or any(
                isinstance(line.get(k), bool) or not isinstance(line.get(k), t) for k, t in _LINE_KEYS.items()
            ):
                raise ValueError(f"{where} (settlement) has a malformed line {line!r}")
            if line["rule"] not in payments.RULE_NAMES:
                raise ValueError(f"{where} (settlement) names an unknown payment rule {line['rule'][:40]!r}")
            if not (0 <= line["payer"] < cards.N_SEATS and 0 <= line["payee"] < cards.N_SEATS):
                raise ValueError(f"{where} (settlement): a line's payer and payee are seats (0..3)")
        if not all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in event["payoffs"]):
            raise ValueError(f"{where} (settlement): 'payoffs' are not numbers")


def read_record(path: str | Path) -> dict:
    """Load and check a game record (a JSON dict); errors name what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no game record at {path}")
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not a JSON game record: {error}") from error
    if not isinstance(record, dict) or record.get("game") != "madiao":
        raise ValueError(f'{path} is not a Madiao game record (no "game": "madiao")')
    if record.get("format") != RECORD_FORMAT:
        raise ValueError(f"{path} has record format {record.get('format')!r}; expected {RECORD_FORMAT}")
    for key in ("seats", "events"):
        if not isinstance(record.get(key), list):
            raise ValueError(f"{path} lacks the list {key!r}")
    if len(record["seats"]) != cards.N_SEATS or not all(isinstance(n, str) for n in record["seats"]):
        raise ValueError(f"{path}: 'seats' needs one name per seat")
    returns = record.get("returns")
    if not isinstance(returns, list) or len(returns) != cards.N_SEATS:
        raise ValueError(f"{path} lacks the list 'returns' (one number per seat)")
    if not all(isinstance(r, (int, float)) and not isinstance(r, bool) for r in returns):
        raise ValueError(f"{path}: 'returns' are not numbers")
    for index, event in enumerate(record["events"]):
        try:
            _check_event(index, event)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None
    return record


# ----------------------------------------------------------------------------- printing


def role_name(seat: int, banker: int) -> str:
    return ("banker", "dealer", "opposite", "shuffler")[(seat - banker) % 4]


def sort_hand(names: Sequence[str]) -> list[str]:
    """Card names grouped by suit, strongest first within a suit."""
    return sorted(names, key=lambda n: (cards.CARD_SUIT[cards.CARD_ID[n]], -cards.CARD_ID[n]))


def format_hand(names: Sequence[str]) -> str:
    groups: dict[int, list[str]] = {}
    for name in sort_hand(names):
        groups.setdefault(int(cards.CARD_SUIT[cards.CARD_ID[name]]), []).append(name)
    return "  ".join(f"{cards.SUIT_LETTERS[s]}: {' '.join(groups[s])}" for s in sorted(groups))


class EventPrinter:
    """Prints record events as text (live during ``match``/``play``, or from ``replay``).

    ``reveal_hands`` shows every seat's hand at a deal (spectator view); a human player gets
    ``reveal_seat`` (their own hand only) and face-down cards of the others hidden.

    Totals are kept twice: by seat (``totals``, labelled "seat k") and by agent (``agent_totals``:
    each hand's payoffs added to the agent that held the seat in that hand; a name held by
    several seats sums them). They differ when the agents move from seat to seat, as in a
    tournament's record, where a seat's total mixes the hands of several agents.
    """

    def __init__(
        self,
        seat_names: Sequence[str],
        write: Callable[[str], None] = print,
        *,
        reveal_hands: bool = True,
        reveal_seat: int | None = None,
    ) -> None:
        self.seat_names = list(seat_names)
        self.write = write
        self.reveal_hands = reveal_hands
        self.reveal_seat = reveal_seat
        self.banker = 0
        self.totals = np.zeros(4)
        self.agent_totals: dict[str, float] = dict.fromkeys(self.seat_names, 0.0)
        self.hands_played = 0

    def label(self, seat: int) -> str:
        return f"seat {seat} {self.seat_names[seat]} ({role_name(seat, self.banker)})"

    def __call__(self, event: Event) -> None:
        kind = event["type"]
        if kind == "deal":
            self.banker = event["banker"]
            if "seats" in event:
                self.seat_names = list(event["seats"])
            title = f"Hand {event['hand_number'] + 1}"
            if event.get("redeals"):
                title += f" (redeal {event['redeals']})"
            self.write(f"\n=== {title}: banker seat {self.banker}, seat {event['first']} leads ===")
            self.write(f"upcard: {event['stock'][0]}")
            for seat in range(4):
                if self.reveal_hands or seat == self.reveal_seat:
                    self.write(f"  {self.label(seat)}: {format_hand(event['hands'][seat])}")
        elif kind == "move":
            text = event["text"]
            if not self.reveal_hands and event["seat"] != self.reveal_seat and text.startswith("slough"):
                text = "slough (face down)"
            self.write(f"  trick {event['trick'] + 1}: {self.label(event['seat'])} {text}")
        elif kind == "trick":
            won = " ".join(str(t) for t in event["tricks_won"])
            self.write(f"  -> trick {event['trick'] + 1} won by {self.label(event['winner'])}; tricks: {won}")
        elif kind == "settlement":
            hands = event.get("hands_settled", [event["hand_number"]])
            self.hands_played += len(hands)
            self.write("  settlement:")
            if len(hands) > 1:
                later = ", ".join(str(h + 1) for h in hands[1:])
                self.write(f"    (with hand {later}: ended by a meld at its deal, settled in the same step)")
            if not event["lines"]:
                self.write("    (no payments)")
            for line in event["lines"]:
                self.write(
                    f"    {line['rule']:<26} seat {line['payer']} pays seat {line['payee']} "
                    f"{line['stakes']:g}"
                )
            payoffs = np.asarray(event["payoffs"], dtype=np.float64)
            self.totals += payoffs
            for seat, payoff in enumerate(payoffs):
                name = self.seat_names[seat]
                self.agent_totals[name] = self.agent_totals.get(name, 0.0) + float(payoff)
            self.write(
                "  hand:    " + "  ".join(f"{self.seat_names[s]} {p:+g}" for s, p in enumerate(payoffs))
            )
            self.write(f"  totals by seat:  {seat_totals_text(self.totals)}")
            self.write(f"  totals by agent: {agent_totals_text(self.agent_totals)}")


def seat_totals_text(totals: Sequence[float]) -> str:
    """``seat 0 +3  seat 1 -1 ...``: figures by seat, labelled by seat only (its agent may change)."""
    return "  ".join(f"seat {seat} {total:+g}" for seat, total in enumerate(totals))


def agent_totals_text(totals: dict[str, float]) -> str:
    """``heuristic +3  greedy -3``: figures by agent name."""
    return "  ".join(f"{name} {total:+g}" for name, total in totals.items())


def print_record(record: dict, write: Callable[[str], None] = print) -> None:
    """Print a recorded game move by move with its settlements (the ``replay`` command)."""
    header = f"Madiao game record: seats {', '.join(f'{i}={n}' for i, n in enumerate(record['seats']))}"
    if any(event.get("seats", record["seats"]) != record["seats"] for event in record["events"]):
        header += " in the first hand; the agents change seats from hand to hand (each deal names them)"
    write(header)
    printer = EventPrinter(record["seats"], write)
    for event in record["events"]:
        printer(event)
    write(f"final returns by agent: {agent_totals_text(printer.agent_totals)}")
    write(f"final returns by seat: {seat_totals_text(record['returns'])}")
