"""Live games of the web app: a person's seat against registered agents, or agents watched.

The server owns the env (``madiao_v0.raw_env`` / ``mao_v0.raw_env``) and the agents; the agents
move until the person is to act (or the game ends). ``view()`` is everything the page receives:
built only from what the person's seat may see (its hand, the public table, its legal moves as
text, the secret rules it authored and those refused to it as already in force) — never another
hand, another seat's face-down card or any other secret rule. ``move(text, version)`` checks the
version and the text against the seat's legal moves before anything changes, so a bad move raises
:class:`MoveError` and leaves the game as it was.

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

import random
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.registry import agent_names, make_agent
from madiao_env import cards as madiao_cards
from madiao_env import payments as madiao_payments
from madiao_env import reference as madiao_reference
from madiao_mao_web.security import echo
from mao_env import cards as mao_cards
from mao_env import core as mao_core
from mao_env import rules as mao_rules
from mao_env.env import describe_call

MADIAO_DEFAULT_AGENT = "heuristic"
MAO_DEFAULT_AGENT = "base"
MAO_DEFAULT_PLAYERS = 4
MAO_DEFAULT_ROUNDS = 3
MAO_MAX_HAND_SIZE = 10
MAO_CALL_MODES = ("master", "players")
LOG_LENGTH = 60  # log lines (Madiao) and turns (Mao) kept in a view (the page shows the latest)
MAX_ACTION_CHARS = 64  # every action text either game reads is shorter (the longest is 25)
FRAMES_KEPT = 200  # the public tables a view replays at most (the latest: a long run of agents' moves)
REDEAL_EXPLANATION = (
    "You hold five or more cards of one suit, so you may ask for a redeal: every hand is dealt "
    "again and the banker stays. Pass to play the cards you hold."
)


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


def _int_param(name: str, value: Any, low: int, high: int, default: int | None) -> int | None:
    if value is None or value == "":
        return default
    number = parse_int_text(value)
    if number is None or not low <= number <= high:
        raise GameOptionError(f"{name} must be an integer {low}..{high}, got {echo(value)}")
    return number


_TRUE_WORDS = ("1", "true", "yes", "on")  # "on": what a checked HTML checkbox sends
_FALSE_WORDS = ("0", "false", "no", "off")


def _bool_param(name: str, value: Any) -> bool:
    if value is None or value == "":
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE_WORDS + _FALSE_WORDS:
        return value.strip().lower() in _TRUE_WORDS
    if type(value) is int and value in (0, 1):
        return bool(value)
    raise GameOptionError(f"{name} must be true or false, got {echo(value)}")


def _agent_list(value: Any, game: str, n_agents: int, default: str) -> list[str]:
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


def _build_agent(spec: str, game: str, seed: int | None, env) -> Any:
    try:
        return make_agent(spec, game, seed=seed, env=env)
    except ImportError as error:
        raise GameOptionError(
            f"agents: {spec!r} cannot be loaded here ({error}); install the train extra"
        ) from None


def _seat_and_names(seat: Any, agents: Any, watch: bool, game: str, n_seats: int, default: str):
    """The person's seat (None when watching) and every seat's name ("you" for the person)."""
    if watch:
        if seat not in (None, ""):
            raise GameOptionError("seat: a watched game has agents in every seat (leave seat out)")
        return None, _agent_list(agents, game, n_seats, default)
    person = _int_param("seat", seat, 0, n_seats - 1, 0)
    names = iter(_agent_list(agents, game, n_seats - 1, default))
    return person, ["you" if s == person else next(names) for s in range(n_seats)]


def _seed_param(seed: Any) -> int:
    value = _int_param("seed", seed, 0, 2**31 - 1, None)
    return random.SystemRandom().randrange(2**31) if value is None else value


class LiveGame(ABC):
    """What both games share: the seat, the version counter, the agents' moves, the frames."""

    game: str
    move_example: str  # an action text, for error messages
    seat: int | None
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

    @abstractmethod
    def _legal(self) -> list[int]: ...

    @abstractmethod
    def _step(self, seat: int, action: int) -> None: ...

    @abstractmethod
    def _observe(self, seat: int) -> dict[str, np.ndarray]: ...

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
            raise GameOverError(f"the {'hand' if self.game == 'madiao' else 'game'} is over: no more moves")
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
    def deal(self) -> tuple[str, int, int]:
        """What fixes the game's deals: two games alike in it are dealt the same cards (and, in
        Mao, the same starting table), whoever sits where and whatever the other options."""
        return self.game, self.seed, len(self.seat_names)


