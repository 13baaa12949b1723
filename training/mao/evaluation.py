"""Mao evaluation: penalties per turn, round-win rate and rule-discovery curves, for any agents.

    madiao-mao evaluate --game mao --agents base bayes oracle --deals 40 --out results/
    python -m madiao_mao.training.mao.evaluation --turns 100 --replicates 2 --out results/  # discovery
    python -m madiao_mao.training.mao.evaluation --model runs/RUN/final_model.zip --replicates 10  # held out
    python -m madiao_mao.training.mao.evaluation --calls --episodes 20   # players' calls: call accuracy

Each agent under test sits in one seat (rotating over episodes) of a table whose other seats
play ``opponent`` (default the base-rules player, whose faults give everybody calls to learn
from). Every agent meets the same episodes: the same env seeds and the same list of new rules
(common random numbers), so differences come from the agents.

- ``evaluate_mao``: episodes of ``rounds_per_episode`` rounds starting without secret rules; each
  round won adds the next rule of a seeded list (``rule_choice="fixed"``), drawn from the validity
  and speech families — the rules that can be violated (dynamics rules draw no call). Its first
  episode can be kept as a game record (``on_record``; ``evaluate --game mao --record FILE``).
- ``rule_discovery_experiment``: the controlled experiment: one library rule active from the start
  (the ``rules`` reset option; nobody at the table authored it) and no rule added later, played
  until the agent under test has taken ``turns`` turns.

- ``held_out_experiment``: the same on ``HELD_OUT_RULES``, the rules the trainer keeps out of a
  learned policy's training (Mao's training setting ``rule_pool="train"`` draws from ``TRAINING_RULES``):
  does the policy cope with rules it never saw better than the base-rules player?
- ``evaluate_calls``: players' calls (``calls="players"``): a table of one agent kind, secret
  rules authored by its seats, and how well the players call: call accuracy (correct calls /
  calls), faults called (faults called / faults committed) and where the penalty cards went
  (to the faulty player for correct calls, to the caller for bad calls; faults nobody called).

Per turn of the agent under test (one ``END_TURN``) it records the calls, the penalty cards as
the env rewards them (calls plus seven-chain cards) and, for every secret rule the agent did not
author, whether the turn *violated* that rule: it drew a call it would not have drawn without the
rule (judged by ``madiao_mao.agents.mao.beliefs`` on the true rule set with and without it, from the
agent's own observation at ``END_TURN``). The discovery curve is that violation rate against the
agent's own turns since the rule became active.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro

from madiao_mao.agents.base import Agent
from madiao_mao.agents.mao.beliefs import (
    event_layout,
    first_suit_said,
    hypotheses_from_sets,
    own_turn_judgement,
    parse_observation,
    predicted_calls,
)
from madiao_mao.agents.registry import MODEL_PREFIX, agent_names, make_agent
from madiao_mao.training.cli_args import (
    check_at_least,
    check_model,
    check_output_file,
    check_output_folder,
    parse_dataclass,
    run_reporting_user_errors,
)
from madiao_mao.training.mao.play import MaoGameLog
from madiao_mao.training.stats import (
    BinnedRate,
    MeanCI,
    binned_rate,
    markdown_table,
    mean_ci,
    paired_ratio_difference,
)
from mao_env import cards
from mao_env import rules as library

# The train/held-out rule split lives with the library (mao_env.rules); re-exported here.
DISCOVERABLE_RULES = library.DISCOVERABLE_RULES
HELD_OUT_RULES = library.HELD_OUT_RULES
TRAINING_RULES = library.TRAINING_RULES
DISCOVERY_EDGES = (0, 5, 10, 20, 30, 50, 75, 100, 150, 250, 1000)
DEFAULT_AGENTS = ("random", "base", "bayes", "oracle")


@dataclass
class MaoSeatStats:
    """Everything recorded for one agent under test."""

    name: str
    turns: int = 0
    calls: int = 0
    penalty_cards: int = 0
    """Penalty cards received as the env rewards them: the calls' cards plus seven-chain cards."""
    rounds_won: int = 0
    rounds_played: int = 0
    """Rounds completed while the agent sat at the table."""
    turn_since_rule: list[int] = field(default_factory=list)
    """Per turn: own turns since the newest secret rule it did not author (-1: none active)."""
    turn_penalties: list[int] = field(default_factory=list)
    turn_calls: list[int] = field(default_factory=list)
    discovery_since: list[int] = field(default_factory=list)
    """Per (turn, unknown active rule): own turns since that rule became active ..."""
    discovery_violated: list[bool] = field(default_factory=list)
    """... and whether the turn violated it."""
    judge_mismatches: int = 0
    """Turns whose calls the rule model did not predict exactly (a check of the attribution)."""
    game_ends: list[int] = field(default_factory=list)
    """The turn count at the end of each game played (controlled experiments record it), so that
    per-game rates can be paired across agents that met the same games."""
    game_round_ends: list[tuple[int, int]] = field(default_factory=list)
    """(rounds won, rounds played) so far at the end of each game of ``game_ends``."""

    @property
    def calls_per_turn(self) -> float:
        return self.calls / self.turns if self.turns else math.nan

    @property
    def penalties_per_turn(self) -> float:
        return self.penalty_cards / self.turns if self.turns else math.nan

    @property
    def round_win_rate(self) -> float:
        return self.rounds_won / self.rounds_played if self.rounds_played else math.nan

    def discovery_curve(self, edges: Sequence[float] = DISCOVERY_EDGES) -> BinnedRate:
        """Violation rate of an unknown rule against own turns since it became active."""
        return binned_rate(self.discovery_since, self.discovery_violated, edges)

    def penalty_curve(self, edges: Sequence[float] = DISCOVERY_EDGES) -> tuple[np.ndarray, np.ndarray]:
        """(turns per bin, mean penalty cards per turn per bin) against turns since the newest rule."""
        since = np.asarray(self.turn_since_rule, dtype=np.float64)
        penalties = np.asarray(self.turn_penalties, dtype=np.float64)
        edges = np.asarray(edges, dtype=np.float64)
        index = np.searchsorted(edges, since, side="right") - 1
        inside = (since >= 0) & (index >= 0) & (index < edges.size - 1)
        counts = np.bincount(index[inside], minlength=edges.size - 1)
        sums = np.bincount(index[inside], weights=penalties[inside], minlength=edges.size - 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return counts, np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)

    def game_penalty_rates(self) -> np.ndarray:
        """Penalty cards per turn in each game of ``game_ends`` (games in the order played)."""
        penalties = np.asarray(self.turn_penalties, dtype=np.float64)
        starts = [0, *self.game_ends[:-1]] if self.game_ends else []
        return np.array(
            [
                penalties[a:b].mean() if b > a else math.nan
                for a, b in zip(starts, self.game_ends, strict=True)
            ]
        )

    def game_round_win_rates(self) -> np.ndarray:
        """Round-win rate in each game of ``game_ends`` (NaN for a game without a finished round)."""
        ends = np.array([(0, 0), *self.game_round_ends], dtype=np.float64).reshape(-1, 2)
        won, played = np.diff(ends[:, 0]), np.diff(ends[:, 1])
        return np.where(played > 0, won / np.maximum(played, 1), math.nan)

    def summary(self) -> dict[str, Any]:
        """The headline numbers as plain JSON values (the trainer logs these)."""
        return {
            "turns": self.turns,
            "rounds": self.rounds_played,
            "penalties_per_turn": self.penalties_per_turn,
            "calls_per_turn": self.calls_per_turn,
            "round_win_rate": self.round_win_rate,
            "violation_rate": float(np.mean(self.discovery_violated))
            if self.discovery_violated
            else math.nan,
        }


