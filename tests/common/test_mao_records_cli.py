"""Mao game records from the command line (issue 13, item 3): ``match --game mao``, ``play --game
mao`` and ``evaluate --game mao`` write records (``mao_env.records``) that replay through the env to
the same returns and open in the web app's replay; ``replay FILE`` prints a Mao record move by move
with the Mao Master's calls; every bad invocation is one line on stderr and exit status 2."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("mao_env.mao_v0")

from madiao_mao.cli.main import main
from mao_env.records import BLOCKED_ROUND_TEXT, read_record, replay
from tests.common.helpers import fill_placeholders, refusal

NUMBER = r"[-+]?\d+(?:\.\d+)?"
CALL_LINE = re.compile(r'^  Mao Master to \S+: "[^"]+\." \(\d+ penalty card\(s\)\)$', re.MULTILINE)


def replayed(record: dict) -> tuple[np.ndarray, int, int]:
    """Every seat's total reward through the env, the number of calls and of rounds won."""
    returns = np.zeros(len(record["seats"]))
    n_calls = rounds_won = 0
    for step, env in enumerate(replay(record)):
        if step == 0:
            continue
        returns += [env.rewards[name] for name in env.possible_agents]
        n_calls += len(env.last_calls)
        if record["actions"][step - 1] == "end":
            # With rules added by the env (rule_choice "fixed"), a new-rule event follows the turn's.
            turn = [event for event in env.public_events() if event["kind"] != "new rule"][-1]
            rounds_won += int(turn["won"])
    return returns, n_calls, rounds_won


def rounds_blocked(record: dict) -> int:
    """How many of the record's rounds were blocked (nothing left to take, docs/mao-rules.md)."""
    return sum(env.game_view.round_blocked for env in replay(record))


def printed_rewards(out: str) -> list[float]:
    line = [line for line in out.splitlines() if line.startswith("Game over. Rewards:")][-1]
    return [float(x) for x in re.findall(rf"\) ({NUMBER})", line)]


def web_replay_steps(text: str) -> int:
    """The record through the web app's replay endpoint: its number of steps (the last frame is
    read too, from one seat's view and all hands open)."""
    from tests.web.conftest import LOCAL_BASE_URL, import_or_require

    import_or_require("fastapi")
    from fastapi.testclient import TestClient

    from madiao_mao_web.app import create_app

    with TestClient(create_app(), base_url=LOCAL_BASE_URL) as client:
        response = client.post("/api/replays", content=text, headers={"Content-Type": "application/json"})
        assert response.status_code == 200, response.text
        data = response.json()
        assert data["game"] == "mao"
        for view in ("all", "0"):
            frame = client.get(f"/api/replays/{data['id']}?step={data['n_steps']}&view={view}")
            assert frame.status_code == 200, frame.text
        return data["n_steps"]


def check_record_file(path, seats: list[str]) -> dict:
    """The file is a Mao record of these seats that replays to its returns, in the env and the app."""
    record = read_record(path)
    assert record["seats"] == seats
    returns, _, _ = replayed(record)
    np.testing.assert_allclose(returns, record["returns"])
    assert web_replay_steps(path.read_text()) == len(record["actions"])
    return record


# ----------------------------------------------------------------------------- match


def test_match_mao_prints_the_game_and_records_it(tmp_path, capsys):
    path = tmp_path / "mao_match.json"
    argv = ["match", "--game", "mao", "--players", "3", "--rounds", "2", "--agents", "base", "random", "base"]
    assert main([*argv, "--seed", "7", "--record", str(path)]) == 0
    out = capsys.readouterr().out
    record = check_record_file(path, ["base", "random", "base"])
    returns, n_calls, rounds_won = replayed(record)
    assert record["env_kwargs"]["n_players"] == 3 and record["env_kwargs"]["num_rounds"] == 2
    # Seed 7: the first round is won (a new rule follows), the second blocked (nothing left to
    # take: a random player holds most of the cards).
    blocked = rounds_blocked(record)
    assert rounds_won == blocked == 1
    assert len(re.findall(r"^  player_\d wins the round\.$", out, re.MULTILINE)) == rounds_won
    assert out.count(BLOCKED_ROUND_TEXT) == blocked
    assert len(CALL_LINE.findall(out)) == n_calls > 0
    np.testing.assert_allclose(printed_rewards(out), returns, atol=1e-9)
    # The winner's new rule is shown to a spectator of a match (no seat's secret to keep).
    assert re.search(r"^  player_\d: new secret rule \d+: .+", out, re.MULTILINE)
    assert f"game record written to {path}" in out


def test_match_mao_is_the_same_game_for_the_same_seed(tmp_path, capsys):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for path in (first, second):
        assert main(["match", "--game", "mao", "--players", "2", "--agents", "base", "--seed", "1",
                     "--record", str(path)]) == 0  # fmt: skip
    capsys.readouterr()
    assert read_record(first) == read_record(second)


