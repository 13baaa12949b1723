"""Modules where they belong (issues 10 and 22): the SB3 adapter under ``madiao_mao.training.sb3``, Madiao
evaluation and records named as such, and one import path per name.

The import checks run in a child process: this test session has long since imported
stable-baselines3 and torch, so only a fresh interpreter shows what an import pulls in.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _modules_loaded_by(statement: str) -> set[str]:
    """The top-level packages a fresh interpreter holds after running ``statement``."""
    packages = "sorted({name.split('.')[0] for name in sys.modules})"
    script = f"import json, sys\n{statement}\nprint(json.dumps({packages}))"
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    return set(json.loads(finished.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "statement",
    ["import cardgame_core.adapters", "import madiao_env, mao_env", "from madiao_env import records"],
)
def test_core_and_game_packages_do_not_import_the_training_extra(statement):
    loaded = _modules_loaded_by(statement)
    assert {"stable_baselines3", "torch", "sb3_contrib"}.isdisjoint(loaded), statement
    # The game packages sit below agents/ and training/ and never import them.
    if "madiao_env" in statement or "cardgame_core" in statement:
        assert {"agents", "training"}.isdisjoint(loaded), statement


def test_the_cli_parser_and_the_web_app_need_no_torch():
    # `madiao-mao serve` with the web extra alone: building the CLI and the app imports no SB3.
    loaded = _modules_loaded_by(
        "import madiao_mao.cli.main, madiao_mao_web.app\n"
        "madiao_mao.cli.main.usage()\n"
        "madiao_mao_web.app.create_app()"
    )
    assert {"stable_baselines3", "torch", "sb3_contrib"}.isdisjoint(loaded)


def test_the_sb3_adapter_lives_under_training_only():
    # cardgame_core sits below training: the SB3 VecEnv is not re-exported there (that lazy
    # re-export closed an import circle, cardgame_core.adapters <-> madiao_mao.training.sb3.adapter).
    from cardgame_core import adapters
    from madiao_mao.training.sb3 import adapter as sb3_adapter

    assert hasattr(sb3_adapter, "LearnerVecEnv")
    with pytest.raises(AttributeError, match="LearnerVecEnv"):
        _ = adapters.LearnerVecEnv


@pytest.mark.parametrize(
    "old_name",
    [
        "madiao_mao.training.evaluation",
        "madiao_mao.training.train",
        "madiao_mao.training.sb3_adapter",
        "madiao_mao.training.training_callback",
        "madiao_mao.training.imitation",
        "madiao_mao.training.rllib_engine",
        "madiao_mao.agents.madiao_search",
        "madiao_mao.training.madiao_commands",
    ],
)
def test_moved_modules_have_one_name(old_name):
    # Issue 22: a name has one import path; the old ones are gone, not kept as re-exports. (The
    # spec's file, not the import: an editable install of another checkout may still hold them.)
    spec = importlib.util.find_spec(old_name)
    assert spec is None or not Path(spec.origin).resolve().is_relative_to(ROOT)


def test_madiao_records_next_to_the_game_and_nowhere_else():
    from madiao_env import records
    from madiao_mao.training.madiao import matches as madiao_games

    for name in (
        "RECORD_FORMAT",
        "make_record",
        "write_record",
        "read_record",
        "EventPrinter",
        "print_record",
        "format_hand",
        "role_name",
        "sort_hand",
    ):
        # One import path per name (issue 22): the play loop no longer re-exports the format.
        assert hasattr(records, name) and not hasattr(madiao_games, name), name
