"""Mao for reinforcement learning: ``from mao_env import mao_v0``; ``mao_v0.env()`` is the wrapped
PettingZoo AEC env (the environment is the Mao Master), ``mao_v0.raw_env()`` the bare one.

Importing the package compiles nothing: the Numba kernels of ``mao_env.core`` compile (or load from
the on-disk cache) on first use.
"""

from cardgame_core.version import __version__

__all__ = ["__version__"]
