"""Mao's game options: one frozen, validated object that every Mao front end builds from.

:class:`MaoOptions` holds the constructor options of :class:`mao_env.env.raw_env` (the same names,
defaults, checks and error messages: the env module docstring documents what each one means) and
derives from its named fields what the kernels of :mod:`mao_env.core` read: the config columns of
the ``scalars`` rows (:meth:`MaoOptions.write_config`), the reasons and rule-choice codes, the
number of decks and the observation length. :func:`starting_rules` checks a list of active rules
and a fixed rule queue and makes the ``rules`` rows an episode starts with.

The AEC env (``raw_env``), the batched env (``MaoVectorEnv``) and a snapshot's
:class:`~mao_env.state.SnapshotTarget` are all built from a ``MaoOptions``, never from each other.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mao_env import cards, core
from mao_env import rules as rule_library
from mao_env import state as snapshots
from mao_env.layout import OBS_TYPES

__all__ = [
    "CALL_MODES",
    "FORGOTTEN_MAO_CARDS",
    "MASKS",
    "MAX_COUNT_OPTION",
    "OBS_TYPES",
    "REASONS",
    "ROUND_STYLES",
    "RULE_CHOICES",
    "SEVEN_PHRASES",
    "MaoOptions",
    "parse_fixed_rules",
    "parse_rules",
    "starting_rules",
]

RULE_CHOICES = {
    "agent": core.RULE_CHOICE_AGENT,
    "sampled": core.RULE_CHOICE_SAMPLED,
    "fixed": core.RULE_CHOICE_FIXED,
}
REASONS = {"calls": core.REASONS_CALLS, "hidden": core.REASONS_HIDDEN, "revealed": core.REASONS_REVEALED}
MASKS = ("physical", "rules")
SEVEN_PHRASES = ("penalty card", "thank you")
ROUND_STYLES = ("plain", "cambridge")
#: Who calls the faults: the Mao Master (every fault, at END_TURN) or the players (call windows).
CALL_MODES = ("master", "players")
#: Penalty cards for a forgotten "Mao": the seed's three, or the older reading's one.
FORGOTTEN_MAO_CARDS = (3, 1)

#: Upper bound of the count options (``num_rounds``, ``max_steps``, ``max_sub_actions``): the
#: kernels keep counts in int64 and far larger values would only overflow, never mean anything.
MAX_COUNT_OPTION = 2**31 - 1


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``low..high``; ``TypeError``/``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be in {low}..{high if high is not None else 'inf'}, got {value}")
    return int(value)


def check_choice(name: str, value: Any, choices) -> str:
    """``value`` as one of the strings ``choices``; ``ValueError`` naming ``name`` otherwise."""
    # A plain-string test first: an unhashable value (a list, a dict) cannot be looked up in a dict.
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return str(value)


def _check_forgotten_mao_cards(value: Any) -> int:
    cards_ = check_int("forgotten_mao_cards", value, 1, cards.MAO_PENALTY_CARDS)
    if cards_ not in FORGOTTEN_MAO_CARDS:
        raise ValueError(f"forgotten_mao_cards must be one of {FORGOTTEN_MAO_CARDS}, got {value!r}")
    return cards_


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a bool; ``TypeError`` naming ``name`` for anything else (0 and 1 included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def check_float(name: str, value: Any) -> float:
    """``value`` as a finite float; ``TypeError``/``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return number


