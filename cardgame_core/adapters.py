"""Single-learner views of the card games for Gymnasium and Stable-Baselines3.

Both adapters give one *learner seat* per game to the RL algorithm and drive every other seat with
opponent agents, and both hand the learner ITS OWN seat's reward, accumulated over everything
that happened since its previous decision, terminal rewards included when the game ended on
another seat's move. (The PettingZoo SB3 tutorial returned the reward of whoever moved last,
PettingZoo issue 1147; ``tests/common/test_adapters.py`` checks this case explicitly.)

- :class:`SingleAgentCardEnv`: a ``gymnasium.Env`` over one PettingZoo AEC env; opponents use the
  one-decision call shape ``act(observation, action_mask) -> int``.
- :class:`LearnerVecEnv`: an SB3 ``VecEnv`` over a batched :class:`~cardgame_core.vector.VectorCardEnv`;
  opponents use the batched call shape ``(observations[M, obs_dim], masks[M, n_actions]) -> actions[M]``.

Both expose ``action_masks()`` for sb3-contrib's MaskablePPO.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from cardgame_core.aec import IllegalActionError, check_action
from cardgame_core.vector import NO_ACTION, VectorCardEnv

SingleOpponent = Callable[[np.ndarray, np.ndarray], int]
BatchOpponent = Callable[[np.ndarray, np.ndarray], np.ndarray]

ILLEGAL_ACTION_MODES = ("raise", "terminate")
OPPONENT_DRAWS = ("per_seat", "per_game")


def _single_call(agent: Any) -> SingleOpponent:
    """An agent object (with ``act``) or a plain callable, as ``f(observation, mask) -> int``."""
    act = getattr(agent, "act", None)
    if callable(act):
        return act
    if callable(agent):
        return agent
    raise TypeError(
        f"an opponent must have an act(observation, action_mask) method or be callable, got {agent!r}"
    )


def _batch_call(agent: Any) -> BatchOpponent:
    """An agent object (with ``act_batch``) or a plain callable, as ``f(observations, masks) -> actions``."""
    act_batch = getattr(agent, "act_batch", None)
    if callable(act_batch):
        return act_batch
    if callable(agent):
        return agent
    raise TypeError(
        f"an opponent must have an act_batch(observations, masks) method or be callable, got {agent!r}"
    )


def _action_describer(aec_env: Any) -> Callable[[int], str]:
    """The game's ``describe_action(id) -> text`` (both games have one), or ``str`` for a game
    without it; errors and infos name actions with it."""
    describe = getattr(getattr(aec_env, "unwrapped", aec_env), "describe_action", None)
    return describe if callable(describe) else str


def _check_learner_seat(learner_seat: int | str, n_players: int) -> None:
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
        _check_learner_seat(learner_seat, self.n_players)
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
        self._mask: np.ndarray | None = None
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
        return self._observation.copy(), {"learner_seat": self.learner_seat}

    def step(self, action: Any):
        if self._mask is None:
            raise RuntimeError("call reset() before step()")
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
            }
            self._mask = None
            return self._observation.copy(), self.illegal_reward, True, False, info
        self.aec_env.step(action)
        outcome = self._play_opponents()
        reward = float(self.aec_env._cumulative_rewards[self.learner])
        info: dict[str, Any] = {"learner_seat": self.learner_seat}
        if outcome is None:
            return self._observation.copy(), reward, False, False, info
        terminated, truncated = outcome
        observation = np.asarray(self.aec_env.observe(self.learner)["observation"])
        self._mask = None
        # A copy: the wrapped env keeps its infos, and returned data must not be shared.
        info.update(copy.deepcopy(self.aec_env.infos.get(self.learner, {})))
        return observation.copy(), reward, terminated, truncated, info

    def render(self) -> str | None:
        """The wrapped env's ``render()`` (its ``render_mode``: text for ``"ansi"``, printed for
        ``"human"``); ``None`` with a warning when it has no render mode."""
        if self.render_mode is None:
            gym.logger.warn("render() called on an env without a render_mode; nothing to render")
            return None
        return self.aec_env.render()

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions now (bool), for MaskablePPO."""
        if self._mask is None:
            raise RuntimeError("no decision is pending: call reset() (the episode is over or not started)")
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
                self._mask = np.asarray(observed["action_mask"]).astype(bool)
                return None
            seat = self.agent_names.index(agent)
            env.step(int(self._opponents[seat](observed["observation"], observed["action_mask"])))


