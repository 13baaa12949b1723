"""No private name crosses a module boundary (issue 22): outside the tests, no module imports a
``_name`` from another module (``from m import _x``) or reaches one through an imported module
(``m._x``, ``from pkg import m; m._x``). What another module needs is public; a private name
stays an implementation detail its own module may change."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The project's own import names: a private name of a third-party library is its own business.
PACKAGES = ("cardgame_core", "madiao_env", "mao_env", "madiao_mao", "madiao_mao_web")
#: The folders they live in (``agents/``, ``training/`` and ``benchmarks/`` import as ``madiao_mao.*``).
FOLDERS = ("cardgame_core", "madiao_env", "mao_env", "madiao_mao", "madiao_mao_web", "agents", "training")
FOLDERS += ("benchmarks", "examples")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _is_project_module(module: str) -> bool:
    return module.split(".")[0] in PACKAGES


def private_names_used_across_modules(source: str, filename: str = "<source>") -> list[str]:
    """Each ``from m import _x`` and each ``m._x`` (``m`` a project module bound by an import) in
    ``source``, as ``file:line: statement``."""
    tree = ast.parse(source, filename)
    modules: dict[str, str] = {}  # local name -> the project module it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not _is_project_module(node.module):
                continue
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(f"{filename}:{node.lineno}: from {node.module} import {alias.name}")
                else:
                    # Possibly a submodule (``from training import run_folder``).
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.extend(
                f"{filename}:{node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}"
                for alias in node.names
                if _is_private(alias.name)
            )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_project_module(alias.name):
                    if alias.asname:
                        modules[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".")[0]
                        modules[head] = head
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


def _project_files() -> list[Path]:
    return [path for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]


def test_no_private_name_is_imported_across_modules():
    found = []
    for path in _project_files():
        found += private_names_used_across_modules(path.read_text(), str(path.relative_to(ROOT)))
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        "from madiao_mao.training.run_folder import _helper",
        "from . import _helper",
        "import madiao_mao.training.run_folder\nmadiao_mao.training.run_folder._helper()",
        "import madiao_mao.training.run_folder as folders\nfolders._helper()",
        "from madiao_mao.training import run_folder\nrun_folder._helper()",
        "from madiao_mao.agents.base import Agent\nAgent._private",
    ],
)
def test_the_scan_finds_each_way_of_reaching_a_private_name(source):
    assert len(private_names_used_across_modules(source)) == 1


@pytest.mark.parametrize(
    "source",
    [
        "from madiao_mao.training.run_folder import make_run_dir",
        "from madiao_mao.training.config import TrainConfig\nTrainConfig.__post_init__",
        "import torch\ntorch.distributions.Distribution._validate_args",
        "class A:\n    def f(self):\n        return self._state",
    ],
)
def test_the_scan_leaves_public_names_dunders_and_other_libraries_alone(source):
    assert private_names_used_across_modules(source) == []