def _check_version_type(version: Any) -> None:
    if isinstance(version, bool) or not isinstance(version, int):
        raise MoveError(f"version must be the integer 'version' of the view moved from, got {echo(version)}")


# ============================================================================ Madiao


def madiao_card(name: str) -> dict[str, str]:
    card = madiao_cards.CARD_ID[name]
    return {
        "name": name,
        "chinese": madiao_cards.CARD_CHINESE[card],
        "suit": madiao_cards.SUIT_LETTERS[int(madiao_cards.CARD_SUIT[card])],
    }


def madiao_sorted(names: Sequence[str]) -> list[str]:
    """Grouped by suit, strongest first within a suit (as the terminal game shows a hand)."""
    return sorted(
        names,
        key=lambda n: (madiao_cards.CARD_SUIT[madiao_cards.CARD_ID[n]], -madiao_cards.CARD_ID[n]),
    )


def madiao_role(seat: int, banker: int) -> str:
    return ("banker", "dealer", "opposite", "shuffler")[(seat - banker) % 4]


def _card_words(name: str) -> str:
    return f"{madiao_cards.CARD_CHINESE[madiao_cards.CARD_ID[name]]} {name}"


def madiao_trick_view(plays: Sequence[tuple[int, str, bool]], seat: int | None) -> dict[str, Any]:
    """A trick as a seat sees it: the plays (another seat's face-down card a back), the suit led
    and the seat whose card is winning it (best face-up card of the suit led, no trumps)."""
    if not plays:
        return {"plays": [], "led_suit": None, "winning_seat": None}
    trick = [madiao_reference.Play(s, madiao_cards.CARD_ID[name], up) for s, name, up in plays]
    winning = madiao_reference.trick_winner(trick)
    led = madiao_cards.SUIT_NAMES[int(madiao_cards.CARD_SUIT[trick[0].card])]
    return {
        "plays": [
            {
                "seat": s,
                "face_up": bool(up),
                # Another seat's face-down card is a back: no name, no Chinese name.
                "card": madiao_card(name) if up or seat is None or s == seat else None,
                "winning": s == winning,
            }
            for s, name, up in plays
        ],
        "led_suit": led,
        "winning_seat": winning,
    }


def madiao_settlement_view(lines: Sequence[dict[str, Any]], payoffs: Sequence[float], banker: int) -> dict:
    """A settlement by rule: each rule's payments (in the order the env settled them; the rule's
    spoken name and explanation are in :func:`rule_texts`), and every seat's payoff."""
    rules: dict[str, dict[str, Any]] = {}
    for line in lines:
        entry = rules.setdefault(line["rule"], {"rule": line["rule"], "payments": []})
        entry["payments"].append(
            {"payer": int(line["payer"]), "payee": int(line["payee"]), "stakes": float(line["stakes"])}
        )
    return {"banker": banker, "rules": list(rules.values()), "payoffs": [float(p) for p in payoffs]}


def rule_texts() -> dict[str, Any]:
    """The rules in words, the same for every game (``GET /api/rules``; views name rules by id, so
    that no view carries card names that are not about its game): Madiao's payment rules by name,
    Mao's rule families and library rules."""
    return {
        "madiao": {
            "payments": [
                {"rule": rule, "name": name, "explanation": explanation}
                for rule, name, explanation in zip(
                    madiao_payments.RULE_NAMES,
                    madiao_payments.SPOKEN_NAMES,
                    madiao_payments.EXPLANATIONS,
                    strict=True,
                )
            ]
        },
        "mao": {
            "families": [
                {"title": title, "explanation": explanation}
                for title, explanation in zip(
                    mao_rules.FAMILY_TITLES, mao_rules.FAMILY_EXPLANATIONS, strict=True
                )
            ],
            "rules": [
                {
                    "action": mao_cards.action_to_text(mao_cards.CHOOSE_RULE_0 + rule, mao_rules.N_RULES),
                    "family": int(mao_rules.RULE_FAMILY[rule]),
                    "description": mao_rules.RULE_DESCRIPTIONS[rule],
                }
                for rule in range(mao_rules.N_RULES)
            ],
        },
    }


