"""The command line generated from the config dataclasses (issue 22): every ``TrainConfig`` field
is a ``train`` flag with its docstring as help, ``--config FILE`` re-runs a saved config, one
validation for the flags, the Python API and a file, ``agents`` and ``--version``."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import json
import re
import textwrap

import pytest

from cardgame_core.version import __version__
from madiao_mao.agents.registry import MODEL_PREFIX, agent_names
from madiao_mao.cli.main import main
from madiao_mao.cli.train import flag_name, parse_train_command
from madiao_mao.training.config import ConfigError, TrainConfig
from madiao_mao.training.game_spec import GAME_DEFAULTS, GAME_SPECS
from tests.common.helpers import refusal

#: Fields whose flag is not ``--field-name`` (a bool's pair reads better shorter).
RENAMED_FLAGS = {"progress_bar": "--progress"}


def _field_docstrings(cls: type) -> dict[str, str]:
    """Each field's attribute docstring, read from the class's source."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docstrings = {}
    for statement, following in itertools.pairwise(body):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docstrings[statement.target.id] = following.value.value
    return docstrings


def _squeezed(text: str) -> str:
    """``text`` without whitespace or box lines, so that wrapping a help column does not matter."""
    return re.sub(r"[\s│]", "", text)


def _stdout_of(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0
    return capsys.readouterr().out


def _one_line_error(argv: list[str], capsys) -> str:
    return refusal(main, argv, capsys).err.strip()


def test_every_config_field_is_a_train_flag_with_its_docstring_as_help(capsys):
    help_text = _squeezed(_stdout_of(["train", "--help"], capsys))
    docstrings = _field_docstrings(TrainConfig)
    fields = [f.name for f in dataclasses.fields(TrainConfig)]
    assert sorted(docstrings) == sorted(fields), "a TrainConfig field has no docstring"
    for name in fields:
        if name == "game_settings":
            continue  # not a flag: each game's settings are a group of their own (below)
        flag = RENAMED_FLAGS.get(name, flag_name(name))
        first_line = docstrings[name].strip().splitlines()[0]
        assert _squeezed(flag) in help_text, flag
        assert _squeezed(first_line) in help_text, (name, first_line)
    for game, spec in GAME_SPECS.items():
        settings_docstrings = _field_docstrings(spec.settings) if spec.settings is not None else {}
        for name, docstring in settings_docstrings.items():
            assert _squeezed(f"--{game}.{name.replace('_', '-')}") in help_text, (game, name)
            assert _squeezed(docstring.strip().splitlines()[0]) in help_text, (game, name)


def test_train_help_shows_each_games_default_of_a_field_left_to_the_game(capsys):
    help_text = _squeezed(_stdout_of(["train", "--help"], capsys))
    shown = "(defaultbygame:" + ";".join(
        f"{game}:{GAME_DEFAULTS[game]['total_timesteps']}" for game in GAME_SPECS
    )
    assert shown in help_text


def test_fields_the_old_command_line_could_not_set_are_flags_now():
    flags = ["--gamma", "0.9", "--ent-coef", "0.02", "--net-arch", "64", "32", "--obs-type", "history"]
    flags += ["--features", "flat", "--opponent-weights", "scripted", "0.5", "current", "0.5"]
    flags += ["--pfsp-weighting", "variance", "--max-snapshots", "2", "--no-verbose"]
    config = parse_train_command([*flags, "--env-kwargs", '{"stake": 2.0}']).train_config()
    assert (config.gamma, config.ent_coef, config.net_arch) == (0.9, 0.02, (64, 32))
    assert (config.obs_type, config.features, config.env_kwargs) == ("history", "flat", {"stake": 2.0})
    assert config.opponent_weights == {"scripted": 0.5, "current": 0.5}
    assert (config.pfsp_weighting, config.max_snapshots, config.verbose) == ("variance", 2, False)


def test_a_saved_config_through_dash_dash_config_is_the_same_config_and_flags_override_it(tmp_path):
    saved = TrainConfig(
        game="mao",
        seed=3,
        n_envs=8,
        n_steps=16,
        net_arch=(32,),
        exp_name="again",
        scripted_opponents=("bayes",),
    )
    path = tmp_path / "config.json"
    path.write_text(json.dumps(saved.to_json()))
    assert parse_train_command(["--config", str(path)]).train_config() == saved
    overridden = parse_train_command(["--config", str(path), "--seed", "5"]).train_config()
    assert overridden == dataclasses.replace(saved, seed=5)
    # The flag may come first too: the file gives the defaults, every flag given wins.
    assert parse_train_command(["--seed", "5", "--config", str(path)]).train_config() == overridden


def test_one_check_for_the_python_api_a_config_file_and_the_flags(tmp_path, capsys):
    with pytest.raises(ConfigError, match="seed must be an integer >= 0, got -1") as raised:
        TrainConfig(seed=-1)
    assert raised.value.field == "seed"
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"seed": -1}))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}: seed must be an integer >= 0"):
        TrainConfig.from_file(path)
    error = _one_line_error(["train", "--config", str(path)], capsys)
    assert "seed must be an integer >= 0" in error and str(path) in error
    assert "--seed: seed must be an integer >= 0, got -1" in _one_line_error(
        ["train", "--seed", "-1"], capsys
    )


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["train", "--n-envs", "many"], "--n-envs"),
        (["train", "--no-such-flag"], "--no-such-flag"),
        (["train", "--env-kwargs", "[1]"], "expected a JSON object"),
        (["train", "--net-arch", "0"], "--net-arch"),
        (["train", "--env-threads", "0"], "--env-threads"),
        (["train", "--gamma", "inf"], "--gamma"),
        (["train", "--game", "chess"], "--game"),
        (["train", "--lr-schedule", "cosine"], "--lr-schedule"),
        (["train", "--obs-type", "bogus"], "--obs-type: obs_type must be one of 'summary', 'history'"),
        (["train", "--obs-type", "bogus", "--features", "flat"], "--obs-type: obs_type must be one of"),
        (["train", "--game", "mao", "--obs-type", "record"], "--obs-type: obs_type must be one of 'history'"),
        (["train", "--engine", "ray"], "--engine"),
        (["train", "--config", "MISSING"], "no config file at"),
        (["train", "--config", "NOT_JSON"], "cannot read the config file"),
        (["train", "--config", "UNKNOWN_FIELD"], "unknown config fields: colour"),
        (["train", "--config", "CONFIG", "--resume", "RUN"], "cannot be combined"),
        (["agents", "--game", "chess"], "--game"),
        (["agents", "--players", "3"], "--players"),
    ],
)
def test_a_bad_train_or_agents_invocation_is_one_line_and_status_2(argv, named, tmp_path, capsys):
    files = {
        "MISSING": tmp_path / "missing.json",
        "NOT_JSON": tmp_path / "not.json",
        "UNKNOWN_FIELD": tmp_path / "unknown.json",
        "CONFIG": tmp_path / "config.json",
        "RUN": tmp_path / "run",
    }
    files["NOT_JSON"].write_text("{seed: 1")
    files["UNKNOWN_FIELD"].write_text('{"colour": "red"}')
    files["CONFIG"].write_text("{}")
    argv = [str(files[word]) if word in files else word for word in argv]
    assert named in _one_line_error(argv, capsys)
    assert not (tmp_path / "runs").exists()