def _turn_event(table) -> dict:
    """The public event of the turn just judged (a new-rule event may follow it)."""
    for event in reversed(table.public_events()):
        if event["kind"] != "new rule":
            return event
    raise RuntimeError("no turn event after END_TURN")


def record_turn(
    stats: MaoSeatStats,
    observation: np.ndarray,
    event: dict,
    active: dict[int, int],
    since: dict[int, int],
    seat: int,
    *,
    talking: bool = True,
    thank_you: bool = False,
) -> None:
    """Add one judged turn of the agent under test: its calls, penalty cards and, for each active
    rule it did not author (``since[rule]`` own turns ago), whether the turn violated it."""
    view = parse_observation(observation)
    stats.turns += 1
    stats.calls += event["n_calls"]
    penalties = event["penalty_cards"] + event["chain_cards"]
    stats.penalty_cards += penalties
    stats.turn_calls.append(event["n_calls"])
    stats.turn_penalties.append(penalties)
    unknown = [rule for rule, author in active.items() if author != seat]
    stats.turn_since_rule.append(min((since[rule] for rule in unknown), default=-1))
    rule_set = set(active)
    hypotheses = hypotheses_from_sets([rule_set] + [rule_set - {rule} for rule in unknown])
    judgement = own_turn_judgement(hypotheses, view, first_suit_said(view.said, view.played), thank_you)
    expected = predicted_calls(judgement, view.said, view.played, view.hand_total, talking)
    if int(expected[0]) != event["n_calls"]:
        stats.judge_mismatches += 1
    bad = ~judgement.valid if view.played >= 0 else np.zeros_like(judgement.valid)
    missing = judgement.missing(view.said)
    extra = judgement.talking(view.said) if talking else np.zeros_like(missing)
    for row, rule in enumerate(unknown, start=1):
        violated = (
            (bad[0] and not bad[row]) or (missing[0] & ~missing[row]).any() or (extra[0] & ~extra[row]).any()
        )
        stats.discovery_since.append(since[rule])
        stats.discovery_violated.append(bool(violated))


def play_mao_episode(
    env,
    seat_agents: Sequence[Agent],
    tracked: Mapping[int, MaoSeatStats],
    *,
    seed: int,
    options: dict | None = None,
    max_turns: int | None = None,
    log: MaoGameLog | None = None,
) -> None:
    """Play one episode (or until every tracked seat took ``max_turns`` turns), recording the
    tracked seats' turns into their stats (and, with ``log``, every action for a game record)."""
    table = env.unwrapped
    if table.options.calls != "master":
        raise ValueError(
            "play_mao_episode follows the Mao Master's calls; use evaluate_calls for calls='players'"
        )
    env.reset(seed=seed, options=options)
    for agent in {id(a): a for a in seat_agents}.values():
        agent.reset()
    own_turns = [0] * table.n_players
    active = dict(table.active_rules())
    added_at = {rule: list(own_turns) for rule in active}
    talking, thank_you = table.talking, table.seven_phrase == "thank you"
    while True:
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            return
        seat = table.current_seat
        action = int(seat_agents[seat].act(observation["observation"], observation["action_mask"]))
        env.step(action)
        if log is not None:
            log.add(env, action)
        if action == cards.END_TURN:
            event = _turn_event(table)
            if seat in tracked:
                since = {rule: own_turns[seat] - added_at[rule][seat] for rule in active}
                record_turn(
                    tracked[seat],
                    observation["observation"],
                    event,
                    active,
                    since,
                    seat,
                    talking=talking,
                    thank_you=thank_you,
                )
            own_turns[seat] += 1
            if event["won"]:
                for tracked_seat, stats in tracked.items():
                    stats.rounds_played += 1
                    stats.rounds_won += int(tracked_seat == seat)
        if action == cards.END_TURN or action >= cards.CHOOSE_RULE_0:
            for rule, author in table.active_rules():
                if rule not in active:
                    active[rule] = author
                    added_at[rule] = list(own_turns)
        if max_turns is not None and all(own_turns[s] >= max_turns for s in tracked):
            return


