"""The trainer as a table of games (issue 10): what differs by game is one ``GameSpec`` per game
(``madiao_mao.training.game_spec``), the trainer and its callback never branch on a game's name, and the
training modules import each other in one direction only."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.common.test_training import _toy_training_config

ROOT = Path(__file__).resolve().parents[2]
GAME_NAMES = ("madiao", "mao")


def _runtime_imports(path: Path) -> set[str]:
    """Every module a file imports when it is imported (at the top or inside a function). Left
    out: ``if TYPE_CHECKING:`` blocks (never run) and the ``if __name__ == "__main__":`` block of
    a script entry (runs only when the file is the program, never when it is imported)."""

    def skipped(node: ast.AST) -> bool:
        if not isinstance(node, ast.If):
            return False
        test = ast.unparse(node.test)
        return test in ("TYPE_CHECKING", "typing.TYPE_CHECKING") or test.replace("'", '"') == (
            '__name__ == "__main__"'
        )

    names: set[str] = set()
    stack: list[ast.AST] = [ast.parse(path.read_text())]
    while stack:
        node = stack.pop()
        if skipped(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return names


PACKAGES = ("cardgame_core", "madiao_env", "mao_env", "agents", "training", "madiao_mao_web", "benchmarks")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_circle_in_the_project():
    modules = {
        _module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
    }
    graph = {name: _runtime_imports(path) & set(modules) - {name} for name, path in modules.items()}

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for nxt in graph[start]:
            if nxt == target or (nxt not in seen and reaches(nxt, target, seen | {nxt})):
                return True
        return False

    circles = sorted(name for name in graph if reaches(name, name, {name}))
    assert circles == []


def _branches_on_a_game_name(path: Path) -> list[str]:
    """Comparisons of anything with a game's name: ``x == "mao"``, ``game != "madiao"``, ..."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Constant) and o.value in GAME_NAMES for o in operands):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize(
    "module",
    [
        "run_folder",
        "sb3/train",
        "sb3/model",
        "sb3/callback",
        "sb3/imitation",
        "rllib/run",
        "rllib/runner",
        "config",
        "opponents",
        "exploit",
        "scorecard",
        "distributed_evaluation",
        "gymnasium_envs",
        "madiao/commands",
        "mao/commands",
    ],
)
def test_the_trainer_reads_the_game_spec_instead_of_branching_on_the_game(module):
    assert _branches_on_a_game_name(ROOT / "training" / f"{module}.py") == []


@pytest.mark.parametrize(
    "path", sorted((ROOT / "madiao_mao" / "cli").glob("*.py")), ids=lambda path: path.stem
)
def test_the_command_line_reads_the_game_spec_instead_of_branching_on_the_game(path):
    assert _branches_on_a_game_name(path) == []


def test_every_game_has_a_complete_spec():
    from madiao_mao.training import config as config_module
    from madiao_mao.training.game_spec import GAME_DEFAULTS, GAME_SPECS, POLICY_FEATURES, game_spec

    fields = {f.name: f for f in dataclasses.fields(config_module.TrainConfig)}
    assert tuple(GAME_SPECS) == GAME_NAMES
    for name, spec in GAME_SPECS.items():
        assert spec.name == name and game_spec(name) is spec and GAME_DEFAULTS[name] is spec.defaults
        # Every per-game default fills a field that is None until its game says otherwise.
        for field in spec.defaults:
            assert field in fields and fields[field].default is None, field
        assert set(spec.features) <= set(POLICY_FEATURES) and "flat" in spec.features
        config = config_module.TrainConfig(game=name)
        assert config.obs_type == spec.obs_type
        assert {f: getattr(config, f) for f in spec.defaults} == {
            f: dict(v) if isinstance(v, dict) else v for f, v in spec.defaults.items()
        }
        assert spec.learner_role is None or len(spec.roles) > 1
        # A None field that a game does not fill would reach the trainer as None (league_anchors,
        # eval_every and init_model have a meaning of their own for None; torch_threads follows
        # the machine; game_settings None is the game settings dataclass's defaults).
        own_meaning = {"league_anchors", "eval_every", "init_model", "torch_threads", "game_settings"}
        left_to_the_game = {f for f in fields if fields[f].default is None} - own_meaning
        assert set(spec.defaults) - own_meaning == left_to_the_game
        assert isinstance(config.torch_threads, int) and config.torch_threads >= 1


def test_an_unknown_game_is_one_clear_error():
    from madiao_mao.training.game_spec import game_spec

    with pytest.raises(ValueError, match="game must be one of madiao, mao, got 'chess'"):
        game_spec("chess")
    with pytest.raises(ValueError, match="game must be one of"):
        game_spec(["mao"])