def test_agents_lists_every_agent_spec_of_each_game_one_line_each(capsys):
    assert main(["agents"]) == 0
    every_game = capsys.readouterr().out
    for game in GAME_SPECS:
        assert main(["agents", "--game", game]) == 0
        lines = capsys.readouterr().out.splitlines()
        specs = [line.split()[0] for line in lines]
        assert set(agent_names(game)) | {f"{MODEL_PREFIX}PATH"} <= set(specs), specs
        assert all(len(line.split()) > 2 for line in lines)  # a description on every line
        assert all(line in every_game.splitlines() for line in lines)
        assert f"{game}:" in every_game.splitlines()


def test_a_run_folder_saved_with_the_flat_game_fields_still_loads(tmp_path):
    # Run folders saved before the games' settings moved to their specs hold them as flat fields;
    # the saved config of another game's run held them unused.
    mao = TrainConfig(game="mao").to_json()
    del mao["game_settings"]
    mao.update(mao_penalty_card_reward=-0.5, mao_hand_card_reward=0.1, mao_rule_pool="none")
    (tmp_path / "mao.json").write_text(json.dumps(mao))
    settings = TrainConfig.from_file(tmp_path / "mao.json").game_settings
    assert (settings.penalty_card_reward, settings.hand_card_reward, settings.rule_pool) == (
        -0.5,
        0.1,
        "none",
    )
    madiao = TrainConfig().to_json()
    madiao.update(mao_penalty_card_reward=-1.0, mao_hand_card_reward=0.0, mao_rule_pool="train")
    (tmp_path / "madiao.json").write_text(json.dumps(madiao))
    assert TrainConfig.from_file(tmp_path / "madiao.json") == TrainConfig()


def test_version_prints_the_distribution_version(capsys):
    assert _stdout_of(["--version"], capsys).strip() == f"madiao-mao {__version__}"


def _option_classes() -> list[type]:
    from madiao_mao.cli import commands, game_commands
    from madiao_mao.training.game_spec import GAME_SPECS

    found = [*game_commands.SHARED.values(), game_commands.ReplayOptions]
    found += [
        value
        for value in vars(commands).values()
        if isinstance(value, type) and value.__name__.endswith("Options")
    ]
    for name in game_commands.command_games():
        found += game_commands.game_commands(name).OPTIONS.values()
    found += [spec.settings for spec in GAME_SPECS.values() if spec.settings is not None]
    return found


def test_every_option_of_every_command_has_help_text():
    # tyro's help of a flag is its field's docstring: a field without one is a flag without help.
    for options in _option_classes():
        body = ast.parse(textwrap.dedent(inspect.getsource(options))).body[0].body
        for field_line, after in zip(body, [*body[1:], None], strict=True):
            if isinstance(field_line, ast.AnnAssign):
                documented = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                assert documented, f"{options.__name__}.{field_line.target.id} has no docstring"


def test_expert_iteration_starts_a_new_run_from_a_saved_config(tmp_path):
    from madiao_mao.cli.commands import ExpertIterationOptions, expert_iteration_settings
    from madiao_mao.training.expert_iteration import ExpertIterationSettings

    path = tmp_path / "config.json"
    path.write_text(json.dumps(ExpertIterationSettings(decisions=24, seed=3).to_json()))
    settings = expert_iteration_settings(ExpertIterationOptions(config=str(path), seed=5))
    assert (settings.decisions, settings.seed) == (24, 5)  # the file's, then the options given
    with pytest.raises(ValueError, match="cannot be combined"):
        ExpertIterationOptions(config=str(path), resume=str(tmp_path)).check()
    path.write_text(json.dumps({"gamma": 0.5}))
    with pytest.raises(ValueError, match="is not an expert-iteration config"):
        expert_iteration_settings(ExpertIterationOptions(config=str(path)))
    with pytest.raises(FileNotFoundError, match="no settings file"):
        expert_iteration_settings(ExpertIterationOptions(config=str(tmp_path / "missing.json")))