class _EpisodeResult:
    """What ``madiao_env.records.make_record`` reads of the game played."""

    def __init__(self, returns: Sequence[float], events: list[dict], seats: list[str]) -> None:
        self.returns = np.asarray(returns, dtype=np.float64)
        self.events = events
        self.seats = seats


class MadiaoGame(LiveGame):
    """A Madiao hand, or a match (``match=True``: every seat banker once, running totals): the
    person in ``seat`` and agents in the other three, or agents in all four (``watch=True``)."""

    game = "madiao"
    move_example = "play 9S"

    def __init__(
        self, *, seat: Any = None, agents: Any = None, seed: Any = None, match: Any = None, watch: Any = None
    ) -> None:
        from madiao_env import madiao_v0
        from madiao_env.records import EventRecorder

        super().__init__()
        self.match = _bool_param("match", match)
        self.seat, self.seat_names = _seat_and_names(
            seat, agents, _bool_param("watch", watch), "madiao", 4, MADIAO_DEFAULT_AGENT
        )
        self.seed = _seed_param(seed)
        self.env_kwargs = {"episode": "match"} if self.match else {}
        self.env = madiao_v0.raw_env(**self.env_kwargs)
        self.agents = {
            s: _build_agent(self.seat_names[s], "madiao", self.seed + s, self.env)
            for s in range(4)
            if s != self.seat
        }
        for agent in self.agents.values():
            agent.reset()
        self.env.reset(seed=self.seed)
        self.log: list[str] = []
        self.settlements: list[dict[str, Any]] = []
        self.totals = [0.0] * 4
        # The public table as the events tell it (the env may have dealt the next hand in the
        # step that ended this one: its table is then already the next deal's).
        self._hands: list[list[str]] = [[], [], [], []]
        self._banker = 0
        self._upcard: str | None = None
        self._trick: list[tuple[int, str, bool]] = []
        self._last_trick: dict[str, Any] | None = None
        self._tricks_won = [0, 0, 0, 0]
        self._hand_number = 0
        self._recorder = EventRecorder(self.env, self._on_event)
        self._recorder.deal()
        if not self.watch:
            self._advance()

    # ------------------------------------------------------------------ playing
    @property
    def over(self) -> bool:
        return all(self.env.terminations.values()) or all(self.env.truncations.values())

    def _to_act(self) -> int | None:
        return None if self.over else int(self.env.agent_selection.rsplit("_", 1)[1])

    def _observe(self, seat: int) -> dict[str, np.ndarray]:
        return self.env.observe(f"player_{seat}")

    def _legal(self) -> list[int]:
        if self.watch or self._to_act() != self.seat:
            return []
        return [int(a) for a in np.flatnonzero(self._observe(self.seat)["action_mask"])]

    def _action_from_text(self, text: str) -> int:
        return madiao_cards.text_to_action(text)

    def _action_text(self, action: int) -> str:
        return madiao_cards.action_to_text(action)

    def _step(self, seat: int, action: int) -> None:
        self.env.step(int(action))
        self._recorder.step(seat, int(action))

    # ------------------------------------------------------------------ what happened, in words
    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        trick_winner = None
        if kind == "deal":
            self._hands = [list(h) for h in event["hands"]]
            self._banker = int(event["banker"])
            self._upcard = event["stock"][0]
            self._trick, self._last_trick, self._tricks_won = [], None, [0, 0, 0, 0]
            self._hand_number = int(event["hand_number"])
            banker = "you are" if self._banker == self.seat else f"{self._who(self._banker)} is"
            if event["redeals"]:
                text = f"Cards dealt again (redeal {event['redeals']}); {banker} still the banker."
            else:
                text = f"Hand {self._hand_number + 1} dealt; {banker} the banker."
        elif kind == "move":
            seat, (verb, _, card) = int(event["seat"]), event["text"].partition(" ")
            if card:
                self._hands[seat].remove(card)
                self._trick.append((seat, card, verb == "play"))
            text = self._move_text(seat, verb, card)
        elif kind == "trick":
            trick_winner = int(event["winner"])
            self._tricks_won = [int(t) for t in event["tricks_won"]]
            winning = next(name for s, name, _ in self._trick if s == trick_winner)
            self._last_trick = {
                "number": int(event["trick"]) + 1,
                "winner": trick_winner,
                **madiao_trick_view(self._trick, self.seat),
            }
            wins = "win" if trick_winner == self.seat else "wins"
            number = int(event["trick"]) + 1
            text = f"{self._who(trick_winner)} {wins} trick {number} with {_card_words(winning)}."
        else:  # a settlement
            payoffs = [float(p) for p in event["payoffs"]]
            self.totals = [t + p for t, p in zip(self.totals, payoffs, strict=True)]
            settled = madiao_settlement_view(event["lines"], payoffs, self._banker)
            settled["hand_number"] = int(event["hand_number"])
            self.settlements.append(settled)
            text = f"Hand {int(event['hand_number']) + 1} settled: " + self._result_words(payoffs)
        self.log.append(text)
        del self.log[:-LOG_LENGTH]
        frame = self._table(self._trick, trick_winner, with_hand=self.watch)
        frame["text"] = text
        self._add_frame(frame)
        if kind == "trick":
            self._trick = []

    def _move_text(self, seat: int, verb: str, card: str) -> str:
        who = self._who(seat)
        you = seat == self.seat
        if verb == "redeal":
            return f"{who}: redeal! (five or more cards of one suit)"
        if verb == "pass":
            return f"{who}: pass (no redeal)."
        if verb == "slough":
            shown = f" {_card_words(card)}" if you or self.watch else " a card"
            return f"{who} slough{'' if you else 's'}{shown} face down."
        if len(self._trick) == 1:
            return f"{who} lead{'' if you else 's'} {_card_words(card)}."
        return f"{who} capture{'' if you else 's'} with {_card_words(card)}."

    def _result_words(self, payoffs: Sequence[float]) -> str:
        if self.watch:
            return ", ".join(f"seat {s} {_signed(p)}" for s, p in enumerate(payoffs)) + " stakes."
        return result_sentence(payoffs[self.seat])

    # ------------------------------------------------------------------ the seat's view
    def _table(
        self, trick: list[tuple[int, str, bool]], trick_winner: int | None, with_hand: bool = True
    ) -> dict[str, Any]:
        """The public table now, and with ``with_hand`` the viewer's own hand (every hand when
        watched). A frame has no hand of the person's: a hand held before a redeal is not theirs
        now, and those cards may lie in another hand (the page shows the hand it had)."""
        banker = self._banker
        view: dict[str, Any] = {
            "seats": [
                {
                    "seat": s,
                    "name": self.seat_names[s],
                    "role": madiao_role(s, banker),
                    "side": "banker" if s == banker else "player",
                    "tricks_won": self._tricks_won[s],
                    "cards": len(self._hands[s]),
                }
                for s in range(4)
            ],
            "banker": banker,
            "upcard": madiao_card(self._upcard) if self._upcard else None,
            "hand_number": self._hand_number,
            "trick": madiao_trick_view(trick, self.seat) | {"winner": trick_winner},
            "last_trick": self._last_trick,
            "totals": list(self.totals),
        }
        if self.watch:
            view["hands"] = [[madiao_card(n) for n in madiao_sorted(hand)] for hand in self._hands]
        elif with_hand:
            view["hand"] = [madiao_card(n) for n in madiao_sorted(self._hands[self.seat])]
        return view

    def view(self) -> dict[str, Any]:
        legal = [madiao_cards.action_to_text(a) for a in self._legal()]
        table = self.env.table()
        view = self._table(self._trick, None) | {
            "game": "madiao",
            "mode": "match" if self.match else "hand",
            "watch": self.watch,
            "version": self.version,
            "seat": self.seat,
            "first": table["first"],
            "phase": table["phase"],
            "to_act": self._to_act(),
            "trick_number": min(sum(self._tricks_won) + 1, madiao_cards.N_TRICKS),
            "legal": legal,
            "decision": REDEAL_EXPLANATION if "redeal" in legal else None,
            "frames": self.frames,
            "log": self.log,
            "over": self.over,
            "settlements": self.settlements,
        }
        return view

    def _record(self) -> dict[str, Any]:
        """``madiao_env.records``' format, as ``match --record`` writes."""
        from madiao_env.records import make_record

        result = _EpisodeResult(self.totals, self._recorder.events, self.seat_names)
        return make_record(self.seat_names, self.env_kwargs, self.seed, [result])