def _make_env(n_players: int, env_kwargs: Mapping | None, **overrides: Any):
    # Imported here: keeps PettingZoo off this module's import path.
    from mao_env.env import raw_env

    kwargs = dict(env_kwargs or {})
    kwargs.update(overrides, win_reward=1.0, penalty_card_reward=-1.0)
    return raw_env(n_players, **kwargs)


def _agent(spec: Agent | str, env, seed: int) -> Agent:

    if isinstance(spec, Agent):
        return spec
    return make_agent(spec, "mao", seed=seed, env=env)


def event_window_kwargs(agent: Agent | None, env_kwargs: Mapping | None) -> dict[str, Any]:
    """``env_kwargs`` with the event window (``n_events``) a learned policy was trained with, read
    from its observation length (``agent.obs_dim``): a memory policy reads a longer window than
    the env's default. An explicit ``n_events``, a summary observation, an agent without
    ``obs_dim`` or one whose length is no Mao observation leave ``env_kwargs`` as they are (the
    agent then names any mismatch itself)."""

    kwargs = dict(env_kwargs or {})
    # A policy that appends its own belief inputs is handed the table's observation without them.
    obs_dim = getattr(agent, "table_obs_dim", getattr(agent, "obs_dim", None))
    if obs_dim is None or "n_events" in kwargs or kwargs.get("obs_type", "history") != "history":
        return kwargs
    try:
        n_events, _width = event_layout(int(obs_dim))
    except ValueError:
        return kwargs
    kwargs["n_events"] = n_events
    return kwargs


def _seated(
    spec: Agent | str, seed: int, n_players: int, env_kwargs: Mapping | None, **overrides: Any
) -> tuple[Agent, Any]:
    """The agent under test and the env of its table, whose event window fits a learned policy
    (:func:`event_window_kwargs`). A saved model is loaded first (it needs no env)."""

    agent = spec if isinstance(spec, Agent) else None
    if agent is None and spec.startswith(MODEL_PREFIX):
        agent = make_agent(spec, "mao", seed=seed)
    env = _make_env(n_players, event_window_kwargs(agent, env_kwargs), **overrides)
    return (agent if agent is not None else _agent(spec, env, seed)), env


@dataclass
class MaoReport:
    """Stats per agent under test, with what was played."""

    stats: dict[str, MaoSeatStats]
    title: str
    setup: str

    def markdown(self) -> str:
        rows = []
        for name, s in self.stats.items():
            curve = s.discovery_curve((0, 10, 25, 50, 100, 1000))
            rates = [f"{r:.3f}" if np.isfinite(r) else "n/a" for r in curve.rates]
            rows.append(
                [name, s.turns, s.rounds_played, f"{s.round_win_rate:.3f}", f"{s.calls_per_turn:.3f}",
                 f"{s.penalties_per_turn:.3f}", *rates]
            )  # fmt: skip
        table = markdown_table(
            ["agent", "turns", "rounds", "round-win rate", "calls/turn", "penalty cards/turn",
             "violations t<10", "10-25", "25-50", "50-100", "100+"],
            rows,
        )  # fmt: skip
        mismatches = sum(s.judge_mismatches for s in self.stats.values())
        turns = sum(s.turns for s in self.stats.values())
        return (
            f"## {self.title}\n\n{self.setup}\n\n{table}\n\n"
            "Penalty cards as the env rewards them (calls plus seven-chain cards). Violations: the "
            "share of (turn, unknown rule) pairs in which the turn drew a call it would not have "
            "drawn without that rule, by own turns since the rule became active.\n"
            f"Rule-model check: {turns - mismatches} of {turns} turns' calls predicted exactly.\n"
        )


