"""What a Madiao critic may read during training besides the seat's observation: every hand, the
stock and the face-down cards (``privileged_observation``, one fixed-size float vector per seat).

The table of pieces below is its layout, as ``madiao_env.layout`` is the observation's. Seats are
relative to the seat the vector is made for, as in the observation: 0 is that seat, 1 the next to
act after it, ... Every piece is a set of cards, one entry per card id (1: in the set):

      0-159  PRIV_HANDS     cards each relative seat holds now, 4 x 40
    160-199  PRIV_STOCK     the stock's 8 cards, the upcard among them
    200-359  PRIV_SLOUGHED  cards each relative seat sloughed face down this hand, 4 x 40

No agent that plays may be handed this vector: it is for the value network of a training run only
(PerfectDou's "perfect-training, imperfect-execution"). The batched env
offers it as ``MadiaoVectorEnv.privileged_observation(seats)``.
"""

from __future__ import annotations

import numpy as np

from madiao_env import state
from madiao_env.cards import N_CARDS, N_SEATS
from madiao_env.layout import Piece, slices_of

PRIVILEGED_PIECES = (
    Piece("PRIV_HANDS", N_SEATS * N_CARDS, "cards each relative seat holds now, 4 x 40"),
    Piece("PRIV_STOCK", N_CARDS, "the stock's 8 cards, the upcard among them"),
    Piece(
        "PRIV_SLOUGHED", N_SEATS * N_CARDS, "cards each relative seat sloughed face down this hand, 4 x 40"
    ),
)
PRIVILEGED_SLICES = slices_of(PRIVILEGED_PIECES)
PRIVILEGED_SIZE = sum(piece.size for piece in PRIVILEGED_PIECES)

_CARD_BITS = np.left_shift(np.uint64(1), np.arange(N_CARDS, dtype=np.uint64))


def _card_planes(masks: np.ndarray) -> np.ndarray:
    """Card bitmasks ``[...]`` as 0/1 planes ``[..., 40]`` (float32)."""
    return ((masks[..., None] & _CARD_BITS) != 0).astype(np.float32)


def privileged_observation(game_state: state.MadiaoState, seats: np.ndarray) -> np.ndarray:
    """The privileged vector of each game for ``seats[i]`` (``[N, PRIVILEGED_SIZE]`` float32)."""
    seats = np.asarray(seats, dtype=np.int64)
    games = np.arange(seats.shape[0])[:, None]
    relative = (seats[:, None] + np.arange(N_SEATS)) % N_SEATS  # relative seat r is absolute relative[:, r]
    out = np.zeros((seats.shape[0], PRIVILEGED_SIZE), dtype=np.float32)
    out[:, PRIVILEGED_SLICES["PRIV_HANDS"]] = _card_planes(state.hands(game_state)[games, relative]).reshape(
        seats.shape[0], -1
    )
    stock = np.zeros((seats.shape[0], N_CARDS), dtype=np.float32)
    np.put_along_axis(stock, state.stocks(game_state).astype(np.int64), 1.0, axis=1)
    out[:, PRIVILEGED_SLICES["PRIV_STOCK"]] = stock
    out[:, PRIVILEGED_SLICES["PRIV_SLOUGHED"]] = _card_planes(
        state.sloughed(game_state)[games, relative]
    ).reshape(seats.shape[0], -1)
    return out


def table_text() -> str:
    """The index table of the module docstring (a test checks that the docstring holds it)."""
    lines, start = [], 0
    for piece in PRIVILEGED_PIECES:
        lines.append(f"    {start:>3}-{start + piece.size - 1:<3}  {piece.name:<13}  {piece.description}")
        start += piece.size
    return "\n".join(lines)
