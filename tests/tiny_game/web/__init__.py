"""High card in the web app: the game's web module (``madiao_mao_web.games.WebGame``).

A seat sees its own card and the others' moves; every card is shown once all three have acted.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np

from madiao_mao_web import replays
from madiao_mao_web.games import LiveGame, bool_param, build_agent, seat_and_names, seed_param
from madiao_mao_web.replays import RecordError, RecordTooLargeError, Replay
from tests.tiny_game.env import ACTION_NAMES, N_CARDS, N_SEATS, NOT_ACTED, raw_env

GAME = "tiny"


def _actions_text(actions: np.ndarray) -> list[str | None]:
    return [None if action == NOT_ACTED else ACTION_NAMES[action] for action in actions]


class HighCardGame(LiveGame):
    game = GAME
    parameters = ("seat", "agents", "seed", "watch")
    move_example = "play"

    def __init__(self, *, seat: Any = None, agents: Any = None, seed: Any = None, watch: Any = None) -> None:
        super().__init__()
        watched = bool_param("watch", watch)
        self.seat, self.seat_names = seat_and_names(seat, agents, watched, self.game, N_SEATS, "threshold")
        self.seed = seed_param(seed)
        self.env = raw_env()
        self.agents = {
            s: build_agent(self.seat_names[s], self.game, self.seed + s, self.env)
            for s in range(N_SEATS)
            if s != self.seat
        }
        self.env.reset(seed=self.seed)
        self.moves: list[int] = []
        if not self.watch:
            self._advance()

    @property
    def over(self) -> bool:
        return all(self.env.terminations.values())

    def _to_act(self) -> int | None:
        return None if self.over else self.env.seat

    def _action_from_text(self, text: str) -> int:
        if text not in ACTION_NAMES:
            raise ValueError(f"a move is one of {', '.join(ACTION_NAMES)}, got {text!r}")
        return ACTION_NAMES.index(text)

    def _action_text(self, action: int) -> str:
        return ACTION_NAMES[action]

    def _step(self, seat: int, action: int) -> None:
        self.env.step(action)
        self.moves.append(action)
        self._add_frame(
            {"moves": _actions_text(self.env.actions), "text": f"{self._who(seat)}: {ACTION_NAMES[action]}."}
        )

    def _cards_seen(self) -> list[int | None]:
        if self.over or self.watch:
            return [int(card) for card in self.env.cards]
        return [int(card) if s == self.seat else None for s, card in enumerate(self.env.cards)]

    def view(self) -> dict[str, Any]:
        cards = self._cards_seen()
        return {
            "game": self.game,
            "seat": self.seat,
            "seats": [{"seat": s, "name": name} for s, name in enumerate(self.seat_names)],
            "hands": [[] if card is None else [card] for card in cards],
            "moves": _actions_text(self.env.actions),
            "to_act": self._to_act(),
            "legal": [ACTION_NAMES[a] for a in self._legal()],
            "watch": self.watch,
            "version": self.version,
            "frames": self.frames,
            "over": self.over,
            "payoffs": [float(self.env.rewards[a]) for a in self.env.possible_agents] if self.over else None,
        }

    def _record(self) -> dict[str, Any]:
        return {"game": self.game, "seed": self.seed, "seats": self.seat_names, "actions": self.moves}


class HighCardReplay(Replay):
    game = GAME

    def __init__(self, record: dict[str, Any]) -> None:
        self.seats = list(record["seats"])
        if len(record["actions"]) > replays.MAX_REPLAY_STEPS:
            raise RecordTooLargeError(f"a replay holds at most {replays.MAX_REPLAY_STEPS} steps")
        env = raw_env()
        env.reset(seed=record["seed"])
        self.cards = [int(card) for card in env.cards]
        self.tables = [_actions_text(env.actions)]
        try:
            for action in record["actions"]:
                env.step(action)
                self.tables.append(_actions_text(env.actions))
        except ValueError as error:
            raise RecordError(f"the record's actions do not replay: {error}") from None

    @property
    def n_steps(self) -> int:
        return len(self.tables) - 1

    def frame(self, step: int, seat: int | None) -> dict[str, Any]:
        return {
            "game": self.game,
            "step": step,
            "n_steps": self.n_steps,
            "view": "all" if seat is None else seat,
            "event": f"Move {step}.",
            "moves": self.tables[step],
            "cards": [card if seat is None or s == seat else None for s, card in enumerate(self.cards)],
        }


def read_record(record: dict[str, Any]) -> dict[str, Any]:
    seats, actions, seed = record.get("seats"), record.get("actions"), record.get("seed")
    if not (isinstance(seats, list) and len(seats) == N_SEATS and all(isinstance(s, str) for s in seats)):
        raise RecordError(f"a high-card record names {N_SEATS} seats")
    if not (isinstance(actions, list) and len(actions) <= N_SEATS and all(a in (0, 1, 2) for a in actions)):
        raise RecordError("a high-card record's actions are at most three of 0, 1, 2")
    if not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
        raise RecordError("a high-card record's seed is an integer >= 0")
    return record


def record_deal(record: dict[str, Any]) -> None:
    return None  # a record holds the seed, not the deal: nothing of a live game to compare it with


def rule_texts() -> dict[str, Any]:
    return {"cards": N_CARDS, "moves": list(ACTION_NAMES)}


LIVE_GAME = HighCardGame
REPLAY = HighCardReplay
STATIC = resources.files(__name__) / "static"
SCRIPT = "page.js"
STYLESHEET = None
PLAY_FORM = "play.html"
WATCH_FORM = None
PAGE_TITLE = "High card"
