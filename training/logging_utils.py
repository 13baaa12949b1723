"""TensorBoard tags in the project's namespaces and atomic file writes.

SB3 logs under ``rollout/``, ``train/`` and ``time/``; the house style (CleanRL) groups scalars as
``charts/`` (episode returns, speed), ``losses/`` (optimisation) and ``eval/`` (tournaments).
``NamespacedTensorBoard`` renames SB3's keys on the way to the event file, so every scalar of a
run lands in one of those three namespaces.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from stable_baselines3.common.logger import CSVOutputFormat, Logger, TensorBoardOutputFormat

TAG_PREFIXES = {"train/": "losses/", "rollout/": "charts/", "time/": "charts/"}


def namespaced(key: str) -> str:
    """SB3 key -> project tag: ``train/value_loss`` -> ``losses/value_loss``."""
    for old, new in TAG_PREFIXES.items():
        if key.startswith(old):
            return new + key[len(old) :]
    return key


class NamespacedTensorBoard(TensorBoardOutputFormat):
    """TensorBoard writer that files SB3's scalars under charts/, losses/ and eval/."""

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        renamed = {namespaced(k): v for k, v in key_values.items()}
        excluded = {namespaced(k): v for k, v in key_excluded.items()}
        super().write(renamed, excluded, step)


def make_logger(folder: Path) -> Logger:
    folder.mkdir(parents=True, exist_ok=True)
    return Logger(
        str(folder), [NamespacedTensorBoard(str(folder)), CSVOutputFormat(str(folder / "progress.csv"))]
    )


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a crash leaves either the old or the new file, never half."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=1, default=_json_default))


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def atomic_save_model(model, path: Path) -> None:
    """``model.save`` to a temp zip, then rename over ``path`` (SB3 appends .zip to bare names)."""
    temporary = path.with_name(f".{path.stem}.tmp.zip")
    model.save(str(temporary))
    os.replace(temporary, path)
