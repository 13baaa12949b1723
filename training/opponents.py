"""The self-play opponent pool and timing probes for the trainer.

The SB3 adapter (``madiao_mao.training.sb3_adapter.LearnerVecEnv``) draws, for every opponent seat of
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

The learner's env wrappers live here too: Mao's hand-size reward (``HandSizeReward``) and the
belief inputs a Mao belief policy reads beside its observation (``BeliefObservations``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from madiao_mao.agents.base import Agent
from madiao_mao.training.learner_games import keeps_game_memory, takes_row_keys
from stable_baselines3.common.vec_env import VecEnvWrapper

KINDS = ("scripted", "snapshot", "current")


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
        elapsed = time.perf_counter() - started
        self.seconds += elapsed
        self.decisions += len(actions)
        self.pool.seconds += elapsed
        self.pool.decisions += len(actions)
        return actions

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

    def __init__(self, league, anchors: dict[str, Agent], *, max_snapshots: int) -> None:
        from madiao_mao.training.league import MAIN

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
        self._stale: set[int] = set()

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
            self._stale.update(int(game) for game in playing)
        self.slots[slot].agent = agent
        self.slot_member[slot] = name
        self._slot_of[name] = slot

    def record_games(self, dones: np.ndarray, infos: list[dict]) -> None:
        """Record the learner's return of every game finished in this step against its member."""
        for game in np.flatnonzero(dones):
            info = infos[game]
            if "episode" not in info or "opponent_index" not in info:
                continue
            if int(game) in self._stale:
                self._stale.discard(int(game))
                continue
            name = self.slot_member[info["opponent_index"]]
            if name is not None:
                self.league.record(name, [info["episode"]["r"]])

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


class BeliefObservations(VecEnvWrapper):
    """Mao policies that read belief inputs (features "belief", ``madiao_mao.agents.mao.belief_inputs``): the
    learner's observation with its seat's belief inputs appended.

    The wrapper keeps one posterior per game (the learner's seat of it, keyed by the game's row),
    takes every learner observation into it, tells it each learner action, and starts it afresh
    when the game ends, exactly as ``madiao_mao.agents.mao.policy.BeliefPolicyAgent`` does for a seat it plays
    (so the policy reads the same inputs in training as in play). A terminal observation, which
    has no decision, gets zero inputs. ``table_obs_dim`` is the table's observation length (what a
    scripted teacher in the learner's seat reads, ``madiao_mao.training.imitation``). ``posterior``: the
    table's posterior options (``madiao_mao.agents.mao.players.posterior_options``).
    """

    def __init__(self, venv, posterior: dict | None = None) -> None:
        from gymnasium import spaces
        from madiao_mao.agents.mao.belief_inputs import BELIEF_WIDTH, BeliefTracker

        self.table_obs_dim = int(venv.observation_space.shape[0])
        space = spaces.Box(-np.inf, np.inf, (self.table_obs_dim + BELIEF_WIDTH,), np.float32)
        super().__init__(venv, observation_space=space)
        self.beliefs = BeliefTracker(posterior)
        self._games = np.arange(venv.num_envs)

    def _posteriors(self) -> list:
        return self.beliefs.seat_posteriors(self.num_envs, self._games)

    def _with_beliefs(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self.beliefs.policy_observations(observations, masks, self._posteriors())

    def _masks(self) -> np.ndarray:
        return np.asarray(self.venv.env_method("action_masks"), dtype=bool)

    def reset(self) -> np.ndarray:
        observations = self.venv.reset()
        self.beliefs.reset()
        return self._with_beliefs(observations, self._masks())

    def step_async(self, actions: np.ndarray) -> None:
        self.beliefs.note_actions(self._posteriors(), np.asarray(actions).reshape(-1))
        self.venv.step_async(actions)

    def step_wait(self):
        observations, rewards, dones, infos = self.venv.step_wait()
        ended = np.flatnonzero(dones)
        for game in ended:
            terminal = np.asarray(infos[game]["terminal_observation"], dtype=np.float32)
            infos[game]["terminal_observation"] = np.concatenate(
                [terminal, np.zeros(self.observation_space.shape[0] - terminal.size, dtype=np.float32)]
            )
        self.beliefs.forget(ended)  # the row holds a new game (and a new learner seat) now
        return self._with_beliefs(observations, self._masks()), rewards, dones, infos
