"""Replays of Mao records (``mao_env.records``): actions from a seeded reset; step ``k`` is the
env after ``k`` actions, replayed through the env. A frame for a seat shows that seat's hand only
and the secret rules it authored; ``view="all"`` opens every hand and every rule.
"""

from __future__ import annotations

import bisect
import time
from typing import Any

from madiao_mao_web import replays
from madiao_mao_web.mao.live import mao_reason_text, mao_seat_view
from madiao_mao_web.replays import RecordError, RecordTooLargeError, Replay, check_deadline
from mao_env import cards as mao_cards
from mao_env import rules as mao_rules
from mao_env.records import BLOCKED_ROUND_TEXT, check_record, deal_fingerprint, replay

CALLS_SHOWN = 400  # the calls up to a frame a replay lists (the latest)


def read_record(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` checked by ``mao_env.records.check_record``."""

    try:
        return check_record(record, "the record")
    except ValueError as error:
        raise RecordError(str(error)) from None


def record_deal(record: dict[str, Any]) -> frozenset[str] | None:
    """The deal a Mao ``record`` with a seed is dealt from, as a live game fingerprints its own
    (``madiao_mao_web.games.LiveGame.deal``): the shuffled decks of its seed at its table size,
    whatever its options. Such a record may share a live game's cards (its seed known to whoever
    chose it): the app refuses it while that game is being played. None without a seed, or for a
    table size that does not replay."""

    n_players = len(record["seats"])
    if record["seed"] is None or not 3 <= n_players <= mao_cards.MAX_PLAYERS:
        return None
    return frozenset({deal_fingerprint(record["seed"], n_players)})


class MaoReplay(Replay):
    """Frames of a Mao record, replayed through the env from a snapshot every
    ``CHECKPOINT_STRIDE`` steps."""

    game = "mao"

    def __init__(self, record: dict[str, Any], max_seconds: float | None = None) -> None:

        self.record = record
        self.seats = list(record["seats"])
        actions = record["actions"]
        if len(actions) > replays.MAX_REPLAY_STEPS:
            raise RecordTooLargeError(
                f"the record has {len(actions)} actions; a replay holds at most {replays.MAX_REPLAY_STEPS}"
            )
        self._stride = replays.CHECKPOINT_STRIDE
        self._checkpoints: list[dict[str, Any]] = []
        self._actors: list[int] = []  # the seat that took each action
        self.calls: list[dict[str, Any]] = []  # every call, with the step it followed
        deadline = time.monotonic() + (replays.MAX_BUILD_SECONDS if max_seconds is None else max_seconds)
        played = None  # the last card played: "the name of the card" a call names
        try:
            for step, env in enumerate(replay(record)):
                if step % self._stride == 0:
                    self._checkpoints.append(env.get_state())
                check_deadline(deadline, step)
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
            if env.game_view.round_blocked:
                base["event"] += f" {BLOCKED_ROUND_TEXT}"
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
