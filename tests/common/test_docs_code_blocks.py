"""Every ```python block of README.md and docs/*.md runs as it stands.

Each block runs in a fresh Python process from the repository root (this checkout's packages
first on the path), with a time limit, and must exit with status 0. Blocks fenced with another
language (``bash``, ``shell``, ``console``, ``text``, ``json`` ...) are shown, not run; a fence
without a language is refused, so that no Python block escapes the test by omission.

A block runs alone, unless its fence says ``python continued``: it then runs after the file's
python blocks before it, back to the last block that does not say so (a walk-through split by
prose). Keep a block to a few seconds: it is run on every test run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.common.helpers import run_python

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Seconds one block (with the blocks it continues) may take, Numba's first compilation included.
BLOCK_TIMEOUT = 300

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class CodeBlock:
    path: Path
    line: int  # of the opening fence, 1-based
    info: str  # the fence's info string: language and words after it
    code: str

    @property
    def language(self) -> str:
        return self.info.split()[0].lower() if self.info.split() else ""

    @property
    def continues(self) -> bool:
        return self.info.split()[1:2] == ["continued"]

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def code_blocks(path: Path) -> list[CodeBlock]:
    """The fenced code blocks of a markdown file, in order (CommonMark fences: ``` or ~~~)."""
    blocks: list[CodeBlock] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, start = opening["fence"], index
        body: list[str] = []
        index += 1
        while index < len(lines):
            closing = FENCE.match(lines[index])
            # A closing fence: the same character, at least as long, and no info string.
            if closing and closing["fence"].startswith(fence) and not closing["info"].strip():
                break
            body.append(lines[index])
            index += 1
        else:
            raise AssertionError(f"{path.name}:{start + 1}: a code fence is never closed")
        blocks.append(CodeBlock(path, start + 1, opening["info"].strip(), "\n".join(body) + "\n"))
        index += 1
    return blocks


def python_programs() -> list[tuple[str, str]]:
    """(name, program) for every python block: the block itself, after the blocks it continues."""
    programs = []
    for path in DOCUMENTS:
        chain: list[CodeBlock] = []
        for block in code_blocks(path):
            if block.language != "python":
                continue
            chain = [*chain, block] if block.continues else [block]
            programs.append((block.name, "\n".join(part.code for part in chain)))
    return programs


PROGRAMS = python_programs()


def test_the_documents_have_python_blocks_and_every_fence_names_its_language():
    assert any(name.startswith("README.md:") for name, _ in PROGRAMS)
    unnamed = [block.name for path in DOCUMENTS for block in code_blocks(path) if not block.language]
    assert not unnamed, f"code fences without a language (python, bash, text ...): {unnamed}"
    for path in DOCUMENTS:
        first = next((b for b in code_blocks(path) if b.language == "python"), None)
        assert first is None or not first.continues, f"{first.name} continues no earlier block"


@pytest.mark.parametrize(("name", "program"), PROGRAMS, ids=[name for name, _ in PROGRAMS])
def test_python_block_runs(name, program):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = run_python(["-c", program], env=env, timeout=BLOCK_TIMEOUT)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{name} failed:\n{program}\n--- output ---\n{output}"
