"""The one call shape every player kind obeys, scripted, searching, learned or human.

``act(observation, action_mask) -> int`` picks one action id for one decision;
``act_batch(observations, masks) -> actions`` does the same for a batch of games (the vectorized
env and the self-play trainer call this form). The default batch form loops over ``act``; agents
with a cheap vectorized policy (random, a neural network) override it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class Agent:
    """Base class: subclasses implement ``act``; ``act_batch`` and ``reset`` have defaults."""

    #: Short label used in tournament tables and plots.
    name: str = "agent"
    #: True when every decision depends on nothing but that row's observation and mask (and the
    #: agent's own random stream): no memory of earlier decisions, no reading of the env. Such an
    #: agent may be handed rows of many games in any order, so a tournament plays its hands in
    #: batches (``madiao_mao.training.madiao.evaluation.duplicate_match``).
    decides_from_observation: bool = False

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """One legal action id for this observation (``action_mask[a]`` true means legal)."""
        raise NotImplementedError

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """One action per row; rows whose mask is all zero get -1 (nothing to do there)."""
        observations, masks = batch_arrays(observations, masks)
        actions = np.full(masks.shape[0], -1, dtype=np.int64)
        for row in range(masks.shape[0]):
            if masks[row].any():
                actions[row] = self.act(observations[row], masks[row])
        return actions

    def reset(self) -> None:
        """Forget per-game memory before a new game (no-op for memoryless agents)."""

    def reset_rows(self, rows: np.ndarray) -> None:
        """Forget the per-game memory of ``act_batch`` rows whose games ended (a driver of a
        batch calls it before the row holds a new game; no-op for memoryless agents)."""

    def seed(self, seed: int | None) -> None:
        """Reseed the agent's own randomness (no-op for deterministic agents); environments that
        drive agents call it when they are reset with a seed, so that a seed fixes the whole game."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def legal_actions(action_mask: np.ndarray) -> np.ndarray:
    """The legal action ids of a mask; raises when there is none (nothing can be chosen)."""
    legal = np.flatnonzero(np.asarray(action_mask))
    if legal.size == 0:
        raise ValueError("the action mask has no legal action: this seat is not to act")
    return legal


class RandomAgent(Agent):
    """Uniformly random legal actions from its own seeded generator (reproducible)."""

    decides_from_observation = True

    def __init__(self, seed: int | None = None, name: str = "random") -> None:
        self.name = name
        self.rng = np.random.default_rng(seed)

    def seed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = legal_actions(action_mask)
        return int(legal[self.rng.integers(legal.size)])

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        # Gumbel-free trick: a random key per action, illegal ones pushed below every legal one,
        # so one argmax per row draws uniformly among the legal actions.
        masks = np.asarray(masks, dtype=bool)
        keys = self.rng.random(masks.shape)
        keys[~masks] = -1.0
        actions = keys.argmax(axis=1).astype(np.int64)
        actions[~masks.any(axis=1)] = -1
        return actions


def batch_arrays(observations: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``act_batch``'s arguments as arrays, refused (``ValueError``) when they disagree on the
    batch size."""
    observations = np.asarray(observations)
    masks = np.asarray(masks)
    if observations.shape[0] != masks.shape[0]:
        raise ValueError(
            f"observations and masks disagree on the batch size: {observations.shape[0]} vs {masks.shape[0]}"
        )
    return observations, masks


def act_as_batch_of_one(agent: Agent, observation: np.ndarray, action_mask: np.ndarray) -> int:
    """``act`` of an agent whose policy is its ``act_batch``: one decision as a batch of one row."""
    return int(agent.act_batch(np.asarray(observation)[None], np.asarray(action_mask)[None])[0])


def act_on_rows_with_a_move(
    masks: np.ndarray, choose: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> np.ndarray:
    """One action per row of a batch: ``choose(rows, masks[rows])`` for the rows that have a legal
    action, -1 for the others (nothing to do there)."""
    masks = np.asarray(masks, dtype=bool)
    actions = np.full(masks.shape[0], -1, dtype=np.int64)
    rows = np.flatnonzero(masks.any(axis=1))
    if rows.size:
        actions[rows] = choose(rows, masks[rows])
    return actions
