"""Live games and opened replays by random id, bounded in number and in age.

Each entry is reached only through its id (a random URL-safe token of 128 bits), so two browsers
never see each other's games. An entry unused for ``max_idle_seconds`` or older than
``max_age_seconds`` is dropped.

Games and replays are kept apart, so that uploads cannot crowd out players. Each game belongs to
the client that created it (its address: behind a reverse proxy on this machine, the address the
proxy forwards). A client holds at most ``max_games_per_client`` games: its next game evicts one
of its own (finished first, then the one unused the longest, never one moved in the last
``keep_moved_seconds``: then it is refused), so a burst of one client churns its own games and
never another client's. When ``max_games`` games are live, a new game evicts one:
finished games first, then the games of the client holding the most, then the games unused the
longest; a game whose person moved in the last ``keep_moved_seconds`` is never evicted for
another client, and only when every game was moved that recently is a new one refused (the caller
answers 503), which takes ``max_games / max_games_per_client`` clients moving all their games.
When ``max_replays`` replays are open, a new one evicts the replay unused the longest (a replay
is rebuilt by uploading its record again).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MAX_GAMES = 64
DEFAULT_MAX_REPLAYS = 16
DEFAULT_MAX_IDLE_SECONDS = 3600.0
DEFAULT_MAX_AGE_SECONDS = 6 * 3600.0
DEFAULT_KEEP_MOVED_SECONDS = 300.0
DEFAULT_MAX_GAMES_PER_CLIENT = 16


class StoreFullError(RuntimeError):
    """Every live game was moved too recently to be evicted."""


class UnknownGameError(KeyError):
    """No live game with that id (never created, evicted, or expired)."""


@dataclass
class Entry:
    item: Any
    replay: bool
    created: float
    used: float
    client: str = ""
    """The address of the client that created it (games are bounded per client)."""
    moved: float | None = None
    """When the person last moved in this game (None: never); such a game is kept a while."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held while the game moves (or the replay steps): requests of one entry run one at a time."""

    @property
    def finished(self) -> bool:
        return bool(getattr(self.item, "over", False))


class GameStore:
    def __init__(
        self,
        max_games: int = DEFAULT_MAX_GAMES,
        max_idle_seconds: float = DEFAULT_MAX_IDLE_SECONDS,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        *,
        max_replays: int = DEFAULT_MAX_REPLAYS,
        keep_moved_seconds: float = DEFAULT_KEEP_MOVED_SECONDS,
        max_games_per_client: int | None = None,
    ) -> None:
        if max_games_per_client is None:
            max_games_per_client = min(DEFAULT_MAX_GAMES_PER_CLIENT, max_games)
        for name, count in (
            ("max_games", max_games),
            ("max_replays", max_replays),
            ("max_games_per_client", max_games_per_client),
        ):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"{name} must be a positive integer, got {count!r}")
        if max_games_per_client > max_games:
            raise ValueError(f"max_games_per_client ({max_games_per_client}) exceeds max_games ({max_games})")
        for name, value in (
            ("max_idle_seconds", max_idle_seconds),
            ("max_age_seconds", max_age_seconds),
            ("keep_moved_seconds", keep_moved_seconds),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        self.max_games = max_games
        self.max_replays = max_replays
        self.max_games_per_client = max_games_per_client
        self.max_idle_seconds = float(max_idle_seconds)
        self.max_age_seconds = float(max_age_seconds)
        self.keep_moved_seconds = float(keep_moved_seconds)
        self.clock = clock
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()

    def _expired(self, entry: Entry, now: float) -> bool:
        return now - entry.used > self.max_idle_seconds or now - entry.created > self.max_age_seconds

    def _prune(self, now: float) -> None:
        for key in [k for k, e in self._entries.items() if self._expired(e, now)]:
            del self._entries[key]

    def _kept(self, entry: Entry, now: float) -> bool:
        return entry.moved is not None and now - entry.moved < self.keep_moved_seconds

    def _eviction_candidate(self, replay: bool, now: float, client: str) -> str | None:
        """The entry to drop to make room for one more of its kind from ``client``, or None if
        there is room; ``StoreFullError`` if none may go."""
        pool = [(key, entry) for key, entry in self._entries.items() if entry.replay == replay]
        if replay:
            if len(pool) < self.max_replays:
                return None
            return min(pool, key=lambda pair: pair[1].used)[0]
        own = [(key, entry) for key, entry in pool if entry.client == client]
        if len(own) >= self.max_games_per_client:
            pool, whose = own, f"your {self.max_games_per_client}"  # the client's own make room
        elif len(pool) < self.max_games:
            return None
        else:
            whose = f"all {self.max_games}"
        held = Counter(entry.client for _, entry in pool)
        pool = [(key, entry) for key, entry in pool if not self._kept(entry, now)]
        if not pool:
            raise StoreFullError(
                f"{whose} live games were played in the last {self.keep_moved_seconds:g} s; "
                "try again in a few minutes"
            )
        # Finished games first, then those of the client holding the most, then the one unused
        # the longest.
        return min(pool, key=lambda pair: (not pair[1].finished, -held[pair[1].client], pair[1].used))[0]

    def reserve(self, client: str = "") -> None:
        """Raise ``StoreFullError`` now if a new game of ``client`` could not be added (before
        building it)."""
        with self._lock:
            now = self.clock()
            self._prune(now)
            self._eviction_candidate(False, now, client)

    def add(self, item: Any, replay: bool = False, client: str = "") -> str:
        """Keep ``item`` (a replay if ``replay``) for ``client`` and return its new id, evicting
        one if full."""
        with self._lock:
            now = self.clock()
            self._prune(now)
            evicted = self._eviction_candidate(replay, now, client)
            if evicted is not None:
                del self._entries[evicted]
            key = secrets.token_urlsafe(16)
            self._entries[key] = Entry(item=item, replay=replay, created=now, used=now, client=client)
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

    def mark_moved(self, entry: Entry) -> None:
        """The person moved in this game: keep it for ``keep_moved_seconds`` at least."""
        with self._lock:
            entry.moved = entry.used = self.clock()

    def items(self) -> list[Any]:
        """Every live game and replay (a copy of the list: the store may change meanwhile)."""
        with self._lock:
            self._prune(self.clock())
            return [entry.item for entry in self._entries.values()]

    def __len__(self) -> int:
        with self._lock:
            self._prune(self.clock())
            return len(self._entries)
