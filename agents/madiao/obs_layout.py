"""Decoding the Madiao observation vector into a ``MadiaoView`` through the env's named pieces.

The heuristics never hard-code positions: they read the summary observation's pieces by name
from ``madiao_env.layout`` (sizes and meaning there). The pieces this decoder needs (seats
relative to the observer, 0 = itself, 1 = next to act): ``REQUIRED``.
"""

from __future__ import annotations

import numpy as np

from madiao_env import cards
from madiao_env import layout as env_layout
from madiao_mao.agents.madiao.view import MadiaoView

REQUIRED = (
    "OBS_HAND",
    "OBS_SEEN_FACE_UP",
    "OBS_OWN_SLOUGHED",
    "OBS_UPCARD",
    "OBS_BANKER",
    "OBS_TRICKS_WON",
    "OBS_TRICK_LEADER",
    "OBS_TRICK_PLAYS",
)
_layout: dict[str, slice] | None = None


def layout() -> dict[str, slice]:
    """The slices of the ``REQUIRED`` pieces of the summary observation, by name."""
    global _layout
    if _layout is None:
        _layout = {name: env_layout.SUMMARY_SLICES[name] for name in REQUIRED}
    return _layout


def _mask(values: np.ndarray) -> int:
    mask = 0
    for card in np.flatnonzero(values > 0.5):
        mask |= 1 << int(card)
    return mask


def decode(observation: np.ndarray) -> MadiaoView:
    """The view of the seat whose observation this is."""
    slices = layout()
    obs = np.asarray(observation, dtype=np.float64)
    upcard = obs[slices["OBS_UPCARD"]]
    leader = obs[slices["OBS_TRICK_LEADER"]]
    plays = obs[slices["OBS_TRICK_PLAYS"]].reshape(cards.N_SEATS - 1, cards.N_CARDS + 1)
    trick = []
    if leader.any():
        seat = int(np.argmax(leader))
        for row in plays:
            if not row.any():
                break
            face_down = row[cards.N_CARDS] > 0.5
            card = -1 if face_down or not row[: cards.N_CARDS].any() else int(np.argmax(row[: cards.N_CARDS]))
            trick.append((seat, card, not face_down))
            seat = (seat + 1) % cards.N_SEATS
    return MadiaoView(
        hand=_mask(obs[slices["OBS_HAND"]]),
        seen_face_up=_mask(obs[slices["OBS_SEEN_FACE_UP"]]),
        own_sloughed=_mask(obs[slices["OBS_OWN_SLOUGHED"]]),
        upcard=int(np.argmax(upcard)) if upcard.any() else -1,
        banker=int(np.argmax(obs[slices["OBS_BANKER"]])),
        tricks_won=tuple(int(np.rint(t)) for t in obs[slices["OBS_TRICKS_WON"]]),
        trick=tuple(trick),
    )


def view_from_observation(observation: np.ndarray) -> MadiaoView:
    """Decode a seat's observation vector (layout: ``madiao_env.layout``)."""
    observation = np.asarray(observation)
    if observation.ndim != 1:
        raise ValueError(f"a Madiao observation is one vector, got shape {observation.shape}")
    observation = env_layout.summary_part(observation, "the Madiao scripted players")
    return decode(observation)
