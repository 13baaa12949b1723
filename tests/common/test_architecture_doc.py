"""docs/architecture.md's tree lists every module of the installed packages, one line each, and
nothing that is not there (issue 22): the layout a reader sees is the layout of the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("cardgame_core", "madiao_env", "mao_env", "madiao_mao", "agents", "training", "benchmarks")
PACKAGES += ("madiao_mao_web",)


def _tree_in_the_doc() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"## Where things live\n.*?```text\n(.*?)```", text, re.S).group(1)
    paths, parents = set(), []
    for line in block.splitlines():
        name = line.split("#")[0].split("  (")[0].rstrip()
        depth = (len(name) - len(name.lstrip())) // 4
        name = name.strip()
        parents = [*parents[:depth], name.rstrip("/")]
        paths.add("/".join(parents) + ("" if name.endswith(".py") else "/"))
    return paths


def _modules_in_the_code() -> set[str]:
    found = set()
    for package in PACKAGES:
        found.add(f"{package}/")
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT)
            if path.name == "__init__.py":
                found.add(f"{relative.parent.as_posix()}/")
            elif (path.parent / "__init__.py").exists():
                found.add(relative.as_posix())
    return found


def test_the_architecture_tree_is_the_code_layout():
    documented, actual = _tree_in_the_doc(), _modules_in_the_code()
    assert sorted(actual - documented) == [], "modules missing from docs/architecture.md's tree"
    assert sorted(documented - actual) == [], "docs/architecture.md's tree lists modules that do not exist"


def test_every_line_of_the_tree_says_what_its_module_is():
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"## Where things live\n.*?```text\n(.*?)```", text, re.S).group(1)
    assert all(re.search(r"# \S", line) for line in block.splitlines())
