"""Live games of the web app: one human seat against registered agents, server-side.

The server owns the env (``madiao_v0.raw_env`` / ``mao_v0.raw_env``) and the agents; the agents
move until the human is to act (or the game ends). ``view()`` is everything the page receives:
built only from what the human's seat may see (its hand, the public table, its legal moves as
text, the secret rules it authored) — never another hand, another seat's face-down card or a rule
it did not author. ``move(text, version)`` checks the version and the text against the seat's
legal moves before anything changes, so a bad move raises :class:`MoveError` and leaves the game
as it was.

``version`` counts the person's moves: the view carries it and a move names the version it was
made against, so a move sent twice, or one chosen from a view that has since changed, raises
:class:`StaleMoveError` instead of playing on the next turn.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.registry import agent_names, make_agent
from madiao_env import cards as madiao_cards
from madiao_mao_web.security import echo
from mao_env import cards as mao_cards
from mao_env import core as mao_core
from mao_env import rules as mao_rules

MADIAO_DEFAULT_AGENT = "heuristic"
MAO_DEFAULT_AGENT = "base"
MAO_DEFAULT_PLAYERS = 4
MAO_DEFAULT_ROUNDS = 3
MAO_MAX_HAND_SIZE = 10
LOG_LENGTH = 60  # log lines kept in a view (the page shows the latest)
MAX_ACTION_CHARS = 64  # every action text either game reads is shorter (the longest is 25)


class MoveError(ValueError):
    """An illegal or unreadable move, or one made when it is not the human's turn (a 4xx)."""


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


def check_move(game: MadiaoGame | MaoGame, text: Any, version: Any, example: str) -> None:
    """Refuse a move before reading it: not a short ASCII string (400), the game over (409), made
    against another version than the current one (409, :class:`StaleMoveError`)."""
    if not isinstance(text, str):
        kind = type(text).__name__
        raise MoveError(f"action must be a string such as {example!r}, got {kind} {echo(text)}")
    if len(text) > MAX_ACTION_CHARS or not text.isascii():
        raise MoveError(f"cannot read action {echo(text)}: an action is a short text such as {example!r}")
    if isinstance(version, bool) or not isinstance(version, int):
        raise MoveError(f"version must be the integer 'version' of the view moved from, got {echo(version)}")
    if game.over:
        raise GameOverError(f"the {'hand' if game.game == 'madiao' else 'game'} is over: no more moves")
    if version != game.version:
        raise StaleMoveError(
            f"this move was made against version {version} of the game, which is now at version "
            f"{game.version}: the table has changed since (a move sent twice?); nothing was played"
        )


def _agent_list(value: Any, game: str, n_others: int, default: str) -> list[str]:
    """One agent name for every other seat, or one per other seat; only registered names."""
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
        names = names * n_others
    if len(names) != n_others:
        raise GameOptionError(
            f"agents takes one name for every other seat or {n_others} names, got {len(names)}"
        )
    return names


def _build_agent(spec: str, game: str, seed: int | None, env) -> Any:
    try:
        return make_agent(spec, game, seed=seed, env=env)
    except ImportError as error:
        raise GameOptionError(
            f"agents: {spec!r} cannot be loaded here ({error}); install the train extra"
        ) from None


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


