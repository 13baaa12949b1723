"""High card's rules once, its PettingZoo AEC env (``raw_env``, ``env``) and its batched env
(``TinyVectorEnv``), both on ``cardgame_core``'s base classes.

Observation of a seat (float32, ``OBS_DIM``): its card one-hot (``N_CARDS``), then for itself and
the next two seats in turn order what each did (not acted, fold, play, raise: one-hot of 4).
Actions: ``FOLD``, ``PLAY``, ``RAISE``, all legal on a seat's turn. Rewards come at the end, the
stakes won or lost (zero-sum). A game seed deals the same cards in both envs: the batched env's
game ``i`` starts as ``raw_env().reset(seed=game_seeds[i])``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle

from cardgame_core.aec import (
    CardGameAECEnv,
    check_action,
    no_illegal_action,
    seed_sequence,
    wrap_like_pettingzoo_classic,
)
from cardgame_core.vector import VectorCardEnv

N_SEATS = 3
N_CARDS = 6
FOLD, PLAY, RAISE = 0, 1, 2
N_ACTIONS = 3
ACTION_NAMES = ("fold", "play", "raise")
#: What a seat's action adds to its ante of 1.
EXTRA_STAKE = np.array([0, 1, 2])
#: The state of a seat that has not acted yet (its action id otherwise).
NOT_ACTED = 3
OBS_DIM = N_CARDS + N_SEATS * 4
OBS_TYPES = ("default",)


def deal(rng: np.random.Generator) -> np.ndarray:
    """The three seats' cards (distinct, 0 lowest)."""
    return rng.permutation(N_CARDS)[:N_SEATS]


def observe(cards: np.ndarray, actions: np.ndarray, seat: int) -> np.ndarray:
    observation = np.zeros(OBS_DIM, dtype=np.float32)
    observation[cards[seat]] = 1.0
    for offset in range(N_SEATS):
        observation[N_CARDS + 4 * offset + actions[(seat + offset) % N_SEATS]] = 1.0
    return observation


def payoffs(cards: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Each seat's stakes won (+) or lost (-) once every seat has acted."""
    staked = 1 + EXTRA_STAKE[actions]
    still_in = np.flatnonzero(actions != FOLD)
    result = np.zeros(N_SEATS, dtype=np.float32)
    if still_in.size == 0:  # everyone folded: the antes go back
        return result
    winner = still_in[np.argmax(cards[still_in])]
    result -= staked
    result[winner] += staked.sum()
    return result


def _check_obs_type(obs_type: str) -> str:
    if obs_type not in OBS_TYPES:
        raise ValueError(f"obs_type must be one of {', '.join(OBS_TYPES)}, got {obs_type!r}")
    return obs_type


class raw_env(CardGameAECEnv, EzPickle):  # noqa: N801 (PettingZoo names its env classes so)
    """One game of high card (bare: an illegal action raises ``IllegalActionError``)."""

    metadata: ClassVar[dict] = {"name": "tiny_high_card_v0", "render_modes": [], "is_parallelizable": False}

    def __init__(self, obs_type: str = "default", render_mode: str | None = None) -> None:
        EzPickle.__init__(self, obs_type=obs_type, render_mode=render_mode)
        super().__init__()
        self.obs_type = _check_obs_type(obs_type)
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(N_SEATS)]
        self._observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, 1.0, (OBS_DIM,), np.float32),
                "action_mask": spaces.Box(0, 1, (N_ACTIONS,), np.int8),
            }
        )
        self._action_space = spaces.Discrete(N_ACTIONS)

    def observation_space(self, agent: str) -> spaces.Dict:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_space

    def describe_action(self, action: int) -> str:
        return ACTION_NAMES[action] if 0 <= action < N_ACTIONS else str(action)

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self._reset_bookkeeping(no_illegal_action())
        self.cards = deal(seed_sequence(seed))
        self.actions = np.full(N_SEATS, NOT_ACTED)
        self.seat = 0
        self.agent_selection = self.agents[0]

    def _current_mask(self) -> np.ndarray:
        live = self.agents and self.actions[self.seat] == NOT_ACTED
        return np.full(N_ACTIONS, 1 if live else 0, dtype=np.int8)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self.possible_agents.index(agent)
        to_act = seat == self.seat and self.actions[seat] == NOT_ACTED
        mask = self._current_mask() if to_act else np.zeros(N_ACTIONS, dtype=np.int8)
        return {"observation": observe(self.cards, self.actions, seat), "action_mask": mask}

    def step(self, action: Any) -> None:
        agent = self._require_live_episode()
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = check_action(action, self._current_mask(), self.describe_action)
        self._cumulative_rewards[agent] = 0.0
        self.actions[self.seat] = action
        if self.seat == N_SEATS - 1:
            self._end_episode()
            self._set_step_rewards(payoffs(self.cards, self.actions))
        else:
            self._set_step_rewards(np.zeros(N_SEATS))
            self.seat += 1
        self.agent_selection = self.agents[(self.possible_agents.index(agent) + 1) % N_SEATS]

    def get_state(self) -> dict[str, Any]:
        return {"cards": self.cards.copy(), "actions": self.actions.copy(), "seat": self.seat}

    def set_state(self, state: dict[str, Any]) -> None:
        self.cards, self.actions, self.seat = state["cards"].copy(), state["actions"].copy(), state["seat"]


