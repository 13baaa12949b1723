"""A tiny 3-seat game to test the generic vector/adapter layers without either card game.

Countdown: a counter starts at ``START``; the seat to act takes 1, 2 or 3 (actions 0..2, never
below zero). Whoever takes the last unit wins 2 stakes and the other two pay 1 each. Most games
end on a move of a seat other than the one under test, which is what the reward-attribution
tests need. Observation: one-hot counter (START + 1) then one-hot seat (3), float32.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gymnasium import spaces

from cardgame_core.aec import CardGameAECEnv, check_action
from cardgame_core.vector import VectorCardEnv
from madiao_mao.agents.base import Agent

START = 7
N_SEATS = 3
N_ACTIONS = 3
OBS_DIM = START + 1 + N_SEATS


def legal_mask(counter: int) -> np.ndarray:
    return np.array([counter >= take for take in (1, 2, 3)], dtype=bool)


def encode(counter: int, seat: int) -> np.ndarray:
    observation = np.zeros(OBS_DIM, dtype=np.float32)
    observation[counter] = 1.0
    observation[START + 1 + seat] = 1.0
    return observation


def payoffs_for(winner: int) -> np.ndarray:
    payoffs = np.full(N_SEATS, -1.0, dtype=np.float32)
    payoffs[winner] = 2.0
    return payoffs


class CountdownVectorEnv(VectorCardEnv):
    n_players = N_SEATS
    n_actions = N_ACTIONS
    obs_dim = OBS_DIM
    observation_dtype = np.dtype(np.float32)

    def _deal(self, game: int, game_seed: int) -> None:
        self.counter[game] = START
        self.seat[game] = int(game_seed % N_SEATS)  # the seed picks who starts
        self._refresh(game)

    def _refresh(self, game: int) -> None:
        self._to_act[game] = self.seat[game]
        self._observation[game] = encode(self.counter[game], self.seat[game])
        self._action_mask[game] = legal_mask(self.counter[game])

    def _reset_games(self, game_seeds: np.ndarray) -> None:
        self.counter = np.zeros(self.n_envs, dtype=np.int64)
        self.seat = np.zeros(self.n_envs, dtype=np.int64)
        for game in range(self.n_envs):
            self._deal(game, int(game_seeds[game]))

    def _step_games(self, actions: np.ndarray) -> None:
        self._rewards[:] = 0
        self._terminated[:] = False
        for game in np.flatnonzero(actions >= 0):
            self.counter[game] -= actions[game] + 1
            if self.counter[game] == 0:
                payoffs = payoffs_for(int(self.seat[game]))
                self._rewards[game] = payoffs
                self._final_payoffs[game] = payoffs
                self._terminated[game] = True
                for seat in range(N_SEATS):
                    self._final_observation[game, seat] = encode(0, seat)
                self._deal(game, int(self._rng.integers(2**31)))
            else:
                self.seat[game] = (self.seat[game] + 1) % N_SEATS
                self._refresh(game)

    def _observe_games(self, seats: np.ndarray, out: np.ndarray) -> None:
        for game in range(self.n_envs):
            out[game] = encode(self.counter[game], seats[game])


class CountdownAECEnv(CardGameAECEnv):
    metadata: ClassVar[dict] = {"name": "countdown_v0", "render_modes": [], "is_parallelizable": False}

    def __init__(self) -> None:
        super().__init__()
        self.possible_agents = [f"player_{i}" for i in range(N_SEATS)]
        self._observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, 1.0, (OBS_DIM,), np.float32),
                "action_mask": spaces.Box(0, 1, (N_ACTIONS,), np.int8),
            }
        )

    def observation_space(self, agent):
        return self._observation_space

    def action_space(self, agent):
        return spaces.Discrete(N_ACTIONS)

    def reset(self, seed=None, options=None):
        self._reset_bookkeeping({})
        self.counter = START
        self.seat = 0 if seed is None else int(seed) % N_SEATS
        self.agent_selection = self.agents[self.seat]

    def observe(self, agent):
        seat = self.possible_agents.index(agent)
        mask = (
            legal_mask(self.counter).astype(np.int8)
            if seat == self.seat and self.counter
            else np.zeros(3, np.int8)
        )
        return {"observation": encode(self.counter, seat), "action_mask": mask}

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = check_action(action, legal_mask(self.counter), str)
        self._cumulative_rewards[agent] = 0.0
        self.counter -= action + 1
        if self.counter == 0:
            self._end_episode()
            self._set_step_rewards(payoffs_for(self.seat))
        else:
            self._set_step_rewards(np.zeros(N_SEATS))
        self.seat = (self.seat + 1) % N_SEATS
        self.agent_selection = self.agents[self.seat]


class MemoryWithoutKeys(Agent):
    """A test agent that keeps a memory per game (a ``reset_rows`` of its own) but whose
    ``act_batch`` takes no ``rows=`` keys: what a training table must refuse."""

    name = "forgetful"

    def act_batch(self, observations, masks):
        return np.array([int(np.flatnonzero(m)[0]) for m in masks])

    def reset_rows(self, rows):
        pass
