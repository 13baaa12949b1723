"""What a Mao critic may read during training besides the seat's observation: every hand and the
secret rules in force (``privileged_observation``, one fixed-size float vector per seat).

The table of pieces below is its layout, as ``mao_env.layout`` is the observation's; its size
depends on the table's number of players ``P`` (``privileged_size``). Seats are relative to the
seat the vector is made for, as in the observation: 0 is that seat, 1 the next in seat order, ...

    hands    P x 53   copies of each card type each relative seat holds
    rules    45       1 for each library rule in force (the secret rules)

No agent that plays may be handed this vector: it is for the value network of a training run only
(PerfectDou's "perfect-training, imperfect-execution"). The batched env
offers it as ``MaoVectorEnv.privileged_observation(seats)``.
"""

from __future__ import annotations

import numpy as np

from mao_env import state
from mao_env.cards import N_CARD_TYPES
from mao_env.layout import Piece
from mao_env.rules import N_RULES


def privileged_pieces(n_players: int) -> tuple[Piece, ...]:
    """The layout of the privileged vector at a table of ``n_players``."""
    return (
        Piece(
            "hands",
            n_players * N_CARD_TYPES,
            "copies of each card type each relative seat holds",
        ),
        Piece("rules", N_RULES, "1 for each library rule in force (the secret rules)"),
    )


def privileged_size(n_players: int) -> int:
    return sum(piece.size for piece in privileged_pieces(n_players))


def privileged_observation(game_state: state.MaoState, seats: np.ndarray, n_players: int) -> np.ndarray:
    """The privileged vector of each game for ``seats[i]`` (``[B, privileged_size(n_players)]`` float32)."""
    seats = np.asarray(seats, dtype=np.int64)
    n_games = seats.shape[0]
    games = np.arange(n_games)[:, None]
    relative = (seats[:, None] + np.arange(n_players)) % n_players
    hands = game_state.hands[games, relative].astype(np.float32).reshape(n_games, -1)
    rules = np.zeros((n_games, N_RULES + 1), dtype=np.float32)  # the last column takes the empty slots
    active = state.active_rule_ids(game_state)
    np.put_along_axis(rules, np.where(active >= 0, active, N_RULES), 1.0, axis=1)
    return np.concatenate([hands, rules[:, :N_RULES]], axis=1)


def table_text() -> str:
    """The index table of the module docstring (a test checks that the docstring holds it)."""
    sizes = {"hands": f"P x {N_CARD_TYPES}", "rules": str(N_RULES)}
    return "\n".join(f"    {p.name:<8} {sizes[p.name]:<8} {p.description}" for p in privileged_pieces(1))
