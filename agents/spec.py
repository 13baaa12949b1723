"""What a game's agents module declares about each of its players (``AgentSpec``).

A game's agents module (the ``agents`` layer of its ``madiao_mao.games.Game``) holds ``AGENTS``,
a table of ``AgentSpec`` by name; :mod:`madiao_mao.agents.registry` adds the players every game
has (``random``, ``model``, ``model:PATH``) and builds an agent from its spec through that table.
The module also holds ``PRETRAINED_MODEL`` (the shipped policy ``model`` plays, or None) and
``policy_agent(model, *, table, name, **kwargs)``, which plays a loaded policy of a kind only that
game has (None for a policy it does not know), or None where the game has no such kind, and
``LEADING_OBSERVATIONS``: observation lengths that begin with a shorter observation of the game,
the same entries in the same places (a richer variant of it), so that a policy trained on the
shorter one plays from the leading entries (empty where there is none). These four are the agents
layer's contract (``AgentsModule``, checked by ``madiao_mao.games``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from madiao_mao.agents.base import Agent

#: ``build(seed, env, options) -> Agent``: ``options`` is the text after ``NAME:`` (None when the
#: spec is the bare name; only a spec that ``takes_options`` is handed one).
AgentBuilder = Callable[[int | None, Any, str | None], Agent]


@dataclass(frozen=True)
class AgentSpec:
    """One player a game offers by name."""

    name: str
    #: One line for ``madiao-mao agents``.
    description: str
    build: AgentBuilder
    #: It reads the env it plays in (``make_agent(..., env=)``), so it cannot sit at the trainer's
    #: batched table; its builder refuses a missing env.
    needs_env: bool = False
    #: ``NAME:OPTIONS`` is accepted (the options are the builder's to parse and check).
    takes_options: bool = False
    #: It is defined to know what its seat cannot see (an oracle of the hidden cards or rules):
    #: the only kind of player exempt from the test that hidden state never changes a decision
    #: (``tests/common/test_hidden_information.py``).
    sees_hidden: bool = False


def require_env(env: Any, name: str, why: str) -> None:
    """Refuse to build the agent ``name`` without the env it plays in (``why`` it reads it)."""
    if env is None:
        raise ValueError(f"the {name!r} agent needs the env it plays in ({why})")


@runtime_checkable
class AgentsModule(Protocol):
    """The agents layer's contract: what a game's agents module (its registry entry's ``agents``)
    defines (see the module docstring)."""

    AGENTS: Mapping[str, AgentSpec]
    PRETRAINED_MODEL: Path | None
    policy_agent: Callable[..., Agent | None] | None
    LEADING_OBSERVATIONS: Mapping[int, int]