def env(**kwargs: Any):
    """``raw_env`` under PettingZoo classic's wrappers (an illegal action ends the game, -1)."""
    return wrap_like_pettingzoo_classic(raw_env(**kwargs), illegal_reward=-1.0)


class TinyVectorEnv(VectorCardEnv):
    """``n_envs`` games of high card stepped together (plain numpy: the game is tiny)."""

    n_players = N_SEATS
    n_actions = N_ACTIONS
    obs_dim = OBS_DIM
    observation_dtype = np.dtype(np.float32)

    def __init__(self, n_envs: int, seed: int | None = None, *, copy: bool = True, obs_type: str = "default"):
        self.env_kwargs = {"obs_type": _check_obs_type(obs_type)}
        super().__init__(n_envs, seed, copy=copy)
        self.cards = np.zeros((self.n_envs, N_SEATS), dtype=np.int64)
        self.actions = np.full((self.n_envs, N_SEATS), NOT_ACTED, dtype=np.int64)

    def _deal(self, game: int, game_seed: int) -> None:
        self.cards[game] = deal(np.random.default_rng(game_seed))
        self.actions[game] = NOT_ACTED
        self._to_act[game] = 0
        self._observation[game] = observe(self.cards[game], self.actions[game], 0)
        self._action_mask[game] = True

    def _reset_games(self, game_seeds: np.ndarray) -> None:
        for game in range(self.n_envs):
            self._deal(game, int(game_seeds[game]))

    def _step_games(self, actions: np.ndarray) -> None:
        self._rewards[:] = 0
        self._terminated[:] = False
        for game in np.flatnonzero(actions >= 0):
            seat = int(self._to_act[game])
            self.actions[game, seat] = actions[game]
            if seat < N_SEATS - 1:
                self._to_act[game] = seat + 1
                self._observation[game] = observe(self.cards[game], self.actions[game], seat + 1)
                continue
            result = payoffs(self.cards[game], self.actions[game])
            self._rewards[game] = result
            self._final_payoffs[game] = result
            self._terminated[game] = True
            for other in range(N_SEATS):
                self._final_observation[game, other] = observe(self.cards[game], self.actions[game], other)
            self._deal(game, int(self._rng.integers(0, np.iinfo(np.int64).max)))

    def _observe_games(self, seats: np.ndarray, out: np.ndarray) -> None:
        for game in range(self.n_envs):
            out[game] = observe(self.cards[game], self.actions[game], int(seats[game]))

    def describe_action(self, action: int) -> str:
        return ACTION_NAMES[action] if 0 <= action < N_ACTIONS else str(action)
