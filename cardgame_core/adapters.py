"""Single-learner view of a card game for Gymnasium.

The adapter gives one *learner seat* per game to the RL algorithm and drives every other seat
with opponent agents, and hands the learner ITS OWN seat's reward, accumulated over everything
that happened since its previous decision, terminal rewards included when the game ended on
another seat's move. (The PettingZoo SB3 tutorial returned the reward of whoever moved last,
PettingZoo issue 1147; ``tests/common/test_adapters.py`` checks this case explicitly.)

- :class:`SingleAgentCardEnv`: a ``gymnasium.Env`` over one PettingZoo AEC env; opponents use the
  one-decision call shape ``act(observation, action_mask) -> int``. The learner's legal actions
  ride in ``info["action_mask"]`` (int8, like the AEC env's and Gymnasium's own masks) after
  every ``reset`` and ``step``, so wrappers and vector envs carry them, and ``action_masks()``
  (bool) serves sb3-contrib's MaskablePPO.
- The batched envs' learner views live in ``training`` (they share the opponent loop of
  :mod:`madiao_mao.training.learner_games`): ``LearnerVecEnv`` for SB3
  (:mod:`madiao_mao.training.sb3.adapter`) and
  ``LearnerVectorEnv`` for Gymnasium (:mod:`madiao_mao.training.gymnasium_envs`, which also holds what
  ``gymnasium.make`` builds for the registered ids). This package sits below ``training`` and
  never imports it, stable-baselines3 or torch.

Masks: int8 0/1 wherever a mask travels with observations and infos (the AEC env's observation
dict, ``info["action_mask"]``), the type PettingZoo's classic games use and Gymnasium's
``Discrete.sample(mask=...)`` requires; bool where a method hands a mask to array code
(``action_masks()``, the batched env's ``VectorStep.action_mask``), where an int8 array used as an
index would silently pick rows 0 and 1 instead of the legal actions.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from cardgame_core.aec import IllegalActionError, check_action

SingleOpponent = Callable[[np.ndarray, np.ndarray], int]

ILLEGAL_ACTION_MODES = ("raise", "terminate")


def opponent_call(agent: Any, method: str, parameters: str) -> Callable[..., Any]:
    """An opponent as a plain function: the agent object's ``method`` (``act``, ``act_batch``), or
    the agent itself where it is a callable without one; a TypeError naming
    ``method(parameters)`` otherwise."""
    bound = getattr(agent, method, None)
    if callable(bound):
        return bound
    if callable(agent):
        return agent
    raise TypeError(f"an opponent must have an {method}({parameters}) method or be callable, got {agent!r}")


def _single_call(agent: Any) -> SingleOpponent:
    """An agent object (with ``act``) or a plain callable, as ``f(observation, mask) -> int``."""
    return opponent_call(agent, "act", "observation, action_mask")


def _action_describer(aec_env: Any) -> Callable[[int], str]:
    """The game's ``describe_action(id) -> text`` (both games have one), or ``str`` for a game
    without it; errors and infos name actions with it."""
    describe = getattr(getattr(aec_env, "unwrapped", aec_env), "describe_action", None)
    return describe if callable(describe) else str


def check_learner_seat(learner_seat: int | str, n_players: int) -> None:
    """Raise ValueError unless ``learner_seat`` is a seat ``0..n_players - 1`` or ``"rotate"``."""
    if learner_seat == "rotate":
        return
    if isinstance(learner_seat, bool) or not isinstance(learner_seat, (int, np.integer)):
        raise ValueError(f"learner_seat must be a seat 0..{n_players - 1} or 'rotate', got {learner_seat!r}")
    if not 0 <= learner_seat < n_players:
        raise ValueError(f"learner_seat {learner_seat} is out of range 0..{n_players - 1}")


class SingleAgentCardEnv(gym.Env):
    """One learner seat of a PettingZoo AEC card game as a Gymnasium env.

    Args:
        aec_env: the (wrapped or raw) AEC env; observations must be ``{"observation", "action_mask"}``.
        opponents: one agent for every other seat, or a sequence with one agent per seat (the
            learner's entry is ignored). An agent has ``act(observation, action_mask) -> int`` or
            is such a callable.
        learner_seat: a fixed seat, or ``"rotate"``: seats 0, 1, 2, ... in turn, one per episode
            (the cycle restarts at seat 0 whenever ``reset`` gets a seed, so seeded resets repeat).
        illegal_action: what an action outside the learner's legal mask does. ``"terminate"``
            (default) ends the episode with ``illegal_reward``, ``info["illegal_action"] = True``
            and ``info["illegal_action_error"]``, the message naming the action as text (for
            Madiao ``action 44 (slough 2S) is not legal now; legal actions: ...``). Gymnasium's
            contract is that ``step`` accepts every action of ``action_space``, and its
            ``check_env`` plays unmasked random actions, so this is the default. ``"raise"``
            raises :class:`IllegalActionError` with that message instead (for debugging a policy
            that should never choose an illegal action).
        illegal_reward: the learner's reward for an illegal action under ``"terminate"``.

    Actions are action ids: a Python or numpy integer, or a 0-d integer array (what
    ``model.predict`` returns for one observation); anything else is an illegal action.
    Rendering: ``render_mode`` is the wrapped env's and ``render()`` renders the wrapped env.

    Masks: ``info["action_mask"]`` (int8 ``[n_actions]``) after every ``reset`` and ``step`` holds
    the learner's legal actions for the observation returned with it; when the episode has ended
    (terminated, truncated or an illegal action) no decision is pending and it is all zeros.
    ``action_masks()`` returns the same mask as bool, also all False once the episode is over, so
    that a vector env's ``call("action_masks")`` works in every autoreset mode: under Gymnasium's
    default next-step autoreset the action chosen for a finished episode is ignored (the vector
    env resets it instead), and a masked policy must accept an all-false row there (mask with a
    large negative logit, not ``-inf``; sb3-contrib does).
    """

    metadata: ClassVar[dict] = {"render_modes": [], "render_fps": 1}

    def __init__(
        self,
        aec_env: Any,
        opponents: Any | Sequence[Any],
        *,
        learner_seat: int | str = 0,
        illegal_action: str = "terminate",
        illegal_reward: float = -1.0,
    ) -> None:
        super().__init__()
        self.aec_env = aec_env
        self.agent_names = list(aec_env.possible_agents)
        self.n_players = len(self.agent_names)
        check_learner_seat(learner_seat, self.n_players)
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(f"illegal_action must be one of {ILLEGAL_ACTION_MODES}, got {illegal_action!r}")
        self.learner_seat_option = learner_seat
        self.illegal_action = illegal_action
        self.illegal_reward = float(illegal_reward)
        self._describe_action = _action_describer(aec_env)
        # The wrapped env renders; its modes are ours (text frames: the fps is only nominal).
        self.render_mode = getattr(aec_env, "render_mode", None)
        wrapped_metadata = getattr(aec_env, "metadata", None) or {}
        self.metadata = {
            "render_modes": list(wrapped_metadata.get("render_modes", [])),
            "render_fps": wrapped_metadata.get("render_fps", 1),
        }
        # The agents themselves, reseeded by a seeded reset (a seed must fix the whole game).
        self._opponent_agents = list(opponents) if isinstance(opponents, (list, tuple)) else [opponents]
        if isinstance(opponents, (list, tuple)):
            if len(opponents) != self.n_players:
                raise ValueError(
                    f"opponents must be one agent or a sequence of {self.n_players} (one per seat), "
                    f"got {len(opponents)}"
                )
            self._opponents = [None if o is None else _single_call(o) for o in opponents]
        else:
            self._opponents = [_single_call(opponents)] * self.n_players
        first = self.agent_names[0]
        space = aec_env.observation_space(first)
        self.observation_space = space["observation"]
        self.action_space = aec_env.action_space(first)
        self._episode = 0
        self.learner_seat = 0 if learner_seat == "rotate" else int(learner_seat)
        self._observation: np.ndarray | None = None
        #: The learner's legal actions (int8), all zeros once the episode is over; None before reset.
        self._mask: np.ndarray | None = None
        self._decision_pending = False
        #: Episodes that ended before the learner's first decision (skipped by ``reset``).
        self.episodes_without_learner = 0

    @property
    def learner(self) -> str:
        return self.agent_names[self.learner_seat]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._episode = 0
            for index, agent in enumerate(self._opponent_agents):
                if callable(getattr(agent, "seed", None)):
                    agent.seed(int(seed) + 1 + index)
        if self.learner_seat_option == "rotate":
            self.learner_seat = self._episode % self.n_players
        self._episode += 1
        aec_seed = None if seed is None else int(seed)
        while True:
            self.aec_env.reset(seed=aec_seed, options=options)
            if self._play_opponents() is None:
                break
            # The game ended before the learner ever acted: nothing to learn, deal again.
            self.episodes_without_learner += 1
            aec_seed = int(self.np_random.integers(2**31 - 1))
        return self._observation.copy(), {"learner_seat": self.learner_seat, "action_mask": self._mask.copy()}

    def step(self, action: Any):
        if not self._decision_pending:
            raise RuntimeError("call reset() before step() (the episode is over or not started)")
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action[()]  # a numpy scalar of the same dtype, checked like any other
        try:
            action = check_action(action, self._mask, self._describe_action)
        except IllegalActionError as error:
            if self.illegal_action == "raise":
                raise
            info = {
                "illegal_action": True,
                "illegal_action_error": str(error),
                "learner_seat": self.learner_seat,
                "action_mask": self._end_decisions(),
            }
            return self._observation.copy(), self.illegal_reward, True, False, info
        self.aec_env.step(action)
        outcome = self._play_opponents()
        reward = float(self.aec_env._cumulative_rewards[self.learner])
        info: dict[str, Any] = {"learner_seat": self.learner_seat}
        if outcome is None:
            info["action_mask"] = self._mask.copy()
            return self._observation.copy(), reward, False, False, info
        terminated, truncated = outcome
        observation = np.asarray(self.aec_env.observe(self.learner)["observation"])
        # A copy: the wrapped env keeps its infos, and returned data must not be shared.
        info.update(copy.deepcopy(self.aec_env.infos.get(self.learner, {})))
        info["action_mask"] = self._end_decisions()
        return observation.copy(), reward, terminated, truncated, info

    def _end_decisions(self) -> np.ndarray:
        """The episode is over: no decision is pending, nothing is legal (returns that mask)."""
        self._decision_pending = False
        self._mask = np.zeros_like(self._mask)
        return self._mask.copy()

    def render(self) -> str | None:
        """The wrapped env's ``render()`` (its ``render_mode``: text for ``"ansi"``, printed for
        ``"human"``); ``None`` with a warning when it has no render mode."""
        if self.render_mode is None:
            gym.logger.warn("render() called on an env without a render_mode; nothing to render")
            return None
        return self.aec_env.render()

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions now (bool), for MaskablePPO; all False once the episode is
        over (no decision is pending: see the class docstring)."""
        if self._mask is None:
            raise RuntimeError("call reset() before action_masks()")
        return self._mask.astype(bool)

    def _play_opponents(self) -> tuple[bool, bool] | None:
        """Let opponents move until the learner must act (returns None, observation stored) or
        the game ends (returns ``(terminated, truncated)``)."""
        env = self.aec_env
        while True:
            if env.terminations.get(self.learner, False) or env.truncations.get(self.learner, False):
                return bool(env.terminations[self.learner]), bool(env.truncations[self.learner])
            agent = env.agent_selection
            observed = env.observe(agent)
            if agent == self.learner:
                self._observation = np.asarray(observed["observation"])
                self._mask = np.asarray(observed["action_mask"]).astype(np.int8)
                self._decision_pending = True
                return None
            seat = self.agent_names.index(agent)
            env.step(int(self._opponents[seat](observed["observation"], observed["action_mask"])))
