"""Mao for reinforcement learning: ``from mao_env import mao_v0``; ``mao_v0.env()`` is the wrapped
PettingZoo AEC env (the environment is the Mao Master), ``mao_v0.raw_env()`` the bare one.

Importing the package compiles nothing: the Numba kernels of ``mao_env.core`` compile (or load from
the on-disk cache) on first use. It registers the Gymnasium id ``madiao_mao/Mao-v0``:
``gymnasium.make`` builds a single-learner env of it and ``gymnasium.make_vec`` the batched one
(``madiao_mao.training.gymnasium_envs``, imported only then; ``madiao_mao.gymnasium_ids``).
"""

from cardgame_core.version import __version__
from madiao_mao.gymnasium_ids import gymnasium_id, register_gymnasium_ids

#: ``gymnasium.make(GYMNASIUM_ID, **options)``; ``gymnasium.make("mao_env:madiao_mao/Mao-v0")``
#: imports this package first.
GYMNASIUM_ID = gymnasium_id("mao")

register_gymnasium_ids()

__all__ = ["GYMNASIUM_ID", "__version__"]
