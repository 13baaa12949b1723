"""A blocked Mao round (nothing left to take, docs/mao-rules.md) on the web table: said in the
watched game's turns and frames, and in a replay's event of the step that blocked it."""

from __future__ import annotations

from tests.mao.test_blocked_round import stuck_record
from tests.web.conftest import import_or_require


def test_the_web_table_and_its_replay_say_the_round_is_blocked():
    import_or_require("fastapi")
    from madiao_mao_web.mao.live import MaoGame
    from madiao_mao_web.mao.replay import MaoReplay
    from mao_env.records import BLOCKED_ROUND_TEXT

    record = stuck_record()

    class StuckGame(MaoGame):
        def _deal_options(self, hand_size):
            hands = {int(seat): names for seat, names in record["options"]["hands"].items()}
            return record["options"] | {"hands": hands}

    game = StuckGame(watch=True, players=3, rounds=1, seed=0, agents="random")
    while not game.over and game.version < 300:
        game.step(game.version)
    notes = [note for turn in game.turns if turn["kind"] == "turn" for note in turn["notes"]]
    assert game.over and BLOCKED_ROUND_TEXT in notes
    assert game.env.truncations[game.env.agent_selection] is False
    replay = MaoReplay(record)
    events = [replay.frame(step, None)["event"] for step in range(replay.n_steps + 1)]
    assert [BLOCKED_ROUND_TEXT in event for event in events] == [False] * 6 + [True]
