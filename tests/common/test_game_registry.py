"""The registry of games (``madiao_mao.games``): the one list of games, built-in ones first, open
to an installed package through the ``madiao_mao.games`` entry-point group."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from madiao_mao import games

ROOT = Path(__file__).resolve().parents[2]


def _game(name: str, **modules: str) -> games.Game:
    layers = {layer: f"{name}_plugin.{layer}" for layer in games.LAYERS}
    return games.Game(name=name, title=name.title(), **(layers | modules))


def test_the_built_in_games_and_their_layers():
    assert games.game_names()[:2] == ("madiao", "mao")
    madiao = games.get_game("madiao")
    assert madiao.layer("env").__name__ == "madiao_env"
    assert madiao.layer("agents").__name__ == "madiao_mao.agents.madiao"
    with pytest.raises(ValueError, match="layer must be one of env, agents"):
        madiao.layer("kernels")


def test_an_unknown_game_is_named_with_the_choices():
    with pytest.raises(ValueError, match=r"game must be one of madiao, mao.*got 'bridge'"):
        games.get_game("bridge")


def test_a_game_registered_at_run_time_comes_after_the_built_in_ones_and_can_be_removed():
    tiny = games.register_game(_game("tiny"))
    try:
        assert games.game_names()[-1] == "tiny" and games.get_game("tiny") is tiny
        assert games.register_game(_game("tiny")) == tiny  # the same entry again: no change
        with pytest.raises(ValueError, match="already registered"):
            games.register_game(_game("tiny", env="elsewhere"))
    finally:
        games.unregister_game("tiny")
    assert "tiny" not in games.game_names()
    with pytest.raises(ValueError, match="built-in"):
        games.unregister_game("madiao")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "Bad Name"}, "lower-case identifier"),
        ({"name": "ok", "web": ""}, "the web layer must name a module"),
    ],
)
def test_a_malformed_entry_is_refused_by_what_is_wrong(entry, message):
    fields = {"name": "ok", "title": "Ok"} | {layer: "m" for layer in games.LAYERS} | entry
    with pytest.raises(ValueError, match=message):
        games.Game(**fields)
    with pytest.raises(TypeError, match=r"takes a madiao_mao\.games\.Game"):
        games.register_game("ok")


def test_an_installed_package_adds_a_game_through_its_entry_point(tmp_path):
    # An installed distribution as importlib.metadata finds it: a dist-info folder on sys.path.
    (tmp_path / "plugin_game.py").write_text(
        textwrap.dedent(
            """
            from madiao_mao.games import Game

            GAME = Game(name="plugin", title="Plugin", env="plugin_game", agents="plugin_game",
                        training="plugin_game", web="plugin_game", benchmarks="plugin_game")
            """
        )
    )
    dist_info = tmp_path / "plugin_game-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-game\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[madiao_mao.games]\nplugin = plugin_game:GAME\n")
    script = "from madiao_mao.games import *; print(game_names(), get_game('plugin').layer('env'))"
    environment = os.environ | {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    finished = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=environment
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.startswith("('madiao', 'mao', 'plugin') <module 'plugin_game'")
