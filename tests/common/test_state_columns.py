"""The state arrays' column numbers stay behind names (issue 22).

The kernels index their arrays with module constants of each game's core (``CS_*``/``I_*``/``CFG_*``
in Madiao, ``S_*``/``CFG_*``/``E_*``/``K_*`` and the row numbers in Mao). Only the core and its
state module may use them; everything else reads and writes a game through ``state.GameView`` and
the state module's named tuples, so that a new column is an edit of those two modules. Tests may
use the columns (they check the layout itself).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
CORES = ("madiao_env/core.py", "mao_env/core.py")
ALLOWED = {*CORES, "madiao_env/state.py", "mao_env/state.py"}
_COLUMN = re.compile(r"^(I|CS|S|E|K|CFG)_[A-Z0-9_]+$")
# Mao's row numbers of the ``decks`` and ``rules`` arrays.
_ROWS = {"STACK", "PILE", "ACTIVE", "AUTHOR", "QUEUE"}


def _column_constants() -> set[str]:
    names = set()
    for core in CORES:
        for node in ast.parse((REPOSITORY / core).read_text()).body:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name) and (_COLUMN.match(name.id) or name.id in _ROWS):
                            names.add(name.id)
    return names


def _source_files() -> list[Path]:
    return [
        path
        for path in REPOSITORY.rglob("*.py")
        if not any(
            part.startswith(".") or part in ("tests", "build") for part in path.relative_to(REPOSITORY).parts
        )
    ]


def _uses(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Name) and node.id in names:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.ImportFrom):
            found.extend((node.lineno, alias.name) for alias in node.names if alias.name in names)
    return found


def test_the_constants_are_found():
    names = _column_constants()
    assert {
        "I_TO_ACT",
        "CS_HAND",
        "CFG_MATCH",
        "S_CURRENT",
        "E_SEAT",
        "K_CODE",
        "CFG_N_DECKS",
        "PILE",
    } <= names
    assert len(names) > 80


def test_no_column_constant_outside_the_cores_and_their_state_modules():
    names = _column_constants()
    offences = []
    for path in _source_files():
        relative = path.relative_to(REPOSITORY).as_posix()
        if relative in ALLOWED:
            continue
        for line, name in _uses(ast.parse(path.read_text(), filename=relative), names):
            offences.append(f"{relative}:{line}: {name}")
    assert not offences, "column constants used outside the core and state modules:\n" + "\n".join(offences)


def test_the_scan_sees_a_use():
    # The scanner itself: a column read through the module, an imported one, and a harmless name.
    source = "from madiao_env.core import I_BANKER\nx = core.CS_HAND + I_BANKER + TOTAL\n"
    found = {name for _, name in _uses(ast.parse(source), _column_constants())}
    assert found == {"I_BANKER", "CS_HAND"}
