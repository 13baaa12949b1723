"""The version of the installed ``madiao-mao`` distribution: the one source of every package's
``__version__`` (``cardgame_core``, ``madiao_env``, ``mao_env``, ``agents``, ``training``,
``benchmarks``, ``madiao_mao_web`` all ship in that one distribution).

A checkout used without installing has no distribution metadata: its version is then the one its
``pyproject.toml`` declares (the file the metadata is built from), or ``"0+unknown"`` without one.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

DISTRIBUTION = "madiao-mao"
UNKNOWN_VERSION = "0+unknown"


def distribution_version() -> str:
    """The installed distribution's version, else the checkout's ``pyproject.toml`` version."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return _checkout_version(Path(__file__).resolve().parent.parent / "pyproject.toml")


def _checkout_version(pyproject: Path) -> str:
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    except (OSError, tomllib.TOMLDecodeError, KeyError):
        return UNKNOWN_VERSION
    if project.get("name") != DISTRIBUTION or not isinstance(project.get("version"), str):
        return UNKNOWN_VERSION
    return project["version"]


__version__ = distribution_version()
