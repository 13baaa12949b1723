"""AEC random play: every registered game beside an empty AEC env (the API ceiling) and PettingZoo
classic.

Every env runs the same loop: ``reset``, ``agent_iter``, ``last``, a uniformly random legal action
(``rng.choice(np.flatnonzero(mask))``), ``step``. The empty env has the same shape as the card
games (4 agents, 100-long observation, 80 actions, 32 decisions per game) and sits under the
same standard wrappers, so "game steps/s ÷ empty steps/s" is the share of the ceiling a game
reaches in this loop.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from madiao_mao.benchmarks.subjects import game_subjects, load
from madiao_mao.benchmarks.timing import Result, Workload, measure, unavailable, warm_up

EMPTY_AGENTS = 4
EMPTY_OBS_DIM = 100
EMPTY_ACTIONS = 80
EMPTY_GAME_LENGTH = 32
EMPTY_WRAPPED = "empty AEC env (wrapped)"


class EmptyAECEnv(AECEnv):
    """An AEC env that does nothing but the API bookkeeping: the ceiling of the AEC loop."""

    metadata: ClassVar[dict] = {"name": "empty_v0", "render_modes": [], "is_parallelizable": False}

    def __init__(self) -> None:
        super().__init__()
        self.possible_agents = [f"player_{i}" for i in range(EMPTY_AGENTS)]
        self._observation = {
            "observation": np.zeros(EMPTY_OBS_DIM, np.int8),
            "action_mask": np.ones(EMPTY_ACTIONS, np.int8),
        }
        self._observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0, 1, (EMPTY_OBS_DIM,), np.int8),
                "action_mask": spaces.Box(0, 1, (EMPTY_ACTIONS,), np.int8),
            }
        )
        self._action_space = spaces.Discrete(EMPTY_ACTIONS)

    def observation_space(self, agent):
        return self._observation_space

    def action_space(self, agent):
        return self._action_space

    def observe(self, agent):
        return self._observation

    def reset(self, seed=None, options=None):
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0 for a in self.agents}
        self._cumulative_rewards = {a: 0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.moves = 0
        self.agent_selection = self.agents[0]

    def step(self, action):
        if self.terminations[self.agent_selection] or self.truncations[self.agent_selection]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[self.agent_selection] = 0
        self.moves += 1
        if self.moves >= EMPTY_GAME_LENGTH:
            for agent in self.agents:
                self.terminations[agent] = True
                self.rewards[agent] = 1
        next_index = (self.agents.index(self.agent_selection) + 1) % EMPTY_AGENTS
        self.agent_selection = self.agents[next_index]
        self._accumulate_rewards()


def wrapped_empty_env() -> AECEnv:
    """The empty env under the wrappers PettingZoo's classic ``env()`` constructors apply (and the
    games' ``env()`` too)."""
    terminating = wrappers.TerminateIllegalWrapper(EmptyAECEnv(), illegal_reward=-1)
    return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(terminating))


def random_game_body(make_env: Callable[[], AECEnv]) -> Callable[[], int]:
    """A body playing one random game per call (reset seeded by the game count); returns the
    steps it took, dead steps counted as steps."""
    env = make_env()
    rng = np.random.default_rng(0)
    games = 0

    def one_game() -> int:
        nonlocal games
        env.reset(seed=games)
        steps = 0
        for _agent in env.agent_iter():
            observation, _reward, terminated, truncated, _info = env.last()
            if terminated or truncated:
                action = None
            else:
                action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
            env.step(action)
            steps += 1
        games += 1
        return steps

    return one_game


def _games_per_second(calls_per_second: float) -> str:
    return f"{calls_per_second:,.0f} games/s"


def aec_system(game: str) -> str:
    """The row name of ``game``'s AEC env."""
    return f"{game} AEC (wrapped), random play"


def _game_envs() -> list[tuple[str, Callable[[], AECEnv] | None, str]]:
    envs = []
    for game, subjects in game_subjects():
        try:
            make_env = load(subjects.aec_env)
        except (ImportError, AttributeError) as error:
            envs.append((aec_system(game), None, unavailable(error)))
        else:
            envs.append((aec_system(game), make_env, ""))
    return envs


def workloads(with_peers: bool = True) -> list[Workload]:
    """The empty env (raw, wrapped), every game's wrapped AEC env and, ``with_peers``, PettingZoo
    classic: one random game per body call."""
    found = [
        Workload("aec", "empty AEC env (raw)", "steps/s", random_game_body(EmptyAECEnv)),
        Workload("aec", EMPTY_WRAPPED, "steps/s", random_game_body(wrapped_empty_env)),
    ]
    for label, make_env, note in _game_envs():
        body = None if make_env is None else random_game_body(make_env)
        found.append(Workload("aec", label, "steps/s", body, _games_per_second, missing=note))
    if with_peers:
        for label, module_name in (
            ("pettingzoo leduc_holdem_v4", "leduc_holdem_v4"),
            ("pettingzoo texas_holdem_v4", "texas_holdem_v4"),
            ("pettingzoo tictactoe_v3", "tictactoe_v3"),
        ):
            try:  # the classic envs need pygame (and the card games rlcard)
                module = importlib.import_module(f"pettingzoo.classic.{module_name}")
            except ImportError as error:
                found.append(
                    Workload("peers", label, "steps/s", None, missing=f"not installed: {error.name}")
                )
                continue
            found.append(Workload("peers", label, "steps/s", random_game_body(module.env), _games_per_second))
    return found


def run(seconds: float, with_peers: bool = True) -> list[Result]:
    """Warm up, then measure every workload of this suite."""
    suite = workloads(with_peers)
    warm_up(suite)
    return [measure(workload, seconds) for workload in suite]
