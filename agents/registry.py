"""Agents by name, for the CLI, the trainer's opponent pool and tournaments.

Every game has ``random``, ``model`` (the pretrained policy its agents module ships as
``PRETRAINED_MODEL``, if it ships one) and ``model:PATH`` (a saved MaskablePPO policy, or a
``.pt`` policy exported by the RLlib engine). The rest are the game's own, from the ``AGENTS``
table of its agents module (``madiao_mao.agents.spec.AgentSpec``, found through
``madiao_mao.games``); ``agent_specs(game)`` lists them all, one line each (``madiao-mao agents``).
"""

from __future__ import annotations

from collections.abc import Mapping

from madiao_mao.agents.base import Agent, RandomAgent
from madiao_mao.agents.exported_policy import exported_policy_agent
from madiao_mao.agents.learned import policy_agent, pretrained_agent
from madiao_mao.agents.spec import AgentSpec
from madiao_mao.games import default_game, game_names, get_game

MODEL_PREFIX = "model:"
#: The spec of the uniformly random player, and of the shipped policy, that every game has.
RANDOM, PRETRAINED = "random", "model"


def game_agents(game: str) -> Mapping[str, AgentSpec]:
    """The players ``game``'s agents module adds to the ones every game has, by name."""
    if game not in game_names():
        names = [repr(name) for name in game_names()]
        raise ValueError(f"unknown game {game!r}; games are {', '.join(names[:-1])} and {names[-1]}")
    return get_game(game).layer("agents").AGENTS


def ships_model(game: str) -> bool:
    """Whether ``game``'s agents module names a shipped policy (``PRETRAINED_MODEL``) for ``model``."""
    return get_game(game).layer("agents").PRETRAINED_MODEL is not None


def agent_names(game: str) -> tuple[str, ...]:
    return (RANDOM, *game_agents(game), *((PRETRAINED,) if ships_model(game) else ()))


def agent_specs(game: str) -> list[tuple[str, str]]:
    """Every agent spec ``make_agent`` takes for ``game``, with one line saying what it plays."""
    listed = [(RANDOM, "picks a legal action uniformly at random")]
    for spec in game_agents(game).values():
        listed.append((spec.name, spec.description + (" (reads the env)" if spec.needs_env else "")))
        if spec.takes_options:
            listed.append((f"{spec.name}:OPTIONS", f"{spec.name} with options"))
    if ships_model(game):
        listed.append((PRETRAINED, f"the pretrained {game} policy shipped with the package"))
    listed += [
        (
            f"{MODEL_PREFIX}PATH",
            "a saved MaskablePPO policy (.zip) or an RLlib-exported TorchScript policy (.pt)",
        ),
    ]
    return listed


def parse_game_agent(spec: str, game: str) -> tuple[AgentSpec, str | None] | None:
    """``game``'s own player a spec names and its options (``NAME:OPTIONS``; None for the bare
    name), or None when the spec names none of them."""
    name, colon, options = spec.partition(":")
    found = game_agents(game).get(name)
    if found is None or (colon and not found.takes_options):
        return None
    return found, options if colon else None


def reads_env(spec: str, game: str) -> bool:
    """Whether the agent of ``spec`` reads the env it plays in (its ``AgentSpec.needs_env``), so
    that it must be built with one and cannot sit at a batched table."""
    found = parse_game_agent(spec, game)
    return found is not None and found[0].needs_env


def make_agent(spec: str, game: str = default_game(), *, seed: int | None = None, env=None) -> Agent:
    """An agent from its name (``model:PATH`` loads a saved MaskablePPO policy).

    ``env`` is the AEC env the agent will play in; only agents that need the full state (the
    specs with ``needs_env``) use it, and they only read what their seat may see (or what they
    are defined to know).
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"agent spec must be a non-empty string, got {spec!r}")
    names = agent_names(game)
    if spec.startswith(MODEL_PREFIX):
        if spec.endswith(".pt"):  # a policy exported by the RLlib engine (TorchScript)
            return exported_policy_agent(spec[len(MODEL_PREFIX) :])

        return policy_agent(spec[len(MODEL_PREFIX) :], table=env)
    if spec == RANDOM:
        return RandomAgent(seed=seed)
    if spec == PRETRAINED and spec in names:
        return pretrained_agent(game, table=env)
    found = parse_game_agent(spec, game)
    if found is not None:
        agent_spec, options = found
        return agent_spec.build(seed, env, options)
    with_options = "".join(f" or {s.name}:OPTIONS" for s in game_agents(game).values() if s.takes_options)
    raise ValueError(
        f"unknown {game} agent {spec!r}; choose from {', '.join(names)} or {MODEL_PREFIX}PATH" + with_options
    )