@dataclasses.dataclass(frozen=True)
class MaoOptions:
    """The options of a Mao game, checked on construction (in field order: the first bad one
    raises a ``TypeError``/``ValueError`` naming it) and normalised to plain Python values.

    ``obs_type="summary"`` sets ``n_events`` to 0 (the table only, no public-event history).
    """

    n_players: int = 4
    """Players, 2..8 (3..8 usual); one deck per three players, rounded up."""
    num_rounds: int = 1
    """Rounds per episode (the episode terminates after the last), 1..MAX_COUNT_OPTION."""
    max_steps: int = 3000
    """Sub-actions after which the episode is truncated for every agent, 1..MAX_COUNT_OPTION."""
    mask: str = "physical"
    """"physical": what a person can do; "rules": what the full rule set allows (leaks the secret
    rules: for curricula, debugging and the oracle agent)."""
    reasons: str = "calls"
    """What the table hears of a call: "calls" (the Mao Master's words), "hidden" (only that a
    penalty was given) or "revealed" (also the library rule behind it, for everyone)."""
    rule_choice: str = "agent"
    """How a round winner's new rule is chosen: "agent" (its own decision), "sampled" (at random),
    "fixed" (the list ``reset(options={"fixed_rules": [...]})`` gives)."""
    rounds: str = "plain"
    """"plain" (everyone re-dealt after a round) or "cambridge" (the winner re-enters with five
    cards, the others keep theirs)."""
    seven_turn_ends: bool = False
    """Taking the cards of a seven chain ends the turn."""
    seven_phrase: str = "penalty card"
    """The phrase owed when a seven is played: "penalty card" or "thank you"."""
    talking: bool = True
    """Penalise phrases no rule requires ("pass" after a draw is never talking)."""
    calls: str = "master"
    """Who calls the faults: "master" (the Mao Master, every fault, at the end of the turn) or
    "players" (call windows: the other seats call, wrong calls cost the caller)."""
    forgotten_mao_cards: int = 3
    """Penalty cards for a forgotten "Mao": 3 (the seed's reading) or 1."""
    max_sub_actions: int = 18
    """Sub-actions one turn may take (after one fewer, only the end of the turn is legal),
    3..MAX_COUNT_OPTION."""
    n_events: int = 8
    """Public events in the observation (K, most recent first), 0..16; 0 with ``obs_type="summary"``."""
    obs_type: str = "history"
    """"history" (the table and the last K public events) or "summary" (the table only)."""
    win_reward: float = 1.0
    """Reward of the round winner (a finite number)."""
    penalty_card_reward: float = -0.1
    """Reward per penalty card received: calls, the seven chain, a wrong or forgotten "Mao", bad
    calls (cards a dynamics rule makes a seat take are not penalties); a finite number."""

    def __post_init__(self) -> None:
        checked = {
            "n_players": check_int("n_players", self.n_players, 2, cards.MAX_PLAYERS),
            "num_rounds": check_int("num_rounds", self.num_rounds, 1, MAX_COUNT_OPTION),
            "max_steps": check_int("max_steps", self.max_steps, 1, MAX_COUNT_OPTION),
            "mask": check_choice("mask", self.mask, MASKS),
            "reasons": check_choice("reasons", self.reasons, REASONS),
            "rule_choice": check_choice("rule_choice", self.rule_choice, RULE_CHOICES),
            "rounds": check_choice("rounds", self.rounds, ROUND_STYLES),
            "seven_turn_ends": check_bool("seven_turn_ends", self.seven_turn_ends),
            "seven_phrase": check_choice("seven_phrase", self.seven_phrase, SEVEN_PHRASES),
            "talking": check_bool("talking", self.talking),
            "calls": check_choice("calls", self.calls, CALL_MODES),
            "forgotten_mao_cards": _check_forgotten_mao_cards(self.forgotten_mao_cards),
            "max_sub_actions": check_int("max_sub_actions", self.max_sub_actions, 3, MAX_COUNT_OPTION),
            "n_events": check_int("n_events", self.n_events, 0, core.EVENT_SLOTS),
            "obs_type": check_choice("obs_type", self.obs_type, OBS_TYPES),
            "win_reward": check_float("win_reward", self.win_reward),
            "penalty_card_reward": check_float("penalty_card_reward", self.penalty_card_reward),
        }
        if checked["obs_type"] == "summary":
            checked["n_events"] = 0  # the table only: no public-event history
        for name, value in checked.items():
            object.__setattr__(self, name, value)  # frozen: normalise once, here

    # -- what the kernels read ---------------------------------------------------------------------
    @property
    def n_decks(self) -> int:
        """Decks in play: one per three players, rounded up."""
        return cards.n_decks_for(self.n_players)

    @property
    def by_rules(self) -> bool:
        """Whether the action mask is the full rule set's (``mask="rules"``)."""
        return self.mask == "rules"

    @property
    def reasons_code(self) -> int:
        """The kernels' ``REASONS_*`` code of ``reasons``."""
        return REASONS[self.reasons]

    @property
    def obs_dim(self) -> int:
        """Length of the observation vector."""
        return core.obs_size(self.n_events, self.reasons_code)

    @property
    def possible_agents(self) -> list[str]:
        return [f"player_{seat}" for seat in range(self.n_players)]

    def write_config(self, scalars: np.ndarray) -> None:
        """Clear the ``scalars`` rows (``[B, N_SCALARS]``) and write the options into them, as
        :func:`mao_env.core.reset_game` expects (:func:`mao_env.state.write_config`)."""
        entries = snapshots.ConfigEntries(
            n_players=self.n_players,
            seven_turn_ends=int(self.seven_turn_ends),
            thank_you=int(self.seven_phrase == "thank you"),
            talking=int(self.talking),
            players_call=int(self.calls == "players"),
            forgotten_mao_cards=self.forgotten_mao_cards,
            cambridge=int(self.rounds == "cambridge"),
            n_rounds=self.num_rounds,
            max_sub_actions=self.max_sub_actions,
            rule_choice=RULE_CHOICES[self.rule_choice],
            n_decks=self.n_decks,
        )
        snapshots.write_config(scalars, entries)

    def config_row(self) -> np.ndarray:
        """One ``scalars`` row (int64 ``[N_SCALARS]``) holding only the options."""
        row = np.zeros((1, core.N_SCALARS), dtype=np.int64)
        self.write_config(row)
        return row[0]

    def game_options(self) -> dict[str, Any]:
        """The options that define the game (:data:`mao_env.state.GAME_OPTIONS`), as a snapshot holds them."""
        return {name: getattr(self, name) for name in snapshots.GAME_OPTIONS}

    def snapshot_target(self) -> snapshots.SnapshotTarget:
        """What a snapshot must agree with to be set into a game with these options."""
        return snapshots.SnapshotTarget(
            options=self.game_options(),
            config_row=self.config_row(),
            n_decks=self.n_decks,
            possible_agents=tuple(self.possible_agents),
        )


