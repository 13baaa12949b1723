"""The player of a Mao policy that reads the belief inputs beside its observation (the policy kind
only Mao has; ``madiao_mao.agents.mao.policy_agent`` picks it for such a policy)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from madiao_mao.agents.base import legal_actions
from madiao_mao.agents.learned import LearnedPolicyAgent


class BeliefPolicyAgent(LearnedPolicyAgent):
    """Plays a Mao policy that reads the belief inputs beside its observation
    (``madiao_mao.agents.mao.features.MaoBeliefPolicy``): it keeps the seat's posterior over the secret rules
    (``madiao_mao.agents.mao.belief_inputs``), so it has a memory per game, like the Bayesian player.

    It is handed the table's observation (``table_obs_dim`` values) and appends the inputs itself.
    ``act`` follows one seat of one game (call :meth:`reset` between games); ``act_batch`` keeps
    one posterior per row key, the batch row by default or ``rows`` (one game-seat key per row,
    as the trainer's opponent table hands them); :meth:`reset_rows` forgets ended games' keys.
    ``posterior``: the posterior options of the table's variants
    (``madiao_mao.agents.mao.players.posterior_options``; default: the default table's).

    A round winner's rule proposal follows the posterior, as the scripted players' does: the
    network chooses among the rules it most suspects are in force without being sure
    (``madiao_mao.agents.mao.players.rules_to_propose``; a refusal is free news of a secret rule). No belief
    input speaks of single rules, and the network's rule logits were learned when the mask offered
    only the rules not in force.
    """

    decides_from_observation = False  # its posterior remembers the game

    def __init__(self, path: str | Path | None = None, *, posterior: dict | None = None, **kwargs) -> None:
        # Imported here: keeps Numba and Gymnasium off this module's import path.
        from madiao_mao.agents.mao.belief_inputs import BELIEF_WIDTH, BeliefTracker

        super().__init__(path, **kwargs)
        # The seat's part of the policy's observation ends with the belief inputs (a privileged
        # critic's columns, which a model in training has after them, are not the seat's).
        self.table_obs_dim -= BELIEF_WIDTH
        self.beliefs = BeliefTracker(posterior)

    def reset(self) -> None:
        self.beliefs.reset()

    def reset_rows(self, rows: np.ndarray) -> None:
        self.beliefs.forget(rows)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal_actions(action_mask)
        masks = np.asarray(action_mask, dtype=bool)[None]
        return int(self._act_rows(np.asarray(observation)[None], masks, [self.beliefs.posteriors.default])[0])

    def act_batch(
        self, observations: np.ndarray, masks: np.ndarray, rows: np.ndarray | None = None
    ) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        return self._act_rows(observations, masks, self.beliefs.seat_posteriors(masks.shape[0], rows))

    def _act_rows(self, observations: np.ndarray, masks: np.ndarray, posteriors: list) -> np.ndarray:
        # Imported here: keeps Numba and Gymnasium off this module's import path.
        from madiao_mao.agents.mao.players import rules_to_propose
        from mao_env.cards import CHOOSE_RULE_0

        policy_inputs = self.beliefs.policy_observations(self._check_obs(observations), masks, posteriors)
        actions = np.full(masks.shape[0], -1, dtype=np.int64)
        rows = np.flatnonzero(masks.any(axis=1))
        if rows.size:
            choices = masks[rows]
            for choice, row in zip(choices, rows, strict=True):
                if choice[CHOOSE_RULE_0:].any():
                    choice[:] = False
                    choice[rules_to_propose(masks[row], posteriors[row].marginals())] = True
            actions[rows] = self._choose(policy_inputs[rows], choices)
        self.beliefs.note_actions(posteriors, actions)
        return actions
