"""A live Mao game (``MaoGame``) and the pieces of its views that replays share."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from madiao_mao_web.games import (
    LOG_LENGTH,
    GameOptionError,
    LiveGame,
    bool_param,
    build_agent,
    int_param,
    seat_and_names,
    seed_param,
)
from madiao_mao_web.security import echo
from mao_env import cards as mao_cards
from mao_env import core as mao_core
from mao_env import mao_v0
from mao_env import rules as mao_rules
from mao_env.env import describe_call
from mao_env.records import BLOCKED_ROUND_TEXT, deal_fingerprint, make_record

MAO_DEFAULT_AGENT = "base"
MAO_DEFAULT_PLAYERS = 4
MAO_DEFAULT_ROUNDS = 3
MAO_MAX_HAND_SIZE = 10
MAO_CALL_MODES = ("master", "players")


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
    every seat (``watch=True``); ``calls="players"`` is the players' calls variant.

    Its page: ``/play/mao?seat=0&players=4&agents=base&rounds=3&seed=7&hand_size=5&calls=players``
    (``players`` 3..8 seats; ``hand_size`` 1..10 deals that many cards a seat, short rounds;
    ``calls=players``: the players call faults in call windows, not the Master); ``/watch/mao``
    with the same options but ``seat``. The record of a finished game is ``mao_env.records``'."""

    game = "mao"
    parameters = ("seat", "agents", "players", "rounds", "seed", "hand_size", "calls", "watch")
    move_example = "play 9D"
    record_file = "mao-game.json"

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

        super().__init__()
        n_players = int_param("players", players, 3, mao_cards.MAX_PLAYERS, MAO_DEFAULT_PLAYERS)
        self.seat, self.seat_names = seat_and_names(
            seat, agents, bool_param("watch", watch), "mao", n_players, MAO_DEFAULT_AGENT
        )
        self.rounds = int_param("rounds", rounds, 1, 20, MAO_DEFAULT_ROUNDS)
        self.seed = seed_param(seed)
        hand_size = int_param("hand_size", hand_size, 1, MAO_MAX_HAND_SIZE, None)
        if calls in (None, ""):
            calls = "master"
        if calls not in MAO_CALL_MODES:
            raise GameOptionError(f"calls must be 'master' or 'players', got {echo(calls)}")
        self.env = mao_v0.raw_env(n_players, num_rounds=self.rounds, calls=calls)
        self.agents = {
            s: build_agent(self.seat_names[s], "mao", self.seed + s, self.env)
            for s in range(n_players)
            if s != self.seat
        }
        for agent in self.agents.values():
            agent.reset()
        self.options = self._deal_options(hand_size)

        self._deal = frozenset({deal_fingerprint(self.seed, n_players)})
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

    @property
    def deal(self) -> frozenset[str]:
        """The shuffled decks this game is dealt from (``mao_env.records.deal_fingerprint``): the
        same at every table size with as many decks, whatever ``hand_size`` and the other options."""
        return self._deal

    # ------------------------------------------------------------------ playing
    @property
    def over(self) -> bool:
        name = self.env.agent_selection
        return bool(self.env.terminations[name] or self.env.truncations[name])

    def _to_act(self) -> int | None:
        return None if self.over else self.env.current_seat

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
        blocked = bool(self.env.game_view.round_blocked)
        if blocked:
            turn = self._judged_turn()
            if turn is not None:
                turn["notes"].append(BLOCKED_ROUND_TEXT)
        frame = self._table()
        if not self.watch:  # the hand the person held then (the page shows the hand it had)
            del frame["hand"]
        frame["text"] = self._frame_text(seat, action, text, refused) + (
            f" {BLOCKED_ROUND_TEXT}" if blocked else ""
        )
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
            rule = mao_rules.RULE_DESCRIPTIONS[action - mao_cards.CHOOSE_RULE_0]
            verb = "propose" if you else "proposes"
            return f'{who} {verb} “{rule}”. Mao Master: "That rule is already in force." ({again})'
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


def rule_texts() -> dict[str, Any]:
    """Mao's rule families and library rules in words (views name rules by id)."""
    return {
        "families": [
            {"title": title, "explanation": explanation}
            for title, explanation in zip(mao_rules.FAMILY_TITLES, mao_rules.FAMILY_EXPLANATIONS, strict=True)
        ],
        "rules": [
            {
                "action": mao_cards.action_to_text(mao_cards.CHOOSE_RULE_0 + rule, mao_rules.N_RULES),
                "family": int(mao_rules.RULE_FAMILY[rule]),
                "description": mao_rules.RULE_DESCRIPTIONS[rule],
            }
            for rule in range(mao_rules.N_RULES)
        ],
    }