def _signed(number: float) -> str:
    text = f"{number:+g}"
    return "0" if number == 0 else text


def result_sentence(stakes: float) -> str:
    """ "You won 3 stakes." from the person's payoff."""
    amount = f"{abs(stakes):g} stake{'' if abs(stakes) == 1 else 's'}"
    if stakes > 0:
        return f"you won {amount}."
    if stakes < 0:
        return f"you lost {amount}."
    return "you broke even."


# ============================================================================ Mao


def mao_phrase_text(key: str, card: str | None) -> str:
    """A phrase as said at the table: "the name of the card" is the card's name ("Nine of spades")."""
    phrase = mao_cards.PHRASE_KEYS.index(key)
    if phrase == mao_cards.CARD_NAME:
        if card is None:
            return "the name of the card"
        return mao_cards.long_card_name(mao_cards.CARD_ID[card]).capitalize()
    return mao_cards.PHRASES[phrase]


def mao_reason_text(reason_key: str, card: str | None) -> str:
    """A call reason as the Mao Master says it, the card's name written out."""
    reason = mao_cards.call_reason_id(reason_key)
    if reason < mao_cards.N_PHRASES:
        return f"Failure to say '{mao_phrase_text(mao_cards.PHRASE_KEYS[reason], card)}'"
    code = {
        mao_cards.CALL_REASON_BAD_CARD: mao_core.CALL_BAD_CARD,
        mao_cards.CALL_REASON_TALKING: mao_core.CALL_TALKING,
        mao_cards.CALL_REASON_MAO: mao_core.CALL_MAO,
    }[reason]
    return describe_call(code, -1)


