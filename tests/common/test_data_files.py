"""The data files each agent reads (``madiao_mao.agents.data_files``): all of them when it is built,
none while it plays, so the scorecard's cache can key a pairing by its seats' files
(``tests/common/test_scorecard.py`` has the cache's side)."""

from __future__ import annotations

import threading

import pytest

from madiao_mao.agents.data_files import note_read, recording_reads
from madiao_mao.agents.registry import agent_names
from madiao_mao.training.cli_args import load_agent
from madiao_mao.training.scorecard import game_module

#: What each shipped agent (and the search options that load something) reads; every agent the
#: registry names must be here, so a new one is checked too.
READS = {
    "madiao": {
        "random": set(),
        "greedy": set(),
        "heuristic": set(),
        "search": set(),
        "search:samples=4,sampler=learned": {"madiao_card_locations.npz"},
        "search:samples=4,inference=model": {"madiao_selfplay.zip"},
        "search:samples=4,policy=model": {"madiao_selfplay.zip"},
        "model-search": {"madiao_selfplay.zip"},
        "model": {"madiao_selfplay.zip"},
    },
    "mao": {
        "random": set(),
        "base": set(),
        "bayes": set(),
        "oracle": set(),
        "caller": {"mao_caller.json"},
        "model": {"mao_selfplay.zip"},
    },
}

DECISIONS = 12


def test_every_registered_agent_is_checked() -> None:
    for game, expected in READS.items():
        assert set(agent_names(game)) <= set(expected), game


@pytest.mark.parametrize(("game", "spec"), [(game, spec) for game, specs in READS.items() for spec in specs])
def test_an_agent_reads_its_data_files_when_built_and_never_while_playing(game: str, spec: str) -> None:
    env = game_module(game).pin_table(3, spec)
    with recording_reads() as built:
        players = [load_agent(spec, game, seed=seat, env=env) for seat in range(len(env.agents))]
    assert {path.name for path in built} == READS[game][spec]
    with recording_reads() as playing:
        for player in players:
            player.reset()
        made = 0
        while env.agents and made < DECISIONS:
            if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
                env.step(None)
                continue
            seen = env.observe(env.agent_selection)
            seat = env.possible_agents.index(env.agent_selection)
            env.step(int(players[seat].act(seen["observation"], seen["action_mask"])))
            made += 1
    assert made == DECISIONS
    assert playing == set()


def test_recordings_nest_and_keep_to_their_thread(tmp_path) -> None:
    outer_file, inner_file, other_file = (tmp_path / name for name in ("outer", "inner", "other"))
    with recording_reads() as outer:
        note_read(outer_file)
        with recording_reads() as inner:
            note_read(inner_file)
        worker = threading.Thread(target=note_read, args=(other_file,))
        worker.start()
        worker.join()
    note_read(tmp_path / "after")
    assert inner == {inner_file.resolve()}
    assert outer == {outer_file.resolve(), inner_file.resolve()}


def test_an_inner_recording_equal_to_its_outer_one_closes_itself(tmp_path) -> None:
    # Both empty when the inner one ends: the outer one must stay open, the inner one closed.
    with recording_reads() as outer:
        with recording_reads() as inner:
            pass
        note_read(tmp_path / "later")
    assert outer == {(tmp_path / "later").resolve()}
    assert inner == set()
