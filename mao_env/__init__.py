"""Mao: Numba rule core, secret-rule library and the PettingZoo AEC env ``mao_v0``."""

from mao_env.mao_v0 import env, raw_env

__all__ = ["env", "raw_env"]
