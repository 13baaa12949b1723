"""Live games of the web app: a person's seat against registered agents, or agents watched; and
the protocol of a game's web module.

The app loops over the registry of games (``madiao_mao.games``) and never names one. What it does
for one game lives in the game's web module, the module its registry entry names in ``web`` (for
a built-in game, ``madiao_mao_web.<game>``), found with ``web_module(name)``. :class:`WebGame`
lists what that module defines: the live game class (a :class:`LiveGame`), the replay of its
records, the record checks, the rules in words, and the page's files (its script, its form on
the home page). A new game is served by writing that one module.

The server owns the env and the agents; the agents move until the person is to act (or the game
ends). ``view()`` is everything the page receives: built only from what the person's seat may
see (its hand, the public table, its legal moves as text, and whatever else its own rules let
that seat know) — never another hand or another seat's secret. ``move(text, version)`` checks
the version and the text against the seat's legal moves before anything changes, so a bad move
raises :class:`MoveError` and leaves the game as it was.

A *watched* game (``watch=True``) has agents in every seat and nobody's secrets to keep: its view
opens every hand (a spectator's, as a replay's "all hands open"), and ``step(version)`` plays one
agent move at a time, at the pace the page asks for. A game is watched or has a person's seat from
its creation on; nothing turns one into the other.

Every view carries ``version`` (the person's moves, or a watched game's steps, so far: a move
names the version it was made against, so a move sent twice, or one chosen from a view that has
since changed, raises :class:`StaleMoveError` instead of playing on the next turn) and ``frames``:
the public table after each move since the previous request that moved, so the page can show the
other seats' moves one at a time.
"""

from __future__ import annotations

import contextlib
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from importlib.resources.abc import Traversable
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from madiao_mao.agents.registry import agent_names, make_agent
from madiao_mao.games import game_names, get_game
from madiao_mao_web.security import echo

if TYPE_CHECKING:
    from madiao_mao_web.replays import Replay

LOG_LENGTH = 400  # log lines or turns kept in a view: a whole match of the built-in games (the page scrolls)
MAX_ACTION_CHARS = 64  # every action text a game reads is shorter (the longest is 25)
FRAMES_KEPT = 200  # the public tables a view replays at most (the latest: a long run of agents' moves)


class MoveError(ValueError):
    """An illegal or unreadable move, or one made when it is not the person's turn (a 4xx)."""


class GameOverError(MoveError):
    """A move sent after the game ended (a 409)."""


class StaleMoveError(MoveError):
    """A move made against another version of the game than the current one (a 409)."""


class GameLiveError(RuntimeError):
    """What only a finished game may show (its record: every hand, every secret rule) was asked
    of a live one (a 409)."""


class GameOptionError(ValueError):
    """A bad parameter for a new game (a 400 naming the parameter)."""


#: An integer as a page sends it in a query string: ASCII digits only (``int()`` would also take
#: "٣", " 3", "3_0"), and not so long that converting it costs anything.
INTEGER_TEXT = re.compile(r"-?[0-9]{1,18}")


