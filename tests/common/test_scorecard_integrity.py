"""What keeps a scorecard honest (issue 33): a suite whose games no longer hash to its recorded
checksum is refused by ``score()`` and by the command before anything is played or written."""

from __future__ import annotations

import dataclasses

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
