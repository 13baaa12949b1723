"""What a measurement ran on: the machine and the versions of the libraries that do the
arithmetic. Stored beside speed figures (``benchmarks``) and scorecards, because two machines can
differ in a scorecard's last digits when neither the code nor the seeds changed
(docs/scorecard.md)."""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version

#: The distributions whose versions a record keeps, and whose versions invalidate a scorecard's
#: cached games: those the games, agents and learners compute with.
RECORDED_LIBRARIES = (
    "numpy",
    "numba",
    "llvmlite",
    "torch",
    "stable-baselines3",
    "sb3-contrib",
    "gymnasium",
    "pettingzoo",
)


def machine_description() -> str:
    """The CPU's model name, logical cores, Python version and system, in one line."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical cores, Python {platform.python_version()}, {platform.system()}"


def library_versions() -> dict[str, str]:
    """The installed version of each of ``RECORDED_LIBRARIES`` ("not installed" where absent)."""
    versions = {}
    for name in RECORDED_LIBRARIES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "not installed"
    return versions
