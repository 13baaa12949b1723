"""Madiao in the trainer: duplicate evaluation, batched games, its commands and scorecard.

The generic trainer modules find everything here through ``GAME_SPEC``
(``madiao_mao.training.game_spec.GameSpec``, the training layer's contract): the trainer's part, the
exploitability proxy's (``exploit``), the search player as the expert of
``madiao-mao expert-iteration`` (``expert_iteration``), the ``evaluate``, ``play``, ``match`` and
``replay`` commands (``commands``), the scorecard (``scorecard``), the AEC and batched envs
Gymnasium's ids build (``table_envs``) and ``madiao-mao evaluate --engine ray``
(``evaluate_on_ray``).
"""

from __future__ import annotations

from madiao_mao.training.madiao.spec import GAME_SPEC

__all__ = ["GAME_SPEC"]
