"""PettingZoo AEC scaffolding shared by both games (the per-game env modules are the glue).

Both environments keep the game state in Numba arrays and only translate here: agents, reward
and termination dictionaries, the action check and the seeding convention live once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv


class IllegalActionError(ValueError):
    """An action id that is out of range or not in the current legal-action mask."""


def seed_sequence(seed: int | None) -> np.random.Generator:
    """The numpy generator every reset draws from; ``None`` means fresh OS entropy."""
    if seed is not None and (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__} {seed!r}")
    if seed is not None and seed < 0:
        raise ValueError(f"seed must be an int >= 0 or None, got {seed!r}")
    return np.random.default_rng(seed)


def check_action(action: Any, mask: np.ndarray, describe) -> int:
    """Return ``action`` as an int if ``mask`` allows it, else raise a message that names it.

    ``describe(action_id)`` turns an id into the game's text form for the message.
    """
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        raise IllegalActionError(f"action must be an integer id, got {type(action).__name__} {action!r}")
    action = int(action)
    if not 0 <= action < mask.shape[0]:
        raise IllegalActionError(f"action {action} is out of range 0..{mask.shape[0] - 1}")
    if not mask[action]:
        legal = ", ".join(describe(int(a)) for a in np.flatnonzero(mask))
        raise IllegalActionError(
            f"action {action} ({describe(action)}) is not legal now; legal actions: {legal}"
        )
    return action


class CardGameAECEnv(AECEnv):
    """Reward/termination bookkeeping common to the card-game AEC envs.

    Subclasses are also ``EzPickle`` (constructor arguments) and provide ``get_state`` /
    ``set_state``; pickling or deep-copying an env that has been reset carries the game along, so
    a copy continues exactly where the original stands.
    """

    def __getstate__(self) -> dict[str, Any]:
        state = dict(EzPickle.__getstate__(self))
        if hasattr(self, "agent_selection"):  # reset() has run: there is a game to carry
            state["game_state"] = self.get_state()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        game_state = state.pop("game_state", None)
        EzPickle.__setstate__(self, state)
        if game_state is not None:
            self.set_state(game_state)

    def _require_reset(self) -> None:
        if not hasattr(self, "agent_selection"):
            raise RuntimeError(f"{type(self).__module__}.{type(self).__name__}: call reset() first")

    def _require_live_episode(self) -> str:
        """The agent to step; a clear error before reset() or once every agent has been removed
        (after the dead steps of a finished episode the bookkeeping dictionaries are empty)."""
        self._require_reset()
        if not self.agents:
            raise RuntimeError(
                f"{type(self).__module__}.{type(self).__name__}: the episode is over; call reset()"
            )
        return self.agent_selection

    def _reset_bookkeeping(self) -> None:
        self.agents = self.possible_agents[:]
        self.rewards = {agent: 0.0 for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        self.infos = {agent: {} for agent in self.agents}

    def _set_step_rewards(self, rewards_by_seat) -> None:
        """Rewards of this step, by seat index; accumulated for every agent (moved or not)."""
        for seat, agent in enumerate(self.possible_agents):
            if agent in self.rewards:
                self.rewards[agent] = float(rewards_by_seat[seat])
        self._accumulate_rewards()

    def _end_episode(self, truncated: bool = False) -> None:
        flags = self.truncations if truncated else self.terminations
        for agent in self.agents:
            flags[agent] = True
