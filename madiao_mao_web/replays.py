"""Replays of recorded games, step by step, from one seat's view or with all hands open.

Madiao records (``match --record``, ``evaluate --record``, ``play --record``; read with
``madiao_env.records.read_record``) are a list of events; step ``k`` is the table after the
first ``k`` events, rebuilt from the ``deal`` events' hands and the ``move`` events (no env is
needed: a deal event carries every hand and the stock). Mao records (``mao_env.records``) are
actions from a seeded reset; step ``k`` is the env after ``k`` actions, replayed through the env.

A frame for a seat shows that seat's hand only and hides the other seats' face-down cards (and,
for Mao, the secret rules it did not author); ``view="all"`` opens every hand and every rule.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from madiao_env import cards as madiao_cards
from madiao_mao_web.games import (
    madiao_card,
    madiao_role,
    madiao_settlement_view,
    madiao_sorted,
    madiao_trick_view,
    mao_reason_text,
    mao_seat_view,
)
from mao_env import cards as mao_cards
from mao_env import rules as mao_rules

MAX_REPLAY_STEPS = 20_000  # a Madiao match is a few hundred events, a Mao game at most max_steps


class RecordError(ValueError):
    """An uploaded record that cannot be read or replayed (a 400 with the reason)."""


def load_record(data: bytes | str) -> dict[str, Any]:
    """Parse an uploaded record and check it with the game's own reader."""
    try:
        record = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RecordError(f"the file is not a JSON game record: {error}") from None
    if not isinstance(record, dict) or record.get("game") not in ("madiao", "mao"):
        raise RecordError('the file is not a game record ("game" is neither "madiao" nor "mao")')
    if record["game"] == "mao":
        from mao_env.records import check_record

        try:
            return check_record(record, "the record")
        except ValueError as error:
            raise RecordError(str(error)) from None
    from madiao_env.records import read_record

    # read_record is the one checker of the Madiao format; it reads from a path.
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "record.json"
        path.write_text(json.dumps(record))
        try:
            return read_record(path)
        except ValueError as error:
            raise RecordError(str(error).replace(str(path), "the record")) from None


def parse_view(view: Any, n_seats: int) -> int | None:
    """``"all"`` -> None (every hand open), else a seat number; errors name the parameter."""
    if view is None or view == "all":
        return None
    try:
        seat = int(view)
    except (TypeError, ValueError):
        raise RecordError(f"view must be 'all' or a seat 0..{n_seats - 1}, got {view!r}") from None
    if not 0 <= seat < n_seats:
        raise RecordError(f"view must be 'all' or a seat 0..{n_seats - 1}, got {view!r}")
    return seat


class MadiaoReplay:
    """Frames of a Madiao record, rebuilt from its events."""

    game = "madiao"

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.seats = [str(name) for name in record["seats"]]
        if len(self.seats) != madiao_cards.N_SEATS:
            raise RecordError(f"the record names {len(self.seats)} seats; Madiao has 4")
        self.events = record["events"]
        if len(self.events) > MAX_REPLAY_STEPS:
            raise RecordError(
                f"the record has {len(self.events)} events; a replay holds at most {MAX_REPLAY_STEPS}"
            )
        try:
            self._states = self._build()
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise RecordError(f"the record's events do not replay: {error!r}") from None

    @property
    def n_steps(self) -> int:
        return len(self.events)

    def _build(self) -> list[dict[str, Any]]:
        """The table after each prefix of the events (plain data, copied per step)."""
        state: dict[str, Any] = {
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
            "settlement": None,
            "totals": [0.0, 0.0, 0.0, 0.0],
            "hand_number": 0,
            "names": list(self.seats),
            "event": None,
        }
        states = [_copy(state)]
        for event in self.events:
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
                state["settlement"] = madiao_settlement_view(lines, payoffs, state["banker"])
                state["totals"] = [t + p for t, p in zip(state["totals"], payoffs, strict=True)]
            states.append(_copy(state))
        return states

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
        state = self._states[step]
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


def _copy(state: dict[str, Any]) -> dict[str, Any]:
    return {
        key: [list(v) if isinstance(v, list) else v for v in value] if isinstance(value, list) else value
        for key, value in state.items()
    }


class MaoReplay:
    """Frames of a Mao record, replayed through the env (snapshots every step)."""

    game = "mao"

    def __init__(self, record: dict[str, Any]) -> None:
        from mao_env.records import replay

        self.record = record
        self.seats = list(record["seats"])
        if len(record["actions"]) > MAX_REPLAY_STEPS:
            raise RecordError(
                f"the record has {len(record['actions'])} actions; a replay holds at most {MAX_REPLAY_STEPS}"
            )
        self.frames: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        actor = None  # the seat whose action led to the step's state
        played = None  # the last card played: "the name of the card" a call names
        try:
            for step, env in enumerate(replay(record)):
                action = record["actions"][step - 1] if step else ""
                if action.startswith("play "):
                    played = action.split()[1]
                for call in env.last_calls if step else []:
                    said = call["call"]
                    if call.get("phrase") == "card-name" and not call["bad_call"]:
                        said = mao_reason_text("failure card-name", played)
                    calls.append(
                        {
                            "step": step,
                            "seat": int(call["player"].rsplit("_", 1)[1]),
                            "call": said,
                            "cards": int(call["cards"]),
                        }
                    )
                self.frames.append(self._snapshot(env, step, actor, list(calls)))
                actor = env.current_seat
        except ValueError as error:
            raise RecordError(str(error)) from None

    @property
    def n_steps(self) -> int:
        return len(self.frames) - 1

    def _snapshot(self, env, step: int, actor: int | None, calls: list[dict[str, Any]]) -> dict[str, Any]:
        """Everything each view of this step needs, computed once (the env moves on)."""
        views = [mao_seat_view(env, s, self.seats) for s in range(env.n_players)]
        action = self.record["actions"][step - 1] if step else None
        return {
            "actor": actor,
            "action": action,
            "over": bool(env.terminations[env.agent_selection] or env.truncations[env.agent_selection]),
            "views": views,
            "hands": [sorted(env.hand(s), key=mao_cards.CARD_ID.__getitem__) for s in range(env.n_players)],
            "rules": [
                {"rule": rule, "author": author, "description": mao_rules.RULE_DESCRIPTIONS[rule]}
                for rule, author in env.active_rules()
            ],
            "calls": calls,
            "returns": list(self.record.get("returns", [])),
        }

    def frame(self, step: int, seat: int | None) -> dict[str, Any]:
        snapshot = self.frames[step]
        base = dict(snapshot["views"][0 if seat is None else seat])
        base.update(
            step=step, n_steps=self.n_steps, view="all" if seat is None else seat, over=snapshot["over"]
        )
        actor, action = snapshot["actor"], snapshot["action"]
        if action is None:
            base["event"] = "Start of the record."
        else:
            if action.startswith("rule") and seat is not None and seat != actor:
                action = "introduces a new rule"  # which rule is the author's secret
            base["event"] = f"Seat {actor} ({self.seats[actor]}): {action}."
        base["calls"] = snapshot["calls"][-60:]
        if seat is None:
            base["seat"] = None
            base["hand"] = None
            base["hands"] = snapshot["hands"]
            base["my_rules"] = []
            base["rules"] = snapshot["rules"]
        else:
            base["hands"] = None
        return base


def make_replay(record: dict[str, Any]) -> MadiaoReplay | MaoReplay:
    return MaoReplay(record) if record["game"] == "mao" else MadiaoReplay(record)
