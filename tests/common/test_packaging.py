"""The wheel claims no generic import name (issue 22): ``agents/``, ``training/`` and
``benchmarks/`` install under the ``madiao_mao`` namespace, so a research project's own ``agents/``
or ``training/`` folder cannot shadow them, and every package ships ``py.typed``.

The wheel is built from this checkout and installed by unpacking it into a fresh venv that sees the
dependencies (numpy, numba, gymnasium, pettingzoo) but not this checkout's editable install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The folders installed under another name (pyproject's package-dir).
NAMESPACED = ("agents", "training", "benchmarks")
TOP_LEVEL = {"cardgame_core", "madiao_env", "mao_env", "madiao_mao", "madiao_mao_web"}


def _listed_packages() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])


def test_every_package_folder_is_listed_under_its_import_name():
    found = set()
    for top in TOP_LEVEL | set(NAMESPACED):
        for init in (ROOT / top).rglob("__init__.py"):
            dotted = ".".join(init.parent.relative_to(ROOT).parts)
            found.add(f"madiao_mao.{dotted}" if top in NAMESPACED else dotted)
    assert _listed_packages() == found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools writes build/ and egg-info folders beside the sources.
    source = out / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__"))
    # No build isolation: the test runs offline, with the setuptools the dev extra installs.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", source, "--no-deps", "--no-build-isolation", "-q", "-w", out],
        check=True,
        timeout=300,
        cwd=out,
    )
    (path,) = out.glob("madiao_mao-*.whl")
    return path


@pytest.mark.slow
def test_the_wheel_installs_only_the_projects_own_top_level_names(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == TOP_LEVEL
    assert {f"{top}/py.typed" for top in TOP_LEVEL} <= set(names)
    assert "madiao_mao/agents/pretrained/madiao_selfplay.zip" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "madiao-mao = madiao_mao.cli.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    # The license as an SPDX expression (PEP 639; the TOML table form is deprecated) and its file.
    metadata = (
        zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    )
    assert "License-Expression: MIT" in metadata.splitlines()
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)


@pytest.mark.slow
def test_a_project_with_its_own_agents_and_training_folders_imports_the_installed_wheel(wheel, tmp_path):
    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(environment)
    python = environment / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    zipfile.ZipFile(wheel).extractall(site)
    # The dependencies come from this interpreter's site-packages, added as a plain path: its .pth
    # files (this checkout's editable install among them) are not run there.
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    project = tmp_path / "research"
    for folder in ("agents", "training"):
        (project / folder).mkdir(parents=True)
        (project / folder / "__init__.py").write_text(f"WHOSE = 'the research project {folder}'\n")
    (project / "agents" / "ppo.py").write_text("def make_agent():\n    return 'theirs'\n")
    (project / "main.py").write_text(
        textwrap.dedent(
            """
            import agents, training
            from agents.ppo import make_agent as their_agent
            from madiao_mao.agents.registry import make_agent
            import madiao_env, madiao_mao

            assert agents.WHOSE == "the research project agents", agents.__file__
            assert training.WHOSE == "the research project training", training.__file__
            assert their_agent() == "theirs"
            assert make_agent("random", "madiao").__class__.__name__ == "RandomAgent"
            print(madiao_mao.__file__)
            """
        )
    )
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    finished = subprocess.run(
        [python, "main.py"], cwd=project, capture_output=True, text=True, timeout=300, env=env
    )
    assert finished.returncode == 0, finished.stderr
    assert Path(finished.stdout.strip()).is_relative_to(site)
