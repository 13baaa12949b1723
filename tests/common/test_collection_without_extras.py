"""The suite without the ``distributed`` extra: ``pytest`` collects every test module (those that
need Ray skip at collection) instead of stopping at an import error. Ray is installed here, so a
subprocess makes it unimportable (``sys.modules[name] = None``) before pytest starts."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.common.helpers import run_python
from tests.distributed.conftest import DISTRIBUTED_EXTRA_MODULES

ROOT = Path(__file__).resolve().parents[2]

COLLECT_WITHOUT_RAY = f"""
import sys
for name in {DISTRIBUTED_EXTRA_MODULES!r}:
    sys.modules[name] = None  # "import ray" now raises ImportError, as without the extra
import pytest
sys.exit(pytest.main(["--collect-only", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist", "tests"]))
"""


@pytest.mark.slow
def test_the_suite_collects_without_ray():
    env = {key: value for key, value in os.environ.items() if key != "CI"}  # CI would make it fail
    result = run_python(["-c", COLLECT_WITHOUT_RAY], env=env, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert not re.search(r"^ERROR|\d+ errors?\b", output, flags=re.MULTILINE), output
    # Every module that needs Ray is skipped at collection, naming the extra; the others collect.
    needs_ray = [
        path
        for path in (ROOT / "tests" / "distributed").glob("test_*.py")
        if "require_distributed_extra()" in path.read_text()
    ]
    assert needs_ray, "no distributed test module calls require_distributed_extra()"
    skipped = re.findall(r"SKIPPED \[(\d+)\] .*the distributed extra", output)
    assert sum(int(count) for count in skipped) == len(needs_ray), output
    assert "tests/common/test_cli.py::" in output, output
