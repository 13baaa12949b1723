"""``mao_v0``: the PettingZoo entry points of the Mao environment."""

from mao_env.env import env, raw_env

__all__ = ["env", "raw_env"]