class MadiaoGame:
    """One Madiao hand: the human in ``seat``, agents in the other three seats."""

    game = "madiao"

    def __init__(self, *, seat: Any = None, agents: Any = None, seed: Any = None) -> None:
        from madiao_env import madiao_v0

        self.seat = _int_param("seat", seat, 0, 3, 0)
        self.seed = _int_param("seed", seed, 0, 2**31 - 1, None)
        if self.seed is None:
            self.seed = random.SystemRandom().randrange(2**31)
        other_names = _agent_list(agents, "madiao", 3, MADIAO_DEFAULT_AGENT)
        self.env = madiao_v0.raw_env()
        names = iter(other_names)
        self.seat_names = ["you" if s == self.seat else next(names) for s in range(4)]
        self.agents = {
            s: _build_agent(self.seat_names[s], "madiao", self.seed + s, self.env)
            for s in range(4)
            if s != self.seat
        }
        for agent in self.agents.values():
            agent.reset()
        self.env.reset(seed=self.seed)
        self.version = 0
        self.log: list[dict[str, Any]] = []
        self._deal_key: tuple | None = None
        self._tricks_won = [0, 0, 0, 0]
        self._note_table()
        self._advance()

    # ------------------------------------------------------------------ playing
    @property
    def over(self) -> bool:
        return all(self.env.terminations.values()) or all(self.env.truncations.values())

    def _to_act(self) -> int | None:
        return None if self.over else int(self.env.agent_selection.rsplit("_", 1)[1])

    def _legal(self) -> list[int]:
        if self._to_act() != self.seat:
            return []
        return [int(a) for a in np.flatnonzero(self.env.observe(f"player_{self.seat}")["action_mask"])]

    def _step(self, seat: int, action: int) -> None:
        self.log.append({"kind": "move", "seat": seat, "action": int(action)})
        self.env.step(int(action))
        self._note_table()

    def _note_table(self) -> None:
        """Log the public consequences of the last step: a new deal, a trick won."""
        table = self.env.table()
        key = (table["hand_number"], table["redeals"], tuple(table["stock"]))
        if key != self._deal_key and not table["history"]:
            self._deal_key = key
            self._tricks_won = [0, 0, 0, 0]
            self.log.append({"kind": "deal", "redeals": table["redeals"], "banker": table["banker"]})
        won = list(table["tricks_won"])
        if sum(won) > sum(self._tricks_won):
            winner = int(np.argmax(np.asarray(won) - np.asarray(self._tricks_won)))
            self.log.append({"kind": "trick", "winner": winner, "number": sum(won)})
        self._tricks_won = won

    def _advance(self) -> None:
        """Agents move until the human is to act or the hand is over."""
        while not self.over and self._to_act() != self.seat:
            seat = self._to_act()
            observation = self.env.observe(f"player_{seat}")
            action = self.agents[seat].act(observation["observation"], observation["action_mask"])
            self._step(seat, int(action))

    def move(self, text: Any, version: Any) -> None:
        check_move(self, text, version, "play 9S")
        try:
            action = madiao_cards.text_to_action(text)
        except ValueError as error:
            raise MoveError(str(error)) from None
        legal = self._legal()
        if action not in legal:
            texts = ", ".join(madiao_cards.action_to_text(a) for a in legal)
            raise MoveError(f"illegal move {text!r}: your legal moves are {texts}")
        self.version += 1
        self._step(self.seat, action)
        self._advance()

    # ------------------------------------------------------------------ the seat's view
    def _log_text(self, entry: dict[str, Any]) -> str:
        if entry["kind"] == "deal":
            return (
                f"New deal (redeal {entry['redeals']})" if entry["redeals"] else "Cards dealt"
            ) + f"; banker is seat {entry['banker']}."
        if entry["kind"] == "trick":
            return f"Trick {entry['number']} won by seat {entry['winner']}."
        seat, action = entry["seat"], entry["action"]
        who = "You" if seat == self.seat else f"Seat {seat} ({self.seat_names[seat]})"
        text = madiao_cards.action_to_text(action)
        if text.startswith("slough") and seat != self.seat:
            return f"{who}: slough a card face down."
        if text.startswith(("play", "slough")):
            card = text.split()[1]
            return f"{who}: {text} ({madiao_cards.CARD_CHINESE[madiao_cards.CARD_ID[card]]})."
        return f"{who}: {text}."

    def _play_view(self, seat: int, card_name: str, face_up: bool) -> dict[str, Any]:
        # Another seat's face-down card is a back: no name, no Chinese name.
        shown = face_up or seat == self.seat
        return {"seat": seat, "face_up": bool(face_up), "card": madiao_card(card_name) if shown else None}

    def view(self) -> dict[str, Any]:
        table = self.env.table()
        banker = table["banker"]
        history = table["history"]
        in_trick = len(table["current_trick"])
        completed = (len(history) - in_trick) // 4
        last_trick = history[(completed - 1) * 4 : completed * 4] if completed else []
        settlement = None
        if self.over:
            info = self.env.infos.get(f"player_{self.seat}", {})
            if "settlement" in info:
                settlement = {
                    "lines": [
                        {
                            "rule": line["rule"],
                            "payer": int(line["payer"]),
                            "payee": int(line["payee"]),
                            "stakes": float(line["stakes"]),
                        }
                        for line in info["settlement"]
                    ],
                    "payoffs": [float(p) for p in info["payoffs"]],
                }
        return {
            "game": "madiao",
            "seat": self.seat,
            "seats": [
                {"seat": s, "name": self.seat_names[s], "role": madiao_role(s, banker), "tricks_won": won}
                for s, won in enumerate(table["tricks_won"])
            ],
            "hand_sizes": [len(hand) for hand in table["hands"]],
            "role": madiao_role(self.seat, banker),
            "banker": banker,
            "first": table["first"],
            "upcard": madiao_card(table["stock"][0]),
            "phase": table["phase"],
            "to_act": None if self.over else table["to_act"],
            "trick_number": min(table["trick_number"] + 1, madiao_cards.N_TRICKS),
            "hand": [madiao_card(name) for name in madiao_sorted(table["hands"][self.seat])],
            "trick": [self._play_view(s, name, up) for s, name, up in table["current_trick"]],
            "last_trick": [self._play_view(s, name, up) for s, name, up, _ in last_trick],
            "legal": [madiao_cards.action_to_text(a) for a in self._legal()],
            "log": [self._log_text(entry) for entry in self.log[-LOG_LENGTH:]],
            "over": self.over,
            "version": self.version,
            "settlement": settlement,
        }


