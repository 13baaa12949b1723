"""Mao in the trainer: held-out-rule evaluation, play, its commands and scorecard.

The generic trainer modules find everything here through ``GAME_SPEC``
(``madiao_mao.training.game_spec.GameSpec``, the training layer's contract): the trainer's part, the
exploitability proxy's (``exploit``), the ``evaluate``, ``play``, ``match`` and ``replay``
commands (``commands``), the scorecard (``scorecard``) and the AEC and batched envs Gymnasium's
ids build (``table_envs``).
"""

from __future__ import annotations

from madiao_mao.training.mao.spec import GAME_SPEC

__all__ = ["GAME_SPEC"]
