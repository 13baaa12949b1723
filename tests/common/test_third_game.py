"""A third game is one registry entry (issue 22): High card (``tests/tiny_game``), registered with
``register_game`` and nothing else, is listed with its agents, trains with the SB3 engine through
the generic API, evaluates, writes its report and is exploited, while no generic module names it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from madiao_mao.games import ENTRY_POINT_GROUP, game_names, get_game, register_game, unregister_game
from tests.tiny_game import GAME


@pytest.fixture()
def tiny():
    """High card, registered for one test (the built-in games' tests must not see it)."""
    register_game(GAME)
    yield GAME.name
    unregister_game(GAME.name)


def test_one_entry_registers_the_game_in_every_generic_table(tiny):
    from madiao_mao.training.exploit import exploit_games
    from madiao_mao.training.game_spec import GAME_DEFAULTS, GAME_SPECS, game_spec

    assert game_names()[-1] == tiny and get_game(tiny) is GAME
    assert game_spec(tiny) is GAME_SPECS[tiny] and GAME_DEFAULTS[tiny]["scripted_opponents"] == ("threshold",)
    assert tiny in exploit_games()
    register_game(GAME)  # the same entry again changes nothing
    with pytest.raises(ValueError, match="a game named 'tiny' is already registered"):
        register_game(type(GAME)(**{**GAME.__dict__, "title": "another"}))


def test_the_game_is_gone_once_unregistered():
    from madiao_mao.training.game_spec import game_spec

    assert GAME.name not in game_names()
    with pytest.raises(ValueError, match="game must be one of madiao, mao, got 'tiny'"):
        game_spec(GAME.name)


def test_its_agents_are_listed_and_built_by_name(tiny):
    from madiao_mao.agents.registry import agent_names, agent_specs, make_agent

    assert agent_names(tiny) == ("random", "threshold")  # no policy shipped: no "model"
    listed = dict(agent_specs(tiny))
    assert set(listed) == {"random", "threshold", "model:PATH"} and all(listed.values())
    threshold = make_agent("threshold", tiny)
    # One card one-hot, the rest of the observation empty: raise with the top card, fold the lowest.
    top, low = np.zeros(18, np.float32), np.zeros(18, np.float32)
    top[5], low[0] = 1, 1
    assert threshold.act(top, np.ones(3, bool)) == 2 and threshold.act(low, np.ones(3, bool)) == 0
    with pytest.raises(
        ValueError, match="unknown tiny agent 'model'; choose from random, threshold or model:PATH"
    ):
        make_agent("model", tiny)


def test_its_envs_follow_pettingzoo_and_agree_on_a_seed():
    from pettingzoo.test import api_test, seed_test

    from tests.tiny_game.env import TinyVectorEnv, env, raw_env

    api_test(env(), num_cycles=30)
    seed_test(env)
    games = TinyVectorEnv(4, seed=9)
    first = games.reset()
    for game in range(4):
        table = raw_env()
        table.reset(seed=int(games.game_seeds[game]))
        assert np.array_equal(table.observe("player_0")["observation"], first.observation[game])


@pytest.mark.slow
def test_it_trains_evaluates_reports_and_is_exploited(tiny, tmp_path):
    """A few thousand SB3 steps against the scripted player, the periodic evaluation and the final
    report from the game's spec, then the exploitability proxy against the random player."""
    pytest.importorskip("sb3_contrib")
    from madiao_mao.training.config import TrainConfig
    from madiao_mao.training.exploit import ExploitSettings, exploit
    from madiao_mao.training.sb3.train import final_report, train

    small = {"n_steps": 16, "batch_size": 256, "torch_threads": 1}
    config = TrainConfig(game=tiny, total_timesteps=4096, n_envs=64, eval_every=2048, eval_deals=150,
                         final_eval_deals=150, runs_dir=str(tmp_path), progress_bar=False, verbose=False,
                         **small)  # fmt: skip
    run_dir = train(config, quiet=True)
    evaluations = json.loads((run_dir / "eval.json").read_text())
    assert evaluations and set(evaluations[-1]["results"]) == {"random", "threshold"}
    report = final_report(run_dir, n_deals=150, verbose=False)
    assert "## High card: the learned policy in one seat" in report

    settings = ExploitSettings("random", game=tiny, steps=4096, deals=600, seed=2, out=str(tmp_path),
                               n_envs=64, train_overrides=small)  # fmt: skip
    result = exploit(settings, say=lambda *a, **k: None)
    # Against two random players a policy that folds its low cards wins more than random play does.
    assert result["evaluation"]["gain"]["low"] > 0, result["evaluation"]
    assert "| exploiter vs target |" in (Path(result["run_dir"]) / "exploit.md").read_text()


#: The generic modules of the agents, the trainer and both engines, the shared core and the
#: distribution's namespace (the web app and the benchmarks: test_generic_layers_name_no_game.py).
GENERIC_MODULES = ("agents/*.py", "training/*.py", "training/sb3/*.py", "training/rllib/*.py")
GENERIC_MODULES += ("cardgame_core/*.py", "madiao_mao/*.py")


def test_no_generic_module_of_the_agents_or_the_trainer_names_a_game():
    root = Path(__file__).resolve().parents[2]
    names = "|".join((*game_names(), GAME.name))
    quoted = re.compile(rf"""["']({names})["']""")
    found = [
        f"{path.relative_to(root)}:{number}: {line.strip()}"
        for pattern in GENERIC_MODULES
        for path in sorted(root.glob(pattern))
        if path.relative_to(root).as_posix() != "madiao_mao/games.py"  # the registry: the one list
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if quoted.search(line)
    ]
    assert found == []


def test_its_gymnasium_id_comes_from_the_same_registration_loop(tiny):
    import gymnasium

    from madiao_mao.gymnasium_ids import gymnasium_id, register_gymnasium_ids

    register_gymnasium_ids()
    try:
        single = gymnasium.make(gymnasium_id(tiny), opponents="threshold", learner_seat=1)
        observation, info = single.reset(seed=3)
        assert observation.shape == (18,) and info["action_mask"].tolist() == [1, 1, 1]
        vector = gymnasium.make_vec(gymnasium_id(tiny), num_envs=4)
        assert vector.reset(seed=3)[0].shape == (4, 18)
    finally:
        gymnasium.registry.pop(gymnasium_id(tiny), None)


def test_an_installed_package_adds_the_game_through_the_entry_point_group(tmp_path):
    """What a package outside this repository does: one ``madiao_mao.games`` entry point (here a
    bare dist-info folder on the path, as pip would write it), no register call."""
    dist_info = tmp_path / "high_card-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: high-card\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\ntiny = tests.tiny_game:GAME\n")
    root = Path(__file__).resolve().parents[2]
    script = (
        "from madiao_mao.games import game_names\n"
        "from madiao_mao.training.game_spec import GAME_SPECS\n"
        "from madiao_mao.training.config import TrainConfig\n"
        "print(game_names(), tuple(GAME_SPECS), TrainConfig(game='tiny').scripted_opponents)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root)])}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "('madiao', 'mao', 'tiny') ('madiao', 'mao', 'tiny') ('threshold',)"


def test_its_own_option_is_set_from_the_command_line_and_a_config_file(tiny, tmp_path):
    """The game's settings dataclass (its spec's ``settings``) is a group of train flags under its
    name and a ``game_settings`` mapping in a config file, with no generic edit."""
    from madiao_mao.cli.train import parse_train_command
    from madiao_mao.training.config import ConfigError, TrainConfig

    config = parse_train_command(["--game", tiny, "--tiny.report-seed-offset", "5"]).train_config()
    assert config.game_settings.report_seed_offset == 5
    assert TrainConfig(game=tiny).game_settings.report_seed_offset == 99  # its default
    saved = tmp_path / "config.json"
    saved.write_text(json.dumps({"game": tiny, "game_settings": {"report_seed_offset": 3}}))
    assert parse_train_command(["--config", str(saved)]).train_config().game_settings.report_seed_offset == 3
    overridden = parse_train_command(["--config", str(saved), "--tiny.report-seed-offset", "4"])
    assert overridden.train_config().game_settings.report_seed_offset == 4
    with pytest.raises(ConfigError, match="report_seed_offset must be an integer") as refused:
        TrainConfig(game=tiny, game_settings={"report_seed_offset": 1.5})
    assert (
        refused.value.field == "tiny.report_seed_offset"
    )  # the command line names --tiny.report-seed-offset
    with pytest.raises(ValueError, match="settings of the game tiny, not of madiao"):
        parse_train_command(["--tiny.report-seed-offset", "5"]).train_config()


@pytest.mark.slow
def test_the_command_line_trains_exploits_and_lists_it(tiny, tmp_path, capsys):
    """The same through ``madiao-mao``: the CLI reads its games from the registry when it runs."""
    pytest.importorskip("sb3_contrib")
    from madiao_mao.cli.main import main

    assert main(["agents", "--game", tiny]) == 0
    assert "threshold" in capsys.readouterr().out
    small = ["--n-envs", "64", "--n-steps", "16", "--batch-size", "256", "--torch-threads", "1"]
    train = [
        "train",
        "--game",
        tiny,
        "--total-timesteps",
        "2048",
        "--eval-every",
        "2048",
        "--eval-deals",
        "50",
    ]
    train += ["--final-eval-deals", "50", "--runs-dir", str(tmp_path / "runs"), "--no-progress", *small]
    assert main(train) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert json.loads((run_dir / "config.json").read_text())["game"] == tiny
    assert "High card" in (run_dir / "report.md").read_text()
    exploit = [
        "exploit",
        "--model",
        "random",
        "--game",
        tiny,
        "--steps",
        "2048",
        "--deals",
        "100",
        "--out",
        str(tmp_path),
    ]
    assert main(exploit) == 0
    assert "exploit.md" in capsys.readouterr().out
    # A command the game has no module for is one line and exit 2, never a traceback.
    assert main(["match", "--game", tiny]) == 2
    assert capsys.readouterr().err.strip().endswith("has no evaluate, play, match or replay commands")


def test_it_is_benchmarked_through_its_benchmarks_module(tiny):
    from madiao_mao.benchmarks import aec, batched, memory, timing

    workloads = [w for w in aec.workloads(with_peers=False) if w.system.startswith(tiny)]
    workloads += batched.workloads((4,), games=(tiny,))
    assert [w.system for w in workloads] == [f"{tiny} AEC (wrapped), random play", f"{tiny} vector N=4"]
    assert all(timing.measure(workload, 0.05).value > 0 for workload in workloads)
    rows = [row for row in memory.run() if row.system.startswith(tiny)]
    assert rows and all(row.value > 0 for row in rows)
