"""Madiao (馬弔) for reinforcement learning: ``from madiao_env import madiao_v0``.

Importing the package compiles nothing: the Numba kernels of ``madiao_env.core`` compile (or load
from the on-disk cache) on first use. It registers the Gymnasium id ``madiao_mao/Madiao-v0``:
``gymnasium.make`` builds a single-learner env of it and ``gymnasium.make_vec`` the batched one
(``madiao_mao.training.gymnasium_envs``, imported only then; ``madiao_mao.gymnasium_ids``).
"""

from cardgame_core.version import __version__
from madiao_mao.gymnasium_ids import gymnasium_id, register_gymnasium_ids

#: ``gymnasium.make(GYMNASIUM_ID, **options)``; ``gymnasium.make("madiao_env:madiao_mao/Madiao-v0")``
#: imports this package first.
GYMNASIUM_ID = gymnasium_id("madiao")

register_gymnasium_ids()

__all__ = ["GYMNASIUM_ID", "__version__"]
