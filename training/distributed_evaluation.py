"""``madiao-mao evaluate --engine ray``: a game's evaluation sharded over Ray tasks.

A game offers it with ``evaluate_on_ray(args)`` in its training module (Madiao's duplicate-deal
tournaments: ``madiao_mao.training.madiao.distributed_evaluation``); this module holds what such
an evaluation shares and sends the command to the game's.
"""

from __future__ import annotations

import math
from typing import Any

from madiao_mao.training.game_spec import game_spec, games_with


def require_ray():
    """``ray``, or an ImportError saying how to install it."""
    try:
        # Imported here: keeps Ray off this module's import path.
        import ray
    except ImportError:
        raise ImportError(
            'the Ray engine needs Ray: pip install -e ".[distributed]" (after torch==2.13.0)'
        ) from None
    return ray


def shard_bounds(n_deals: int, n_shards: int) -> list[tuple[int, int]]:
    """``n_shards`` (at most ``n_deals``) ranges of consecutive deals covering ``0..n_deals-1``."""
    n_shards = max(1, min(n_shards, n_deals))
    size = math.ceil(n_deals / n_shards)
    return [(start, min(start + size, n_deals)) for start in range(0, n_deals, size)]


def ray_games() -> tuple[str, ...]:
    """The registered games whose evaluation runs on Ray."""
    return games_with(lambda spec: spec.evaluate_on_ray)


def evaluate_command(args: Any) -> int:
    """``madiao-mao evaluate --engine ray [--address HOST:PORT]``: the game's ``evaluate_on_ray``;
    a game without one is refused before any work."""
    evaluate_on_ray = game_spec(args.game).evaluate_on_ray
    if evaluate_on_ray is None:
        raise ValueError(
            f"--engine ray evaluates {', '.join(ray_games())} only; {args.game}'s evaluation runs with "
            "--engine local"
        )
    return evaluate_on_ray(args)
