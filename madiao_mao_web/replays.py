"""Replays of recorded games, step by step, from one seat's view or with all hands open.

Madiao records (``match --record``, ``evaluate --record``, ``play --record``; read with
``madiao_env.records.read_record``) are a list of events; step ``k`` is the table after the
first ``k`` events, rebuilt from the ``deal`` events' hands and the ``move`` events (no env is
needed: a deal event carries every hand and the stock). Mao records (``mao_env.records``) are
actions from a seeded reset; step ``k`` is the env after ``k`` actions, replayed through the env.

A frame for a seat shows that seat's hand only and hides the other seats' face-down cards (and,
for Mao, the secret rules it did not author); ``view="all"`` opens every hand and every rule.

A replay shows nothing that its record does not determine (the uploader could replay it with the
env), so the secrets of a live game stay safe as long as its record does: the app gives a game's
record (or its replay) only once the game is over and no game of the same deal with a person's
seat is being played, and refuses a Mao record with the seed and table size of such a game
(:func:`record_deal`).

Costs are bounded: a record holds at most ``MAX_REPLAY_STEPS`` steps (else
:class:`RecordTooLargeError`, a 422) and must replay within ``MAX_BUILD_SECONDS``. The record is
checked once, step by step, on upload, keeping a snapshot every ``CHECKPOINT_STRIDE`` steps only
(a Mao snapshot is 7 KB: every step's would be 140 MB for 20,000 steps, and every step's eight
seat views were 1.7 GB); a frame is the nearest snapshot stepped forward, at most
``CHECKPOINT_STRIDE - 1`` steps (a few milliseconds).
"""

from __future__ import annotations

import bisect
import json
import tempfile
import time
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
    parse_int_text,
)
from madiao_mao_web.security import echo
from mao_env import cards as mao_cards
from mao_env import rules as mao_rules

MAX_REPLAY_STEPS = 20_000  # a Madiao match is a few hundred events, a Mao game at most max_steps
MAX_BUILD_SECONDS = 15.0  # checking 20,000 Mao steps takes about 1 s on one core
CHECKPOINT_STRIDE = 128
CALLS_SHOWN = 60


class RecordError(ValueError):
    """An uploaded record that cannot be read or replayed (a 400 with the reason)."""


class RecordTooLargeError(RecordError):
    """A record longer than a replay holds, or too slow to replay (a 422)."""


def _check_deadline(deadline: float, step: int) -> None:
    if step % 256 == 0 and time.monotonic() > deadline:
        raise RecordTooLargeError(f"the record takes too long to replay (stopped at step {step})")


def load_record(record: Any) -> dict[str, Any]:
    """Check an uploaded record (parsed JSON) with the game's own reader."""
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


def record_deal(record: dict[str, Any]) -> tuple[str, int, int]:
    """The deal of a Mao ``record`` with a seed, as a live game names its own
    (``madiao_mao_web.games.LiveGame.deal``): the same seed and number of seats. Such a record may
    be a live game's own (its seed known to whoever chose it, its moves partly public): the app
    refuses it while that game is being played."""
    return "mao", record["seed"], len(record["seats"])


def parse_view(view: Any, n_seats: int) -> int | None:
    """``"all"`` -> None (every hand open), else a seat number (ASCII digits); errors name the
    parameter."""
    if view is None or view == "all":
        return None
    seat = parse_int_text(view)
    if seat is None or not 0 <= seat < n_seats:
        raise RecordError(f"view must be 'all' or a seat 0..{n_seats - 1}, got {echo(view)}")
    return seat


def parse_step(step: Any, n_steps: int) -> int:
    """A step number 0..``n_steps`` (ASCII digits); errors name the parameter."""
    number = parse_int_text(step)
    if number is None or not 0 <= number <= n_steps:
        raise RecordError(f"step must be an integer 0..{n_steps}, got {echo(step)}")
    return number


class MadiaoReplay:
    """Frames of a Madiao record, rebuilt from its events."""

    game = "madiao"

    def __init__(self, record: dict[str, Any], max_seconds: float | None = None) -> None:
        self.record = record
        self.seats = [str(name) for name in record["seats"]]
        if len(self.seats) != madiao_cards.N_SEATS:
            raise RecordError(f"the record names {len(self.seats)} seats; Madiao has 4")
        self.events = record["events"]
        if len(self.events) > MAX_REPLAY_STEPS:
            raise RecordTooLargeError(
                f"the record has {len(self.events)} events; a replay holds at most {MAX_REPLAY_STEPS}"
            )
        self._stride = CHECKPOINT_STRIDE
        self._checkpoints: list[dict[str, Any]] = []
        deadline = time.monotonic() + (MAX_BUILD_SECONDS if max_seconds is None else max_seconds)
        state = self._start()
        try:
            for step, event in enumerate(self.events):
                if step % self._stride == 0:
                    self._checkpoints.append(_copy(state))
                _check_deadline(deadline, step)
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


