"""Madiao in the trainer: duplicate evaluation, batched games, its commands and scorecard.

What the generic trainer modules find here (through ``madiao_mao.games``): ``GAME_SPEC`` (the
trainer's spec), ``EXPLOIT`` (the exploitability proxy's part), ``commands_module()`` (the
``evaluate``, ``play``, ``match`` and ``replay`` commands), ``scorecard_module()`` (suites,
pairings, figures), ``EXPERT_ITERATION`` (the search player as the expert of
``madiao-mao expert-iteration``), ``table_envs()`` (the AEC and batched envs Gymnasium's ids build) and
``evaluate_on_ray`` (``madiao-mao evaluate --engine ray``).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from madiao_mao.training.madiao.expert_iteration import EXPERT_ITERATION
from madiao_mao.training.madiao.exploit import EXPLOIT
from madiao_mao.training.madiao.spec import GAME_SPEC


def commands_module() -> ModuleType:
    from madiao_mao.training.madiao import commands

    return commands


def scorecard_module() -> ModuleType:
    from madiao_mao.training.madiao import scorecard

    return scorecard


def table_envs() -> tuple[Any, type]:
    """The bare AEC env class and the batched env class (imported when an env is made)."""
    from madiao_env.env import raw_env
    from madiao_env.vector import MadiaoVectorEnv

    return raw_env, MadiaoVectorEnv


def evaluate_on_ray(args: Any) -> int:
    from madiao_mao.training.madiao.distributed_evaluation import evaluate_command

    return evaluate_command(args)


__all__ = [
    "EXPERT_ITERATION",
    "EXPLOIT",
    "GAME_SPEC",
    "commands_module",
    "evaluate_on_ray",
    "scorecard_module",
    "table_envs",
]
