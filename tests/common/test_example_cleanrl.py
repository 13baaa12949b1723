"""examples/cleanrl_masked_ppo.py runs end to end on a tiny budget (so it cannot rot)."""

from __future__ import annotations

import importlib.util
import math
import pathlib
import sys

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "cleanrl_masked_ppo.py"


def load_example(monkeypatch):
    spec = importlib.util.spec_from_file_location("cleanrl_masked_ppo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    # Its dataclass looks its module up while the module runs.
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_cleanrl_masked_ppo_trains_evaluates_and_logs_on_a_tiny_budget(tmp_path, capsys, monkeypatch):
    pytest.importorskip("torch")
    example = load_example(monkeypatch)
    args = example.parse_args(
        ["--total-timesteps", "256", "--num-envs", "8", "--num-steps", "16", "--eval-episodes", "24",
         "--log-dir", str(tmp_path), "--no-anneal-lr"]
    )  # fmt: skip
    assert (args.num_envs, args.anneal_lr, args.learning_rate) == (8, False, example.Args().learning_rate)
    result = example.main(args)
    assert set(result) == {"trained", "random"} and all(math.isfinite(v) for v in result.values())
    printed = capsys.readouterr().out
    assert "trained policy (greedy)" in printed and "random policy" in printed
    (run_dir,) = tmp_path.iterdir()
    assert run_dir.name.startswith("madiao__cleanrl_masked_ppo__1__")
    assert any(path.name.startswith("events.out.tfevents") for path in run_dir.iterdir())