def test_match_mao_at_its_defaults_plays_every_round(capsys):
    """The default match (4 players, bayes and base alternating, 3 rounds, seed 0) has a third
    round of about 3,500 steps, past the env's one-round cap of 3,000: the match's cap is the
    env's default per round, so all three rounds are played."""
    assert main(["match", "--game", "mao"]) == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"^  player_\d wins the round\.$", out, re.MULTILINE)) == 3
    assert "cut off" not in out


def test_a_mao_game_cut_off_by_the_step_cap_says_so(tmp_path):
    """A game the step cap ends says so, with the rounds it played, live and in its replay."""
    from madiao_mao.training.cli_args import load_agent
    from madiao_mao.training.mao.play import MaoGameLog, play_mao_game, print_mao_record
    from mao_env import mao_v0
    from mao_env.records import write_record

    env = mao_v0.env(n_players=3, num_rounds=2, max_steps=40)
    agents = [load_agent("base", "mao", seed=seat, env=env) for seat in range(3)]
    log = MaoGameLog(seed=1)
    printed: list[str] = []
    play_mao_game(env, agents, None, write=printed.append, log=log, names=["base"] * 3)
    cut_off = "The game was cut off at the step cap (40 steps) after 0 of 2 round(s)."
    assert printed[-1] == cut_off
    replayed_lines: list[str] = []
    print_mao_record(read_record(write_record(tmp_path / "cut.json", log.record(env, ["base"] * 3))),
                     replayed_lines.append)  # fmt: skip
    assert cut_off in replayed_lines


# ----------------------------------------------------------------------------- play


def _scripted_input(monkeypatch, answers):
    answers = iter(answers)
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))


def test_play_mao_records_the_persons_game(tmp_path, capsys, monkeypatch):
    path = tmp_path / "mine.json"
    _scripted_input(monkeypatch, ["1", "end"] * 5000)  # the first listed move, then end the turn
    argv = ["play", "--game", "mao", "--players", "2", "--opponents", "base", "--seed", "3"]
    assert main([*argv, "--record", str(path)]) == 0
    out = capsys.readouterr().out
    record = check_record_file(path, ["you", "base"])
    returns, _, _ = replayed(record)
    np.testing.assert_allclose(printed_rewards(out), returns, atol=1e-9)
    assert f"game record written to {path}" in out


def test_play_mao_without_a_seed_records_the_seed_it_played(tmp_path, capsys, monkeypatch):
    path = tmp_path / "mine.json"
    _scripted_input(monkeypatch, ["1", "end"] * 5000)
    argv = ["play", "--game", "mao", "--players", "2", "--opponents", "base"]
    assert main([*argv, "--record", str(path)]) == 0
    capsys.readouterr()
    record = check_record_file(path, ["you", "base"])
    assert isinstance(record["seed"], int)


