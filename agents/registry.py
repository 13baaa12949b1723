"""Agents by name, for the CLI, the trainer's opponent pool and tournaments.

Madiao: ``random``, ``greedy`` (weak heuristic), ``heuristic`` (the strongest scripted player),
``search`` (determinized Monte Carlo; needs the env, see ``madiao_mao.agents.madiao.search``; with a
budget ``search:samples=32,policy=PATH``), ``model``
(the pretrained policy shipped in ``agents/pretrained``), ``model:PATH``.
Mao: ``random``, ``base`` (base rules only), ``bayes`` (rule inference), ``oracle`` (knows every
rule; needs the env), ``model`` (the pretrained Mao policy), ``model:PATH``.
"""

from __future__ import annotations

from madiao_mao.agents.base import Agent, RandomAgent

MADIAO_AGENTS = ("random", "greedy", "heuristic", "search", "model")
MAO_AGENTS = ("random", "base", "bayes", "oracle", "model")
MODEL_PREFIX = "model:"
#: ``search:OPTIONS`` is the search player with a budget (``madiao_mao.agents.madiao.search.parse_search_options``).
SEARCH_PREFIX = "search:"

#: One line per agent spec a game accepts (``madiao-mao agents`` lists them): its names, then the
#: spec forms that take a value.
AGENT_DESCRIPTIONS = {
    "madiao": {
        "random": "a uniformly random legal move",
        "greedy": "weak baseline: strongest lead, cheapest capture, weakest slough, never a redeal",
        "heuristic": "strong baseline, the strongest scripted player: sure captures, Hundred Myriad "
        "care, cooperation to two tricks",
        "search": "determinized Monte Carlo (PIMC) over the hidden cards; needs the env it plays in",
        f"{SEARCH_PREFIX}OPTIONS": "the search player with a budget, e.g. search:samples=32,policy=PATH "
        "(madiao_mao.agents.madiao.search)",
        "model": "the pretrained policy shipped in agents/pretrained",
        f"{MODEL_PREFIX}PATH": "a saved policy: a MaskablePPO .zip, or a .pt exported by the RLlib engine",
    },
    "mao": {
        "random": "a uniformly random legal move",
        "base": "knows the base rules only and ignores every secret rule",
        "bayes": "infers the secret rules from the calls it sees (Bayesian) and plays what is most "
        "likely allowed",
        "oracle": "knows every active secret rule (the upper bound of rule discovery); needs the env",
        "model": "the pretrained policy shipped in agents/pretrained",
        f"{MODEL_PREFIX}PATH": "a saved policy: a MaskablePPO .zip, or a .pt exported by the RLlib engine",
    },
}


def agent_names(game: str) -> tuple[str, ...]:
    if game == "madiao":
        return MADIAO_AGENTS
    if game == "mao":
        return MAO_AGENTS
    raise ValueError(f"unknown game {game!r}; games are 'madiao' and 'mao'")


def agent_descriptions(game: str) -> dict[str, str]:
    """``game``'s agent specs, each with its one-line description (``AGENT_DESCRIPTIONS``)."""
    agent_names(game)  # an unknown game is named the same way everywhere
    return dict(AGENT_DESCRIPTIONS[game])


def make_agent(spec: str, game: str = "madiao", *, seed: int | None = None, env=None) -> Agent:
    """An agent from its name (``model:PATH`` loads a saved MaskablePPO policy).

    ``env`` is the AEC env the agent will play in; only agents that need the full state (the
    Madiao search player, the Mao oracle) use it, and they only read what their seat may see
    (or, for the oracle, what it is defined to know).
    """
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"agent spec must be a non-empty string, got {spec!r}")
    names = agent_names(game)
    if spec.startswith(MODEL_PREFIX):
        from madiao_mao.agents.learned import policy_agent

        if spec.endswith(".pt"):  # a policy exported by the RLlib engine (TorchScript)
            from madiao_mao.agents.exported_policy import exported_policy_agent

            return exported_policy_agent(spec[len(MODEL_PREFIX) :])

        return policy_agent(spec[len(MODEL_PREFIX) :], table=env)
    if spec == "random":
        return RandomAgent(seed=seed)
    if spec == "model":
        from madiao_mao.agents.learned import pretrained_agent

        return pretrained_agent(game, table=env)
    if game == "madiao":
        if spec == "greedy":
            from madiao_mao.agents.madiao.heuristic import GreedyHeuristicAgent

            return GreedyHeuristicAgent()
        if spec == "heuristic":
            from madiao_mao.agents.madiao.heuristic import RoleAwareHeuristicAgent

            return RoleAwareHeuristicAgent()
        if spec == "search" or spec.startswith(SEARCH_PREFIX):
            from madiao_mao.agents.madiao.search import MadiaoSearchAgent, parse_search_options

            # Options are checked before the env is: a bad budget is named whatever else is wrong.
            budget = parse_search_options(spec[len(SEARCH_PREFIX) :] if spec != "search" else "")
            if env is None:
                raise ValueError("the 'search' agent needs the env it plays in (it samples hidden cards)")
            return MadiaoSearchAgent(env, budget=budget, seed=seed, name=spec)
    else:
        if spec == "base":
            from madiao_mao.agents.mao.players import BaseRulesAgent, table_variants

            return BaseRulesAgent(seed=seed, **(table_variants(env) if env is not None else {}))
        if spec == "bayes":
            from madiao_mao.agents.mao.players import BayesianRuleAgent, table_variants

            variants = table_variants(env, posterior=True) if env is not None else {}
            return BayesianRuleAgent(seed=seed, **variants)
        if spec == "oracle":
            if env is None:
                raise ValueError("the 'oracle' agent needs the env it plays in (it reads the active rules)")
            from madiao_mao.agents.mao.players import OracleAgent

            return OracleAgent(env, seed=seed)
    raise ValueError(
        f"unknown {game} agent {spec!r}; choose from {', '.join(names)} or {MODEL_PREFIX}PATH"
        + (f" or {SEARCH_PREFIX}OPTIONS" if game == "madiao" else "")
    )
