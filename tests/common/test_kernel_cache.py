"""Numba's disk cache follows the modules whose constants a kernel freezes (issue 22).

Numba stamps a cached kernel with its own source file only; ``cardgame_core.jit`` adds the sources
of every project module the kernel's module imports. The test edits an amount in a copy of
``madiao_env/payments.py`` (``core.py`` untouched) and a fresh interpreter must pay the new amount.
Each run is a child process on a copy of the packages in a temporary folder, with its own cache.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba.core.errors import NumbaWarning

from cardgame_core import jit

REPOSITORY = Path(__file__).resolve().parents[2]

# The exact-eight meld's stakes as the compiled kernel pays them, and whether the kernel came from
# the disk cache (a hit) or was compiled in this process.
_PAY_EXACT_EIGHT = """
import json
import numpy as np
from madiao_env import core
stakes = core._meld_stakes(np.uint64(core.MELD_EXACT_EIGHT_CARDS))
stats = core._meld_stakes.stats
print(json.dumps({"stakes": int(stakes), "file": core.__file__,
                  "hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values())}))
"""


def _run(root: Path) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(root)}
    environment.pop("NUMBA_CACHE_DIR", None)  # the cache lives beside the copied sources
    environment.pop("NUMBA_DISABLE_JIT", None)
    finished = subprocess.run(
        [sys.executable, "-c", _PAY_EXACT_EIGHT],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        cwd=root,
    )
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_editing_a_frozen_constant_outside_the_core_recompiles_the_kernel(tmp_path):
    for package in ("cardgame_core", "madiao_env", "madiao_mao"):
        shutil.copytree(
            REPOSITORY / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    payments = tmp_path / "madiao_env" / "payments.py"
    original = int(re.search(r"^MELD_EXACT_EIGHT = (\d+)$", payments.read_text(), re.MULTILINE).group(1))

    first = _run(tmp_path)
    assert Path(first["file"]).is_relative_to(tmp_path)
    assert (first["stakes"], first["misses"]) == (original, 1)
    again = _run(tmp_path)  # nothing changed: loaded from the cache
    assert (again["stakes"], again["hits"], again["misses"]) == (original, 1, 0)

    source = payments.read_text()
    payments.write_text(
        source.replace(f"MELD_EXACT_EIGHT = {original}\n", f"MELD_EXACT_EIGHT = {original + 5}\n")
    )
    edited = _run(tmp_path)
    assert (edited["stakes"], edited["misses"]) == (original + 5, 1)


def test_a_kernel_module_depends_on_the_project_modules_it_imports_and_no_others():
    names = {path.relative_to(REPOSITORY).as_posix() for path in jit.dependency_files("madiao_env.core")}
    assert {
        "madiao_env/core.py",
        "madiao_env/layout.py",
        "madiao_env/payments.py",
        "madiao_env/cards.py",
    } <= names
    assert {"cardgame_core/bits.py", "cardgame_core/rng.py"} <= names  # kernels inlined from there
    assert "madiao_env/env.py" not in names  # not imported by the core: editing it recompiles nothing
    assert all(name.split("/")[0] in ("madiao_env", "cardgame_core") for name in names)
    mao = {path.relative_to(REPOSITORY).as_posix() for path in jit.dependency_files("mao_env.core")}
    assert {"mao_env/rules.py", "mao_env/layout.py", "mao_env/cards.py"} <= mao


#: Over the megabyte Numba freezes into machine code: a kernel that reads it holds its address.
_LARGE_TABLE = np.arange(200_000, dtype=np.int64)


def test_a_kernel_numba_cannot_cache_compiles_with_numba_s_warning():
    """A kernel whose machine code holds an address (a global array over a megabyte) cannot be
    cached: Numba warns and runs it, also under the project's stamped cache."""

    def last_entry():
        return _LARGE_TABLE[-1]

    kernel = jit.njit(last_entry)
    with pytest.warns(NumbaWarning, match="Cannot cache compiled function"):
        assert kernel() == 199_999