def test_play_mao_left_early_records_the_moves_made(tmp_path, capsys, monkeypatch):
    path = tmp_path / "left.json"
    _scripted_input(monkeypatch, ["1", "end", "1", "end", "quit"])
    argv = ["play", "--game", "mao", "--players", "3", "--opponents", "base", "--seed", "2"]
    assert main([*argv, "--record", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Goodbye" in out
    record = check_record_file(path, ["you", "base", "base"])
    assert record["actions"] and record["actions"].count("end") >= 2


# ----------------------------------------------------------------------------- evaluate


def test_evaluate_mao_records_the_first_game(tmp_path, capsys):
    path = tmp_path / "eval.json"
    argv = ["evaluate", "--game", "mao", "--agents", "base", "random", "--deals", "2", "--seed", "2"]
    assert main([*argv, "--record", str(path)]) == 0
    out = capsys.readouterr().out
    # The first game is the first agent's, in seat 0, with base players in the other seats.
    record = check_record_file(path, ["base", "base", "base", "base"])
    assert record["options"] and "fixed_rules" in record["options"]
    assert f"wrote the first game of base to {path}" in out
    # Its replay shows the rounds' ends and the rules the env adds to the winners (no action).
    assert main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    _, n_calls, rounds_won = replayed(record)
    assert rounds_won == record["env_kwargs"]["num_rounds"] == 2
    assert len(re.findall(r"^  player_\d wins the round\.$", out, re.MULTILINE)) == rounds_won
    added = re.findall(r"^  Mao Master: new secret rule (\d+) for player_\d: .+", out, re.MULTILINE)
    assert [int(rule) for rule in added] == record["options"]["fixed_rules"]
    assert len(CALL_LINE.findall(out)) == n_calls


# ----------------------------------------------------------------------------- replay


def test_replay_prints_a_mao_record_with_its_calls(tmp_path, capsys):
    from mao_env.records import record_game, write_record

    record = record_game(["base", "random", "base"], seed=4, n_players=3, num_rounds=2)
    path = write_record(tmp_path / "game.json", record)
    assert main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    returns, n_calls, rounds_won = replayed(record)
    assert len(CALL_LINE.findall(out)) == n_calls > 0
    blocked = rounds_blocked(record)
    assert len(re.findall(r"^  player_\d wins the round\.$", out, re.MULTILINE)) == rounds_won
    assert rounds_won + blocked == 2 and out.count(BLOCKED_ROUND_TEXT) == blocked
    moves = re.findall(r"^  player_\d: (.+)$", out, re.MULTILINE)
    shown = [m.split(":")[0] if m.startswith("new secret rule") else m for m in moves]
    expected = [f"new secret rule {a.split()[1]}" if a.startswith("rule") else a for a in record["actions"]]
    assert shown == expected  # every action, in order
    final = [line for line in out.splitlines() if line.startswith("final returns:")][-1]
    np.testing.assert_allclose([float(x) for x in re.findall(rf" ({NUMBER})", final)], returns, atol=1e-9)
    assert "hand:" in out  # all hands open in a replay, at every deal


def _mao_record_file(tmp_path, **changes) -> str:
    from mao_env.records import record_game

    record = record_game(["base", "base"], seed=1, n_players=2, num_rounds=1)
    record.update(changes)
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(record))
    return str(path)


BAD_REPLAYS = [
    ({"actions": ["play KS"] * 3}, "action 0"),
    ({"env_kwargs": {"n_players": 12}}, "n_players"),
    ({"format": 99}, "format"),
    ({"game": "chess"}, "not one of madiao, mao"),
]


@pytest.mark.parametrize(("changes", "named"), BAD_REPLAYS, ids=[n.split()[0] for _, n in BAD_REPLAYS])
def test_replay_of_a_bad_mao_record_is_one_line_and_status_2(tmp_path, capsys, changes, named):
    status = main(["replay", _mao_record_file(tmp_path, **changes)])
    captured = capsys.readouterr()
    assert status == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], captured.err
    assert captured.out == ""  # nothing printed before the record was found bad


# ----------------------------------------------------------------------------- bad invocations


BAD_INVOCATIONS = [
    (["match", "--game", "mao", "--players", "9"], "--players"),
    (["match", "--game", "mao", "--players", "1"], "--players"),
    (["match", "--game", "mao", "--players", "3", "--agents", "base", "base"], "--agents"),
    (["match", "--game", "mao", "--agents", "heuristic"], "heuristic"),
    (["match", "--game", "mao", "--model", "CORRUPT", "--agents", "model"], "cannot load the model"),
    (["match", "--game", "mao", "--record", "FOLDER"], "--record"),
    (["match", "--players", "3"], "--players"),
    (["match", "--rounds", "2"], "--rounds"),
    (["match", "--agents", "random", "random"], "--agents"),
    (["play", "--game", "mao", "--record", "FOLDER"], "--record"),
    (["play", "--game", "mao", "--record", "UNDER_FILE"], "--record"),
    (["evaluate", "--game", "mao", "--record", "FOLDER"], "--record"),
    (["evaluate", "--game", "mao", "--record", "FOLDER/r.json", "--record-hands", "2"], "--record-hands"),
]


@pytest.mark.parametrize(("argv", "named"), BAD_INVOCATIONS, ids=[" ".join(a) for a, _ in BAD_INVOCATIONS])
def test_a_bad_mao_record_invocation_is_one_line_and_status_2(argv, named, paths, capsys, monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt="": pytest.fail("the game started"))
    captured = refusal(main, [fill_placeholders(word, paths) for word in argv], capsys)
    assert named in captured.err, captured.err
    assert "Mao" not in captured.out and "Madiao match" not in captured.out  # no game started


def test_a_refused_rule_proposal_is_printed_to_its_proposer_and_a_spectator_only():
    from madiao_mao.training.mao.play import write_step
    from mao_env import cards
    from tests.mao.mao_helpers import won_round_table

    env = won_round_table([(3, 1), (30, 2)])  # seat 0 chooses a rule; 30 is seat 2's
    action = env.action_from_text("rule 30")
    env.step(action)
    refusal = '  you: rule 30? Mao Master: "That rule is already in force." (propose another)'
    for viewer, expected in ((0, [refusal]), (2, []), (None, [refusal.replace("you", "player_0")])):
        lines: list[str] = []
        assert not write_step(env, 0, action, viewer, lines.append, show_own_move=False)
        assert lines == expected, viewer
    env.step(cards.CHOOSE_RULE_0 + 7)  # accepted: the other seats hear of a new rule
    lines = []
    write_step(env, 0, cards.CHOOSE_RULE_0 + 7, 2, lines.append, show_own_move=False)
    assert lines == ['  player_0: "Introducing a new rule." (secret)']
