"""The self-play opponent pool and timing probes for the trainer.

The SB3 adapter (``madiao_mao.training.sb3.adapter.LearnerVecEnv``) draws, for every opponent seat of
every new game, one entry of a list uniformly. ``OpponentPool`` turns kind weights into that list:
it holds ``n_slots`` *slots*, shared out among the kinds by weight (``scripted``: the baselines in
turn; ``snapshot``: the newest frozen copies of the learner; ``current``: the live policy, i.e.
pure self-play). A slot is an agent that forwards to whatever it holds, so a new snapshot enters
the running games' pool at once without touching the adapter. Slots also time their calls, which
is how the trainer reports the share of time spent in opponents.

``LeagueOpponents`` is the trainer's league mode (``TrainConfig.opponents = "league"``): one slot
per league member (``madiao_mao.training.league``), the adapter drawing ONE slot per game by the league's
PFSP probabilities (``opponent_draw="per_game"``), and finished games recorded in the league's
payoff table against the member that played them.

Both engines build their opponents here (``scripted_agents``, the pool, the league's members);
the RLlib engine's env runners hold them beside their games.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from madiao_mao.agents.base import Agent
from madiao_mao.agents.learned import policy_agent
from madiao_mao.agents.registry import make_agent
from madiao_mao.training.config import TrainConfig
from madiao_mao.training.game_spec import game_spec
from madiao_mao.training.league import MAIN, League
from madiao_mao.training.learner_games import keeps_game_memory, refuse_memory_without_keys, takes_row_keys
from madiao_mao.training.run_folder import LEAGUE_FILE, new_league, snapshot_step

if TYPE_CHECKING:  # typing only: the SB3 engine's run imports this module
    from madiao_mao.training.sb3.train import Run

KINDS = ("scripted", "snapshot", "current")


def scripted_agents(config: TrainConfig, names: tuple[str, ...], what: str) -> list[Agent]:
    """The scripted opponents ``names``, each seeded by its place; an agent that cannot sit in the
    training games is a ValueError naming it (``what`` says what it was to be)."""
    agents = []
    for number, name in enumerate(names):
        try:
            agents.append(make_agent(name, config.game, seed=config.seed + number))
        except ValueError as error:
            # e.g. Madiao's search player, which needs a whole env of its own per game.
            raise ValueError(f"{what} {name!r} cannot sit in the training pool: {error}") from None
    choose_table = game_spec(config.game).table_obs_type
    for name, agent in zip(names, agents, strict=True):
        # Checked here, before the run folder exists: inside the pool the agent sits in a slot,
        # which takes keys whatever it holds (Mao's Bayesian player takes them).
        refuse_memory_without_keys(agent, f"{what} {name!r}")
        if choose_table is not None:
            needs = choose_table([agent])
            # An agent that needs no variant beyond the game's plain table (choose_table([])) reads
            # the leading entries of any; one that reads a richer observation needs the run's to be it.
            if needs not in (config.obs_type, choose_table([])):
                raise ValueError(
                    f"{what} {name!r} reads the {needs!r} observation, and this run's games hand "
                    f"out the {config.obs_type!r} one: train with --obs-type {needs} to seat it"
                )
    return agents


class PoolSlot(Agent):
    """One entry of the pool list: forwards to the agent it currently holds, timed (in total, on
    the pool, and per slot).

    An agent with a memory per game (Mao's Bayesian player) can sit in a slot: the adapter hands
    the slot the game-seat key of every row (``rows``) and tells it which keys' games ended
    (``reset_rows``); the slot passes both on to an agent that takes keys
    (``madiao_mao.training.learner_games``). A memoryless agent is called as before.
    """

    def __init__(self, kind: str, agent: Agent, pool: OpponentPool) -> None:
        self.kind = kind
        self.agent = agent
        self.pool = pool
        #: Seconds spent in this slot's agent and the decisions it made.
        self.seconds = 0.0
        self.decisions = 0

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.agent.name

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.agent.act(observation, action_mask)

    def act_batch(
        self, observations: np.ndarray, masks: np.ndarray, rows: np.ndarray | None = None
    ) -> np.ndarray:
        started = time.perf_counter()
        if rows is not None and takes_row_keys(self.agent):
            actions = self.agent.act_batch(observations, masks, rows=rows)
        elif keeps_game_memory(self.agent):
            raise ValueError(
                f"{self.agent.name!r} keeps a memory per game and needs the game-seat key of every row "
                "(act_batch(..., rows=...)); it cannot sit at this table without them"
            )
        else:
            actions = self.agent.act_batch(observations, masks)
        self.record_call(time.perf_counter() - started, len(actions))
        return actions

    def record_call(self, seconds: float, decisions: int) -> None:
        """Count a call of this slot's agent: its seconds and decisions, on the slot and the pool
        (a joint call of several slots' agents charges each its share)."""
        self.seconds += seconds
        self.decisions += decisions
        self.pool.seconds += seconds
        self.pool.decisions += decisions

    def reset_rows(self, rows: np.ndarray) -> None:
        self.agent.reset_rows(rows)


def share_slots(weights: dict[str, float], n_slots: int) -> dict[str, int]:
    """Slot counts per kind proportional to the weights (largest remainders; each weighted kind
    gets at least one slot)."""
    weighted = {k: w for k, w in weights.items() if w > 0}
    if not weighted:
        raise ValueError("at least one opponent kind needs a positive weight")
    if n_slots < len(weighted):
        raise ValueError(f"n_slots must be at least {len(weighted)} for {len(weighted)} weighted kinds")
    total = sum(weighted.values())
    exact = {k: n_slots * w / total for k, w in weighted.items()}
    counts = {k: max(1, int(v)) for k, v in exact.items()}
    by_remainder = sorted(weighted, key=lambda k: exact[k] - int(exact[k]), reverse=True)
    index = 0
    while sum(counts.values()) < n_slots:
        counts[by_remainder[index % len(by_remainder)]] += 1
        index += 1
    while sum(counts.values()) > n_slots:
        largest = max(counts, key=counts.get)
        counts[largest] -= 1
    return counts


class OpponentPool:
    """Weighted opponents for self-play (see module doc).

    Until the live policy is set (``set_current``), current/snapshot slots hold the scripted
    agents; until a snapshot exists, snapshot slots hold the live policy.
    """

    def __init__(
        self,
        scripted: Sequence[Agent],
        *,
        weights: dict[str, float] | None = None,
        max_snapshots: int = 5,
        n_slots: int = 20,
    ) -> None:
        if not scripted:
            raise ValueError("the opponent pool needs at least one scripted agent")
        weights = {"scripted": 1.0, "snapshot": 0.0, "current": 0.0, **(weights or {})}
        for kind, weight in weights.items():
            if kind not in KINDS:
                raise ValueError(f"unknown opponent kind {kind!r}; kinds are {', '.join(KINDS)}")
            if not isinstance(weight, (int, float)) or weight < 0:
                raise ValueError(f"opponent weight of {kind!r} must be a number >= 0, got {weight!r}")
        if max_snapshots < 1:
            raise ValueError(f"max_snapshots must be at least 1, got {max_snapshots}")
        self.scripted = list(scripted)
        self.max_snapshots = max_snapshots
        self.snapshots: list[Agent] = []
        self.current: Agent | None = None
        #: Seconds spent in opponent policies and the decisions they made.
        self.seconds = 0.0
        self.decisions = 0
        counts = share_slots(weights, n_slots)
        self.slots: list[PoolSlot] = []
        for kind in KINDS:
            for number in range(counts.get(kind, 0)):
                self.slots.append(PoolSlot(kind, self.scripted[number % len(self.scripted)], self))
        self._refill()

    def set_current(self, agent: Agent) -> None:
        self.current = agent
        self._refill()

    def add_snapshot(self, agent: Agent, *, path: str | None = None, step: int | None = None) -> None:
        """Add a frozen learner; past ``max_snapshots`` the oldest leaves the pool. (``path`` and
        ``step`` are for the league, ``LeagueOpponents``; the pool keeps only the agent.)"""
        self.snapshots = [*self.snapshots, agent][-self.max_snapshots :]
        self._refill()

    def _refill(self) -> None:
        snapshot_slots = [s for s in self.slots if s.kind == "snapshot"]
        for number, slot in enumerate(snapshot_slots):
            if self.snapshots:
                slot.agent = self.snapshots[number % len(self.snapshots)]
            elif self.current is not None:
                slot.agent = self.current
        for slot in self.slots:
            if slot.kind == "current" and self.current is not None:
                slot.agent = self.current

    def names(self) -> list[str]:
        return [slot.name for slot in self.slots]


class LeagueOpponents:
    """A league's members as the SB3 adapter's pool (see the module doc).

    The slots are fixed for the adapter: the main agent (the live policy, once ``set_current``
    is called), one per anchor, and ``max_snapshots`` for snapshots (empty ones are never drawn).
    A new snapshot takes the slot of the one it pushes out of the league; games then still under
    way against the old one are not recorded (they met two opponents).
    """

    def __init__(self, league: League, anchors: dict[str, Agent], *, max_snapshots: int) -> None:
        unsupported = league.names("exploiter")
        if unsupported:
            raise ValueError(f"the SB3 trainer cannot play exploiters yet: {', '.join(unsupported)}")
        missing = [name for name in league.names("anchor") if name not in anchors]
        if missing:
            raise ValueError(f"no agent given for league anchors {', '.join(missing)}")
        if len(league.names("snapshot")) > max_snapshots:
            raise ValueError(f"the league holds more snapshots than max_snapshots ({max_snapshots})")
        self.league = league
        self.seconds = 0.0
        self.decisions = 0
        if not league.names("anchor"):
            raise ValueError("the league needs at least one anchor")
        # Seats nobody is drawn for yet hold an anchor (the main slot until set_current).
        placeholder = anchors[league.names("anchor")[0]]
        self.slots: list[PoolSlot] = [PoolSlot("current", placeholder, self)]
        self.slot_member: list[str | None] = [MAIN]
        for name in league.names("anchor"):
            self.slots.append(PoolSlot("scripted", anchors[name], self))
            self.slot_member.append(name)
        for _ in range(max_snapshots):
            self.slots.append(PoolSlot("snapshot", placeholder, self))
            self.slot_member.append(None)
        self._slot_of = {name: slot for slot, name in enumerate(self.slot_member) if name is not None}
        self._venv = None
        #: Games whose opponent slot changed hands while they were played (not recorded).
        self.stale_games: set[int] = set()

    def attach(self, venv) -> None:
        """The ``LearnerVecEnv`` drawing from these slots (read to find games in progress)."""
        self._venv = venv

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` slot indices drawn by the league's PFSP probabilities (the adapter's sampler)."""
        return np.array([self._slot_of[name] for name in self.league.sample(rng, n)], dtype=np.int64)

    def set_current(self, agent: Agent) -> None:
        self.slots[0].agent = agent
        for slot, name in zip(self.slots, self.slot_member, strict=True):
            if slot.kind == "snapshot" and name is None:
                slot.agent = agent

    def bind_snapshot(self, name: str, agent: Agent) -> None:
        """Seat the agent of a snapshot already in the league (a resumed run)."""
        if name in self._slot_of:
            raise ValueError(f"snapshot {name!r} already has a slot")
        self._seat(self.slot_member.index(None), name, agent)

    def add_snapshot(self, agent: Agent, *, path: str | None = None, step: int | None = None) -> None:
        """A frozen copy of the main agent joins the league (named after the agent)."""
        if path is None or step is None:
            raise ValueError("a league snapshot needs the path it was saved to and its step")
        member, removed = self.league.add_snapshot(agent.name, path, step)
        slot = self._slot_of.pop(removed.name) if removed is not None else self.slot_member.index(None)
        self._seat(slot, member.name, agent)

    def _seat(self, slot: int, name: str, agent: Agent) -> None:
        if self._venv is not None:
            playing = np.flatnonzero(self._venv.opponent_index[:, 0] == slot)
            self.stale_games.update(int(game) for game in playing)
        self.slots[slot].agent = agent
        self.slot_member[slot] = name
        self._slot_of[name] = slot

    def record_games(self, dones: np.ndarray, infos: list[dict]) -> None:
        """Record the learner's return of every game finished in this step against its member."""
        for game in np.flatnonzero(dones):
            info = infos[game]
            if "episode" not in info or "opponent_index" not in info:
                continue
            if int(game) in self.stale_games:
                self.stale_games.discard(int(game))
                continue
            name = self.slot_member[info["opponent_index"]]
            if name is not None:
                self.league.record(name, [info["episode"]["r"]])

    def names(self) -> list[str]:
        return [slot.name for slot in self.slots]


def build_opponents(run: Run) -> OpponentPool | LeagueOpponents:
    """The opponents of the training games: the weighted pool of scripted agents, snapshots and the
    live policy, or in league mode the league's members (``run.league``, made here for a new run),
    with the snapshots a resumed run had."""
    config = run.config
    if config.opponents != "league":
        pool = OpponentPool(
            scripted_agents(config, config.scripted_opponents, "scripted opponent"),
            weights=config.opponent_weights,
            max_snapshots=config.max_snapshots,
        )
        for path in run.state.get("snapshots", []):
            if Path(path).is_file():
                pool.add_snapshot(snapshot_agent(Path(path), config.seed))
        return pool
    league = run.league = run.league or new_league(config)
    anchors = league.names("anchor")
    scripted = scripted_agents(config, tuple(league.members[name].agent for name in anchors), "league anchor")
    pool = LeagueOpponents(
        league, dict(zip(anchors, scripted, strict=True)), max_snapshots=config.max_snapshots
    )
    for name in league.names("snapshot"):
        path = run.run_dir / league.members[name].path
        try:
            agent = snapshot_agent(path, config.seed)
        except Exception as error:  # a damaged zip fails in zipfile, torch or pickle, each its own way
            raise ValueError(
                f"{path}, snapshot {name!r} of {LEAGUE_FILE}, is damaged ({type(error).__name__}: {error})"
            ) from None
        pool.bind_snapshot(name, agent)
    return pool


def snapshot_agent(path: Path, seed: int) -> Agent:
    """A frozen snapshot of the learner as a sampling opponent, seeded by the run's seed and the
    snapshot's step (``snapshot_000250112.zip``)."""
    return policy_agent(
        path,
        deterministic=False,
        name=path.stem,
        seed=seed * 1_000_003 + snapshot_step(path),
        sparse_inputs=True,  # its weights never change (LearnedPolicyAgent)
    )
