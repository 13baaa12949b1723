"""Card-counting features for Madiao policies: the raw observation plus what a player works out.

The strongest scripted player's edge is one inference: which cards are *bosses* (no higher card
of their suit can still be in another hand). That is a fixed function of the observation (a card
is unseen when it is neither held, nor seen face up, nor sloughed by the observer, nor the
upcard; a card is a boss when no higher card of its suit is unseen), but an MLP has to discover
it from the raw planes at the cost of many samples. ``MadiaoCardFeatures`` computes it exactly
with two fixed matrix products and hands the network

    the observation | unseen cards (40) | boss cards (40) | held bosses (40) |
    unseen cards per suit (4) | held cards per suit (4)

It has no trainable parameters. The slice starts are read from the env's exported observation
layout when the policy is built, and saved with the model as plain integers.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from madiao_env import cards
from madiao_env.layout import SUMMARY_SLICES

N_DERIVED = 3 * cards.N_CARDS + 2 * 4


def summary_layout() -> dict[str, int]:
    """Start indices of the observation planes the features read (``madiao_env.layout`` pieces)."""

    return {
        "hand_at": SUMMARY_SLICES["OBS_HAND"].start,
        "seen_at": SUMMARY_SLICES["OBS_SEEN_FACE_UP"].start,
        "sloughed_at": SUMMARY_SLICES["OBS_OWN_SLOUGHED"].start,
        "upcard_at": SUMMARY_SLICES["OBS_UPCARD"].start,
    }


class MadiaoCardFeatures(BaseFeaturesExtractor):
    """The observation with unseen/boss card planes appended (module doc). Summary observations."""

    def __init__(
        self,
        observation_space: spaces.Box,
        hand_at: int,
        seen_at: int,
        sloughed_at: int,
        upcard_at: int,
    ) -> None:
        obs_dim = int(np.prod(observation_space.shape))
        for name, start in (
            ("hand_at", hand_at),
            ("seen_at", seen_at),
            ("sloughed_at", sloughed_at),
            ("upcard_at", upcard_at),
        ):
            if not 0 <= start <= obs_dim - cards.N_CARDS:
                raise ValueError(f"{name}={start} does not fit a 40-card plane in observations of {obs_dim}")
        super().__init__(observation_space, features_dim=obs_dim + N_DERIVED)
        self.starts = (hand_at, seen_at, sloughed_at, upcard_at)
        suit = np.asarray(cards.CARD_SUIT)
        ids = np.arange(cards.N_CARDS)
        # higher[j, i] = 1 when card j beats card i (same suit, higher id).
        higher = (suit[:, None] == suit[None, :]) & (ids[:, None] > ids[None, :])
        by_suit = suit[:, None] == np.arange(4)[None, :]
        self.register_buffer("higher", torch.as_tensor(higher, dtype=torch.float32), persistent=False)
        self.register_buffer("by_suit", torch.as_tensor(by_suit, dtype=torch.float32), persistent=False)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        observations = observations.float().flatten(1)
        hand, seen, sloughed, upcard = (
            observations[:, start : start + cards.N_CARDS] for start in self.starts
        )
        unseen = (1.0 - hand - seen - sloughed - upcard).clamp(0.0, 1.0)
        boss = (unseen @ self.higher < 0.5).float()
        return torch.cat(
            [observations, unseen, boss, hand * boss, unseen @ self.by_suit, hand @ self.by_suit], dim=1
        )