def evaluate_mao(
    agents: Mapping[str, Agent | str],
    *,
    n_rounds: int,
    seed: int = 0,
    opponent: str = "base",
    rounds_per_episode: int | None = None,
    n_players: int = 4,
    env_kwargs: Mapping | None = None,
    progress: bool = False,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> MaoReport:
    """Each agent in one rotating seat against ``opponent`` players, about ``n_rounds`` rounds in
    episodes of ``rounds_per_episode`` (default ``min(4, n_rounds)``), with a new rule after every
    round won (the same episodes for every agent). ``on_record`` receives the record
    (``mao_env.records``) of the first episode played: the first agent's, in seat 0."""
    if rounds_per_episode is None:
        rounds_per_episode = min(4, n_rounds)
    if n_rounds < 1 or rounds_per_episode < 1:
        raise ValueError(
            f"n_rounds and rounds_per_episode must be >= 1, got {n_rounds}, {rounds_per_episode}"
        )
    n_episodes = math.ceil(n_rounds / rounds_per_episode)
    rng = np.random.default_rng(seed)
    episodes = []
    for _ in range(n_episodes):
        new_rules = rng.choice(DISCOVERABLE_RULES, rounds_per_episode - 1, replace=False)
        episodes.append((int(rng.integers(2**31 - 1)), [int(r) for r in new_rules]))
    stats = {}
    names = list(agents)
    iterator = names
    if progress:
        # Imported here: keeps tqdm off this module's import path.
        from tqdm import tqdm

        iterator = tqdm(names, desc="agents", unit="agent")
    for index, name in enumerate(iterator):
        agent, env = _seated(
            agents[name], seed + index, n_players, env_kwargs, num_rounds=rounds_per_episode,
            rule_choice="fixed", max_steps=3000 * rounds_per_episode,
        )  # fmt: skip
        opponents = [_agent(opponent, env, seed + 100 + s) for s in range(n_players)]
        stats[name] = MaoSeatStats(name)
        for number, (env_seed, new_rules) in enumerate(episodes):
            seat = number % n_players
            lineup = [agent if s == seat else opponents[s] for s in range(n_players)]
            options = {"fixed_rules": new_rules}
            log = MaoGameLog(env_seed, options) if on_record is not None and index == number == 0 else None
            play_mao_episode(env, lineup, {seat: stats[name]}, seed=env_seed, options=options, log=log)
            if log is not None:
                on_record(log.record(env, [name if s == seat else opponent for s in range(n_players)]))
    return MaoReport(
        stats,
        f"Mao evaluation ({n_episodes} episodes x {rounds_per_episode} rounds per agent)",
        f"Each agent in one rotating seat, {n_players - 1} `{opponent}` players in the others; episodes "
        "start without secret rules and every round won adds the next rule of a seeded list of "
        "validity and speech rules (the same for every agent).",
    )


def controlled_games(
    rules: Sequence[int], replicates: int, seed: int, n_players: int = 4
) -> list[tuple[int, int, int]]:
    """The games of :func:`rule_discovery_experiment`, in the order played: (the rule active from
    the start, the seat of the agent under test, the env seed), ``replicates`` games per rule."""
    return [
        (rule, (rule + replicate) % n_players, seed * 100_003 + rule * 101 + replicate)
        for rule in map(int, rules)
        for replicate in range(replicates)
    ]


def rule_discovery_experiment(
    agents: Mapping[str, Agent | str],
    *,
    rules: Sequence[int] = DISCOVERABLE_RULES,
    turns: int = 100,
    replicates: int = 1,
    seed: int = 0,
    opponent: str = "base",
    n_players: int = 4,
    env_kwargs: Mapping | None = None,
    progress: bool = False,
) -> MaoReport:
    """The controlled experiment: for each rule and replicate, one game with only that rule active
    from the start, played until the agent under test took ``turns`` turns."""
    stats = {}
    iterator = list(agents)
    if progress:
        # Imported here: keeps tqdm off this module's import path.
        from tqdm import tqdm

        iterator = tqdm(iterator, desc="agents", unit="agent")
    for index, name in enumerate(iterator):
        agent, env = _seated(
            agents[name], seed + index, n_players, env_kwargs, num_rounds=10_000, rule_choice="fixed",
            max_steps=1_000_000,
        )  # fmt: skip
        opponents = [_agent(opponent, env, seed + 100 + s) for s in range(n_players)]
        stats[name] = MaoSeatStats(name)
        for rule, seat, env_seed in controlled_games(rules, replicates, seed, n_players):
            lineup = [agent if s == seat else opponents[s] for s in range(n_players)]
            play_mao_episode(
                env, lineup, {seat: stats[name]}, seed=env_seed, options={"rules": [rule]}, max_turns=turns,
            )  # fmt: skip
            stats[name].game_ends.append(stats[name].turns)
            stats[name].game_round_ends.append((stats[name].rounds_won, stats[name].rounds_played))
    return MaoReport(
        stats,
        f"Mao rule discovery ({len(rules)} rules x {replicates} games x {turns} turns per agent)",
        f"One secret rule active from the start (nobody at the table authored it), no rule added "
        f"later; the agent in one seat, {n_players - 1} `{opponent}` players in the others.",
    )


def held_out_experiment(
    agents: Mapping[str, Agent | str],
    *,
    turns: int = 100,
    replicates: int = 1,
    seed: int = 0,
    opponent: str = "base",
    env_kwargs: Mapping | None = None,
    progress: bool = False,
) -> MaoReport:
    """:func:`rule_discovery_experiment` on the rules held out of training (``HELD_OUT_RULES``)."""
    report = rule_discovery_experiment(
        agents, rules=HELD_OUT_RULES, turns=turns, replicates=replicates, seed=seed, opponent=opponent,
        env_kwargs=env_kwargs, progress=progress,
    )  # fmt: skip
    report.title = (
        f"Mao rules held out of training ({len(HELD_OUT_RULES)} rules x {replicates} games x {turns} "
        "turns per agent)"
    )
    report.setup += f" Held-out rules: {', '.join(str(r) for r in HELD_OUT_RULES)}."
    return report


#: The counts of :class:`CallStats` that add up over episodes (``CallStats.per_episode`` columns).
CALL_COUNTS = (
    "turns", "faults", "faults_called", "calls", "correct_calls", "bad_calls", "fault_cards",
    "bad_call_cards", "unpunished_cards",
)  # fmt: skip


@dataclass
class CallStats:
    """Players' calls at a table of one agent kind (``evaluate_calls``)."""

    name: str
    turns: int = 0
    """Turns judged (call windows)."""
    faults: int = 0
    """Faults committed: (turn, call reason) pairs the Mao Master would have called."""
    faults_called: int = 0
    calls: int = 0
    correct_calls: int = 0
    bad_calls: int = 0
    fault_cards: int = 0
    """Penalty cards the faulty players took for correct calls."""
    bad_call_cards: int = 0
    """Penalty cards callers took for bad calls."""
    unpunished_cards: int = 0
    """Penalty cards the Master would have given for the faults nobody called."""
    rounds_won: int = 0
    seat_cards: list[int] = field(default_factory=list)
    """Penalty cards (faults and bad calls) per seat."""
    episode_ends: list[tuple[int, ...]] = field(default_factory=list)
    """The ``CALL_COUNTS`` so far at the end of each episode played, so that per-episode rates
    can be paired across agent kinds that met the same episodes."""

    def end_episode(self) -> None:
        """Mark the end of an episode (``episode_ends``)."""
        self.episode_ends.append(tuple(getattr(self, name) for name in CALL_COUNTS))

    def per_episode(self) -> np.ndarray:
        """``[episodes, len(CALL_COUNTS)]``: each count within each episode of ``episode_ends``."""
        ends = np.array([(0,) * len(CALL_COUNTS), *self.episode_ends], dtype=np.int64)
        return np.diff(ends, axis=0)

    @property
    def call_accuracy(self) -> float:
        return self.correct_calls / self.calls if self.calls else math.nan

    @property
    def faults_called_rate(self) -> float:
        return self.faults_called / self.faults if self.faults else math.nan

    def summary(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "faults_per_turn": self.faults / self.turns if self.turns else math.nan,
            "calls_per_turn": self.calls / self.turns if self.turns else math.nan,
            "call_accuracy": self.call_accuracy,
            "faults_called": self.faults_called_rate,
            "fault_cards_per_turn": self.fault_cards / self.turns if self.turns else math.nan,
            "bad_call_cards_per_turn": self.bad_call_cards / self.turns if self.turns else math.nan,
            "unpunished_cards_per_turn": self.unpunished_cards / self.turns if self.turns else math.nan,
        }


def play_calls_episode(
    env,
    seat_agents: Sequence[Agent],
    stats: CallStats,
    *,
    seed: int,
    options: dict,
    movers: Sequence[int] | None = None,
) -> None:
    """Play one episode of players' calls, counting faults (the env's truth of each turn), calls
    and their verdicts, and the penalty cards each way. ``movers``: count only the windows on
    these seats' turns (default: every turn)."""
    table = env.unwrapped
    env.reset(seed=seed, options=options)
    for agent in {id(a): a for a in seat_agents}.values():
        agent.reset()
    if len(stats.seat_cards) < table.n_players:
        stats.seat_cards += [0] * (table.n_players - len(stats.seat_cards))
    faults: dict[int, int] = {}  # the open window's faults: reason -> the Master's cards for it
    tracked = False  # a counted call window is open
    while True:
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            return
        seat = table.current_seat
        action = int(seat_agents[seat].act(observation["observation"], observation["action_mask"]))
        env.step(action)
        if action == cards.END_TURN and (movers is None or seat in movers):
            faults = table.window_faults()
            tracked = True
            stats.turns += 1
            stats.faults += len(faults)
        elif tracked and cards.CALL_0 <= action < cards.NO_CALL:
            stats.calls += 1
            reason = action - cards.CALL_0
            if reason in faults:
                stats.correct_calls += 1
                stats.faults_called += 1
                del faults[reason]  # called: not unpunished
            else:
                stats.bad_calls += 1
        for call in table.last_calls:
            stats.seat_cards[table.possible_agents.index(call["player"])] += call["cards"]
            if not tracked:
                continue
            if call["bad_call"]:
                stats.bad_call_cards += call["cards"]
            else:
                stats.fault_cards += call["cards"]
        if tracked and not table.in_call_window():
            tracked = False
            stats.unpunished_cards += sum(faults.values())
        stats.rounds_won += int(table.round_won_by >= 0)


def calls_episodes(
    episodes: int,
    seed: int,
    *,
    n_players: int = 4,
    n_rules: int = 2,
    rules: Sequence[int] = DISCOVERABLE_RULES,
) -> list[tuple[int, list[tuple[int, int]]]]:
    """The episodes of :func:`evaluate_calls`: (env seed, [(secret rule, its author's seat), ...]),
    the rules drawn from ``rules`` (default: every rule whose violation draws a call)."""
    if len(set(rules)) < n_rules:
        raise ValueError(f"{n_rules} secret rules per episode need as many distinct rules, got {list(rules)}")
    pool = np.asarray(rules, dtype=np.int64)
    rng = np.random.default_rng(seed)
    plans = []
    for _ in range(episodes):
        rules = rng.choice(pool, n_rules, replace=False)
        authors = rng.choice(n_players, n_rules)
        plan = [(int(r), int(a)) for r, a in zip(rules, authors, strict=True)]
        plans.append((int(rng.integers(2**31 - 1)), plan))
    return plans


def evaluate_calls(
    agents: Mapping[str, str],
    *,
    episodes: int,
    n_players: int = 4,
    n_rules: int = 2,
    seed: int = 0,
    max_steps: int = 3000,
    fault_source: str | None = None,
    rules: Sequence[int] = DISCOVERABLE_RULES,
) -> dict[str, CallStats]:
    """Players' calls (``calls="players"``) of each agent kind, on the same ``episodes`` (seeds
    and secret rules) for every kind. Each episode starts with ``n_rules`` rules drawn from
    ``rules`` (default: the validity and speech rules; ``HELD_OUT_RULES`` for players fitted on
    the others), each authored by a random seat (its author knows it; the others infer it).

    ``fault_source=None``: every seat plays the kind, every turn's window is counted. Otherwise
    seat 0 plays ``fault_source`` (say ``"base"``, who never learns a secret rule and so keeps
    faulting) and the other seats the kind: only the windows on seat 0's turns are counted, i.e.
    how the kind polices a faulty player."""
    plans = calls_episodes(episodes, seed, n_players=n_players, n_rules=n_rules, rules=rules)
    results = {}
    for index, (name, spec) in enumerate(agents.items()):
        env = _make_env(n_players, None, calls="players", max_steps=max_steps)
        lineup = [_agent(spec, env, seed + 1000 * index + s) for s in range(n_players)]
        if fault_source is not None:
            lineup[0] = _agent(fault_source, env, seed + 1000 * index)
        stats = CallStats(name)
        movers = None if fault_source is None else (0,)
        for env_seed, plan in plans:
            play_calls_episode(env, lineup, stats, seed=env_seed, options={"rules": plan}, movers=movers)
            stats.end_episode()
        results[name] = stats
    return results


def calls_markdown(results: Mapping[str, CallStats], setup: str) -> str:
    """The players' calls report: accuracy, faults called and where the penalty cards went."""

    def rate(x: float) -> str:
        return f"{x:.3f}" if np.isfinite(x) else "n/a"

    rows = []
    for name, s in results.items():
        summary = s.summary()
        rows.append(
            [name, s.turns, s.faults, s.calls, f"{rate(s.call_accuracy)} ({s.correct_calls}/{s.calls})",
             f"{rate(s.faults_called_rate)} ({s.faults_called}/{s.faults})",
             rate(summary["fault_cards_per_turn"]), rate(summary["bad_call_cards_per_turn"]),
             rate(summary["unpunished_cards_per_turn"]), " ".join(str(c) for c in s.seat_cards)]
        )  # fmt: skip
    table = markdown_table(
        ["agents", "turns", "faults", "calls", "call accuracy", "faults called",
         "fault cards/turn", "bad-call cards/turn", "unpunished cards/turn", "cards by seat"],
        rows,
    )  # fmt: skip
    return (
        f"## Mao players' calls\n\n{setup}\n\n{table}\n\n"
        "Call accuracy: correct calls / calls. Faults called: faults committed that some seat called "
        "(a fault is a call reason the Mao Master would have called on the turn). Fault cards: taken "
        "by the faulty player for correct calls; bad-call cards: taken by callers; unpunished: what "
        "the Master would have given for the faults nobody called.\n"
    )


#: What :func:`paired_call_differences` compares: (label, numerator, denominator) of ``CALL_COUNTS``.
PAIRED_CALL_MEASURES = (
    ("call accuracy", "correct_calls", "calls"),
    ("faults called", "faults_called", "faults"),
    ("bad-call cards/turn", "bad_call_cards", "turns"),
    ("unpunished cards/turn", "unpunished_cards", "turns"),
)


def paired_call_differences(ours: CallStats, theirs: CallStats) -> dict[str, MeanCI]:
    """``ours`` minus ``theirs``, two agent kinds that met the same episodes, for each of
    ``PAIRED_CALL_MEASURES`` (each a ratio of sums, as ``calls_markdown`` shows it), with a 95%
    paired bootstrap interval over episodes: the games of the two kinds part once their calls
    differ, so an episode's pair is the unit and its length may differ between the kinds."""
    a, b = ours.per_episode(), theirs.per_episode()
    if a.shape != b.shape or a.shape[0] == 0:
        raise ValueError(f"{ours.name} and {theirs.name} did not play the same episodes")
    column = {name: index for index, name in enumerate(CALL_COUNTS)}
    return {
        label: paired_ratio_difference(
            (a[:, column[numerator]], a[:, column[denominator]]),
            (b[:, column[numerator]], b[:, column[denominator]]),
        )
        for label, numerator, denominator in PAIRED_CALL_MEASURES
    }


def paired_calls_markdown(results: Mapping[str, CallStats], pairs: Sequence[tuple[str, str]]) -> str:
    """One table row per (agent, reference) pair of ``results``: :func:`paired_call_differences`."""
    rows, header = [], []
    for name, reference in pairs:
        differences = paired_call_differences(results[name], results[reference])
        header = ["difference", "episodes", *differences]
        n_episodes = next(iter(differences.values())).n_blocks
        rows.append([f"{name} - {reference}", n_episodes, *(str(d) for d in differences.values())])
    return markdown_table(header, rows) + (
        "\n\nDifferences of the pooled figures above; 95% intervals by a paired bootstrap over episodes "
        "(2,000 resamples; both kinds met the same seeds and secret rules).\n"
    )


def paired_penalty_difference(report: MaoReport, agent: str, reference: str) -> MeanCI:
    """Mean over the experiment's games of (``agent``'s - ``reference``'s penalty cards per turn)
    with a 95% t interval: every agent met the same games (same seeds, rule and seat), so the
    game is the pairing unit and turns within a game are not treated as independent."""
    ours = report.stats[agent].game_penalty_rates()
    theirs = report.stats[reference].game_penalty_rates()
    if ours.size != theirs.size or ours.size == 0:
        raise ValueError(f"{agent} and {reference} did not play the same controlled games")
    return mean_ci(ours - theirs)


def paired_round_win_difference(report: MaoReport, agent: str, reference: str) -> MeanCI:
    """Mean over the experiment's games of (``agent``'s - ``reference``'s round-win rate) with a
    95% t interval, as :func:`paired_penalty_difference`; games where either finished no round
    are left out."""
    ours = report.stats[agent].game_round_win_rates()
    theirs = report.stats[reference].game_round_win_rates()
    if ours.size != theirs.size or ours.size == 0:
        raise ValueError(f"{agent} and {reference} did not play the same controlled games")
    both = np.isfinite(ours) & np.isfinite(theirs)
    return mean_ci(ours[both] - theirs[both])


def penalty_ratio_target(
    report: MaoReport,
    learner: str = "bayes",
    reference: str = "oracle",
    *,
    ratio: float = 1.5,
    bin_width: int = 10,
    horizon: int = 100,
) -> dict[str, Any]:
    """Penalty cards per turn of ``learner`` and ``reference`` in bins of turns since the newest
    rule, and the first bin from which the learner stays within ``ratio`` times the reference."""
    edges = np.arange(0, horizon + bin_width, bin_width)
    _, learner_rate = report.stats[learner].penalty_curve(edges)
    _, reference_rate = report.stats[reference].penalty_curve(edges)
    within = learner_rate <= ratio * reference_rate
    reached = None
    for start in range(len(within)):
        if within[start:].all():
            reached = int(edges[start])
            break
    return {
        "bins": [f"{int(a)}-{int(b)}" for a, b in itertools.pairwise(edges)],
        learner: [float(x) for x in learner_rate],
        reference: [float(x) for x in reference_rate],
        "ratio": [
            float(a / b) if b > 0 else math.nan for a, b in zip(learner_rate, reference_rate, strict=True)
        ],
        "within_from_turn": reached,
    }


def write_mao_report(report: MaoReport, folder: Path, stem: str = "mao_evaluation") -> list[Path]:
    """The markdown report, the discovery-curve PNG and the penalty-curve PNG in ``folder``."""
    # Imported here: keeps matplotlib off this module's import path.
    import matplotlib

    matplotlib.use("Agg")
    # Imported here: keeps matplotlib off this module's import path.
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    markdown_path = folder / f"{stem}.md"
    markdown_path.write_text(report.markdown())
    paths = [markdown_path]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for name, s in report.stats.items():
        curve = s.discovery_curve()
        shown = curve.trials > 0
        if shown.any():
            low, high = curve.intervals()
            axes[0].plot(curve.centres[shown], curve.rates[shown], marker="o", markersize=3, label=name)
            axes[0].fill_between(curve.centres[shown], low[shown], high[shown], alpha=0.15)
        counts, means = s.penalty_curve()
        centres = (np.asarray(DISCOVERY_EDGES[:-1]) + np.asarray(DISCOVERY_EDGES[1:])) / 2
        axes[1].plot(centres[counts > 0], means[counts > 0], marker="o", markersize=3, label=name)
    axes[0].set(xscale="symlog", xlabel="own turns since the rule became active",
                ylabel="violation rate of that rule", title="Rule discovery (95% Wilson bands)")  # fmt: skip
    axes[1].set(xscale="symlog", xlabel="own turns since the newest unknown rule",
                ylabel="penalty cards per turn", title="Penalties")  # fmt: skip
    for ax in axes:
        ax.legend(fontsize=8)
    fig.tight_layout()
    plot_path = folder / f"{stem}_discovery.png"
    fig.savefig(plot_path, dpi=100)
    plt.close(fig)
    paths.append(plot_path)
    return paths


# ---- the trainer's and the CLI's entry points -------------------------------------------------
def evaluate_mao_seat(
    agent: Agent, opponent: str, *, n_rounds: int, seed: int = 0, env_kwargs: Mapping | None = None
) -> dict[str, Any]:
    """The headline numbers of ``agent`` in one seat against three ``opponent`` players."""
    report = evaluate_mao(
        {agent.name: agent}, n_rounds=n_rounds, seed=seed, opponent=opponent, env_kwargs=env_kwargs,
    )  # fmt: skip
    return report.stats[agent.name].summary()


def mao_report(
    agents: Mapping[str, Agent | str], config, run_dir: Path, *, turns: int, replicates: int = 1
) -> str:
    """The trainer's final Mao section: the agents (with the base-rules and Bayesian players as
    references) facing each rule held out of training (``replicates`` games of ``turns`` own turns
    per rule), at a table of each evaluation opponent, with each agent's paired difference from
    the base-rules player and from the Bayesian player."""
    env_kwargs = {"obs_type": config.obs_type, **config.env_kwargs}
    agents = {**agents, "base": "base", "bayes": "bayes"}
    sections = []
    for opponent in config.eval_opponents:
        report = held_out_experiment(
            agents, turns=turns, replicates=replicates, seed=config.seed + 99, opponent=opponent,
            env_kwargs=env_kwargs,
        )  # fmt: skip
        write_mao_report(report, Path(run_dir), f"mao_held_out_vs_{opponent}")
        sections.append(report.markdown())
        # Each policy against its teacher too: the Mao target is the Bayesian player's penalties.
        teacher = [(name, "bayes") for name in agents if name not in ("base", "bayes")]
        sections.append(held_out_verdicts(report, pairs=teacher))
    return "\n".join(sections)


def held_out_verdicts(
    report: MaoReport, reference: str = "base", pairs: Sequence[tuple[str, str]] = ()
) -> str:
    """One line per agent: its penalty cards per turn against ``reference``'s on the same games,
    the paired per-game difference with its 95% interval, and whether it is lower (the interval
    below zero); then the round-win rates, paired the same way. ``pairs``: more (agent, other)
    comparisons, a line each."""
    lines = []
    comparisons = [(name, reference) for name in report.stats if name != reference] + list(pairs)
    for name, other in comparisons:
        stats, theirs = report.stats[name], report.stats[other]
        difference = paired_penalty_difference(report, name, other)
        verdict = "lower" if difference.high < 0 else "not lower"
        wins = paired_round_win_difference(report, name, other)
        lines.append(
            f"- {name} {stats.penalties_per_turn:.3f} vs {other} "
            f"{theirs.penalties_per_turn:.3f} penalty cards/turn; paired difference "
            f"per game {difference} ({difference.n_blocks} games, 95% CI): {verdict}; round-win rate "
            f"{stats.round_win_rate:.3f} vs {theirs.round_win_rate:.3f}, paired per game {wins} "
            f"({wins.n_blocks} games)"
        )
    return "\n".join(lines) + "\n"


def command_evaluate_mao(args: argparse.Namespace) -> int:
    """``madiao-mao evaluate --game mao``: the agents (default random, base, bayes, oracle) one at a
    time against base players, about ``--deals`` rounds each; ``--out`` writes markdown + PNG;
    ``--record`` the first game played (the first agent's) as a Mao record: a Mao record is one
    game replayed from its seed, so one game is kept."""

    if args.record_hands is not None:
        raise ValueError("--record-hands is a Madiao option; a Mao --record holds the first game")
    check_output_folder(args.out, "--out")
    check_output_file(args.record, "--record")
    names = list(args.agents or DEFAULT_AGENTS)
    if args.model and "model" not in names:
        names.insert(0, "model")
    if len(set(names)) != len(names):
        raise ValueError(f"agent names repeat: {' '.join(names)}")
    specs: dict[str, str] = {}
    for name in names:
        if name == "model":
            # Without --model, 'model' is the pretrained Mao policy shipped.
            specs[name] = f"model:{args.model}" if args.model else "model"
        elif name in agent_names("mao") or name.startswith("model:"):
            specs[name] = name
        else:  # named before any game is played
            raise ValueError(
                f"unknown mao agent {name!r}; choose from {', '.join(agent_names('mao'))} or model:PATH"
            )
    for spec in specs.values():
        check_model(spec, "mao")  # a bad model file is named before any game is played
    records: list[dict[str, Any]] = []
    report = evaluate_mao(
        specs, n_rounds=args.deals, seed=args.seed, on_record=records.append if args.record else None
    )
    print(report.markdown())
    if args.out:
        paths = write_mao_report(report, Path(args.out))
        print("wrote " + ", ".join(str(p) for p in paths))
    if args.record:
        # Imported here: keeps PettingZoo off this module's import path.
        from mao_env.records import write_record

        write_record(args.record, records[0])
        print(f"wrote the first game of {names[0]} to {args.record} (a Mao record holds one game)")
    return 0


def print_report(text: str, folder: str | None, file_name: str) -> None:
    """Print a markdown report and, given a folder (created if need be), write it there as
    ``file_name``."""
    print(text)
    if folder:
        path = Path(folder) / file_name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")


@dataclass
class RuleDiscoveryOptions:
    """The rule-discovery measurement: base, bayes and oracle on every violable library rule (or,
    with --model, a learned policy against base and bayes on the rules held out of training; with
    --calls, the players' calls: call accuracy and where the penalty cards go)."""

    turns: int = 100
    """Own turns per game of the agent under test."""
    replicates: int = 1
    """Games per rule."""
    seed: int = 0
    """Seed of the games."""
    out: Annotated[str | None, tyro.conf.arg(metavar="FOLDER")] = None
    """Folder for the markdown report and PNG plots."""
    model: Annotated[tuple[str, ...] | None, tyro.conf.arg(metavar="PATH [PATH ...]")] = None
    """Saved Mao policies: compare them with the base-rules and Bayesian players (and, when there
    are several, with each other) on the rules held out of their training instead."""
    calls: Annotated[bool, tyro.conf.FlagCreatePairsOff] = False
    """Players' calls instead: the call accuracy of base, bayes and oracle players, each at a table
    of its own kind and policing a base-rules player."""
    episodes: int = 20
    """Episodes per table (--calls)."""

    def check(self) -> None:
        for flag, value in (
            ("--turns", self.turns),
            ("--replicates", self.replicates),
            ("--episodes", self.episodes),
        ):
            check_at_least(flag, value, 1)
        check_at_least("--seed", self.seed, 0)
        check_output_folder(self.out, "--out")


def main(argv: Sequence[str] | None = None) -> int:
    """The rule-discovery measurement (``RuleDiscoveryOptions``). A bad argument or model ends it
    before any game, with one line on stderr and status 2."""

    prog = "python -m madiao_mao.training.mao.evaluation"
    argv = sys.argv[1:] if argv is None else list(argv)

    def body() -> int:
        options = parse_dataclass(RuleDiscoveryOptions, argv, prog=prog)
        options.check()
        return _run_main(options)

    return run_reporting_user_errors(prog, body)


def _run_main(args: RuleDiscoveryOptions) -> int:
    if args.calls:
        kinds = {"base": "base", "bayes": "bayes", "oracle": "oracle"}
        sections = []
        for fault_source, setup in (
            (None, "Every seat the same kind"),
            ("base", "Seat 0 a base-rules player (the faults counted are its own), the other seats the kind"),
        ):
            results = evaluate_calls(kinds, episodes=args.episodes, seed=args.seed, fault_source=fault_source)
            sections.append(
                calls_markdown(
                    results,
                    f"{setup}; 4 players, {args.episodes} one-round episodes (seed {args.seed}), each "
                    "starting with 2 validity or speech rules authored by random seats.",
                )
            )
        print_report("\n".join(sections), args.out, "mao_calls.md")
        return 0
    if args.model:
        # One policy is "learned"; several are learned1, learned2, ... in the order given.
        names = ["learned"] if len(args.model) == 1 else [f"learned{i + 1}" for i in range(len(args.model))]
        for name, path in zip(names, args.model, strict=True):
            check_model(f"model:{path}", "mao")
            if len(names) > 1:
                print(f"{name}: {path}")
        report = held_out_experiment(
            {**{name: f"model:{path}" for name, path in zip(names, args.model, strict=True)},
             "base": "base", "bayes": "bayes"},
            turns=args.turns,
            replicates=args.replicates,
            seed=args.seed,
            progress=True,
        )  # fmt: skip
        print(report.markdown())
        teacher = [(name, "bayes") for name in names]  # the Mao target: the Bayesian player's penalties
        print(held_out_verdicts(report, pairs=[*itertools.combinations(names, 2), *teacher]))
        if args.out:
            paths = write_mao_report(report, Path(args.out), "mao_held_out")
            print("wrote " + ", ".join(str(p) for p in paths))
        return 0
    report = rule_discovery_experiment(
        {"base": "base", "bayes": "bayes", "oracle": "oracle"},
        turns=args.turns + 20,
        replicates=args.replicates,
        seed=args.seed,
        progress=True,
    )
    print(report.markdown())
    target = penalty_ratio_target(report, horizon=args.turns + 20)
    rows = [[b, f"{x:.3f}", f"{y:.3f}", f"{r:.2f}"] for b, x, y, r in
            zip(target["bins"], target["bayes"], target["oracle"], target["ratio"], strict=True)]  # fmt: skip
    print(markdown_table(["turns since rule", "bayes pen/turn", "oracle pen/turn", "ratio"], rows))
    print(f"bayes within 1.5x of oracle from turn: {target['within_from_turn']}")
    if args.out:
        print("wrote " + ", ".join(str(p) for p in write_mao_report(report, Path(args.out), "mao_discovery")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