def test_a_run_default_dict_is_a_copy_of_the_table():
    from madiao_mao.training.config import TrainConfig
    from madiao_mao.training.game_spec import GAME_SPECS

    config = TrainConfig(game="mao")
    config.opponent_weights["current"] = 0.9
    assert GAME_SPECS["mao"].defaults["opponent_weights"]["current"] == 0.2
    assert TrainConfig(game="mao").opponent_weights["current"] == 0.2


def test_policy_features_come_from_the_features_table():
    from madiao_mao.agents.madiao.features import MadiaoCardFeatures
    from madiao_mao.agents.mao.features import MaoBeliefPolicy, MaoRulePolicy
    from madiao_mao.training.config import TrainConfig
    from madiao_mao.training.sb3.model import policy_class, policy_kwargs

    madiao = TrainConfig()
    assert policy_class(madiao) == "MlpPolicy"
    assert policy_kwargs(madiao)["features_extractor_class"] is MadiaoCardFeatures
    assert policy_kwargs(madiao)["net_arch"] == [256, 256]
    assert policy_class(TrainConfig(game="mao")) is MaoBeliefPolicy
    assert policy_class(TrainConfig(game="mao", features="rules")) is MaoRulePolicy
    assert policy_kwargs(TrainConfig(game="mao", features="flat")) == {
        "net_arch": [256, 256],
        "optimizer_kwargs": {"eps": 1e-5, "fused": True},
    }
    needs = r'features="cards" needs game="madiao" with obs_type="summary" or "record"$'
    with pytest.raises(ValueError, match=needs):
        TrainConfig(obs_type="history")


def test_train_and_final_report_use_the_games_spec(tmp_path, monkeypatch):
    """The run's env, evaluation, learner roles and report sections are the spec's: replacing
    them in the table changes what train() and final_report() do."""
    pytest.importorskip("sb3_contrib")
    from madiao_mao.training import game_spec as games
    from madiao_mao.training.sb3 import train as train_module
    from tests.common.test_training import ToyVectorEnv

    calls: dict[str, int] = {"env": 0, "evaluate": 0, "role": 0}

    def toy_env(config, n_envs, seed):
        calls["env"] += 1
        return ToyVectorEnv(n_envs, seed=seed)

    def evaluate(model, config, n_deals, seed):
        calls["evaluate"] += 1
        return {"random": {"score": 0.5}}

    def role(observation):
        calls["role"] += 1
        return "odd"

    def report(learner, config, run_dir, n_deals, state):
        return [f"toy report: {n_deals} deals, {len(state['eval'])} evaluations\n"]

    spec = dataclasses.replace(
        games.GAME_SPECS["mao"],
        make_vector_env=toy_env,
        shape_reward=lambda venv, config: venv,
        roles=("even", "odd"),
        learner_role=role,
        evaluate=evaluate,
        describe_result=lambda name, result: f"toy {name} {result['score']}",
        report=report,
    )
    with pytest.MonkeyPatch.context() as throwaway:
        # The toy config's helper also replaces the trainer's env factory: not here, where the
        # env must come from the spec.
        config = _toy_training_config(train_module, tmp_path, throwaway, imitate="none", eval_every=128)
    monkeypatch.setattr(games, "GAME_SPECS", {**games.GAME_SPECS, "mao": spec})
    run_dir = train_module.train(config)
    assert calls["env"] == 1 and calls["evaluate"] >= 1 and calls["role"] >= 1
    assert "charts/return_odd" in (run_dir / "progress.csv").read_text().splitlines()[0]
    text = train_module.final_report(run_dir, n_deals=7, verbose=False)
    evaluations = len(json.loads((run_dir / "eval.json").read_text()))
    assert f"toy report: 7 deals, {evaluations} evaluations" in text
    assert (run_dir / "report.md").read_text() == text


def test_python_m_training_train_exits_with_the_clis_code(tmp_path):
    missing = tmp_path / "no_such_run"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "madiao_mao.training.sb3.train",
            "--resume",
            str(missing),
            "--runs-dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "no_such_run" in result.stderr


def test_torch_threads_follow_the_usable_cores_unless_set(monkeypatch):
    import os

    from madiao_mao.training import config as config_module

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5, 6, 7}, raising=False)
    assert config_module.TrainConfig().torch_threads == config_module.MAX_AUTO_THREADS
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert config_module.TrainConfig().torch_threads == 1
    assert config_module.TrainConfig(torch_threads=2).torch_threads == 2
    with pytest.raises(ValueError, match="torch_threads must be a positive integer"):
        config_module.TrainConfig(torch_threads=0)