def _cards_words(n: int) -> str:
    return f"{n} card{'' if n == 1 else 's'}"


class MaoGame(LiveGame):
    """A Mao game of ``rounds`` rounds: the person in ``seat``, agents in the others, or agents in
    every seat (``watch=True``); ``calls="players"`` is the players' calls variant."""

    game = "mao"
    move_example = "play 9D"

    def __init__(
        self,
        *,
        seat: Any = None,
        agents: Any = None,
        players: Any = None,
        rounds: Any = None,
        seed: Any = None,
        hand_size: Any = None,
        calls: Any = None,
        watch: Any = None,
    ) -> None:
        from mao_env import mao_v0

        super().__init__()
        n_players = _int_param("players", players, 3, mao_cards.MAX_PLAYERS, MAO_DEFAULT_PLAYERS)
        self.seat, self.seat_names = _seat_and_names(
            seat, agents, _bool_param("watch", watch), "mao", n_players, MAO_DEFAULT_AGENT
        )
        self.rounds = _int_param("rounds", rounds, 1, 20, MAO_DEFAULT_ROUNDS)
        self.seed = _seed_param(seed)
        hand_size = _int_param("hand_size", hand_size, 1, MAO_MAX_HAND_SIZE, None)
        if calls in (None, ""):
            calls = "master"
        if calls not in MAO_CALL_MODES:
            raise GameOptionError(f"calls must be 'master' or 'players', got {echo(calls)}")
        self.env = mao_v0.raw_env(n_players, num_rounds=self.rounds, calls=calls)
        self.agents = {
            s: _build_agent(self.seat_names[s], "mao", self.seed + s, self.env)
            for s in range(n_players)
            if s != self.seat
        }
        for agent in self.agents.values():
            agent.reset()
        self.options = self._deal_options(hand_size)
        self.env.reset(seed=self.seed, options=self.options)
        self.actions: list[str] = []
        self.returns = [0.0] * n_players
        self.rounds_won = [0] * n_players
        self.penalty_cards = [0] * n_players
        self.turns: list[dict[str, Any]] = []
        self._events_seen = self.env.game_view.n_events
        if not self.watch:
            self._advance()

    def _deal_options(self, hand_size: int | None) -> dict | None:
        """Scenario options dealing ``hand_size`` cards a seat (short rounds), from the seed."""
        if hand_size is None:
            return None
        n_decks = mao_cards.n_decks_for(self.env.n_players)
        deck = [c for c in mao_cards.CARD_NAMES for _ in range(n_decks * (2 if c == "JK" else 1))]
        random.Random(self.seed).shuffle(deck)
        return {"hands": {s: [deck.pop() for _ in range(hand_size)] for s in range(self.env.n_players)}}

    # ------------------------------------------------------------------ playing
    @property
    def over(self) -> bool:
        name = self.env.agent_selection
        return bool(self.env.terminations[name] or self.env.truncations[name])

    def _to_act(self) -> int | None:
        return None if self.over else self.env.current_seat

    def _observe(self, seat: int) -> dict[str, np.ndarray]:
        return self.env.observe(f"player_{seat}")

    def _legal(self) -> list[int]:
        if self.watch or self._to_act() != self.seat:
            return []
        return [int(a) for a in np.flatnonzero(self._observe(self.seat)["action_mask"])]

    def _action_from_text(self, text: str) -> int:
        return self.env.action_from_text(text)

    def _action_text(self, action: int) -> str:
        return self.env.describe_action(action)

    def _step(self, seat: int, action: int) -> None:
        text = self.env.describe_action(action)
        self.actions.append(text)
        self.env.step(int(action))
        # A proposal of a rule in force is refused to the proposer alone (the env changes nothing
        # else, and the other seats do not learn a proposal was refused): the person reads it only
        # if it was theirs, or as a spectator.
        rule = action - mao_cards.CHOOSE_RULE_0
        refused = rule >= 0 and rule in self.env.refused_rules(seat)
        if refused and not (seat == self.seat or self.watch):
            return
        self._note_action(seat, action, text, refused)
        winner = self.env.round_won_by
        options = self.env.options
        for other, name in enumerate(self.env.possible_agents):
            reward = float(self.env.rewards.get(name, 0.0))
            self.returns[other] += reward
            if other == winner:
                self.rounds_won[other] += 1
                reward -= options.win_reward
            self.penalty_cards[other] += round(reward / options.penalty_card_reward)
        for call in self.env.last_calls:
            self._note_call(call)
        self._note_events()
        frame = self._table()
        if not self.watch:  # the hand the person held then (the page shows the hand it had)
            del frame["hand"]
        frame["text"] = self._frame_text(seat, action, text, refused)
        self._add_frame(frame)

    # ------------------------------------------------------------------ the turns, in words
    def _turn_of(self, seat: int) -> dict[str, Any]:
        """The turn ``seat`` is playing: its open turn, or a new one."""
        last = self.turns[-1] if self.turns else None
        if last is None or last["kind"] != "turn" or last["seat"] != seat or last["ended"]:
            last = {
                "kind": "turn",
                "seat": seat,
                "who": self._who(seat),
                "played": None,
                "drew": 0,
                "phrases": [],
                "calls": [],
                "notes": [],
                "ended": False,
            }
            self.turns.append(last)
            del self.turns[:-LOG_LENGTH]
        return last

    def _judged_turn(self) -> dict[str, Any] | None:
        return next((t for t in reversed(self.turns) if t["kind"] == "turn"), None)

    def _note_action(self, seat: int, action: int, text: str, refused: bool) -> None:
        if action <= mao_cards.END_TURN:
            turn = self._turn_of(seat)
            if action < mao_cards.DRAW:
                turn["played"] = text.split()[1]
            elif action == mao_cards.DRAW:
                turn["drew"] += 1
            elif action < mao_cards.END_TURN:
                turn["phrases"].append(mao_phrase_text(text.split()[1], turn["played"]))
            else:
                turn["ended"] = True
        elif action == mao_cards.POINT_OF_ORDER:
            turn = self._judged_turn()
            if turn is not None:
                turn["notes"].append(
                    f"{self._who(seat)}: point of order! The calls on this turn are settled now."
                )
        elif action >= mao_cards.CHOOSE_RULE_0:
            rule = action - mao_cards.CHOOSE_RULE_0
            # Which rule is the author's secret: only its author (or a spectator) reads it.
            known = seat == self.seat or self.watch
            self.turns.append(
                {
                    "kind": "rule",
                    "seat": seat,
                    "who": self._who(seat),
                    "rule": mao_rules.RULE_DESCRIPTIONS[rule] if known else None,
                    "refused": refused,  # only ever true for the person's own proposals (or watched)
                }
            )

    def _note_call(self, call: dict[str, Any]) -> None:
        """A call, attached to the turn it judges, written out: who called what, the verdict."""
        turn = self._judged_turn()
        taker = int(call["player"].rsplit("_", 1)[1])
        caller = None if call["caller"] is None else int(call["caller"].rsplit("_", 1)[1])
        card = turn["played"] if turn else None
        if call["bad_call"]:
            said = mao_reason_text(call["called"], card)
        elif call.get("code") == mao_core.CALL_FAILURE_TO_SAY:
            said = mao_reason_text(f"failure {call['phrase']}", card)
        else:
            said = call["call"]
        entry = {
            "caller": caller,
            "caller_name": "Mao Master" if caller is None else self._who(caller),
            "said": said,
            "bad_call": bool(call["bad_call"]),
            "seat": taker,
            "taker": self._who(taker),
            "cards": int(call["cards"]),
        }
        if turn is not None:
            turn["calls"].append(entry)

    def _note_events(self) -> None:
        total = self.env.game_view.n_events
        new = total - self._events_seen
        self._events_seen = total
        if new <= 0:
            return
        for event in self.env.public_events()[-new:]:
            if event["kind"] not in ("play", "bad card", "draw"):
                continue  # calls, points of order and new rules are noted from the actions
            turn = next(
                (t for t in reversed(self.turns) if t["kind"] == "turn" and t["seat"] == event["seat"]), None
            )
            if turn is None:
                continue
            notes = turn["notes"]
            if event["kind"] == "bad card":
                notes.append("The card is taken back (bad card).")
            if event["chain_cards"]:
                notes.append(f"{turn['who']} took {_cards_words(event['chain_cards'])} for the sevens.")
            if event["forced_draw"]:
                notes.append(f"{self._who(event['forced_seat'])} takes {_cards_words(event['forced_draw'])}.")
            if event["named_suit"]:
                notes.append(f"The suit is now {event['named_suit']}.")
            if event["won"]:
                notes.append(f"{turn['who']} won the round!")

    def _frame_text(self, seat: int, action: int, text: str, refused: bool) -> str:
        who = self._who(seat)
        you = seat == self.seat
        if action < mao_cards.DRAW:
            return f"{who} play{'' if you else 's'} {text.split()[1]}."
        if action == mao_cards.DRAW:
            return f"{who} draw{'' if you else 's'} a card."
        if action < mao_cards.END_TURN:
            turn = self._judged_turn()
            said = mao_phrase_text(text.split()[1], turn["played"] if turn else None)
            return f"{who}: “{said}”"
        if action == mao_cards.END_TURN:
            return f"{who} end{'' if you else 's'} the turn."
        if action == mao_cards.NO_CALL:
            return f"{who}: no more calls."
        if action == mao_cards.POINT_OF_ORDER:
            return f"{who}: point of order!"
        if action < mao_cards.NO_CALL:
            turn = self._judged_turn()
            reason = mao_reason_text(text.removeprefix("call "), turn["played"] if turn else None)
            return f"{who} call{'' if you else 's'} “{reason}”."
        if refused:
            again = "choose another" if you else "it proposes another"
            return f'{who}: {text}? Mao Master: "That rule is already in force." ({again})'
        return f"{who} introduce{'' if you else 's'} a new rule."

    # ------------------------------------------------------------------ the seat's view
    def _table(self) -> dict[str, Any]:
        """The public table now, with the viewer's own hand (every hand when watched)."""
        view = mao_seat_view(self.env, 0 if self.watch else self.seat, self.seat_names)
        view["seat"] = self.seat
        view["to_act"] = self._to_act()
        view["in_call_window"] = self.env.in_call_window()
        if self.watch:
            view["hand"] = None
            view["my_rules"] = []
            view["hands"] = [
                sorted(self.env.hand(s), key=mao_cards.CARD_ID.__getitem__) for s in range(self.env.n_players)
            ]
            view["rules"] = [
                {"rule": rule, "author": author, "description": mao_rules.RULE_DESCRIPTIONS[rule]}
                for rule, author in self.env.active_rules()
            ]
        return view

    def _call_choices(self, legal: list[int]) -> list[dict[str, str]]:
        turn = self._judged_turn()
        card = turn["played"] if turn else None
        return [
            {
                "action": self.env.describe_action(a),
                "label": mao_reason_text(self.env.describe_action(a).removeprefix("call "), card),
            }
            for a in legal
            if mao_cards.CALL_0 <= a < mao_cards.NO_CALL
        ]

    def view(self) -> dict[str, Any]:
        legal = self._legal()
        turn = self._judged_turn()
        return self._table() | {
            "watch": self.watch,
            "version": self.version,
            "calls_by": self.env.options.calls,
            "legal": [self.env.describe_action(a) for a in legal],
            "phrase_texts": {
                key: mao_phrase_text(key, turn["played"] if turn and not turn["ended"] else None)
                for key in mao_cards.PHRASE_KEYS
            },
            "call_choices": self._call_choices(legal),
            "judged_turn": turn if self.env.in_call_window() else None,
            # The turn being played (its card goes on the pile when the turn ends).
            "open_turn": turn if turn and not turn["ended"] else None,
            # The round winner's choice (grouped by family on the page, from rule_texts()): every
            # library rule the seat does not know to be in force, whatever the other seats' rules
            # are (one in force is refused when proposed, and joins refused_rules).
            "rule_choices": [self.env.describe_action(a) for a in legal if a >= mao_cards.CHOOSE_RULE_0],
            "refused_rules": [
                {"rule": rule, "description": mao_rules.RULE_DESCRIPTIONS[rule]}
                for rule in ([] if self.watch else self.env.refused_rules(self.seat))
            ],
            "turns": self.turns,
            "frames": self.frames,
            "rounds_won": self.rounds_won,
            "penalty_cards": self.penalty_cards,
            "over": self.over,
        }

    def _record(self) -> dict[str, Any]:
        """``mao_env.records``' format."""
        from mao_env.records import make_record

        return make_record(
            self.env,
            seed=self.seed,
            options=self.options,
            seats=self.seat_names,
            actions=self.actions,
            returns=self.returns,
        )


