"""The Mao players: base-rules, Bayesian and oracle players, the learned caller, and the learned
policies' features.

``AGENTS`` is what ``madiao_mao.agents.registry`` offers for Mao besides the players every game
has; each builder imports its player when it is built. ``policy_agent`` plays the policies that
read the belief inputs (``madiao_mao.agents.mao.policy.BeliefPolicyAgent``).
"""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from madiao_mao.agents.base import Agent
from madiao_mao.agents.spec import AgentSpec, require_env

#: The shipped policy ``model`` plays: ``madiao-mao train --game mao`` at its defaults (the default
#: 8-event history observations and the seat's posterior over the secret rules).
PRETRAINED_MODEL = Path(__file__).resolve().parent.parent / "pretrained" / "mao_selfplay.zip"
#: None declared: Mao's policies read the observation variant they were trained on.
LEADING_OBSERVATIONS = MappingProxyType({})


def _base(seed: int | None, env, options: str | None) -> Agent:
    # Imported here: madiao_mao.agents.mao.players imports this module (a cycle at the top).
    from madiao_mao.agents.mao.players import BaseRulesAgent, table_variants

    return BaseRulesAgent(seed=seed, **(table_variants(env) if env is not None else {}))


def _bayes(seed: int | None, env, options: str | None) -> Agent:
    # Imported here: madiao_mao.agents.mao.players imports this module (a cycle at the top).
    from madiao_mao.agents.mao.players import BayesianRuleAgent, table_variants

    variants = table_variants(env, posterior=True) if env is not None else {}
    return BayesianRuleAgent(seed=seed, **variants)


def _caller(seed: int | None, env, options: str | None) -> Agent:
    # Imported here: madiao_mao.agents.mao.caller imports this module (a cycle at the top).
    from madiao_mao.agents.mao.caller import CallerModel, LearnedCallerAgent
    from madiao_mao.agents.mao.players import table_variants

    model = CallerModel.load(options) if options else None  # a bad file is named first
    variants = table_variants(env, posterior=True) if env is not None else {}
    name = "caller" if options is None else f"caller:{options}"
    return LearnedCallerAgent(seed=seed, model=model, name=name, **variants)


def _oracle(seed: int | None, env, options: str | None) -> Agent:
    require_env(env, "oracle", "it reads the active rules")
    # Imported here: madiao_mao.agents.mao.players imports this module (a cycle at the top).
    from madiao_mao.agents.mao.players import OracleAgent

    return OracleAgent(env, seed=seed)


AGENTS = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            AgentSpec("base", "plays by the base rules only, learns no secret rule", _base),
            AgentSpec("bayes", "infers the secret rules from the penalties it sees (Bayesian)", _bayes),
            AgentSpec("oracle", "knows every rule in force", _oracle, needs_env=True, sees_hidden=True),
            AgentSpec(
                "caller",
                "the Bayesian player with a learned decision of when to call a fault (players' calls); "
                "caller:PATH reads another fitted caller (.json)",
                _caller,
                takes_options=True,
            ),
        )
    }
)


def policy_agent(model, *, table=None, name: str | None = None, **kwargs) -> Agent | None:
    """The player of a loaded policy that reads the belief inputs (``reads_belief``), following the
    variants of ``table`` (the Mao env, AEC or vector; default: the default table's); None for
    any other policy."""
    if not getattr(model.policy, "reads_belief", False):
        return None
    # Imported here: madiao_mao.agents.mao.policy imports this module (a cycle at the top).
    from madiao_mao.agents.mao.policy import BeliefPolicyAgent

    posterior = None
    if table is not None:
        # Imported here: madiao_mao.agents.mao.players imports this module (a cycle at the top).
        from madiao_mao.agents.mao.players import posterior_options

        posterior = posterior_options(getattr(table, "unwrapped", table).options)
    return BeliefPolicyAgent(model=model, posterior=posterior, name=name, **kwargs)
