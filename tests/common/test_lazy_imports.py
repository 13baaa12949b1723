"""An ``import`` inside a function says why it is not at the top of its module.

Most in-function imports are there on purpose: they keep torch, stable-baselines3, Ray, FastAPI or
Numba off the import path of light commands and of ``gymnasium.make``, break an import cycle, or
load a game's optional parts only when asked. A reader cannot tell such an import from one left
there by accident unless a comment says which, so every in-function import of the project's own
source (tests aside) has a comment on its line, on the line before, or heading its block of
consecutive imports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIPPED_FOLDERS = {"tests", "node_modules", "build", "dist"}


def _source_files() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if any(part.startswith(".") or part in SKIPPED_FOLDERS for part in parts[:-1]):
            continue
        yield path


def _statement_lists(node: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every list of statements directly held by ``node`` (bodies, ``else``, ``finally``, ...)."""
    for value in vars(node).values():
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value


def _function_import_blocks(tree: ast.Module) -> Iterator[list[ast.stmt]]:
    """Runs of consecutive import statements inside a function (nested blocks included)."""

    def visit(node: ast.AST, in_function: bool) -> Iterator[list[ast.stmt]]:
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if inside:
            for statements in _statement_lists(node):
                block: list[ast.stmt] = []
                for statement in statements:
                    if isinstance(statement, (ast.Import, ast.ImportFrom)):
                        block.append(statement)
                        continue
                    if block:
                        yield block
                    block = []
                if block:
                    yield block
        for child in ast.iter_child_nodes(node):
            yield from visit(child, inside)

    yield from visit(tree, False)


def _commented(lines: list[str], line_number: int) -> bool:
    """A comment on the (1-based) line or a comment line right before it."""
    own = lines[line_number - 1]
    before = lines[line_number - 2].strip() if line_number >= 2 else ""
    return "#" in own or before.startswith("#")


def uncommented_function_imports(path: Path) -> list[int]:
    """Line numbers of the in-function imports of ``path`` that give no reason."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    missing = []
    for block in _function_import_blocks(ast.parse(source, filename=str(path))):
        if _commented(lines, block[0].lineno):
            continue
        missing.extend(statement.lineno for statement in block if not _commented(lines, statement.lineno))
    return missing


def test_every_import_inside_a_function_says_why() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in _source_files()
        for line in uncommented_function_imports(path)
    ]
    assert not offenders, (
        "imports inside a function without a comment saying why (move them to the top of the module, "
        "or say what keeping them here avoids):\n" + "\n".join(offenders)
    )


def test_the_check_sees_an_uncommented_import(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        "def light():\n"
        "    # torch stays off the import path of the command line\n"
        "    import torch\n"
        "    import numpy\n"
        "    return torch, numpy\n"
        "\n"
        "\n"
        "def forgotten():\n"
        "    value = 1\n"
        "    import json\n"
        "    return json, value\n"
    )
    assert uncommented_function_imports(module) == [10]
