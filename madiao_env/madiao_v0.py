"""Madiao v0: the versioned entry point (``madiao_v0.env()`` wrapped, ``madiao_v0.raw_env()`` bare)."""

from madiao_env.env import env, raw_env

__all__ = ["env", "raw_env"]
