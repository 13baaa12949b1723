"""A policy exported by the RLlib engine (``madiao-mao train --engine rllib``).

The exported file (``final_model.pt`` of an RLlib run) holds the masked policy network,
``logits = net(observations, action_masks)`` (illegal actions already at the float minimum), and
its metadata (``meta.json``). It is a ``torch.export`` program (``torch.export.save``); files of
runs made before 2026-11-24 are TorchScript, which torch 2.13 deprecates and which still load.
Loading needs torch only, not Ray: ``model:runs/RUN/final_model.pt`` works wherever
``model:PATH`` does (``madiao_mao.agents.registry``), in ``evaluate``, ``play`` and ``match``.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from madiao_mao.agents.data_files import note_read
from madiao_mao.agents.learned import LearnedPolicyAgent

#: What the exported file says it is (checked on load).
FORMAT = "madiao-mao/rllib-policy/1"


def is_policy_program(data: bytes) -> bool:
    """Whether exported policy bytes are a ``torch.export`` program (else TorchScript): a
    program's archive names its format (``archive_format``), TorchScript's does not."""
    try:
        names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    except zipfile.BadZipFile:
        raise ValueError("not an exported policy (no zip archive)") from None
    return any(name.rsplit("/", 1)[-1] == "archive_format" for name in names)


def load_policy(data: bytes) -> tuple[Callable[..., Any], dict[str, Any]]:
    """``net(observations, masks) -> logits`` and the metadata of an exported policy in either
    format (a program, or the TorchScript of older runs); anything else is a ValueError."""
    # Imported here: keeps torch off this module's import path.
    import torch

    extra = {"meta.json": ""}
    if is_policy_program(data):
        net = torch.export.load(io.BytesIO(data), extra_files=extra).module()
    else:
        net = torch.jit.load(io.BytesIO(data), map_location="cpu", _extra_files=extra)
    meta = json.loads(extra["meta.json"] or "{}")
    if meta.get("format") != FORMAT:
        raise ValueError(f"not an exported RLlib policy (format {meta.get('format')!r})")
    return net, meta


class ExportedPolicy:
    """The duck-typed model ``madiao_mao.agents.learned.LearnedPolicyAgent`` plays: an ``observation_space``
    and ``predict(observations, action_masks, deterministic)``."""

    def __init__(self, path: str | Path, seed: int | None = None) -> None:
        # Imported here: keeps Gymnasium off this module's import path.
        import gymnasium as gym

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no saved model at {path}")
        note_read(path)
        try:
            self.net, meta = load_policy(path.read_bytes())
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None
        self.meta = meta
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (int(meta["obs_dim"]),), np.float32)
        self.n_actions = int(meta["n_actions"])
        # SB3's predict has no seed either; sampling here draws from this generator.
        self.rng = np.random.default_rng(seed)
        # Not an SB3 policy: LearnedPolicyAgent then calls predict().
        self.policy = None

    def logits(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        # Imported here: keeps torch off this module's import path.
        import torch

        with torch.no_grad():
            return (
                self.net(
                    torch.as_tensor(np.asarray(observations, dtype=np.float32)),
                    torch.as_tensor(np.asarray(action_masks, dtype=np.float32)),
                )
                .double()
                .numpy()
            )

    def predict(self, observations, action_masks=None, deterministic: bool = True):
        observations = np.asarray(observations, dtype=np.float32)
        masks = (
            np.ones((observations.shape[0], self.n_actions), dtype=bool)
            if action_masks is None
            else np.asarray(action_masks, dtype=bool)
        )
        logits = self.logits(observations, masks)
        if not deterministic:
            logits = logits - np.log(-np.log(self.rng.random(logits.shape)))
        logits[~masks] = -np.inf
        return logits.argmax(axis=1).astype(np.int64), None


def exported_policy_agent(path: str | Path, *, deterministic: bool = True, name: str | None = None):
    """A ``LearnedPolicyAgent`` playing the exported policy at ``path``."""

    return LearnedPolicyAgent(
        model=ExportedPolicy(path), deterministic=deterministic, name=name or Path(path).stem
    )
