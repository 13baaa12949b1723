"""The observation layout has one statement, madiao_env.layout: the encoder's offsets, the env's
slices, the docstring tables and the agents' slices all come from it (issue 10)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from madiao_env import core, layout, madiao_v0
from madiao_env import env as env_module

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("obs_type", ["summary", "history", "record"])
def test_env_docstring_holds_exactly_the_generated_table(obs_type):
    table = layout.table_text(obs_type)
    size = layout.OBS_SIZES[obs_type]
    assert f'``obs_type="{obs_type}"``' in env_module.__doc__
    assert f"{size} entries" in env_module.__doc__
    assert f"\n{table}\n" in env_module.__doc__


@pytest.mark.parametrize("obs_type", ["summary", "history", "record"])
def test_env_slices_and_encoder_offsets_are_the_pieces(obs_type):
    prefix = "HIST_" if obs_type == "history" else "OBS_"
    exported = {
        name: value
        for name, value in vars(env_module).items()
        if name.startswith(prefix) and isinstance(value, slice)
    }
    # The summary's and the record's pieces share the OBS_ names: the record is the summary, then more.
    assert exported == layout.SLICES["history" if obs_type == "history" else "record"]
    assert all(exported[name] == where for name, where in layout.SLICES[obs_type].items())
    for name, where in layout.SLICES[obs_type].items():
        assert getattr(core, f"{name}_AT") == where.start
    sizes = (core.SUMMARY_SIZE, core.HISTORY_SIZE, core.RECORD_SIZE)
    assert sizes == (layout.SUMMARY_SIZE, layout.HISTORY_SIZE, layout.RECORD_SIZE)
    assert layout.HIST_PLAY_SLOTS == core.MAX_PLAYS and core.HIST_SLOT_SIZE == layout.HIST_SLOT_SIZE
    env = madiao_v0.raw_env(obs_type=obs_type)
    env.reset(seed=3)
    observation = env.observe(env.agent_selection)["observation"]
    assert observation.shape == (layout.OBS_SIZES[obs_type],)
    hand = layout.SLICES[obs_type][f"{prefix}HAND"]
    assert observation[hand].sum() == 8 and set(np.unique(observation[hand])) <= {0, 1}


def test_agents_read_the_pieces_by_name():
    from madiao_mao.agents.madiao import obs_layout as madiao_obs_layout
    from madiao_mao.agents.madiao.features import summary_layout

    for name, where in madiao_obs_layout.layout().items():
        assert layout.SUMMARY_SLICES[name] == where
    assert summary_layout()["hand_at"] == layout.SUMMARY_SLICES["OBS_HAND"].start


def test_the_decoder_refuses_a_history_observation():
    from madiao_mao.agents.madiao.obs_layout import view_from_observation

    env = madiao_v0.env(obs_type="history")
    env.reset(seed=1)
    with pytest.raises(ValueError, match=r"reads summary observations \(484 entries, or 968 .*got 1579"):
        view_from_observation(env.observe(env.agent_selection)["observation"])


def test_the_decoder_reads_a_record_observation_as_its_summary():
    from madiao_mao.agents.madiao.obs_layout import view_from_observation

    views = []
    for obs_type in ("summary", "record"):
        env = madiao_v0.env(obs_type=obs_type)
        env.reset(seed=1)
        for _ in range(9):  # into the second trick
            env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
        views.append(view_from_observation(env.observe(env.agent_selection)["observation"]))
    assert views[0] == views[1] and views[0].trick


def test_table_text_rejects_an_unknown_obs_type():
    with pytest.raises(ValueError, match="obs_type"):
        layout.table_text("pixels")


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_import_circle_among_the_madiao_modules():
    files = sorted(ROOT.glob("madiao_env/*.py")) + sorted(ROOT.glob("agents/madiao_*.py"))
    modules = {f"{path.parent.name}.{path.stem}": path for path in files}
    graph = {name: _imported_modules(path) & set(modules) for name, path in modules.items()}

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for nxt in graph[start]:
            if nxt == target or (nxt not in seen and reaches(nxt, target, seen | {nxt})):
                return True
        return False

    circles = [name for name in graph if reaches(name, name, {name})]
    assert circles == []
