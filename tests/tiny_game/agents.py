"""High card's players: ``AGENTS`` (the registry adds ``random`` and ``model:PATH``; no policy is
shipped, so there is no ``model``, and no policy kind of its own)."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from madiao_mao.agents.base import Agent, legal_actions
from madiao_mao.agents.spec import AgentSpec
from tests.tiny_game.env import FOLD, N_CARDS, PLAY, RAISE


class ThresholdAgent(Agent):
    """Raises with the two highest cards, folds the two lowest, plays the middle two."""

    name = "threshold"
    decides_from_observation = True

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal_actions(action_mask)
        card = int(np.argmax(observation[:N_CARDS]))
        return RAISE if card >= N_CARDS - 2 else PLAY if card >= 2 else FOLD


AGENTS = MappingProxyType(
    {
        "threshold": AgentSpec(
            "threshold",
            "raises with the two highest cards, folds the two lowest, else plays",
            lambda seed, env, options: ThresholdAgent(),
        )
    }
)

PRETRAINED_MODEL = None
policy_agent = None
LEADING_OBSERVATIONS = MappingProxyType({})
