"""PettingZoo AEC scaffolding shared by both games (the per-game env modules are the glue).

Both environments keep the game state in Numba arrays and only translate here: agents, reward
and termination dictionaries, the action check, the seeding convention and the wrappers of
``env()`` live once.

``env()`` is built as PettingZoo's classic games build theirs (``tictactoe_v3``,
``connect_four_v3``): :func:`wrap_like_pettingzoo_classic` puts the raw env under
``TerminateIllegalWrapper`` (an action id outside the mask ends the game for every agent, the
offender gets the game's ``illegal_reward``, the others 0), ``AssertOutOfBoundsWrapper`` and
``OrderEnforcingWrapper``. The two subclasses here add what this project promises on top: the
offender's ``infos`` say why the action was illegal, and ``render(seat=k)`` works through the
wrappers. ``raw_env()`` stays bare and raises :class:`IllegalActionError` instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger


class IllegalActionError(ValueError):
    """An action id that is out of range or not in the current legal-action mask."""


def seed_sequence(seed: int | None) -> np.random.Generator:
    """The numpy generator every reset draws from; ``None`` means fresh OS entropy."""
    if seed is not None and (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__} {seed!r}")
    if seed is not None and seed < 0:
        raise ValueError(f"seed must be an int >= 0 or None, got {seed!r}")
    return np.random.default_rng(seed)


def action_id(action: Any) -> int:
    """``action`` as an int if it is a Python or numpy integer (not a bool), else
    :class:`IllegalActionError` naming what it is."""
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
        raise IllegalActionError(f"action must be an integer id, got {type(action).__name__} {action!r}")
    return int(action)


def check_action(action: Any, mask: np.ndarray, describe) -> int:
    """Return ``action`` as an int if ``mask`` allows it, else raise a message that names it.

    ``describe(action_id)`` turns an id into the game's text form for the message.
    """
    action = action_id(action)
    if not 0 <= action < mask.shape[0]:
        raise IllegalActionError(f"action {action} is out of range 0..{mask.shape[0] - 1}")
    if not mask[action]:
        legal = ", ".join(describe(int(a)) for a in np.flatnonzero(mask))
        raise IllegalActionError(
            f"action {action} ({describe(action)}) is not legal now; legal actions: {legal}"
        )
    return action


def no_illegal_action() -> dict[str, Any]:
    """The illegal-action entries every info holds while no illegal action ended the game (so an
    info's keys never change; only ``env()``'s wrapper ever sets them, for the offender)."""
    return {"illegal_action": False, "illegal_action_error": ""}


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

    def _reset_bookkeeping(self, info: dict[str, Any]) -> None:
        """Every agent live with zero rewards, each with its own copy of ``info``."""
        self.agents = self.possible_agents[:]
        self.rewards = {agent: 0.0 for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        self.infos = {agent: dict(info) for agent in self.agents}

    def _current_mask(self) -> np.ndarray:
        """The legal-action mask of the agent to act (int8; all zeros once the game is over)."""
        raise NotImplementedError

    def explain_illegal(self, action: Any) -> str:
        """Why ``action`` is not legal for the agent to act now, as :class:`IllegalActionError`
        would say it (the action named as text, the legal ones listed); ``""`` if it is legal."""
        try:
            check_action(action, self._current_mask(), self.describe_action)
        except IllegalActionError as error:
            return str(error)
        return ""

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


class TerminateIllegalWithReason(wrappers.TerminateIllegalWrapper):
    """PettingZoo's ``TerminateIllegalWrapper`` that also says why the game ended.

    An action id that the mask forbids ends the game as PettingZoo's wrapper ends it (every agent
    terminated and truncated, ``illegal_reward`` to the offender, 0 to the others) and sets the
    offender's ``infos[agent]["illegal_action"]`` to True and ``["illegal_action_error"]`` to the
    raw env's explanation. Something that is not an action id at all (a bool, a float, an array)
    is a bug of the caller rather than a move: it raises :class:`IllegalActionError`, as the raw
    env does, and changes nothing.
    """

    def step(self, action: Any) -> None:
        if action is not None:  # None is a dead step's action (a live agent's is stopped outside)
            action_id(action)
        if self._terminated:  # the dead steps after an illegal action
            super().step(action)
            return
        agent = self.agent_selection
        super().step(action)
        if self._terminated:
            raw = self.env.unwrapped
            reason = raw.explain_illegal(action)
            raw.infos[agent] = {**raw.infos[agent], "illegal_action": True, "illegal_action_error": reason}


class OrderEnforcingWithSeatRender(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` whose ``render`` passes ``seat=k`` on to the raw env
    (PettingZoo's takes no argument)."""

    def render(self, seat: int | None = None) -> Any:
        """The raw env's ``render(seat=seat)``: the whole table, or what seat ``seat`` sees."""
        if seat is None:
            return super().render()
        if not self._has_reset:
            EnvLogger.error_render_before_reset()
        return self.unwrapped.render(seat=seat)

    def __str__(self) -> str:
        return str(self.env)


def wrap_like_pettingzoo_classic(raw_env: CardGameAECEnv, illegal_reward: float) -> AECEnv:
    """``raw_env`` under the wrappers of PettingZoo's classic ``env()`` (see the module docstring)."""
    wrapped = TerminateIllegalWithReason(raw_env, illegal_reward=illegal_reward)
    wrapped = wrappers.AssertOutOfBoundsWrapper(wrapped)
    return OrderEnforcingWithSeatRender(wrapped)
