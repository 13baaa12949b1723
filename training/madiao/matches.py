"""Playing whole Madiao hands and matches with agents on the PettingZoo env, with a game record.

:func:`play_episode` plays one episode with one agent per seat and records it as the events of
a game record. The record format, its checks and its printer live beside the game in
:mod:`madiao_env.records`.

``on_event`` receives each event as it happens, which is how ``match`` and ``play`` print the game
live; ``replay`` prints the same events again with :class:`~madiao_env.records.EventPrinter`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from madiao_env import cards
from madiao_env.records import Event, EventRecorder
from madiao_mao.agents.base import Agent

__all__ = ["EpisodeResult", "make_env", "play_episode", "seat_of"]


def make_env(**env_kwargs: Any):
    """The raw PettingZoo Madiao env, which raises on an illegal action: an agent's illegal move
    is a bug to stop at, never a lost hand to count (``env()`` would end the hand with a penalty).
    Imported lazily: the env module compiles on first use."""
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from madiao_env import madiao_v0

    return madiao_v0.raw_env(**env_kwargs)


def seat_of(agent_name: str) -> int:
    return int(agent_name.rsplit("_", 1)[1])


@dataclass
class EpisodeResult:
    """What one episode (a hand or a match) produced."""

    returns: np.ndarray
    """Total reward per seat over the episode (stakes times the env's ``stake`` option)."""
    events: list[Event] = field(default_factory=list)
    """The game record's events in order."""
    banker: int = -1
    """The banker of the last hand played."""
    seats: list[str] | None = None
    """Names of the seats in this episode when they change from episode to episode (tournaments)."""

    def hands(self) -> list[Event]:
        """The settlement events, in order."""
        return [e for e in self.events if e["type"] == "settlement"]


def play_episode(
    env,
    seat_agents: Sequence[Agent],
    *,
    seed: int | None = None,
    options: dict | None = None,
    on_event: Callable[[Event], None] | None = None,
    record: bool = True,
) -> EpisodeResult:
    """Play one episode of ``env`` (a hand or a match, per its ``episode`` option) with one agent
    per seat; returns every seat's total reward (terminal rewards of seats that did not make the
    last move included: they are collected from ``env.last()`` as each agent is stepped out).
    """
    if len(seat_agents) != cards.N_SEATS:
        raise ValueError(f"need one agent per seat ({cards.N_SEATS}), got {len(seat_agents)}")
    for agent in seat_agents:
        agent.reset()
    env.reset(seed=seed, options=options)
    recorder = EventRecorder(env, on_event) if record else None
    if recorder is not None:
        recorder.deal()
    returns = np.zeros(cards.N_SEATS, dtype=np.float64)
    for agent_name in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        seat = seat_of(agent_name)
        returns[seat] += reward
        if terminated or truncated:
            env.step(None)
            continue
        action = seat_agents[seat].act(observation["observation"], observation["action_mask"])
        env.step(action)
        if recorder is not None:
            recorder.step(seat, action)
    banker = int(env.unwrapped.table()["banker"])
    events = recorder.events if recorder is not None else []
    return EpisodeResult(returns=returns, events=events, banker=banker)