# ---- starting rules ------------------------------------------------------------------------------
def parse_rules(entries: Any, n_players: int) -> list[tuple[int, int]]:
    """Check a list of active rules (library ids, or ``(rule id, author seat)`` pairs; author -1:
    nobody at the table) and return them as ``(rule, author)`` pairs; ``ValueError`` naming the
    bad entry otherwise."""
    if not isinstance(entries, (list, tuple)) or len(entries) > rule_library.MAX_ACTIVE_RULES:
        raise ValueError(
            f"rules must be a list of at most {rule_library.MAX_ACTIVE_RULES} rule ids "
            "or (rule, author) pairs"
        )
    seen: list[tuple[int, int]] = []
    for entry in entries:
        if isinstance(entry, (tuple, list)):
            if len(entry) != 2:
                raise ValueError(f"rules entry {entry!r} must be a rule id or a (rule, author) pair")
            rule, author = entry
        else:
            rule, author = entry, -1
        rule = check_int("rule id", rule, 0, rule_library.N_RULES - 1)
        author = check_int("rule author", author, -1, n_players - 1)
        if rule in (r for r, _ in seen):
            raise ValueError(f"rule {rule} is listed twice")
        seen.append((rule, author))
    return seen


def parse_fixed_rules(fixed: Any, rule_choice: str) -> list[int]:
    """Check the queue of rules the round winners add with ``rule_choice="fixed"``."""
    if rule_choice != "fixed":
        raise ValueError("fixed_rules needs rule_choice='fixed'")
    if not isinstance(fixed, (list, tuple)) or len(fixed) > rule_library.MAX_ACTIVE_RULES:
        raise ValueError(f"fixed_rules must be a list of at most {rule_library.MAX_ACTIVE_RULES} rule ids")
    return [check_int("fixed rule id", r, 0, rule_library.N_RULES - 1) for r in fixed]


def starting_rules(options: MaoOptions, rules: Any = (), fixed_rules: Any = ()) -> np.ndarray:
    """The ``rules`` rows (int64 ``[3, MAX_ACTIVE_RULES]``: active ids, their authors, the fixed
    queue; -1 = empty) an episode starts with, as ``reset(options={"rules": rules, "fixed_rules":
    fixed_rules})`` of the AEC env leaves them. Empty lists are "not given"."""
    for name, value in (("rules", rules), ("fixed_rules", fixed_rules)):
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise TypeError(f"{name} must be a sequence of library rule ids, got {value!r}")
    active = parse_rules(list(rules), options.n_players) if rules else []
    queue = parse_fixed_rules(list(fixed_rules), options.rule_choice) if fixed_rules else []
    return snapshots.rule_rows(active, queue)