class LearnerVecEnv(VecEnv):
    """An SB3 ``VecEnv`` over a batched card game: one learner seat per game, opponents inside.

    Args:
        vector_env: the batched game env (its games auto-reset).
        opponents: one batched opponent, or a pool (sequence) of them; with a pool every opponent
            seat of every game draws one uniformly at the start of each game. A batched opponent
            has ``act_batch(observations, masks) -> actions`` or is such a callable.
        learner_seat: a fixed seat, or ``"rotate"`` (default): game ``i`` starts with seat
            ``i % n_players`` and moves on one seat per finished game, so the learner plays every
            role equally often.
        seed: seeds the vector env's first reset and the opponent draws.
        opponent_draw: ``"per_seat"`` (default): every opponent seat of a new game draws its own
            pool entry; ``"per_game"``: one entry is drawn per new game and plays all its opponent
            seats (a league: the game's learner return is then a result against exactly that
            entry, given as ``infos[i]["opponent_index"]`` when the game ends).
        opponent_sampler: ``sampler(rng, n) -> n pool indices``, how entries are drawn (called with
            this env's seeded generator; ``n`` is the number of draws); default uniform.

    Each ``step`` returns, per game, the learner seat's reward summed over everything since its
    previous decision. When a game ends, ``done`` is set, ``infos[i]["terminal_observation"]`` is
    the learner's last observation, ``infos[i]["episode"]`` holds the return/length for SB3's
    Monitor statistics, and the observation returned is the new game's (after the opponents moved
    up to the learner's first decision). Rewards that arrive in a new game before the learner's
    first decision are added to the learner's next reward in that game.
    """

    def __init__(
        self,
        vector_env: VectorCardEnv,
        opponents: Any | Sequence[Any],
        *,
        learner_seat: int | str = "rotate",
        seed: int | None = None,
        opponent_draw: str = "per_seat",
        opponent_sampler: Callable[[np.random.Generator, int], Any] | None = None,
    ) -> None:
        self.vector_env = vector_env
        self.n_players = int(vector_env.n_players)
        _check_learner_seat(learner_seat, self.n_players)
        if opponent_draw not in OPPONENT_DRAWS:
            raise ValueError(
                f"opponent_draw must be one of {', '.join(OPPONENT_DRAWS)}, got {opponent_draw!r}"
            )
        if opponent_sampler is not None and not callable(opponent_sampler):
            raise TypeError(f"opponent_sampler must be callable as sampler(rng, n), got {opponent_sampler!r}")
        self.opponent_draw = opponent_draw
        self._opponent_sampler = opponent_sampler
        if isinstance(opponents, (list, tuple)):
            if not opponents:
                raise ValueError("the opponent pool is empty")
            self._pool = [_batch_call(o) for o in opponents]
        else:
            self._pool = [_batch_call(opponents)]
        n_envs = int(vector_env.n_envs)
        observation_space = gym.spaces.Box(-np.inf, np.inf, (int(vector_env.obs_dim),), np.float32)
        action_space = gym.spaces.Discrete(int(vector_env.n_actions))
        self.render_mode = None  # read by VecEnv.__init__; games are rendered through the AEC env
        super().__init__(n_envs, observation_space, action_space)
        self.learner_seat_option = learner_seat
        self._first_seed = seed
        self.rng = np.random.default_rng(seed)
        self._games = np.arange(n_envs)
        if learner_seat == "rotate":
            self.learner_seat = self._games % self.n_players
        else:
            self.learner_seat = np.full(n_envs, int(learner_seat), dtype=np.int64)
        self.opponent_index = self._draw_opponents(n_envs)
        self._pending_reward = np.zeros(n_envs, dtype=np.float64)
        self._episode_return = np.zeros(n_envs, dtype=np.float64)
        self._episode_length = np.zeros(n_envs, dtype=np.int64)
        self._started = time.time()
        self._observations = np.zeros((n_envs, int(vector_env.obs_dim)), dtype=np.float32)
        self._masks = np.zeros((n_envs, int(vector_env.n_actions)), dtype=bool)
        self._actions = np.full(n_envs, NO_ACTION, dtype=np.int64)
        #: Episodes that ended before the learner's first decision (their rewards are dropped).
        self.episodes_without_learner = 0

    # -- VecEnv API ---------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        seed = self._first_seed
        self._first_seed = None  # later resets continue the env's own random stream
        step = self.vector_env.reset(seed=seed)
        self._pending_reward[:] = 0
        self._episode_return[:] = 0
        self._episode_length[:] = 0
        rewards = np.zeros(self.num_envs)
        dones = np.zeros(self.num_envs, dtype=bool)
        self._advance(step, rewards, dones, [{} for _ in range(self.num_envs)])
        # Rewards that reached the learner's seat before its first decision belong to the
        # learner's first step (SB3 has no reward slot in reset), and step_wait counts them then.
        self._pending_reward += rewards
        self._episode_return -= rewards
        return self._observations.copy()

    def step_async(self, actions: np.ndarray) -> None:
        # Checked before any cast: a float would be truncated and a uint64 of 2**64 - 1 would wrap
        # to -1, which the vector env takes as "skip this game". A learner never skips.
        actions = np.asarray(actions)
        if actions.dtype.kind not in "iu":
            raise TypeError(f"actions must be integer action ids, got dtype {actions.dtype}")
        if actions.size != self.num_envs:
            raise ValueError(
                f"actions must hold one action for each of the {self.num_envs} games, got {actions.shape}"
            )
        actions = actions.reshape(self.num_envs)
        too_low = False if actions.dtype.kind == "u" else actions < 0
        out_of_range = np.flatnonzero(too_low | (actions >= self.action_space.n))
        if out_of_range.size:
            game = int(out_of_range[0])
            raise IllegalActionError(
                f"game {game}: learner action {int(actions[game])} is out of range "
                f"0..{self.action_space.n - 1}"
            )
        self._actions = actions.astype(np.int64)

    def step_wait(self):
        rewards = self._pending_reward.copy()
        self._episode_return += rewards
        self._pending_reward[:] = 0
        dones = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        self._episode_length += 1
        step = self.vector_env.step(self._actions)
        self._advance(step, rewards, dones, infos)
        return self._observations.copy(), rewards.astype(np.float32), dones, infos

    def action_masks(self) -> np.ndarray:
        """``[n_envs, n_actions]`` bool: the learner's legal actions in every game."""
        return self._masks.copy()

    def close(self) -> None:
        self.vector_env.close()

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        return [getattr(self, attr_name) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        indices = list(self._get_indices(indices))
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in indices]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in indices]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def has_attr(self, attr_name: str) -> bool:
        return hasattr(self, attr_name)

    # -- the opponent loop --------------------------------------------------------------------
    def _advance(self, step, rewards: np.ndarray, dones: np.ndarray, infos: list[dict]) -> None:
        """Credit the learner's rewards and finish ended games, then step the opponents until
        every game waits for its learner; stores the learner observations and masks."""
        while True:
            learner_rewards = step.rewards[self._games, self.learner_seat].astype(np.float64)
            # A game already done in this call has started a new episode: its rewards wait for
            # the learner's next decision there.
            rewards += np.where(dones, 0.0, learner_rewards)
            self._episode_return += np.where(dones, 0.0, learner_rewards)
            self._pending_reward += np.where(dones, learner_rewards, 0.0)
            for game in np.flatnonzero(step.terminated | step.truncated):
                self._finish_game(int(game), step, dones, infos)
            opponent_turn = step.to_act != self.learner_seat
            if not opponent_turn.any():
                break
            step = self.vector_env.step(self._opponent_actions(step, opponent_turn))
        self._observations[:] = step.observation
        self._masks[:] = step.action_mask

    def _finish_game(self, game: int, step, dones: np.ndarray, infos: list[dict]) -> None:
        seat = int(self.learner_seat[game])
        if dones[game]:
            # A second episode ended in this call before the learner moved in it.
            self.episodes_without_learner += 1
            self._pending_reward[game] = 0.0
        else:
            dones[game] = True
            info = infos[game]
            info["terminal_observation"] = step.final_observation[game, seat].astype(np.float32)
            info["TimeLimit.truncated"] = bool(step.truncated[game]) and not bool(step.terminated[game])
            info["episode"] = {
                "r": float(self._episode_return[game]),
                "l": int(self._episode_length[game]),
                "t": round(time.time() - self._started, 6),
            }
            info["learner_seat"] = seat
            info["final_payoffs"] = step.final_payoffs[game].astype(np.float64)
            if self.opponent_draw == "per_game":
                info["opponent_index"] = int(self.opponent_index[game, 0])
        self._episode_return[game] = 0.0
        self._episode_length[game] = 0
        if self.learner_seat_option == "rotate":
            self.learner_seat[game] = (seat + 1) % self.n_players
        self.opponent_index[game] = self._draw_opponents(1)[0]

    def _draw_opponents(self, n_games: int) -> np.ndarray:
        """``[n_games, n_players]`` pool indices for new games (see ``opponent_draw``)."""
        if self._opponent_sampler is None and self.opponent_draw == "per_seat":
            return self.rng.integers(len(self._pool), size=(n_games, self.n_players))
        n_draws = n_games if self.opponent_draw == "per_game" else n_games * self.n_players
        if self._opponent_sampler is None:
            drawn = self.rng.integers(len(self._pool), size=n_draws)
        else:
            drawn = np.asarray(self._opponent_sampler(self.rng, n_draws))
            if (
                drawn.shape != (n_draws,)
                or not np.issubdtype(drawn.dtype, np.integer)
                or ((drawn < 0) | (drawn >= len(self._pool))).any()
            ):
                raise ValueError(
                    f"opponent_sampler returned {drawn!r:.80} for {n_draws} draws; it must return "
                    f"{n_draws} pool indices in 0..{len(self._pool) - 1}"
                )
        if self.opponent_draw == "per_game":
            return np.repeat(drawn.astype(np.int64)[:, None], self.n_players, axis=1)
        return drawn.astype(np.int64).reshape(n_games, self.n_players)

    def _opponent_actions(self, step, opponent_turn: np.ndarray) -> np.ndarray:
        actions = np.full(self.num_envs, NO_ACTION, dtype=np.int64)
        acting = np.where(opponent_turn, self.opponent_index[self._games, step.to_act], -1)
        for pool_index in np.unique(acting[acting >= 0]):
            games = np.flatnonzero(acting == pool_index)
            chosen = np.asarray(self._pool[pool_index](step.observation[games], step.action_mask[games]))
            if chosen.shape != (games.size,):
                raise ValueError(
                    f"opponent {pool_index} returned actions of shape {chosen.shape} for {games.size} games"
                )
            actions[games] = chosen
        return actions
