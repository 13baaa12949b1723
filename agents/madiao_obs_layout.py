"""Decoding the Madiao observation vector into a ``MadiaoView`` through the env's index constants.

The heuristics never hard-code positions: they read the slices that ``madiao_env.env`` exports.
The names this decoder needs (each a ``slice`` into the observation vector; seats relative to
the observer, 0 = itself, 1 = next to act):

    OBS_HAND            40  cards held (1/0 by card id)
    OBS_SEEN_FACE_UP    40  cards played face up so far this hand (current trick included)
    OBS_OWN_SLOUGHED    40  cards this seat sloughed face down
    OBS_UPCARD          40  one-hot upcard
    OBS_BANKER           4  one-hot relative seat of the banker
    OBS_TRICKS_WON       4  tricks won by relative seat (raw counts)
    OBS_TRICK_LEADER     4  one-hot relative seat that led the current trick (all 0: no trick)
    OBS_TRICK_PLAYS   3*41  the current trick's plays in order: card one-hot (40) + face-down flag

If the env module names them differently, map them here (one place).
"""

from __future__ import annotations

import numpy as np

from agents.madiao_view import MadiaoView
from madiao_env import cards

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
    """The observation slices, read once from ``madiao_env.env``; a clear error if any is missing."""
    global _layout
    if _layout is None:
        try:
            from madiao_env import env as env_module
        except ImportError as error:
            raise ImportError(
                f"the Madiao heuristics need madiao_env.env (its observation layout): {error}"
            ) from error
        missing = [name for name in REQUIRED if not isinstance(getattr(env_module, name, None), slice)]
        if missing:
            raise ImportError(
                "madiao_env.env does not export the observation slices the heuristics read: "
                + ", ".join(missing)
                + " (see agents/madiao_obs_layout.py)"
            )
        _layout = {name: getattr(env_module, name) for name in REQUIRED}
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
