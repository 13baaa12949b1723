"""Playing whole Madiao hands and matches with agents on the PettingZoo env, with a game record.

A *game record* is plain JSON (written by ``play``/``evaluate --record``, read by ``replay``)::

    {"game": "madiao", "format": 1, "env_kwargs": {...}, "seed": 7, "seats": ["you", ...],
     "events": [ {"type": "deal", "hand_number": 0, "banker": 2, "first": 0,
                  "hands": [[8 names] x 4], "stock": [8 names, upcard first]},
                 {"type": "move", "seat": 0, "action": 12, "text": "play 2S", "trick": 0},
                 {"type": "trick", "trick": 0, "winner": 3},
                 {"type": "settlement", "hand_number": 0, "lines": [...], "payoffs": [4 floats]} ],
     "returns": [4 floats]}

Events are produced while playing (``on_event`` receives each one as it happens, which is how
``match`` and ``play`` print the game live) and the same events are printed again by ``replay``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent
from madiao_env import cards

RECORD_FORMAT = 1
Event = dict[str, Any]


def make_env(**env_kwargs: Any):
    """The wrapped PettingZoo Madiao env (imported lazily: the env module compiles on first use)."""
    from madiao_env import madiao_v0

    return madiao_v0.env(**env_kwargs)


def seat_of(agent_name: str) -> int:
    return int(agent_name.rsplit("_", 1)[1])


@dataclass
class EpisodeResult:
    """What one episode (a hand or a match) produced."""

    returns: np.ndarray
    """Total reward per seat over the episode (stakes times the env's ``stake`` option)."""
    events: list[Event] = field(default_factory=list)
    """The game record's events in order."""
    banker: int = -1
    """The banker of the last hand played."""

    def hands(self) -> list[Event]:
        return [e for e in self.events if e["type"] == "settlement"]


class _Tracker:
    """Turns the env's state changes into record events (deals, trick winners, settlements)."""

    def __init__(self, env, on_event: Callable[[Event], None] | None) -> None:
        self.env = env
        self.on_event = on_event
        self.events: list[Event] = []
        self.deal_key: tuple | None = None
        self.tricks_won = [0, 0, 0, 0]
        self.trick = 0
        self.settled_hands: set[int] = set()
        self.hand_number = 0

    def emit(self, event: Event) -> None:
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def observe(self) -> None:
        table = self.env.unwrapped.table()
        self._check_settlement(table)
        key = (table["hand_number"], table["redeals"], tuple(table["stock"]))
        if key != self.deal_key and not table["history"] and table["phase"] != "over":
            self.deal_key = key
            self.hand_number = table["hand_number"]
            self.tricks_won = [0, 0, 0, 0]
            self.trick = 0
            self.emit(
                {
                    "type": "deal",
                    "hand_number": int(table["hand_number"]),
                    "redeals": int(table["redeals"]),
                    "banker": int(table["banker"]),
                    "first": int(table["first"]),
                    "hands": [list(h) for h in table["hands"]],
                    "stock": list(table["stock"]),
                }
            )
        won = [int(t) for t in table["tricks_won"]]
        if sum(won) > sum(self.tricks_won) and table["hand_number"] == self.hand_number:
            winner = int(np.argmax(np.asarray(won) - np.asarray(self.tricks_won)))
            self.emit({"type": "trick", "trick": self.trick, "winner": winner, "tricks_won": won})
            self.trick += 1
        self.tricks_won = won

    def _check_settlement(self, table: dict) -> None:
        infos = self.env.unwrapped.infos
        for info in infos.values():
            if "settlement" in info and "payoffs" in info:
                hand = int(info.get("hand_number", table["hand_number"]))
                marker = (hand, len(self.events_of("deal")))
                if marker in self.settled_hands:
                    return
                self.settled_hands.add(marker)
                self.emit(
                    {
                        "type": "settlement",
                        "hand_number": hand,
                        "lines": [dict(line) for line in info["settlement"]],
                        "payoffs": [float(p) for p in info["payoffs"]],
                    }
                )
                return

    def events_of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e["type"] == kind]

    def move(self, seat: int, action: int) -> None:
        self.emit(
            {
                "type": "move",
                "seat": seat,
                "action": int(action),
                "text": cards.action_to_text(int(action)),
                "trick": self.trick,
            }
        )


