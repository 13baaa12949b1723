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

On the CPU, for plain inputs that need no gradient in eager mode (every decision of an agent, a
rollout, the update's features computed once; not a trace or an export), one Numba pass over
each row (``_card_features``) writes the same numbers as the torch operations: the planes hold
0s and 1s, so every sum is exact in float32 and the output is the same bit for bit (a test). It
replaces about fifteen small torch operations per call, which cost a league opponent's few
dozen rows more than its arithmetic.
"""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from cardgame_core.jit import njit
from madiao_env import cards
from madiao_env.layout import SUMMARY_SLICES

N_DERIVED = 3 * cards.N_CARDS + 2 * 4
_CARD_SUIT = cards.CARD_SUIT


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
        self._starts_array = np.asarray(self.starts, dtype=np.int64)  # the Numba pass's, made once
        suit = np.asarray(cards.CARD_SUIT)
        ids = np.arange(cards.N_CARDS)
        # higher[j, i] = 1 when card j beats card i (same suit, higher id).
        higher = (suit[:, None] == suit[None, :]) & (ids[:, None] > ids[None, :])
        by_suit = suit[:, None] == np.arange(4)[None, :]
        self.register_buffer("higher", torch.as_tensor(higher, dtype=torch.float32), persistent=False)
        self.register_buffer("by_suit", torch.as_tensor(by_suit, dtype=torch.float32), persistent=False)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        if (
            # A plain tensor in eager mode: a trace or an export (torch.jit.trace, torch.export,
            # torch.compile: tracing tensors or tensor subclasses) records the torch operations.
            type(observations) is torch.Tensor
            and not torch.jit.is_tracing()
            and not torch.compiler.is_compiling()
            and observations.device.type == "cpu"
            and observations.dtype == torch.float32
            and observations.dim() == 2
            and not observations.requires_grad
        ):
            inputs = np.ascontiguousarray(observations.numpy())
            features = np.empty((inputs.shape[0], self.features_dim), dtype=np.float32)
            if _card_features(inputs, self._starts_array, features):
                return torch.from_numpy(features)
        observations = observations.float().flatten(1)
        hand, seen, sloughed, upcard = (
            observations[:, start : start + cards.N_CARDS] for start in self.starts
        )
        unseen = (1.0 - hand - seen - sloughed - upcard).clamp(0.0, 1.0)
        boss = (unseen @ self.higher < 0.5).float()
        return torch.cat(
            [observations, unseen, boss, hand * boss, unseen @ self.by_suit, hand @ self.by_suit], dim=1
        )


@njit
def _card_features(observations: np.ndarray, starts: np.ndarray, features: np.ndarray) -> bool:
    """``MadiaoCardFeatures.forward`` of float32 ``observations`` into ``features``, row by row:
    the observation, then the unseen cards, the bosses, the held bosses, and the unseen and held
    cards per suit. False (``features`` unfinished) when a card plane holds anything but 0 and 1:
    only then is every sum an exact integer, the torch operations' result whatever their order."""
    n_cards = cards.N_CARDS
    suits = _CARD_SUIT
    hand_at, seen_at, sloughed_at, upcard_at = starts[0], starts[1], starts[2], starts[3]
    width = observations.shape[1]
    unseen_at, boss_at, held_boss_at = width, width + n_cards, width + 2 * n_cards
    unseen_by_suit_at, held_by_suit_at = width + 3 * n_cards, width + 3 * n_cards + 4
    for row in range(observations.shape[0]):
        for column in range(width):
            features[row, column] = observations[row, column]
        for suit in range(4):
            features[row, unseen_by_suit_at + suit] = 0.0
            features[row, held_by_suit_at + suit] = 0.0
        for card in range(n_cards):
            for plane_at in (hand_at, seen_at, sloughed_at, upcard_at):
                value = observations[row, plane_at + card]
                if value != 0 and value != 1:
                    return False
            unseen = (
                np.float32(1.0)
                - observations[row, hand_at + card]
                - observations[row, seen_at + card]
                - observations[row, sloughed_at + card]
                - observations[row, upcard_at + card]
            )
            features[row, unseen_at + card] = min(max(unseen, np.float32(0.0)), np.float32(1.0))
        # A boss: no higher card of its suit is unseen. A suit's cards have consecutive ids, the
        # higher the higher: from the top down, the unseen cards above each one are a running sum.
        higher_unseen = np.float32(0.0)
        for card in range(n_cards - 1, -1, -1):
            if card == n_cards - 1 or suits[card] != suits[card + 1]:
                higher_unseen = np.float32(0.0)
            boss = np.float32(1.0) if higher_unseen < 0.5 else np.float32(0.0)
            higher_unseen += features[row, unseen_at + card]
            features[row, boss_at + card] = boss
            held = observations[row, hand_at + card]
            features[row, held_boss_at + card] = held * boss
            features[row, unseen_by_suit_at + suits[card]] += features[row, unseen_at + card]
            features[row, held_by_suit_at + suits[card]] += held
    return True