class MaoGame:
    """One Mao game: the human in ``seat``, agents in the others; ``rounds`` rounds."""

    game = "mao"

    def __init__(
        self,
        *,
        seat: Any = None,
        agents: Any = None,
        players: Any = None,
        rounds: Any = None,
        seed: Any = None,
        hand_size: Any = None,
    ) -> None:
        from mao_env import mao_v0

        n_players = _int_param("players", players, 3, mao_cards.MAX_PLAYERS, MAO_DEFAULT_PLAYERS)
        self.seat = _int_param("seat", seat, 0, n_players - 1, 0)
        self.rounds = _int_param("rounds", rounds, 1, 20, MAO_DEFAULT_ROUNDS)
        self.seed = _int_param("seed", seed, 0, 2**31 - 1, None)
        if self.seed is None:
            self.seed = random.SystemRandom().randrange(2**31)
        hand_size = _int_param("hand_size", hand_size, 1, MAO_MAX_HAND_SIZE, None)
        other_names = _agent_list(agents, "mao", n_players - 1, MAO_DEFAULT_AGENT)
        self.env = mao_v0.raw_env(n_players, num_rounds=self.rounds)
        names = iter(other_names)
        self.seat_names = ["you" if s == self.seat else next(names) for s in range(n_players)]
        self.agents = {
            s: _build_agent(self.seat_names[s], "mao", self.seed + s, self.env)
            for s in range(n_players)
            if s != self.seat
        }
        for agent in self.agents.values():
            agent.reset()
        self.options = self._deal_options(hand_size)
        self.env.reset(seed=self.seed, options=self.options)
        self.version = 0
        self.actions: list[str] = []
        self.returns = [0.0] * n_players
        self.calls: list[dict[str, Any]] = []
        self.log: list[str] = []
        self._events_seen = int(self.env._state.scalars[0, mao_core.S_N_EVENTS])
        self._turn = 0
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

    def _legal(self) -> list[int]:
        if self.over or self.env.current_seat != self.seat:
            return []
        return [int(a) for a in np.flatnonzero(self.env.observe(f"player_{self.seat}")["action_mask"])]

    def _step(self, seat: int, action: int) -> None:
        self.actions.append(self.env.describe_action(action))
        self.env.step(int(action))
        for other, name in enumerate(self.env.possible_agents):
            self.returns[other] += float(self.env.rewards.get(name, 0.0))
        if action == mao_cards.END_TURN:
            self._turn += 1
        rule = action - mao_cards.CHOOSE_RULE_0
        if seat == self.seat and rule >= 0 and rule in self.env.refused_rules(seat):
            # Said to the proposer alone (an agent's refused proposal is no one else's news).
            self.log.append(f'You: rule {rule}? Mao Master: "That rule is already in force." Choose another.')
        for call in self.env.last_calls:
            # What the whole table hears: who is called, the call, the cards; no rule ids.
            self.calls.append(
                {
                    "turn": self._turn,
                    "seat": int(call["player"].rsplit("_", 1)[1]),
                    "call": call["call"],
                    "cards": int(call["cards"]),
                }
            )
        self._note_events()

    def _note_events(self) -> None:
        total = int(self.env._state.scalars[0, mao_core.S_N_EVENTS])
        new = total - self._events_seen
        self._events_seen = total
        if new <= 0:
            return
        for event in self.env.public_events()[-new:]:
            self.log.append(self._event_text(event))

    def _who(self, seat: int) -> str:
        return "You" if seat == self.seat else f"Seat {seat} ({self.seat_names[seat]})"

    def _event_text(self, event: dict[str, Any]) -> str:
        who = self._who(event["seat"])
        if event["kind"] == "new rule":
            return f"{who}: introducing a new rule."
        if event["kind"] == "draw":
            what = "draws"
        elif event["kind"] == "bad card":
            what = f"plays {event['card']} (bad card: taken back)"
        else:
            what = f"plays {event['card']}"
        if event["chain_cards"]:
            what = f"takes {event['chain_cards']} for the sevens, {what}"
        if event["seat"] == self.seat:  # "You draw", not "You draws"
            what = " ".join(
                word.removesuffix("s") if word in ("plays", "draws", "takes") else word
                for word in what.split(" ")
            )
        said = [mao_cards.PHRASES[mao_cards.PHRASE_KEYS.index(p)] for p in event["phrases"]]
        text = f"{who}: {what}" + (f", saying {', '.join(repr(p) for p in said)}" if said else "") + "."
        if event["forced_draw"]:
            text += f" {self._who(event['forced_seat'])} takes {event['forced_draw']} card(s)."
        if event["named_suit"]:
            text += f" The suit is now {event['named_suit']}."
        if event["won"]:
            text += " Round won!"
        return text

    def _advance(self) -> None:
        while not self.over and self.env.current_seat != self.seat:
            seat = self.env.current_seat
            observation = self.env.observe(f"player_{seat}")
            action = self.agents[seat].act(observation["observation"], observation["action_mask"])
            self._step(seat, int(action))

    def move(self, text: Any, version: Any) -> None:
        check_move(self, text, version, "play 9D")
        try:
            action = self.env.action_from_text(text)
        except (TypeError, ValueError) as error:
            raise MoveError(str(error)) from None
        legal = self._legal()
        if action not in legal:
            texts = ", ".join(self.env.describe_action(a) for a in legal)
            raise MoveError(f"illegal move {text!r}: your legal moves are {texts}")
        self.version += 1
        self._step(self.seat, action)
        self._advance()

    def record(self) -> dict[str, Any]:
        """The game's record (the seed, every hand, every secret rule): once the game is over."""
        from mao_env.records import make_record

        if not self.over:
            raise GameLiveError(
                "the game is still being played: its record (the deal, every hand and secret rule) "
                "can be downloaded once it is over"
            )
        return make_record(
            self.env,
            seed=self.seed,
            options=self.options,
            seats=self.seat_names,
            actions=self.actions,
            returns=self.returns,
        )

    # ------------------------------------------------------------------ the seat's view
    def view(self) -> dict[str, Any]:
        legal = self._legal()
        return mao_seat_view(self.env, self.seat, self.seat_names) | {
            "legal": [self.env.describe_action(a) for a in legal],
            # The round winner's choice: every library rule it does not know to be in force (which
            # are is the secret; one in force is refused when proposed, see the log).
            "rule_choices": {
                self.env.describe_action(a): mao_rules.RULE_DESCRIPTIONS[a - mao_cards.CHOOSE_RULE_0]
                for a in legal
                if a >= mao_cards.CHOOSE_RULE_0
            },
            "calls": self.calls[-LOG_LENGTH:],
            "log": self.log[-LOG_LENGTH:],
            "returns": [round(r, 6) for r in self.returns],
            "over": self.over,
            "version": self.version,
        }


def mao_seat_view(env, seat: int, seat_names: Sequence[str]) -> dict[str, Any]:
    """What ``seat`` sees of a Mao table: its own hand, the public table, its own rules."""
    scalars = env._state.scalars[0]
    named = int(scalars[mao_core.S_NAMED_SUIT])
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
        "direction": "increasing" if scalars[mao_core.S_DIRECTION] > 0 else "decreasing",
        "pending_seven": int(scalars[mao_core.S_PENDING_SEVEN]),
        "to_act": env.current_seat,
        "round": min(int(scalars[mao_core.S_ROUND]) + 1, env.num_rounds),
        "rounds": env.num_rounds,
        "stack_size": int(scalars[mao_core.S_STACK_SIZE]),
        "my_rules": [
            {"rule": rule, "description": mao_rules.RULE_DESCRIPTIONS[rule]}
            for rule, author in env.active_rules()
            if author == seat
        ],
        "phrases": {key: text for key, text in zip(mao_cards.PHRASE_KEYS, mao_cards.PHRASES, strict=True)},
    }
