"""Full-rules Madiao random play-outs inside Numba, from an AEC env snapshot.

``random_playouts(snapshot, n, seed)`` plays ``n`` continuations of the game in ``snapshot``
(``env.unwrapped.get_state()``, or ``MadiaoVectorEnv.get_game_state(i)``) to the end of its
episode, every seat choosing uniformly among its legal actions, and returns each play-out's
payoffs by seat (``float64 [n, 4]``, times the snapshot's ``stake``). The play-outs run the same
rule kernels as the envs (declarations, redeals, captures, the last-trick rule, settlement, and
``episode="match"`` up to the match's end); a snapshot holds the true hands, so a play-out is a
continuation of that exact deal (a search agent determinises hidden cards before calling this).

Payoffs count every line settled after the snapshot, including lines already pending in it (the
four lowest, a meld at the deal, face-up discards), which the envs pay with the hand's settlement;
lines settled before the snapshot are not counted. Play-out ``k`` reseeds the game's random
stream from ``seed`` and ``k``, so redeals and new deals differ between play-outs and the result
depends only on ``(snapshot, n, seed)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from madiao_env import cards, core, payments, state
from madiao_env.options import MadiaoOptions


def new_hand_snapshot(seed: int, **env_kwargs: Any) -> dict[str, Any]:
    """A snapshot of a fresh random deal: ``raw_env(**env_kwargs).reset(seed=seed)``, first decision due."""
    # The AEC env's own reset is the definition of this snapshot (its RNG draws and bookkeeping).
    from madiao_env.env import raw_env

    env = raw_env(**env_kwargs)
    env.reset(seed=seed)
    return env.get_state()


def _checked_state(snapshot: Any) -> tuple[state.MadiaoState, np.ndarray, float]:
    # The kernels index arrays by the snapshot's counts and seats, so the snapshot is validated as
    # completely as set_state does (a corrupt one would crash the play-out kernel, not raise).
    if not isinstance(snapshot, dict) or "config" not in snapshot or "stake" not in snapshot:
        raise ValueError("snapshot must be a Madiao get_state() snapshot (a dict with 'config' and 'stake')")
    config = snapshot["config"]
    if not isinstance(config, np.ndarray) or config.shape != (core.N_CONFIG,) or config.dtype != np.int32:
        raise ValueError(f"snapshot['config'] must be int32 ({core.N_CONFIG},)")
    stake = snapshot["stake"]
    if (
        isinstance(stake, bool)
        or not isinstance(stake, (int, float))
        or not (np.isfinite(stake) and stake > 0)
    ):
        raise ValueError(f"snapshot['stake'] must be a positive number, got {stake!r}")
    try:
        # Every entry a valid options row could hold (a stray value would run an unknown variant).
        MadiaoOptions.from_config_row(config, stake)
    except (TypeError, ValueError) as error:
        raise ValueError(f"snapshot['config'] / snapshot['stake']: {error}") from None
    game_state = state.MadiaoState(*state.validate_snapshot(snapshot, config, float(stake))["arrays"])
    game = state.GameView(game_state)
    if game.episode_over or game.to_act < 0:
        raise ValueError("the snapshot's episode is over: there is nothing left to play out")
    return game_state, np.ascontiguousarray(config), float(stake)


def random_playouts(snapshot: dict[str, Any], n: int, seed: int) -> np.ndarray:
    """Payoffs by seat (``float64 [n, 4]``) of ``n`` uniformly random full-rules play-outs."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be a positive int, got {type(n).__name__} {n!r}")
    if n < 1:
        raise ValueError(f"n must be a positive int, got {n}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    game_state, config, stake = _checked_state(snapshot)
    net_stakes = np.empty((int(n), cards.N_SEATS), dtype=np.int64)
    overflowed = core.random_playouts_from(game_state, config, np.uint64(int(seed) % 2**64), net_stakes)
    if overflowed:
        raise RuntimeError("Madiao settlement line buffer overflowed during a play-out")
    return payments.stakes_to_rewards(net_stakes, stake)
