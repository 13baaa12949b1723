"""What keeps a scorecard honest (issue 33): a suite whose games no longer hash to its recorded
checksum is refused by ``score()`` and by the command before anything is played or written, and
each baseline's decisions on fixed positions are pinned under the protocol, so a baseline that
changes fails here until the protocol is bumped and the shipped scorecards regenerated."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

pytest.importorskip("madiao_env.madiao_v0")

from madiao_mao.cli.main import main
from madiao_mao.training import scorecard


@pytest.fixture(params=scorecard.scorecard_games())
def tampered_game(request, monkeypatch) -> str:
    """A game whose ``smoke`` suite was changed after its checksum was recorded (another seed:
    other games under the same checksum), with its suite player made to fail if it is reached."""
    game = request.param
    module = scorecard.game_module(game)
    shipped = module.SUITES["smoke"]
    monkeypatch.setitem(module.SUITES, "smoke", dataclasses.replace(shipped, seed=shipped.seed + 1))

    def must_not_play(*args, **kwargs):
        raise AssertionError("a tampered suite was played")

    monkeypatch.setattr(module, "play_suite", must_not_play)
    return game


def test_score_refuses_a_tampered_suite(tampered_game, tmp_path) -> None:
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="checksum"):
        scorecard.score("random", game=tampered_game, suite="smoke", out=out)
    assert not out.exists()


def test_the_command_refuses_a_tampered_suite_in_one_line(tampered_game, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    status = main(["scorecard", "random", "--game", tampered_game, "--suite", "smoke", "--out", str(out)])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and "checksum" in captured.err
    assert captured.err.startswith("madiao-mao scorecard: error:")
    assert not out.exists()


# ---- each baseline's behaviour pinned under the protocol

PINNED = [(game, b) for game in scorecard.scorecard_games() for b in scorecard.game_module(game).BASELINES]


@pytest.mark.parametrize(("game", "baseline"), PINNED, ids=[f"{game}-{b}" for game, b in PINNED])
def test_each_baseline_decides_as_pinned_under_the_protocol(game, baseline) -> None:
    scorecard.check_baseline_pin(game, baseline)


def test_the_pins_are_of_each_games_protocol_and_cover_every_baseline() -> None:
    stored = json.loads(scorecard.PINS.read_text())
    assert stored["protocols"] == {game: scorecard.protocol(game) for game in scorecard.scorecard_games()}
    expected = {game: set(scorecard.game_module(game).BASELINES) for game in scorecard.scorecard_games()}
    assert {game: set(pins) for game, pins in stored["pins"].items()} == expected


def test_a_baseline_that_decides_otherwise_fails_with_what_to_do(monkeypatch) -> None:
    from madiao_mao.agents.madiao.heuristic import RoleAwareHeuristicAgent

    def last_legal(self, observation, action_mask) -> int:
        return int(np.flatnonzero(action_mask)[-1])

    monkeypatch.setattr(RoleAwareHeuristicAgent, "act", last_legal)
    with pytest.raises(
        ValueError, match=r"decides otherwise.*Bump PROTOCOL in training/madiao/scorecard.py.*regenerate"
    ):
        scorecard.check_baseline_pin("madiao", "heuristic")


def test_pins_of_another_protocol_are_refused_for_that_game_only(monkeypatch) -> None:
    # A protocol is per game: bumping Madiao's leaves Mao's pins (and scorecards) standing.
    pinned = scorecard.game_module("madiao").PROTOCOL
    monkeypatch.setattr(scorecard.game_module("madiao"), "PROTOCOL", "scorecard-next")
    with pytest.raises(ValueError, match=f"pins the madiao baselines of {pinned}, not scorecard-next"):
        scorecard.check_baseline_pin("madiao", "greedy")
    scorecard.check_baseline_pin("mao", "base")


def test_the_pins_command_writes_and_checks_the_pins_file(monkeypatch, tmp_path, capsys) -> None:
    stored = json.loads(scorecard.PINS.read_text())
    monkeypatch.setattr(scorecard, "baseline_pins", lambda: stored)  # the hashes as computed above
    assert scorecard.main(["pins", "--check"]) == 0
    monkeypatch.setattr(scorecard, "PINS", tmp_path / "pins.json")
    assert scorecard.main(["pins", "--check"]) == 1  # no file yet: differs
    assert scorecard.main(["pins"]) == 0 and json.loads(scorecard.PINS.read_text()) == stored
    assert scorecard.main(["pins", "--check"]) == 0
    assert "pins.json differs" in capsys.readouterr().out


def test_the_decisions_command_prints_the_pin_and_extends_it(capsys) -> None:
    # At the pins' games and length it prints the pin; more games hash more positions.
    pinned = json.loads(scorecard.PINS.read_text())["pins"]["madiao"]["greedy"]
    assert scorecard.main(["decisions", "--game", "madiao", "--baseline", "greedy"]) == 0
    assert capsys.readouterr().out.split()[0] == pinned
    assert scorecard.main(["decisions", "--game", "madiao", "--baseline", "greedy", "--games", "4"]) == 0
    assert capsys.readouterr().out.split()[0] not in (pinned, "")


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["--baseline", "nobody"], "--baseline 'nobody' is not a madiao baseline"),
        (["--games", "0"], "--games must be at least 1"),
        (["--per-game", "0"], "--per-game must be at least 1"),
        (["--game", "chess"], "unknown game 'chess'"),
    ],
)
def test_the_decisions_command_names_a_bad_argument(arguments, named, capsys) -> None:
    assert scorecard.main(["decisions", "--game", "madiao", *arguments]) == 2
    assert named in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["decisions", "--check"], "--check is for leaderboard and pins"),
        (["pins", "--check", "--games", "5"], "--games: only the decisions command reads it, not pins"),
        (["leaderboard", "--baseline", "greedy"], "--baseline: only the decisions command reads it"),
        (["regenerate", "--check"], "--check is for leaderboard and pins"),
        (["leaderboard", "--jobs", "2"], "--jobs: only the regenerate command reads it, not leaderboard"),
        (["pins", "--work", "somewhere"], "--work: only the regenerate command reads it, not pins"),
        (["pins", "--game", "mao"], "--game: only the decisions and regenerate commands read it, not pins"),
        (["regenerate", "--games", "2"], "--games: only the decisions command reads it, not regenerate"),
        (["regenerate", "--work", ""], "--work is empty: give a folder"),
        (["regenerate", "--jobs", "0"], "--jobs must be at least 1, got 0"),
    ],
)
def test_an_option_the_command_would_ignore_is_refused(
    arguments, named, monkeypatch, tmp_path, capsys
) -> None:
    monkeypatch.setattr(scorecard, "PINS", tmp_path / "pins.json")
    monkeypatch.setattr(scorecard, "LEADERBOARD", tmp_path / "leaderboard.md")
    assert scorecard.main(arguments) == 2
    assert named in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written
