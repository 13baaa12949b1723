"""Replays of Madiao records (``match --record``, ``evaluate --record``, ``play --record``; read
with ``madiao_env.records.read_record``): a list of events; step ``k`` is the table after the
first ``k`` events, rebuilt from the ``deal`` events' hands and the ``move`` events (no env is
needed: a deal event carries every hand and the stock). A frame for a seat shows that seat's hand
only and hides the other seats' face-down cards.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from madiao_env import cards as madiao_cards
from madiao_mao_web import replays
from madiao_mao_web.madiao.behind import hand_context
from madiao_mao_web.madiao.live import (
    madiao_card,
    madiao_role,
    madiao_settlement_view,
    madiao_sorted,
    madiao_trick_view,
)
from madiao_mao_web.replays import RecordError, RecordTooLargeError, Replay, check_deadline
from madiao_mao_web.security import echo


def read_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` checked by ``madiao_env.records.read_record``, the one checker of the format."""
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from madiao_env.records import read_record as read_record_file

    # read_record reads from a path.
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "record.json"
        path.write_text(json.dumps(record))
        try:
            return read_record_file(path)
        except ValueError as error:
            raise RecordError(str(error).replace(str(path), "the record")) from None


def record_deal(record: dict[str, Any]) -> None:
    """None: a Madiao record carries every hand it deals, and no live game here is dealt from it."""
    return None