def _copy(state: dict[str, Any]) -> dict[str, Any]:
    return {
        key: [list(v) if isinstance(v, list) else v for v in value] if isinstance(value, list) else value
        for key, value in state.items()
    }


class MaoReplay:
    """Frames of a Mao record, replayed through the env from a snapshot every
    ``CHECKPOINT_STRIDE`` steps."""

    game = "mao"

    def __init__(self, record: dict[str, Any], max_seconds: float | None = None) -> None:
        from mao_env.records import replay

        self.record = record
        self.seats = list(record["seats"])
        actions = record["actions"]
        if len(actions) > MAX_REPLAY_STEPS:
            raise RecordTooLargeError(
                f"the record has {len(actions)} actions; a replay holds at most {MAX_REPLAY_STEPS}"
            )
        self._stride = CHECKPOINT_STRIDE
        self._checkpoints: list[dict[str, Any]] = []
        self._actors: list[int] = []  # the seat that took each action
        self.calls: list[dict[str, Any]] = []  # every call, with the step it followed
        deadline = time.monotonic() + (MAX_BUILD_SECONDS if max_seconds is None else max_seconds)
        played = None  # the last card played: "the name of the card" a call names
        try:
            for step, env in enumerate(replay(record)):
                if step % self._stride == 0:
                    self._checkpoints.append(env.get_state())
                _check_deadline(deadline, step)
                action = actions[step - 1] if step else ""
                if action.startswith("play "):
                    played = action.split()[1]
                for call in env.last_calls if step else []:
                    said = call["call"]
                    if call.get("phrase") == "card-name" and not call["bad_call"]:
                        said = mao_reason_text("failure card-name", played)
                    self.calls.append(
                        {
                            "step": step,
                            "seat": int(call["player"].rsplit("_", 1)[1]),
                            "call": said,
                            "cards": int(call["cards"]),
                        }
                    )
                if step < len(actions):
                    self._actors.append(env.current_seat)
        except ValueError as error:
            if isinstance(error, RecordTooLargeError):
                raise
            raise RecordError(str(error)) from None
        self._env = env  # the one env of this replay, now after the last action
        self._position = len(actions)
        self._action_ids = [env.action_from_text(text) for text in actions]  # read above: cannot raise
        self._call_steps = [call["step"] for call in self.calls]

    @property
    def n_steps(self) -> int:
        return len(self._actors)

    def _seek(self, step: int):
        """The env after ``step`` actions: forward from where it is, or from the snapshot before."""
        env = self._env
        start = step - step % self._stride
        if not start <= self._position <= step:
            env.set_state(self._checkpoints[start // self._stride])
            self._position = start
        while self._position < step:
            env.step(self._action_ids[self._position])
            self._position += 1
        return env

    def frame(self, step: int, seat: int | None) -> dict[str, Any]:
        """Step ``step`` seen by ``seat`` (None: every hand and rule open). Moves the replay's env:
        callers hold the replay's lock."""
        env = self._seek(step)
        base = mao_seat_view(env, 0 if seat is None else seat, self.seats)
        base.update(
            step=step,
            n_steps=self.n_steps,
            view="all" if seat is None else seat,
            over=bool(env.terminations[env.agent_selection] or env.truncations[env.agent_selection]),
        )
        if step == 0:
            base["event"] = "Start of the record."
        else:
            actor, action = self._actors[step - 1], self.record["actions"][step - 1]
            if action.startswith("rule") and seat is not None and seat != actor:
                action = "introduces a new rule"  # which rule is the author's secret
            base["event"] = f"Seat {actor} ({self.seats[actor]}): {action}."
        seen = bisect.bisect_right(self._call_steps, step)
        base["calls"] = self.calls[max(0, seen - CALLS_SHOWN) : seen]
        base["returns"] = list(self.record.get("returns", []))
        if seat is None:
            base["seat"] = None
            base["hand"] = None
            base["hands"] = [
                sorted(env.hand(s), key=mao_cards.CARD_ID.__getitem__) for s in range(env.n_players)
            ]
            base["my_rules"] = []
            base["rules"] = [
                {"rule": rule, "author": author, "description": mao_rules.RULE_DESCRIPTIONS[rule]}
                for rule, author in env.active_rules()
            ]
        else:
            base["hands"] = None
        return base


def make_replay(record: dict[str, Any]) -> MadiaoReplay | MaoReplay:
    return MaoReplay(record) if record["game"] == "mao" else MadiaoReplay(record)