def play_episode(
    env,
    seat_agents: Sequence[Agent],
    *,
    seed: int | None = None,
    options: dict | None = None,
    on_event: Callable[[Event], None] | None = None,
    record: bool = True,
) -> EpisodeResult:
    """Play one episode of ``env`` (a hand or a match, per its ``episode`` option) with one agent
    per seat; returns every seat's total reward (terminal rewards of seats that did not make the
    last move included: they are collected from ``env.last()`` as each agent is stepped out).
    """
    if len(seat_agents) != cards.N_SEATS:
        raise ValueError(f"need one agent per seat ({cards.N_SEATS}), got {len(seat_agents)}")
    for agent in seat_agents:
        agent.reset()
    env.reset(seed=seed, options=options)
    tracker = _Tracker(env, on_event) if record else None
    if tracker is not None:
        tracker.observe()
    returns = np.zeros(cards.N_SEATS, dtype=np.float64)
    for agent_name in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        seat = seat_of(agent_name)
        returns[seat] += reward
        if terminated or truncated:
            env.step(None)
            continue
        action = seat_agents[seat].act(observation["observation"], observation["action_mask"])
        if tracker is not None:
            tracker.move(seat, action)
        env.step(action)
        if tracker is not None:
            tracker.observe()
    banker = int(env.unwrapped.table()["banker"])
    events = tracker.events if tracker is not None else []
    return EpisodeResult(returns=returns, events=events, banker=banker)


# ----------------------------------------------------------------------------- records


def write_record(path: str | Path, record: dict) -> Path:
    """Write a game record as JSON (atomically: temp file then rename)."""
    import os

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(record, indent=1))
    os.replace(temporary, path)
    return path


def make_record(
    seat_names: Sequence[str], env_kwargs: dict, seed: int | None, results: Sequence[EpisodeResult]
) -> dict:
    events: list[Event] = []
    for result in results:
        events.extend(result.events)
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


def read_record(path: str | Path) -> dict:
    """Load and check a game record; errors name what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no game record at {path}")
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not a JSON game record: {error}") from error
    if not isinstance(record, dict) or record.get("game") != "madiao":
        raise ValueError(f'{path} is not a Madiao game record (no "game": "madiao")')
    if record.get("format") != RECORD_FORMAT:
        raise ValueError(f"{path} has record format {record.get('format')!r}; expected {RECORD_FORMAT}")
    for key in ("seats", "events"):
        if not isinstance(record.get(key), list):
            raise ValueError(f"{path} lacks the list {key!r}")
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
        self.hands_played = 0

    def label(self, seat: int) -> str:
        return f"seat {seat} {self.seat_names[seat]} ({role_name(seat, self.banker)})"

    def __call__(self, event: Event) -> None:
        kind = event["type"]
        if kind == "deal":
            self.banker = event["banker"]
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
            self.hands_played += 1
            self.write("  settlement:")
            if not event["lines"]:
                self.write("    (no payments)")
            for line in event["lines"]:
                self.write(
                    f"    {line['rule']:<26} seat {line['payer']} pays seat {line['payee']} "
                    f"{line['stakes']:g}"
                )
            payoffs = np.asarray(event["payoffs"], dtype=np.float64)
            self.totals += payoffs
            self.write(
                "  hand:    " + "  ".join(f"{self.seat_names[s]} {p:+g}" for s, p in enumerate(payoffs))
            )
            self.write(
                "  totals:  " + "  ".join(f"{self.seat_names[s]} {t:+g}" for s, t in enumerate(self.totals))
            )


def print_record(record: dict, write: Callable[[str], None] = print) -> None:
    """Print a recorded game move by move with its settlements (the ``replay`` command)."""
    write(f"Madiao game record: seats {', '.join(f'{i}={n}' for i, n in enumerate(record['seats']))}")
    printer = EventPrinter(record["seats"], write)
    for event in record["events"]:
        printer(event)
    write(
        "final returns: "
        + "  ".join(f"{n} {r:+g}" for n, r in zip(record["seats"], record["returns"], strict=False))
    )
