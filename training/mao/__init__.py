"""Mao in the trainer: held-out-rule evaluation, play, its commands and scorecard.

What the generic trainer modules find here (through ``madiao_mao.games``): ``GAME_SPEC`` (the
trainer's spec), ``EXPLOIT`` (the exploitability proxy's part), ``commands_module()`` (the
``evaluate``, ``play``, ``match`` and ``replay`` commands), ``scorecard_module()`` (suites,
pairings, figures) and ``table_envs()`` (the AEC and batched envs Gymnasium's ids build).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from madiao_mao.training.mao.exploit import EXPLOIT
from madiao_mao.training.mao.spec import GAME_SPEC


def commands_module() -> ModuleType:
    from madiao_mao.training.mao import commands

    return commands


def scorecard_module() -> ModuleType:
    from madiao_mao.training.mao import scorecard

    return scorecard


def table_envs() -> tuple[Any, type]:
    """The bare AEC env class and the batched env class (imported when an env is made)."""
    from mao_env.env import raw_env
    from mao_env.vector import MaoVectorEnv

    return raw_env, MaoVectorEnv


__all__ = ["EXPLOIT", "GAME_SPEC", "commands_module", "scorecard_module", "table_envs"]
