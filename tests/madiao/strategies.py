"""Hypothesis strategies and helpers shared by the Madiao property tests.

An env configuration is drawn from every option that changes the game or its observations
(``episode``, ``obs_type`` and the rule variants). Actions are chosen by hypothesis step by step
through :class:`ActionChooser`, so a failing game shrinks to a short, low-numbered sequence of
choices; the chooser records the ids it picked so that the same game can be replayed elsewhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from madiao_env import cards
from madiao_env.options import OBS_TYPES

AGENTS = [f"player_{seat}" for seat in range(cards.N_SEATS)]

seeds = st.integers(min_value=0, max_value=2**32 - 1)
seats = st.integers(min_value=0, max_value=cards.N_SEATS - 1)


@st.composite
def env_configs(draw: st.DrawFn, episodes: tuple[str, ...] = ("hand", "match")) -> dict[str, Any]:
    """Keyword arguments for ``madiao_v0.raw_env``: both episode modes, every observation type,
    and the rule variants (a stake multiplier, a redeal cap, the face-up discard)."""
    return {
        "episode": draw(st.sampled_from(episodes)),
        "obs_type": draw(st.sampled_from(OBS_TYPES)),
        "stake": draw(st.sampled_from((1.0, 0.5, 2.5, 4.0))),
        "max_redeals": draw(st.sampled_from((None, 0, 1, 3))),
        "face_up_discard": draw(st.booleans()),
    }


class ActionChooser:
    """Picks a legal action from a mask with a hypothesis draw and records it.

    Face-up plays are offered twice in the pool so that captures (and under the variant, face-up
    discards) are common enough to reach the trick-count, boss-card and honours lines; shrinking
    goes towards the lowest action id.
    """

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.chosen: list[int] = []

    def __call__(self, mask: np.ndarray) -> int:
        legal = np.flatnonzero(mask)
        assert legal.size, "asked to choose an action with an empty mask"
        pool = np.concatenate([legal, legal[legal < cards.ACTION_SLOUGH]])
        action = int(pool[self.data.draw(st.integers(0, pool.size - 1), label="action choice")])
        self.chosen.append(action)
        return action


def episode_over(env) -> bool:
    """True once the episode has ended (the raw env or the wrapped one)."""
    return not env.agents or all(env.terminations[agent] for agent in env.agents)


def snapshot_of_step(env) -> dict[str, Any]:
    """Everything an agent or a trainer can read after a step, as comparable plain data."""
    raw = env.unwrapped
    return {
        "agent_selection": env.agent_selection,
        "observations": {
            agent: {key: value.tolist() for key, value in env.observe(agent).items()} for agent in AGENTS
        },
        "rewards": dict(env.rewards),
        "cumulative_rewards": dict(raw._cumulative_rewards),
        "terminations": dict(env.terminations),
        "truncations": dict(env.truncations),
        "infos": {agent: repr(info) for agent, info in env.infos.items()},
        "table": raw.table(),
    }


def play_recorded(env, choose, max_steps: int = 10_000) -> list[dict[str, Any]]:
    """Play ``env`` to the end of the episode with ``choose(mask) -> action``; the per-step trace."""
    trace = [snapshot_of_step(env)]
    for _ in range(max_steps):
        if episode_over(env):
            break
        env.step(choose(env.observe(env.agent_selection)["action_mask"]))
        trace.append(snapshot_of_step(env))
    else:
        raise AssertionError(f"the episode did not end within {max_steps} steps")
    return trace


class Replay:
    """A chooser that replays recorded action ids, checking each one is legal where it is replayed."""

    def __init__(self, actions: list[int]) -> None:
        self.actions = list(actions)
        self.position = 0

    def __call__(self, mask: np.ndarray) -> int:
        assert self.position < len(self.actions), "the replay needs more actions than were recorded"
        action = self.actions[self.position]
        assert mask[action], f"recorded action {cards.action_to_text(action)} is not legal in the replay"
        self.position += 1
        return action