class MadiaoReplay(Replay):
    """Frames of a Madiao record, rebuilt from its events."""

    game = "madiao"

    def __init__(self, record: dict[str, Any], max_seconds: float | None = None) -> None:
        self.record = record
        self.seats = [str(name) for name in record["seats"]]
        if len(self.seats) != madiao_cards.N_SEATS:
            raise RecordError(f"the record names {len(self.seats)} seats; Madiao has 4")
        self.events = record["events"]
        if len(self.events) > replays.MAX_REPLAY_STEPS:
            raise RecordTooLargeError(
                f"the record has {len(self.events)} events; a replay holds at most {replays.MAX_REPLAY_STEPS}"
            )
        self._stride = replays.CHECKPOINT_STRIDE
        self._checkpoints: list[dict[str, Any]] = []
        deadline = time.monotonic() + (replays.MAX_BUILD_SECONDS if max_seconds is None else max_seconds)
        state = self._start()
        try:
            for step, event in enumerate(self.events):
                if step % self._stride == 0:
                    self._checkpoints.append(_copy(state))
                check_deadline(deadline, step)
                _apply_madiao_event(state, event)
        except (KeyError, TypeError, ValueError, IndexError) as error:
            if isinstance(error, RecordTooLargeError):
                raise
            raise RecordError(f"the record's events do not replay: {echo(error, 200)}") from None
        if self.n_steps % self._stride == 0:
            self._checkpoints.append(_copy(state))

    @property
    def n_steps(self) -> int:
        return len(self.events)

    def _start(self) -> dict[str, Any]:
        return {
            "hands": [[], [], [], []],
            "dealt": False,
            "banker": 0,
            "first": 0,
            "upcard": None,
            "trick": [],
            "last_trick": [],
            "last_winner": None,
            "tricks_won": [0, 0, 0, 0],
            "sloughed": [[], [], [], []],
            # This hand's completed tricks and its stock, for what is behind each payment.
            "hand_tricks": [],
            "stock": [],
            "settlement": None,
            "totals": [0.0, 0.0, 0.0, 0.0],
            "hand_number": 0,
            "names": list(self.seats),
            "event": None,
        }

    def _state(self, step: int) -> dict[str, Any]:
        """The table after the first ``step`` events: the checkpoint before, stepped forward."""
        start = step - step % self._stride
        state = _copy(self._checkpoints[start // self._stride])
        for event in self.events[start:step]:
            _apply_madiao_event(state, event)  # checked on upload: cannot raise
        return state

    def _event_text(self, event: dict[str, Any] | None, seat: int | None, names: list[str]) -> str:
        if event is None:
            return "Start of the record."
        kind = event.get("type")
        if kind == "deal":
            return f"Hand {int(event.get('hand_number', 0)) + 1} dealt; banker is seat {event['banker']}."
        if kind == "move":
            text = event.get("text") or madiao_cards.action_to_text(int(event["action"]))
            mover = int(event["seat"])
            if text.startswith("slough") and seat is not None and mover != seat:
                text = "slough a card face down"
            return f"Seat {mover} ({names[mover]}): {text}."
        if kind == "trick":
            return f"Trick won by seat {event['winner']}."
        if kind == "settlement":
            return "Settlement."
        return str(kind)

    def frame(self, step: int, seat: int | None) -> dict[str, Any]:
        state = self._state(step)
        banker = state["banker"]

        hands = [
            [madiao_card(n) for n in madiao_sorted(hand)] if seat is None or s == seat else None
            for s, hand in enumerate(state["hands"])
        ]
        return {
            "game": "madiao",
            "step": step,
            "n_steps": self.n_steps,
            "view": "all" if seat is None else seat,
            "event": self._event_text(state["event"], seat, state["names"]),
            "seats": [
                {
                    "seat": s,
                    "name": state["names"][s],
                    "role": madiao_role(s, banker),
                    "side": "banker" if s == banker else "player",
                    "tricks_won": won,
                    "cards": len(state["hands"][s]),
                }
                for s, won in enumerate(state["tricks_won"])
            ],
            "banker": banker,
            "first": state["first"],
            "upcard": madiao_card(state["upcard"]) if state["upcard"] else None,
            "hands": hands,
            "hand_sizes": [len(hand) for hand in state["hands"]],
            "trick": madiao_trick_view(state["trick"], seat) | {"winner": None},
            "last_trick": madiao_trick_view(state["last_trick"], seat) | {"winner": state["last_winner"]}
            if state["last_trick"]
            else None,
            "settlement": state["settlement"],
            "totals": state["totals"],
        }


def _apply_madiao_event(state: dict[str, Any], event: Any) -> None:
    """Move ``state`` (the table) on by one record event; raises on an event that does not fit."""
    kind = event["type"]
    state["event"] = event
    if kind == "deal":
        hands = event["hands"]
        if len(hands) != 4 or any(len(h) != madiao_cards.HAND_SIZE for h in hands):
            raise ValueError("a deal event needs 4 hands of 8 cards")
        for hand in hands:
            for name in hand:
                madiao_cards.card_id(name)
        state.update(
            hands=[list(h) for h in hands],
            dealt=True,
            banker=int(event["banker"]),
            first=int(event["first"]),
            upcard=madiao_cards.card_name(madiao_cards.card_id(event["stock"][0])),
            trick=[],
            last_trick=[],
            last_winner=None,
            tricks_won=[0, 0, 0, 0],
            sloughed=[[], [], [], []],
            hand_tricks=[],
            stock=[madiao_cards.card_name(madiao_cards.card_id(name)) for name in event["stock"]],
            settlement=None,
            hand_number=int(event.get("hand_number", state["hand_number"])),
        )
        if "seats" in event:  # a tournament's rotations name the seats per hand
            names = [str(name) for name in event["seats"]]
            if len(names) != 4:
                raise ValueError("a deal event's seats must name 4 players")
            state["names"] = names
    elif kind == "move":
        seat = int(event["seat"])
        if not 0 <= seat < 4:
            raise ValueError(f"move seat {seat}")
        text = event.get("text") or madiao_cards.action_to_text(int(event["action"]))
        action = madiao_cards.text_to_action(text)
        if action < madiao_cards.ACTION_REDEAL:
            face_up = action < madiao_cards.ACTION_SLOUGH
            name = madiao_cards.card_name(action % madiao_cards.N_CARDS)
            if name not in state["hands"][seat]:
                raise ValueError(f"seat {seat} plays {name}, which it does not hold")
            state["hands"][seat].remove(name)
            if not face_up:
                state["sloughed"][seat].append(name)
            state["trick"].append((seat, name, face_up))
    elif kind == "trick":
        if "tricks_won" in event:
            state["tricks_won"] = [int(t) for t in event["tricks_won"]]
        else:
            state["tricks_won"][int(event["winner"])] += 1
        state["last_trick"], state["trick"] = state["trick"], []
        state["last_winner"] = int(event["winner"])
        number = len(state["hand_tricks"]) + 1
        trick = {"number": number, "winner": state["last_winner"], "plays": list(state["last_trick"])}
        state["hand_tricks"].append(trick)
    elif kind == "settlement":
        payoffs = [float(p) for p in event["payoffs"]]
        lines = [
            {
                "rule": str(line["rule"]),
                "payer": int(line["payer"]),
                "payee": int(line["payee"]),
                "stakes": float(line["stakes"]),
            }
            for line in event["lines"]
        ]
        hand = hand_context(state["hand_tricks"], state["banker"], state["stock"])
        state["settlement"] = madiao_settlement_view(lines, payoffs, state["banker"], hand)
        state["totals"] = [t + p for t, p in zip(state["totals"], payoffs, strict=True)]


def _copy(state: dict[str, Any]) -> dict[str, Any]:
    return {
        key: [list(v) if isinstance(v, list) else v for v in value] if isinstance(value, list) else value
        for key, value in state.items()
    }