def mao_seat_view(env, seat: int, seat_names: Sequence[str]) -> dict[str, Any]:
    """What ``seat`` sees of a Mao table: its own hand, the public table, its own rules."""
    game = env.game_view
    named = game.named_suit
    top = env.top_card()
    valid_suit = named if named >= 0 else int(mao_cards.CARD_SUIT[mao_cards.CARD_ID[top]])
    return {
        "game": "mao",
        "seat": seat,
        "seats": [{"seat": s, "name": name} for s, name in enumerate(seat_names)],
        "hand": sorted(env.hand(seat), key=mao_cards.CARD_ID.__getitem__),
        "hand_sizes": [len(env.hand(s)) for s in range(env.n_players)],
        "top": top,
        "suit": mao_cards.SUIT_NAMES[valid_suit],
        "named_suit": mao_cards.SUIT_NAMES[named] if named >= 0 else None,
        "direction": "increasing" if game.direction > 0 else "decreasing",
        "pending_seven": game.pending_seven,
        "to_act": env.current_seat,
        "round": min(game.rounds_finished + 1, env.num_rounds),
        "rounds": env.num_rounds,
        "stack_size": game.stack_size,
        "my_rules": [
            {"rule": rule, "description": mao_rules.RULE_DESCRIPTIONS[rule]}
            for rule, author in env.active_rules()
            if author == seat
        ],
    }
