"""Helpers shared by test files of more than one folder: subprocess runs of this interpreter and of
the command line, refused command lines, the tiny training budget and the tiny MaskablePPO check."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

#: The repository root: the working folder of every subprocess the tests start.
ROOT = Path(__file__).resolve().parents[2]


def run_python(
    args: list[str], *, env: dict[str, str], timeout: float, stdin: str | None = None
) -> subprocess.CompletedProcess:
    """This interpreter run on ``args`` (``["-c", program]`` or ``["-m", module, ...]``) in the
    repository root, with ``env`` as its whole environment; stdout and stderr captured as text."""
    command = [sys.executable, *args]
    return subprocess.run(
        command, input=stdin, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def run_cli(*args: str, stdin: str = "", timeout: float = 240) -> subprocess.CompletedProcess:
    """The ``madiao-mao`` command run as a user would: a subprocess, its output unbuffered."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return run_python(["-m", "madiao_mao.cli.main", *args], env=env, timeout=timeout, stdin=stdin)


#: The smallest PPO run a training test needs: one update of 8 short games, a tiny net, a
#: checkpoint and a league snapshot at its end, no periodic evaluation and nothing printed.
TINY_RUN: dict[str, Any] = {
    "total_timesteps": 128,
    "n_envs": 8,
    "n_steps": 16,
    "batch_size": 64,
    "n_epochs": 1,
    "net_arch": (16,),
    "checkpoint_every": 128,
    "snapshot_every": 128,
    "eval_every": 0,
    "progress_bar": False,
    "verbose": False,
}


def fill_placeholders(word: str, paths: dict[str, str]) -> str:
    """``word`` with the placeholders of ``paths`` (FILE, CORRUPT, ...) replaced, longest first."""
    for key in sorted(paths, key=len, reverse=True):
        word = word.replace(key, paths[key])
    return word


def refusal(entry: Callable[[list[str]], Any], argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    """Run a command-line entry point that must refuse ``argv`` as a user error: exit status 2 and
    one line on stderr, with no traceback and no exception class name. Returns what was captured
    (the line is ``captured.err.strip()``)."""
    try:
        status = entry(argv)
    except SystemExit as exit_:
        status = exit_.code
    captured = capsys.readouterr()
    assert status == 2, captured
    assert len(captured.err.strip().splitlines()) == 1, captured.err
    assert "Traceback" not in captured.err, captured.err
    assert "error: Error" not in captured.err and "Error: Error" not in captured.err, captured.err
    return captured


def maskable_ppo_returns(venv: Any) -> list[float]:
    """A tiny MaskablePPO run on an SB3 vec env of 8 games: it trains for its whole budget, its
    deterministic actions after a reset are legal. Returns the episode returns of SB3's Monitor
    statistics (the adapter's finished games)."""
    sb3_contrib = pytest.importorskip("sb3_contrib")
    model = sb3_contrib.MaskablePPO(
        "MlpPolicy",
        venv,
        n_steps=128,
        batch_size=256,
        n_epochs=2,
        policy_kwargs={"net_arch": [32]},
        seed=0,
        device="cpu",
    )
    model.learn(total_timesteps=3072)
    assert model.num_timesteps >= 3072
    observations = venv.reset()
    masks = venv.action_masks()
    actions, _ = model.predict(observations, action_masks=masks, deterministic=True)
    assert masks[np.arange(8), actions].all()
    returns = [episode["r"] for episode in model.ep_info_buffer]
    assert np.isfinite(returns).all()
    return returns