def parse_int_text(value: Any) -> int | None:
    """``value`` as an int if it is one or a short string of ASCII digits; None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and INTEGER_TEXT.fullmatch(value):
        return int(value)
    return None


def int_param(name: str, value: Any, low: int, high: int, default: int | None) -> int | None:
    if value is None or value == "":
        return default
    number = parse_int_text(value)
    if number is None or not low <= number <= high:
        raise GameOptionError(f"{name} must be an integer {low}..{high}, got {echo(value)}")
    return number


_TRUE_WORDS = ("1", "true", "yes", "on")  # "on": what a checked HTML checkbox sends
_FALSE_WORDS = ("0", "false", "no", "off")


def bool_param(name: str, value: Any) -> bool:
    if value is None or value == "":
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE_WORDS + _FALSE_WORDS:
        return value.strip().lower() in _TRUE_WORDS
    if type(value) is int and value in (0, 1):
        return bool(value)
    raise GameOptionError(f"{name} must be true or false, got {echo(value)}")


def agent_list(value: Any, game: str, n_agents: int, default: str) -> list[str]:
    """One agent name for every agent seat, or one per agent seat; only registered names."""
    if value is None or value == "" or value == []:
        names = [default]
    elif isinstance(value, str):
        names = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        names = [item.strip() for item in value]
    else:
        raise GameOptionError(f"agents must be a comma-separated string of agent names, got {echo(value)}")
    known = agent_names(game)
    for name in names:
        # model:PATH is not offered: a page must not make the server load files from paths.
        if name not in known:
            raise GameOptionError(
                f"agents: unknown {game} agent {echo(name)}; choose from {', '.join(known)}"
            )
    if len(names) == 1:
        names = names * n_agents
    if len(names) != n_agents:
        raise GameOptionError(
            f"agents takes one name for every agent seat or {n_agents} names, got {len(names)}"
        )
    return names


def build_agent(spec: str, game: str, seed: int | None, env) -> Any:
    with agent_loading([spec]):
        return make_agent(spec, game, seed=seed, env=env)


@contextlib.contextmanager
def agent_loading(specs: Sequence[str]) -> Iterator[None]:
    """An agent that needs an extra not installed here, as the option error the page shows."""
    try:
        yield
    except ImportError as error:
        named = ", ".join(repr(spec) for spec in dict.fromkeys(spec for spec in specs if spec != "you"))
        raise GameOptionError(
            f"agents: {named} cannot be loaded here ({error}); install the train extra"
        ) from None


def seat_and_names(seat: Any, agents: Any, watch: bool, game: str, n_seats: int, default: str):
    """The person's seat (None when watching) and every seat's name ("you" for the person)."""
    if watch:
        if seat not in (None, ""):
            raise GameOptionError("seat: a watched game has agents in every seat (leave seat out)")
        return None, agent_list(agents, game, n_seats, default)
    person = int_param("seat", seat, 0, n_seats - 1, 0)
    names = iter(agent_list(agents, game, n_seats - 1, default))
    return person, ["you" if s == person else next(names) for s in range(n_seats)]


def seed_param(seed: Any) -> int:
    value = int_param("seed", seed, 0, 2**31 - 1, None)
    return random.SystemRandom().randrange(2**31) if value is None else value


class LiveGame(ABC):
    """What every live game shares: the seat, the version counter, the agents' moves, the frames.

    A game's subclass sets the class attributes below, takes its ``parameters`` as keyword
    arguments (each may be None or "": its default; a bad one raises :class:`GameOptionError`),
    sets ``seat`` / ``seat_names`` (``seat_and_names``), ``seed`` (``seed_param``) and ``agents``
    (``build_agent``), calls ``_advance()`` when a person has a seat, and implements the abstract
    hooks: the env's turn, legal actions, observation and step, action texts, ``view()`` (all the
    page receives: only what the person's seat may see) and ``_record()``.
    """

    #: The game's registry name (``madiao_mao.games``).
    game: str
    #: The options ``POST /api/games`` accepts for it (with "game"); "watch" if it can be watched.
    parameters: tuple[str, ...]
    move_example: str  # an action text, for error messages
    #: What one episode is called in messages ("the hand is over").
    episode_word: str = "game"
    #: The file name of the record a person downloads once the game is over
    #: (``GET /api/games/{id}/record``); None: not offered.
    record_file: str | None = None
    seat: int | None
    seed: int
    seat_names: list[str]
    agents: dict[int, Any]

    def __init__(self) -> None:
        self.version = 0
        self.frames: list[dict[str, Any]] = []

    @property
    def watch(self) -> bool:
        return self.seat is None

    @property
    @abstractmethod
    def over(self) -> bool: ...

    @abstractmethod
    def _to_act(self) -> int | None: ...

    def _legal(self) -> list[int]:
        """The person's legal actions: none while watching or while another seat is to act."""
        if self.watch or self._to_act() != self.seat:
            return []
        return [int(action) for action in np.flatnonzero(self._observe(self.seat)["action_mask"])]

    @abstractmethod
    def _step(self, seat: int, action: int) -> None: ...

    def _observe(self, seat: int) -> dict[str, np.ndarray]:
        """``seat``'s observation of the game's AEC env, ``self.env`` (PettingZoo names the seats
        ``player_<seat>``)."""
        return self.env.observe(f"player_{seat}")

    @abstractmethod
    def _action_from_text(self, text: str) -> int: ...

    @abstractmethod
    def _action_text(self, action: int) -> str: ...

    def _add_frame(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)
        del self.frames[:-FRAMES_KEPT]

    def _agent_move(self) -> None:
        seat = self._to_act()
        observation = self._observe(seat)
        action = self.agents[seat].act(observation["observation"], observation["action_mask"])
        self._step(seat, int(action))

    def _advance(self) -> None:
        """Agents move until the person is to act or the game is over."""
        while not self.over and self._to_act() != self.seat:
            self._agent_move()

    def _who(self, seat: int) -> str:
        return "You" if seat == self.seat else f"Seat {seat} ({self.seat_names[seat]})"

    def _check_version(self, version: Any) -> None:
        """Refuse a request made against another version than the current one (409), or after
        the end (409); the version's type was checked before."""
        if self.over:
            raise GameOverError(f"the {self.episode_word} is over: no more moves")
        if version != self.version:
            raise StaleMoveError(
                f"this move was made against version {version} of the game, which is now at version "
                f"{self.version}: the table has changed since (a move sent twice?); nothing was played"
            )

    def move(self, text: Any, version: Any) -> None:
        """Play the person's move ``text`` (an action text) made on the view of ``version``, then
        the agents' moves up to the person's next. Refused before anything changes: not a short
        ASCII string (400), a watched game (400), the game over or a stale version (409), an
        unreadable or illegal move (400)."""
        example = self.move_example
        if not isinstance(text, str):
            kind = type(text).__name__
            raise MoveError(f"action must be a string such as {example!r}, got {kind} {echo(text)}")
        if len(text) > MAX_ACTION_CHARS or not text.isascii():
            raise MoveError(f"cannot read action {echo(text)}: an action is a short text such as {example!r}")
        _check_version_type(version)
        if self.watch:
            raise MoveError("this game is watched: agents play every seat (step it instead)")
        self._check_version(version)
        try:
            action = self._action_from_text(text)
        except (TypeError, ValueError) as error:
            raise MoveError(str(error)) from None
        legal = self._legal()
        if action not in legal:
            texts = ", ".join(self._action_text(a) for a in legal)
            raise MoveError(
                f"illegal move {echo(text)}: your legal moves are {texts or 'none (not your turn)'}"
            )
        self.frames = []
        self.version += 1
        self._step(self.seat, action)
        self._advance()

    def step(self, version: Any) -> None:
        """A watched game: the next agent plays one move, if ``version`` is the current one (the
        same refusals as :meth:`move`: a game with a person's seat is never stepped)."""
        _check_version_type(version)
        if not self.watch:
            raise MoveError("only a watched game is stepped; this one has your seat (send moves)")
        self._check_version(version)
        self.frames = []
        self.version += 1
        self._agent_move()

    @abstractmethod
    def view(self) -> dict[str, Any]:
        """What the page receives: the person's seat's view, or every hand of a watched game."""

    @abstractmethod
    def _record(self) -> dict[str, Any]: ...

    def record(self) -> dict[str, Any]:
        """The game's record (the seed, every hand, every secret rule): once the game is over."""
        if not self.over:
            raise GameLiveError(
                "the game is still being played: its record (the deal, every hand and secret rule) "
                "is given once it is over"
            )
        return self._record()

    @property
    def deal(self) -> frozenset[str]:
        """Fingerprints of the cards the game is dealt from: two games sharing one may show each
        other's hands (a game of another table size or hand size dealt from the same shuffled
        deck), whoever sits where and whatever the other options. A game's subclass fingerprints
        its dealt cards; this default (the game, the seed and the table size) serves a game
        whose deal depends on nothing else."""
        return frozenset({f"{self.game}:seed {self.seed}:seats {len(self.seat_names)}"})


