"""Replays of recorded games, step by step, from one seat's view or with all hands open.

Each game's web module replays its own records (``REPLAY``, ``read_record``: see
``madiao_mao_web.games.WebGame``); this module checks what every replay shares: which game a
record is of, the step and view asked, and the costs.

A frame for a seat shows that seat's hand only and hides what that seat does not see (the other
seats' face-down cards, the secret rules it did not author); ``view="all"`` opens every hand.

A replay shows nothing that its record does not determine (the uploader could replay it with the
env), so the secrets of a live game stay safe as long as its record does: the app gives a game's
record (or its replay) only once the game is over and no game of the same deal with a person's
seat is being played, and refuses a record that could be such a game's (:func:`record_deal`).

Costs are bounded: a record holds at most ``MAX_REPLAY_STEPS`` steps (else
:class:`RecordTooLargeError`, a 422) and must replay within ``MAX_BUILD_SECONDS``. The record is
checked once, step by step, on upload, keeping a snapshot every ``CHECKPOINT_STRIDE`` steps only
(an env snapshot of the built-in games is at most 7 KB: every step's would be 140 MB for 20,000
steps, and every step's eight seat views were 1.7 GB); a frame is the nearest snapshot stepped
forward, at most ``CHECKPOINT_STRIDE - 1`` steps (a few milliseconds). The games' replays read
these limits here when they are built.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any

from madiao_mao.games import game_names
from madiao_mao_web.games import parse_int_text, web_module
from madiao_mao_web.security import echo

MAX_REPLAY_STEPS = 20_000  # the built-in games' records: a few hundred steps, a few thousand at most
MAX_BUILD_SECONDS = 15.0  # checking 20,000 steps through the slowest built-in env takes about 1 s
CHECKPOINT_STRIDE = 128


class RecordError(ValueError):
    """An uploaded record that cannot be read or replayed (a 400 with the reason)."""


class RecordTooLargeError(RecordError):
    """A record longer than a replay holds, or too slow to replay (a 422)."""


class Replay(ABC):
    """A game's record, replayed: ``frame(step, seat)`` is the table after ``step`` steps as
    ``seat`` sees it (None: every hand open). Built from a record its game's ``read_record``
    checked; raises :class:`RecordError` (or :class:`RecordTooLargeError`) if it does not replay."""

    #: The game's registry name.
    game: str
    #: The name of the player in each seat.
    seats: list[str]

    @property
    @abstractmethod
    def n_steps(self) -> int: ...

    @abstractmethod
    def frame(self, step: int, seat: int | None) -> dict[str, Any]:
        """The frame of ``step`` (0..n_steps) seen by ``seat``; callers hold the replay's lock."""


def check_deadline(deadline: float, step: int) -> None:
    """Raise :class:`RecordTooLargeError` once a replay being built passes ``deadline`` (checked
    every 256 steps)."""
    if step % 256 == 0 and time.monotonic() > deadline:
        raise RecordTooLargeError(f"the record takes too long to replay (stopped at step {step})")


def load_record(record: Any) -> dict[str, Any]:
    """Check an uploaded record (parsed JSON) with its game's own reader."""
    names = game_names()
    if not isinstance(record, dict) or record.get("game") not in names:
        listed = ", ".join(f'"{name}"' for name in names)
        raise RecordError(f'the file is not a game record ("game" is not one of {listed})')
    return web_module(record["game"]).read_record(record)


def record_deal(record: dict[str, Any]) -> tuple | None:
    """The deal of a live game that ``record`` (checked by ``load_record``) could be the record
    of, as ``madiao_mao_web.games.LiveGame.deal`` names it; None when it cannot be one's."""
    return web_module(record["game"]).record_deal(record)


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


def make_replay(record: dict[str, Any]) -> Replay:
    """The replay of ``record`` (checked by ``load_record``)."""
    return web_module(record["game"]).REPLAY(record)
