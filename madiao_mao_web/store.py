"""Live games (and opened replays) by random id, bounded in number and in age.

Each entry is reached only through its id (a random URL-safe token of 128 bits), so two browsers
never see each other's games. An entry unused for ``max_idle_seconds`` or older than
``max_age_seconds`` is dropped; when ``max_games`` are live, a new one is refused (the caller
answers 503) rather than evicting a game someone is playing.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MAX_GAMES = 64
DEFAULT_MAX_IDLE_SECONDS = 3600.0
DEFAULT_MAX_AGE_SECONDS = 6 * 3600.0


class StoreFullError(RuntimeError):
    """As many games as allowed are live."""


class UnknownGameError(KeyError):
    """No live game with that id (never created, finished long ago, or expired)."""


@dataclass
class Entry:
    item: Any
    created: float
    used: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while the game moves: requests of one game run one at a time."""


class GameStore:
    def __init__(
        self,
        max_games: int = DEFAULT_MAX_GAMES,
        max_idle_seconds: float = DEFAULT_MAX_IDLE_SECONDS,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(max_games, bool) or not isinstance(max_games, int) or max_games < 1:
            raise ValueError(f"max_games must be a positive integer, got {max_games!r}")
        for name, value in (("max_idle_seconds", max_idle_seconds), ("max_age_seconds", max_age_seconds)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        self.max_games = max_games
        self.max_idle_seconds = float(max_idle_seconds)
        self.max_age_seconds = float(max_age_seconds)
        self.clock = clock
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()

    def _expired(self, entry: Entry, now: float) -> bool:
        return now - entry.used > self.max_idle_seconds or now - entry.created > self.max_age_seconds

    def _prune(self, now: float) -> None:
        for key in [k for k, e in self._entries.items() if self._expired(e, now)]:
            del self._entries[key]

    def reserve(self) -> None:
        """Raise ``StoreFullError`` now if a new entry could not be added (before building a game)."""
        with self._lock:
            self._prune(self.clock())
            if len(self._entries) >= self.max_games:
                raise StoreFullError(
                    f"too many live games ({self.max_games}); finished games expire after "
                    f"{self.max_idle_seconds:g} s unused"
                )

    def add(self, item: Any) -> str:
        with self._lock:
            now = self.clock()
            self._prune(now)
            if len(self._entries) >= self.max_games:
                raise StoreFullError(
                    f"too many live games ({self.max_games}); finished games expire after "
                    f"{self.max_idle_seconds:g} s unused"
                )
            key = secrets.token_urlsafe(16)
            self._entries[key] = Entry(item=item, created=now, used=now)
            return key

    def get(self, key: str) -> Entry:
        with self._lock:
            now = self.clock()
            self._prune(now)
            entry = self._entries.get(key)
            if entry is None:
                raise UnknownGameError(key)
            entry.used = now
            return entry

    def __len__(self) -> int:
        with self._lock:
            self._prune(self.clock())
            return len(self._entries)
