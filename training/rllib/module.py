"""The PPO RLModule with action masking, and the torch-only export of its policy.

``MaskedPPOTorchRLModule`` is RLlib's default PPO module (separate policy and value MLPs, tanh, as
SB3's ``MlpPolicy``) on the ``"observations"`` part of the env's dict observation (with Madiao's
card planes appended when the run's features are "cards"); the
``"action_mask"`` part sets the logits of illegal actions to the float minimum after every forward
pass (exploration, inference and training), so their probability is exactly 0 and no illegal
action is ever sampled. (The float minimum rather than ``-inf``: PPO's KL and entropy terms then
stay finite.) The pattern is RLlib's own action-masking example
(``ray/rllib/examples/rl_modules/classes/action_masking_rlm.py``).

``export_policy_program`` writes the masked policy as a ``torch.export`` program
(``torch.export.save``, the batch size dynamic, ``meta.json`` inside: ``final_model.pt`` and the
snapshots), which ``madiao_mao.agents.exported_policy`` plays with torch alone and reads with
``load_policy``, which also reads the TorchScript files of runs made before 2026-11-24 (torch
2.13 deprecates ``torch.jit.trace``/``save``/``load``, so nothing writes them any more).
"""

from __future__ import annotations

import io
import json
from typing import Any

import gymnasium as gym
import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.utils.torch_utils import FLOAT_MIN

from madiao_mao.agents.exported_policy import FORMAT
from madiao_mao.agents.madiao.features import N_DERIVED, MadiaoCardFeatures

OBS_KEY = "observations"
MASK_KEY = "action_mask"


#: ``model_config`` key of the Madiao card features' layout (``madiao_mao.agents.madiao.features.
#: summary_layout()``; absent: the networks read the observation as it is).
CARD_FEATURES_KEY = "card_features"


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """PPO's default torch module on ``obs["observations"]``, logits masked by ``obs["action_mask"]``.

    With ``model_config["card_features"]`` (Madiao's policy features "cards", as the SB3 engine's
    ``madiao_mao.agents.madiao.features.MadiaoCardFeatures``) both networks read the observation with the
    unseen/boss card planes appended, computed in the module (no parameters), so the exported
    policy still takes the raw observation."""

    def __init__(
        self,
        *,
        observation_space: gym.Space | None = None,
        model_config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(observation_space, gym.spaces.Dict) or set(observation_space) != {
            OBS_KEY,
            MASK_KEY,
        }:
            raise ValueError(
                f"MaskedPPOTorchRLModule needs a Dict observation space with keys {OBS_KEY!r} and "
                f"{MASK_KEY!r}, got {observation_space!r}"
            )
        self.observation_space_with_mask = observation_space
        layout = (model_config or {}).get(CARD_FEATURES_KEY)
        self._card_layout = dict(layout) if layout else None
        # The networks are built for the observation vector alone (with the card planes).
        network_input = observation_space[OBS_KEY]
        if self._card_layout is not None:
            size = int(network_input.shape[0]) + N_DERIVED
            network_input = gym.spaces.Box(-float("inf"), float("inf"), (size,), network_input.dtype)
        super().__init__(observation_space=network_input, model_config=model_config, **kwargs)

    def setup(self) -> None:
        super().setup()
        self.card_features = None
        if self._card_layout is not None:
            self.card_features = MadiaoCardFeatures(
                self.observation_space_with_mask[OBS_KEY], **self._card_layout
            )
        self.observation_space = self.observation_space_with_mask

    def _split(self, batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """The mask, and the batch with what the networks read as its observations."""
        observation = batch[Columns.OBS]
        if not isinstance(observation, dict) or MASK_KEY not in observation:
            raise ValueError(
                f"the batch's observations carry no {MASK_KEY!r}: illegal actions cannot be masked"
            )
        batch = dict(batch)
        batch[Columns.OBS] = observation[OBS_KEY]
        if self.card_features is not None:
            batch[Columns.OBS] = self.card_features(observation[OBS_KEY])
        return observation[MASK_KEY], batch

    @staticmethod
    def _mask(output: dict[str, Any], mask: torch.Tensor) -> dict[str, Any]:
        logits = output[Columns.ACTION_DIST_INPUTS]
        output[Columns.ACTION_DIST_INPUTS] = torch.where(
            mask > 0.5, logits, torch.full_like(logits, FLOAT_MIN)
        )
        return output

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_inference(batch, **kwargs), mask)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_exploration(batch, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._mask(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any | None = None) -> Any:
        if isinstance(batch[Columns.OBS], dict):
            _, batch = self._split(batch)
        return super().compute_values(batch, embeddings)


class _PolicyOnly(torch.nn.Module):
    """``logits = forward(observations, masks)`` of a masking module (what is traced)."""

    def __init__(self, module: MaskedPPOTorchRLModule) -> None:
        super().__init__()
        self.module = module

    def forward(self, observations: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        batch = {Columns.OBS: {OBS_KEY: observations, MASK_KEY: masks}}
        return self.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]


def export_policy_program(module: MaskedPPOTorchRLModule, meta: dict[str, Any]) -> bytes:
    """The module's masked policy as a ``torch.export`` program (any batch size) with ``meta``
    (game, sizes, step) inside as ``meta.json``."""
    space = module.observation_space_with_mask
    obs_dim, n_actions = int(space[OBS_KEY].shape[0]), int(space[MASK_KEY].shape[0])
    batch = torch.export.Dim("batch", min=1)
    was_training = module.training
    module.eval()
    try:
        example = (torch.zeros(2, obs_dim), torch.ones(2, n_actions))
        with torch.no_grad():
            program = torch.export.export(
                _PolicyOnly(module), example, dynamic_shapes=({0: batch}, {0: batch}), strict=False
            )
    finally:
        module.train(was_training)
    buffer = io.BytesIO()
    info = {"format": FORMAT, "obs_dim": obs_dim, "n_actions": n_actions, **meta}
    torch.export.save(program, buffer, extra_files={"meta.json": json.dumps(info)})
    return buffer.getvalue()
