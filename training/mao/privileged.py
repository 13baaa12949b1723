"""Mao's belief policy with a privileged critic (``TrainConfig.privileged_critic`` with
``features="belief"``): the critic also reads every hand and the secret rules in force (the batched
env's ``privileged_observation``, ``mao_env.privileged``), the actor reads what the belief policy
reads, the table's observation and the seat's belief inputs.

The learner's observation is ``[table observation | belief inputs | privileged]``
(``madiao_mao.training.mao.wrappers.BeliefObservations``, then
``madiao_mao.training.sb3.privileged.PrivilegedObservations``); the features are
``[rule planes and belief inputs | privileged]`` (``PrivilegedInputs`` over ``MaoBeliefFeatures``).
The belief inputs that skip the actor's MLP to its action head are the seat's, just before the
privileged columns (``trailing_width``), so the action head reads exactly what the shipped belief
policy's reads, and the actor saved for play is a ``MaoBeliefPolicy``
(``madiao_mao.training.sb3.privileged.actor_only``).
"""

from __future__ import annotations

from madiao_mao.agents.mao.features import MaoBeliefPolicy
from madiao_mao.training.sb3.privileged import PrivilegedCriticPolicy


class PrivilegedBeliefPolicy(PrivilegedCriticPolicy, MaoBeliefPolicy):
    """``MaoBeliefPolicy`` whose critic also reads the privileged columns (module doc)."""

    plain_policy_class = MaoBeliefPolicy

    def trailing_width(self) -> int:
        # The privileged columns follow the seat's features, belief inputs last among those.
        return int(self.features_extractor_kwargs["privileged_dim"])
