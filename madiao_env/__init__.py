"""Madiao (馬弔) for reinforcement learning: ``from madiao_env import madiao_v0``.

Importing the package compiles nothing: the Numba kernels of ``madiao_env.core`` compile (or load
from the on-disk cache) on first use.
"""

from cardgame_core.version import __version__

__all__ = ["__version__"]
