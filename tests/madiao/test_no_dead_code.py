"""No dead code in the Madiao modules: every function, method, class and module constant of
madiao_env/ and agents/madiao_*.py is used somewhere in the repository (issue 10)."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Called by a framework, never by name in this repository (OpenSpiel calls a Python game state's
# ``_legal_actions`` and ``_action_to_string``).
FRAMEWORK_HOOKS = {"forward", "__all__", "_legal_actions", "_action_to_string"}


def _uses() -> collections.Counter:
    """How often each identifier is read anywhere in the repository (names, attributes, imports,
    identifier-like strings for getattr and registries)."""
    uses: collections.Counter = collections.Counter()
    for path in ROOT.rglob("*.py"):
        if ".venv" in path.parts or "node_modules" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                uses[node.id] += 1
            elif isinstance(node, ast.Attribute):
                uses[node.attr] += 1
            elif isinstance(node, ast.alias):
                uses[node.name.rsplit(".", 1)[-1]] += 1
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                uses[node.value] += 1
    return uses


def test_every_madiao_definition_is_used():
    uses = _uses()
    unused = []
    for path in sorted(ROOT.glob("madiao_env/*.py")) + sorted(ROOT.glob("agents/madiao_*.py")):
        tree = ast.parse(path.read_text())
        defined = [
            (node.lineno, node.name)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("__")
        ]
        defined += [
            (node.lineno, target.id)
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        ]
        unused += [
            f"{path.relative_to(ROOT)}:{line} {name}"
            for line, name in defined
            if uses[name] == 0 and name not in FRAMEWORK_HOOKS
        ]
    assert unused == []