def _check_version_type(version: Any) -> None:
    if isinstance(version, bool) or not isinstance(version, int):
        raise MoveError(f"version must be the integer 'version' of the view moved from, got {echo(version)}")


@runtime_checkable
class WebGame(Protocol):
    """What a game's web module (``madiao_mao_web.<game>``, named by the game's registry entry)
    defines, read by the app, the replays and the page:

    - ``LIVE_GAME``: its :class:`LiveGame` subclass (``game``, ``parameters``, ``move_example``,
      ``episode_word``, ``record_file`` set; see the class). ``POST /api/games`` builds it from the
      request's options; ``/play/<game>`` is served, and ``/watch/<game>`` when "watch" is one of
      its ``parameters``.
    - ``REPLAY``: its :class:`madiao_mao_web.replays.Replay` subclass, built from a checked record.
    - ``read_record(record)``: the record (parsed JSON with ``"game": <game>``) checked by the
      game's own reader, or :class:`madiao_mao_web.replays.RecordError` saying why not.
    - ``record_deal(record)``: the ``LiveGame.deal`` fingerprints a checked record's deal shares
      with live games, or None when a record cannot reveal a live game's secrets; the app refuses
      such a record while a game sharing one with a person's seat is played.
    - ``rule_texts()``: the game's rules in words (JSON), served under its name by ``GET /api/rules``.
    - ``STATIC``: the folder of the game's page files, served at ``/static/games/<game>/``:
      ``SCRIPT`` (loaded after ``app.js``; it calls ``registerGamePage(<game>, page)``, see
      ``static/app.js``), ``STYLESHEET`` (or None), ``PLAY_FORM`` and ``WATCH_FORM`` (HTML
      fragments of the home page, ``{agents}`` replaced by the game's agent names; ``WATCH_FORM``
      may be None).
    - ``PAGE_TITLE``: the game's name in the page's navigation.
    """

    LIVE_GAME: type[LiveGame]
    REPLAY: type[Replay]
    read_record: Callable[[dict[str, Any]], dict[str, Any]]
    record_deal: Callable[[dict[str, Any]], frozenset[str] | None]
    rule_texts: Callable[[], dict[str, Any]]
    STATIC: Traversable
    SCRIPT: str
    STYLESHEET: str | None
    PLAY_FORM: str
    WATCH_FORM: str | None
    PAGE_TITLE: str


#: The names a game's web module must define (``WebGame``'s), the start of its ``__all__``.
WEB_GAME_NAMES: tuple[str, ...] = tuple(WebGame.__annotations__)


def web_module(name: str) -> ModuleType:
    """The web module of the registered game ``name`` (a TypeError if it lacks a ``WebGame`` name)."""
    module = get_game(name).layer("web")
    if not isinstance(module, WebGame):
        missing = [key for key in WebGame.__annotations__ if not hasattr(module, key)]
        raise TypeError(f"{module.__name__} is not a web module of a game: it lacks {', '.join(missing)}")
    return module


def web_modules() -> dict[str, ModuleType]:
    """Every registered game's web module, by name, in the registry's order."""
    return {name: web_module(name) for name in game_names()}


def rule_texts() -> dict[str, Any]:
    """The rules in words of every game, by game name (``GET /api/rules``; views name rules by id,
    so that no view carries card names that are not about its game)."""
    return {name: module.rule_texts() for name, module in web_modules().items()}
