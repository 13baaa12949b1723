"""Madiao in expert iteration (``madiao_mao.training.expert_iteration``): the search player is the
expert.

The expert (by default ``model-search``'s options with the current policy playing the
play-outs, ``search:samples=128,guard=2,screen=16,policy={policy}``: the guarded rollout
improvement of that policy, the one expert measured to beat it) sits in all four seats of whole
hands on the raw PettingZoo env, so its decisions cover both roles; every decision with more than
one legal action is kept with the observation the policy reads (the run's ``obs_type``), its
mask, the expert's move and the seat's payoff of the hand (``collect``). Its own strength is
measured on duplicate deals against the starting policy (``score_expert``), since the policy can
only learn to play as well as its expert.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from madiao_env import cards
from madiao_mao.agents.base import Agent
from madiao_mao.agents.madiao import MODEL_SEARCH_OPTIONS
from madiao_mao.agents.madiao.search import merged_search_options
from madiao_mao.training.cli_args import load_agent
from madiao_mao.training.expert_iteration import ExpertIterationGame
from madiao_mao.training.game_spec import env_kwargs

if TYPE_CHECKING:  # typing only: the trainer's modules import torch
    from madiao_mao.training.config import TrainConfig
    from madiao_mao.training.sb3.imitation import TeacherData


def seat_expert(spec: str, config: TrainConfig, seed: int) -> tuple[Agent, Any]:
    """The expert of ``spec`` and the env it plays in (single hands under the run's options)."""
    # Imported here: madiao_mao.training.madiao.matches imports this module (a cycle at the top).
    from madiao_mao.training.madiao.matches import make_env

    env = make_env(**{**env_kwargs(config), "episode": "hand"})
    try:
        return load_agent(spec, "madiao", seed=seed, env=env), env
    except Exception:
        env.close()
        raise


class _SeatRecorder(Agent):
    """One seat of the expert: plays its move and keeps every decision that had a choice."""

    def __init__(self, expert: Agent) -> None:
        self.expert = expert
        self.name = expert.name
        self.decisions: list[tuple[np.ndarray, np.ndarray, int]] = []
        self.moves = 0  # every decision of the seat, forced ones included (the return's discount)
        self.chosen_at: list[int] = []

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        action = int(self.expert.act(observation, action_mask))
        mask = np.asarray(action_mask, dtype=bool)
        if mask.sum() > 1:
            self.decisions.append((np.asarray(observation, dtype=np.float32), mask, action))
            self.chosen_at.append(self.moves)
        self.moves += 1
        return action


def collect(expert: Agent, env: Any, n_decisions: int, seed: int, gamma: float) -> TeacherData:
    """``n_decisions`` decisions of ``expert`` in every seat of whole hands on ``env`` (hands
    seeded from ``seed``; see the module doc). A decision's return is its seat's payoff of the
    hand, discounted by ``gamma`` per later decision of that seat."""
    # Imported here: keeps torch off this module's import path.
    from madiao_mao.training.madiao.matches import play_episode
    from madiao_mao.training.sb3.imitation import TeacherData

    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    observations, masks, actions, returns, payoffs = [], [], [], [], []
    while len(actions) < n_decisions:
        seats = [_SeatRecorder(expert) for _ in range(cards.N_SEATS)]
        hand = play_episode(env, seats, seed=int(rng.integers(2**31 - 1)), record=False)
        for seat, recorder in enumerate(seats):
            for (observation, mask, action), moves_before in zip(
                recorder.decisions, recorder.chosen_at, strict=True
            ):
                observations.append(observation)
                masks.append(mask)
                actions.append(action)
                returns.append(hand.returns[seat] * gamma ** (recorder.moves - 1 - moves_before))
        payoffs.extend(hand.returns.tolist())
    kept = slice(0, n_decisions)
    return TeacherData(
        observations=np.stack(observations[kept]),
        masks=np.stack(masks[kept]),
        actions=np.asarray(actions[kept], dtype=np.int64),
        returns=np.asarray(returns[kept], dtype=np.float32),
        has_return=np.ones(n_decisions, dtype=bool),
        episode_returns=np.asarray(payoffs),
        seconds=time.perf_counter() - started,
    )


def score_expert(expert: Agent, env: Any, opponent: Agent, n_deals: int, seed: int) -> dict[str, Any]:
    """The expert in one seat against ``opponent`` in three on ``n_deals`` duplicate deals (seats
    rotated): stakes/hand with 95% intervals, overall and by role."""
    # Imported here: madiao_mao.training.madiao.evaluation imports this module (a cycle at the top).
    from madiao_mao.training.madiao.evaluation import duplicate_match, make_deals

    return duplicate_match(expert, opponent, make_deals(n_deals, seed), env=env).figures()


EXPERT_ITERATION = ExpertIterationGame(
    default_expert=f"search:{merged_search_options(MODEL_SEARCH_OPTIONS, 'policy={policy}')}",
    references=("heuristic",),
    seat_expert=seat_expert,
    collect=collect,
    score_expert=score_expert,
)
