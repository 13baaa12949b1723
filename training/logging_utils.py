"""TensorBoard tags in the project's namespaces and atomic file writes.

SB3 logs under ``rollout/``, ``train/`` and ``time/``; the house style (CleanRL) groups scalars as
``charts/`` (episode returns, speed), ``losses/`` (optimisation) and ``eval/`` (tournaments).
``NamespacedTensorBoard`` renames SB3's keys on the way to the event file, so every scalar of a
run lands in one of those three namespaces. ``progress.csv`` gets the same names
(``NamespacedCSV``), and both get every scalar, including the bookkeeping SB3 keeps out of
TensorBoard (``charts/total_timesteps``, ``charts/iterations``, ``charts/time_elapsed``,
``losses/n_updates``), so a CSV column and a TensorBoard tag are one name for one series. A resumed
run appends to its ``progress.csv`` (``make_logger(folder, resume_step=...)``).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.logger import KVWriter, Logger, TensorBoardOutputFormat

from madiao_mao.training.run_folder import PROGRESS_FILE, STEP_COLUMN

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
        # SB3 keeps its step and time counters out of TensorBoard; they are written here too, so
        # the event file and progress.csv hold the same series under the same names.
        super().write(renamed, dict.fromkeys(renamed), step)


class NamespacedCSV(KVWriter):
    """``progress.csv`` with the TensorBoard tag names, appended to by a resumed run.

    SB3's ``CSVOutputFormat`` truncates the file when it opens it, which lost a resumed run's
    earlier rows. Here an existing file is kept; rows logged past ``resume_step`` (by the run after
    its last checkpoint, work the resumed run does again) are dropped so no step appears twice. A
    new column rewrites the file (atomically) with empty cells in the earlier rows.
    """

    def __init__(self, path: Path, resume_step: int | None = None) -> None:
        self.path = Path(path)
        self.keys: list[str] = []
        rows: list[dict[str, str]] = []
        if resume_step is not None and self.path.is_file():
            with self.path.open(newline="") as file:
                reader = csv.DictReader(file)
                self.keys = list(reader.fieldnames or [])
                rows = list(reader)
            rows = [row for row in rows if not _logged_after(row, resume_step)]
        self._rewrite(rows)

    def _rewrite(self, rows: list[dict[str, str]]) -> None:
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        with temporary.open("w", newline="") as file:
            writer = csv.DictWriter(file, self.keys, restval="", extrasaction="ignore")
            if self.keys:
                writer.writeheader()
            writer.writerows(rows)
        os.replace(temporary, self.path)

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        row = {namespaced(k): v for k, v in key_values.items() if isinstance(v, np.ScalarType)}
        new_keys = [key for key in row if key not in self.keys]
        if new_keys:
            with self.path.open(newline="") as file:
                rows = list(csv.DictReader(file)) if self.keys else []
            self.keys.extend(new_keys)
            self._rewrite(rows)
        with self.path.open("a", newline="") as file:
            csv.DictWriter(file, self.keys, restval="").writerow(row)

    def close(self) -> None:
        pass


def _logged_after(row: dict[str, str], step: int) -> bool:
    try:
        return float(row.get(STEP_COLUMN) or "nan") > step
    except ValueError:
        return False


def make_logger(folder: Path, resume_step: int | None = None) -> Logger:
    """The run's logger: TensorBoard events and ``progress.csv`` under the same names; with
    ``resume_step`` (a resumed run's checkpoint step) ``progress.csv`` is appended to."""
    folder.mkdir(parents=True, exist_ok=True)
    return Logger(
        str(folder),
        [NamespacedTensorBoard(str(folder)), NamespacedCSV(folder / PROGRESS_FILE, resume_step)],
    )


def atomic_save_model(model, path: Path) -> None:
    """``model.save`` to a temp zip, then rename over ``path`` (SB3 appends .zip to bare names)."""
    temporary = path.with_name(f".{path.stem}.tmp.zip")
    model.save(str(temporary))
    os.replace(temporary, path)


def log_evaluation(logger, spec, results: dict[str, dict]) -> str:
    """Record an evaluation's figures under ``eval/<baseline>_<measure>`` (a result with a
    confidence interval by its mean) and return its one-line summary (both engines)."""
    for name, result in results.items():
        for key, value in result.items():
            if isinstance(value, dict) and "mean" in value:
                logger.record(f"eval/{name}_{key}", value["mean"])
            elif isinstance(value, (int, float)) and key != "hands":
                logger.record(f"eval/{name}_{key}", value)
    return ", ".join(spec.describe_result(name, result) for name, result in results.items())


def log_league(logger, league) -> None:
    """Record the league's table under ``league/payoff/<member>`` (members that have played),
    ``league/rating/<member>`` and ``league/probability/<member>`` (both engines)."""
    for row in league.report():
        member = row["member"]
        if row["games"]:
            logger.record(f"league/payoff/{member}", row["mean_return"])
        logger.record(f"league/rating/{member}", row["mu"])
        logger.record(f"league/probability/{member}", row["probability"])
