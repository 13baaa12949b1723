"""The self-play opponent pool and timing probes for the trainer.

The SB3 adapter (``cardgame_core.adapters.LearnerVecEnv``) draws, for every opponent seat of
every new game, one entry of a list uniformly. ``OpponentPool`` turns kind weights into that list:
it holds ``n_slots`` *slots*, shared out among the kinds by weight (``scripted``: the baselines in
turn; ``snapshot``: the newest frozen copies of the learner; ``current``: the live policy, i.e.
pure self-play). A slot is an agent that forwards to whatever it holds, so a new snapshot enters
the running games' pool at once without touching the adapter. Slots also time their calls, which
is how the trainer reports the share of time spent in opponents.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from stable_baselines3.common.vec_env import VecEnvWrapper

from agents.base import Agent

KINDS = ("scripted", "snapshot", "current")


class PoolSlot(Agent):
    """One entry of the pool list: forwards to the agent it currently holds, timed."""

    def __init__(self, kind: str, agent: Agent, pool: OpponentPool) -> None:
        self.kind = kind
        self.agent = agent
        self.pool = pool

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.agent.name

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.agent.act(observation, action_mask)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        started = time.perf_counter()
        actions = self.agent.act_batch(observations, masks)
        self.pool.seconds += time.perf_counter() - started
        self.pool.decisions += len(actions)
        return actions


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

    def add_snapshot(self, agent: Agent) -> None:
        """Add a frozen learner; past ``max_snapshots`` the oldest leaves the pool."""
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


class TimedVectorEnv:
    """Forwards to a batched env and adds up the seconds spent in its ``reset``/``step``."""

    def __init__(self, vector_env) -> None:
        self.vector_env = vector_env
        self.seconds = 0.0

    def __getattr__(self, name: str):
        return getattr(self.vector_env, name)

    def reset(self, seed: int | None = None):
        started = time.perf_counter()
        try:
            return self.vector_env.reset(seed=seed)
        finally:
            self.seconds += time.perf_counter() - started

    def step(self, actions: np.ndarray):
        started = time.perf_counter()
        try:
            return self.vector_env.step(actions)
        finally:
            self.seconds += time.perf_counter() - started


class HandSizeReward(VecEnvWrapper):
    """Mao training: adds ``reward_per_card`` for every card the learner's hand shrinks by (and
    takes it away for every card it grows by) between two of its decisions.

    Drawing is always allowed in Mao and never called, so under penalty rewards alone a policy
    learns that drawing instead of playing is the safe move: it stops calls at once and the cost
    (a longer road to winning) lies far in the future. Counting hand size makes a draw cost what a
    card costs. Over an episode the added rewards sum to ``reward_per_card * (5 - final hand)``:
    they reward shedding cards, not a particular way of doing it. The hand is read from the
    observation (its per-card-type counts), the last one of a game from the terminal observation.
    """

    def __init__(self, venv, reward_per_card: float, hand: slice) -> None:
        super().__init__(venv)
        self.reward_per_card = float(reward_per_card)
        self.hand = hand
        self._held = np.zeros(venv.num_envs, dtype=np.float64)

    def _hand_size(self, observations: np.ndarray) -> np.ndarray:
        return np.asarray(observations)[..., self.hand].sum(axis=-1).astype(np.float64)

    def reset(self) -> np.ndarray:
        observations = self.venv.reset()
        self._held = self._hand_size(observations)
        return observations

    def step_wait(self):
        observations, rewards, dones, infos = self.venv.step_wait()
        now = self._hand_size(observations)
        ended = now.copy()
        for game in np.flatnonzero(dones):
            ended[game] = self._hand_size(infos[game]["terminal_observation"])
        shaped = rewards + self.reward_per_card * (self._held - ended)
        self._held = now
        return observations, shaped.astype(np.float32), dones, infos
