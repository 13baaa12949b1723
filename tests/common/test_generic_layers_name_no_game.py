"""The web app and the benchmarks loop over the registry of games (issue 22): their generic modules
name no game and import no game's package; what is particular to a game lives in its own module
of each layer, which the registry entry names. A game registered at run time is benchmarked
through its benchmarks module alone."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import textwrap
from pathlib import Path

import pytest

from madiao_mao.games import Game, games, register_game, unregister_game

REPO = Path(__file__).resolve().parents[2]
#: The generic layers: every source file below these folders but the games' own modules.
GENERIC_FOLDERS = {"madiao_mao_web": REPO / "madiao_mao_web", "madiao_mao.benchmarks": REPO / "benchmarks"}
SOURCE_SUFFIXES = (".py", ".js", ".html", ".css")
#: The project's own name contains the games' names.
PROJECT_NAME = re.compile(r"madiao[-_]mao", re.IGNORECASE)


def _file_of(module_name: str) -> Path:
    """The file (a module) or folder (a package) of ``module_name``, found without importing it."""
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.origin is not None, module_name
    origin = Path(spec.origin)
    return origin.parent if origin.name == "__init__.py" else origin


def _per_game_paths() -> set[Path]:
    return {_file_of(getattr(game, layer)) for game in games().values() for layer in ("web", "benchmarks")}


def generic_files() -> list[Path]:
    per_game = _per_game_paths()
    found = []
    for folder in GENERIC_FOLDERS.values():
        for path in sorted(folder.rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or "__pycache__" in path.parts:
                continue
            if any(path == own or own in path.parents for own in per_game):
                continue
            found.append(path)
    return found


def test_the_per_game_modules_are_where_the_registry_says():
    per_game = _per_game_paths()
    assert len(per_game) == 2 * len(games())
    for path in per_game:
        assert any(folder in path.parents for folder in GENERIC_FOLDERS.values()), path


def test_the_generic_web_and_benchmark_modules_name_no_game():
    names = "|".join(re.escape(name) for name in games())
    packages = "|".join(re.escape(game.env) for game in games().values())
    game_name = re.compile(rf"\b({names})\b", re.IGNORECASE)
    game_package = re.compile(rf"\b({packages})\b")
    files = generic_files()
    assert len(files) > 15  # the scan found the layers (app, replays, page, static files, suites)
    named = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            bare = PROJECT_NAME.sub("", line)
            if game_name.search(bare) or game_package.search(bare):
                named.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert named == [], "generic modules that name a game:\n" + "\n".join(named)


TOY_BENCHMARKS = textwrap.dedent(
    """
    from madiao_mao.benchmarks.subjects import GameSubjects, Goals

    SUBJECTS = GameSubjects(
        aec_env="toy_game:CountdownAECEnv",
        vector_env="toy_game:CountdownVectorEnv",
        goals=Goals(aec_share=0.01),
    )
    """
)


@pytest.fixture
def countdown_registered(tmp_path, monkeypatch):
    """tests/common/toy_game.py registered as the game "countdown", with a benchmarks module
    written for it (its other layers are never imported here)."""
    (tmp_path / "countdown_benchmarks.py").write_text(TOY_BENCHMARKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    game = Game(
        name="countdown",
        title="Countdown",
        env="toy_game",
        agents="countdown_agents",
        training="countdown_training",
        web="countdown_web",
        benchmarks="countdown_benchmarks",
    )
    register_game(game)
    yield game
    unregister_game("countdown")
    sys.modules.pop("countdown_benchmarks", None)


def test_a_registered_game_is_benchmarked_through_its_benchmarks_module_alone(countdown_registered):
    from madiao_mao.benchmarks import aec, batched, memory, targets, timing

    workloads = [w for w in aec.workloads(with_peers=False) if w.system.startswith("countdown")]
    workloads += [w for w in batched.workloads((4,), games=("countdown",))]
    assert [w.system for w in workloads] == ["countdown AEC (wrapped), random play", "countdown vector N=4"]
    results = [timing.measure(workload, 0.05) for workload in workloads]
    assert all(result.value is not None and result.value > 0 for result in results)
    rows = [r for r in memory.run() if r.system.startswith("countdown")]
    assert [r.system for r in rows] == ["countdown vector env, per game", "countdown AEC env (wrapped)"]
    assert all(r.value is not None and r.value > 0 for r in rows)
    goals = {name: goal for name, goal, _, _ in targets.evaluate(results)}
    assert goals["Countdown AEC vs empty wrapped AEC"] == "≥ 0.01×"


def test_every_game_page_file_runs_under_the_page_policy():
    """The games' forms and scripts join the page: no inline script, style or handler, no eval
    (the policy allows the app's own files only)."""
    pytest.importorskip("fastapi")
    from madiao_mao_web.games import web_modules

    for name, module in web_modules().items():
        forms = [module.PLAY_FORM, *([module.WATCH_FORM] if module.WATCH_FORM else [])]
        for form in forms:
            text = module.STATIC.joinpath(form).read_text()
            inline = re.search(r"<script\b|<style\b|\sstyle=|\son[a-z]+=|javascript:", text, re.I)
            assert inline is None, (name, form)
            assert f'action="/play/{name}"' in text or f'action="/watch/{name}"' in text, (name, form)
        script = module.STATIC.joinpath(module.SCRIPT).read_text()
        assert not re.search(r"\beval\(|new Function|setAttribute\(\s*[\"']style", script), name
        assert f'registerGamePage("{name}"' in script, name


def test_a_web_module_missing_a_protocol_name_is_refused_by_name(tmp_path, monkeypatch):
    pytest.importorskip("fastapi")

    (tmp_path / "half_web.py").write_text("PAGE_TITLE = 'Half'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        # Refused when it is registered (madiao_mao.games checks every layer's contract).
        with pytest.raises(TypeError, match="its web module half_web lacks LIVE_GAME"):
            register_game(
                Game("half", "Half", "half_env", "half_agents", "half_training", "half_web", "half_bench")
            )
        assert "half" not in games()
    finally:
        sys.modules.pop("half_web", None)


def _option_help_texts(path: Path, classes: set[str] | None = None) -> list[tuple[int, str]]:
    """The docstrings of the classes of ``path`` (those named in ``classes``, else all) and of
    their fields: the help text tyro shows for an options dataclass."""
    texts = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ClassDef) or (classes is not None and node.name not in classes):
            continue
        body = node.body
        for index, statement in enumerate(body):
            documented = index == 0 or isinstance(body[index - 1], ast.AnnAssign)
            if (
                documented
                and isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                texts.append((statement.lineno, statement.value.value))
    return texts


def test_the_generic_command_line_help_names_no_game():
    """Every command's options and one-line summary are shared by all games: their help says what
    is true of each (a game's own facts come from its spec or its own option group)."""
    from madiao_mao.cli.main import COMMANDS

    names = "|".join(re.escape(name) for name in games())
    titles = "|".join(re.escape(game.title) for game in games().values())
    game_name = re.compile(rf"\b({names}|{titles})\b", re.IGNORECASE)
    named = [
        f"madiao-mao --help, {command}: {summary}"
        for command, (summary, _) in COMMANDS.items()
        if game_name.search(PROJECT_NAME.sub("", summary))
    ]
    option_files = [(path, None) for path in sorted((REPO / "madiao_mao" / "cli").glob("*.py"))]
    assert len(option_files) >= 4
    option_files.append((REPO / "training" / "config.py", {"TrainConfig"}))  # madiao-mao train
    for path, classes in option_files:
        texts = _option_help_texts(path, classes)
        assert texts or classes is None, path
        for line, text in texts:
            if game_name.search(PROJECT_NAME.sub("", text)):
                named.append(f"{path.relative_to(REPO)}:{line}: {text.strip()[:100]}")
    assert named == [], "generic command-line help that names a game:\n" + "\n".join(named)
