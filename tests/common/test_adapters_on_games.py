"""The single-agent Gymnasium adapter over the real games: Gymnasium's checker, and the learner's
own terminal reward (also when another seat made the last move)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cardgame_core.adapters import SingleAgentCardEnv
from madiao_env import madiao_v0
from madiao_mao.agents.base import RandomAgent
from mao_env import mao_v0

GAMES = {
    "madiao": lambda: madiao_v0.env(),
    "mao": lambda: mao_v0.env(n_players=3, max_steps=400),
}


@pytest.mark.parametrize("game", sorted(GAMES))
def test_single_agent_adapter_passes_gymnasium_check_env(game: str) -> None:
    env = SingleAgentCardEnv(GAMES[game](), RandomAgent(seed=0), illegal_action="terminate")
    check_env(env, skip_render_check=True)


def test_learner_reward_is_its_own_seats_settlement_in_every_seat() -> None:
    aec = madiao_v0.env()
    env = SingleAgentCardEnv(aec, RandomAgent(seed=1), learner_seat="rotate")
    rng = np.random.default_rng(2)
    seats_checked = set()
    ended_by_another_seat = 0
    for episode in range(24):
        env.reset(seed=100) if episode == 0 else env.reset()
        seat = env.learner_seat
        total, done, info = 0.0, False, {}
        while not done:
            action = int(rng.choice(np.flatnonzero(env.action_masks())))
            _, reward, terminated, truncated, info = env.step(action)
            total += reward
            done = terminated or truncated
        lines = aec.unwrapped.last_settlement["lines"]
        settlement_total = sum(
            (line["stakes"] if line["payee"] == seat else 0.0)
            - (line["stakes"] if line["payer"] == seat else 0.0)
            for line in lines
        )
        assert total == pytest.approx(settlement_total), (episode, seat, lines)
        assert info["payoffs"][seat] == pytest.approx(settlement_total)
        seats_checked.add(seat)
        history = aec.unwrapped.table()["history"]
        if history and history[-1][0] != seat:
            ended_by_another_seat += 1
    assert seats_checked == {0, 1, 2, 3}
    assert ended_by_another_seat > 5
