"""The Madiao players: the scripted heuristics, the search player and the learned policy's features.

``AGENTS`` is what ``madiao_mao.agents.registry`` offers for Madiao besides the players every game
has; each builder imports its player when it is built.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from types import MappingProxyType

from madiao_env.layout import RECORD_SIZE, SUMMARY_SIZE
from madiao_mao.agents.base import Agent
from madiao_mao.agents.spec import AgentSpec, require_env

#: The shipped policy ``model`` plays: a league run of ``madiao-mao train`` (32M steps), summary
#: observations.
PRETRAINED_MODEL = Path(__file__).resolve().parent.parent / "pretrained" / "madiao_selfplay.zip"
#: Every Madiao policy is played by the generic ``LearnedPolicyAgent``: no kind of its own.
policy_agent = None
#: A record observation begins with the summary, the same entries in the same places: a policy
#: trained on the summary plays from its leading entries (``madiao_mao.agents.learned``).
LEADING_OBSERVATIONS = MappingProxyType({RECORD_SIZE: SUMMARY_SIZE})


def _greedy(seed: int | None, env, options: str | None) -> Agent:
    # Imported here: madiao_mao.agents.madiao.heuristic imports this module (a cycle at the top).
    from madiao_mao.agents.madiao.heuristic import GreedyHeuristicAgent

    return GreedyHeuristicAgent()


def _heuristic(seed: int | None, env, options: str | None) -> Agent:
    # Imported here: madiao_mao.agents.madiao.heuristic imports this module (a cycle at the top).
    from madiao_mao.agents.madiao.heuristic import RoleAwareHeuristicAgent

    return RoleAwareHeuristicAgent()


#: The guarded search on the shipped policy (docs/results.md, "the shipped model with a guarded
#: search"): 128 deals, the policy's move kept unless a candidate beats it by two standard errors.
MODEL_SEARCH_OPTIONS = "samples=128,policy=model,guard=2,screen=16"


def _search_player(name: str, defaults: str, seed: int | None, env, options: str | None) -> Agent:
    """The search player ``name``: its ``defaults`` options, each one ``options`` names changed."""
    # Imported here: madiao_mao.agents.madiao.search imports this module (a cycle at the top).
    from madiao_mao.agents.madiao.search import MadiaoSearchAgent, merged_search_options, parse_search_options

    # Options are checked before the env is: a bad budget is named whatever else is wrong.
    budget = parse_search_options(merged_search_options(defaults, options or ""))
    require_env(env, name, "it samples hidden cards")
    return MadiaoSearchAgent(
        env, budget=budget, seed=seed, name=name if options is None else f"{name}:{options}"
    )


_search = partial(_search_player, "search", "")
_model_search = partial(_search_player, "model-search", MODEL_SEARCH_OPTIONS)


AGENTS = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            AgentSpec(
                "greedy", "weak scripted baseline: strongest lead, cheapest capture, weakest slough", _greedy
            ),
            AgentSpec("heuristic", "the strongest scripted player (role-aware heuristic)", _heuristic),
            AgentSpec(
                "search",
                "determinized Monte Carlo search (search:samples=32,policy=PATH,inference=model)",
                _search,
                needs_env=True,
                takes_options=True,
            ),
            AgentSpec(
                "model-search",
                f"the shipped policy with a guarded search on top (search:{MODEL_SEARCH_OPTIONS}; "
                "model-search:samples=64 changes one option)",
                _model_search,
                needs_env=True,
                takes_options=True,
            ),
        )
    }
)
