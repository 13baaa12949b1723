"""The card games for Gymnasium: what ``gymnasium.make`` and ``gymnasium.make_vec`` build, and the
batched games as a ``gymnasium.vector.VectorEnv``.

Importing a game's env package (``madiao_env``, ``mao_env``) registers the id of every registered
game (``madiao_mao/Madiao-v0``, ``madiao_mao/Mao-v0``: :mod:`madiao_mao.gymnasium_ids`);
``gymnasium.make("madiao_env:madiao_mao/Madiao-v0")`` imports the package itself. Every id takes the
same keyword options:

- ``opponents``: who plays every other seat: an agent name of :mod:`madiao_mao.agents.registry` (default
  ``"random"``; ``"heuristic"``, ``"model"``, ``"model:PATH"``, ...), an agent object, or a
  callable. Per-seat opponents and pools: build :class:`~cardgame_core.adapters.SingleAgentCardEnv`
  or :class:`LearnerVectorEnv` directly.
- ``learner_seat``: the seat the learner plays (default 0), or ``"rotate"``.
- every option of the game's AEC env (``obs_type``, ``episode``, ``n_players``, ``max_steps``,
  ...), with the same defaults and checks; ``render_mode`` for the single env.

``gymnasium.make(id, ...)`` is the single-agent env (:func:`make_single_env`): one AEC
env, the mask in ``info["action_mask"]``, an illegal action ends the episode
(``illegal_action="terminate"``, ``illegal_reward=-1.0``; ``"raise"`` raises instead).
``gymnasium.make_vec(id, num_envs, ...)`` is, by default, :class:`LearnerVectorEnv` over the
batched env (:func:`make_vector_env`): ``num_envs`` games stepped by
one compiled call, the same learner view, ``copy`` as the batched env's; an illegal learner action
raises :class:`~cardgame_core.aec.IllegalActionError` and changes nothing (the batched games cannot
end one game alone). ``vectorization_mode="sync"`` or ``"async"`` gives Gymnasium's own vector
envs of the single-agent env instead. The batched env's rule options that the AEC env takes per
``reset`` (Mao's ``rules``, ``fixed_rules``, ``rule_pool``) are options of ``make_vec`` only; the
single env takes them as ``reset(options={...})``.

Observations keep each game's dtype in every API (Madiao int8, Mao float32: the AEC env's,
without a cast); masks are int8 in infos, bool from ``action_masks()`` (see
:mod:`cardgame_core.adapters`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from cardgame_core.adapters import SingleAgentCardEnv
from cardgame_core.aec import IllegalActionError
from cardgame_core.vector import VectorCardEnv
from madiao_mao.agents.registry import make_agent
from madiao_mao.games import game_names
from madiao_mao.training.game_spec import game_spec
from madiao_mao.training.learner_games import LearnerGames


class LearnerVectorEnv(gym.vector.VectorEnv):
    """The learner's side of a batched card game as a Gymnasium ``VectorEnv``.

    Each of the ``num_envs`` games has one learner seat; opponents play the other seats inside
    ``step``, and the learner gets its own seat's reward since its previous decision, terminal
    rewards included (:class:`madiao_mao.training.learner_games.LearnerGames`, shared with the SB3 adapter).

    Args:
        vector_env: the batched game env (``MadiaoVectorEnv``, ``MaoVectorEnv``); build it with
            ``copy=False``: this env copies what it returns (see ``copy``).
        opponents: one batched opponent (``act_batch(observations, masks) -> actions`` or such a
            callable) for every other seat, or a pool of them drawn per seat (or per game, see
            ``opponent_draw``) at the start of every game.
        learner_seat: the learner's seat in every game (default 0), or ``"rotate"`` (game ``i``
            starts with seat ``i % n_players`` and moves on one seat per finished game).
        opponent_draw, opponent_sampler: how pool entries are drawn (``LearnerGames``).
        observation_space: the space of one observation (what the game's AEC env declares; the
            registered ids pass it); default: a Box over the whole range of the observation dtype.
        copy: ``True`` (default) returns fresh arrays; ``False`` returns the env's own buffers
            (observations, masks), overwritten by the next ``step``.

    Contract: ``reset(seed=None)`` -> ``(observations [N, obs_dim], infos)``; ``step(actions)`` ->
    ``(observations, rewards float64 [N], terminated [N], truncated [N], infos)``. ``actions``:
    one action id per game, as a numpy array, list or torch tensor of integers (any device); a
    wrong type, shape, an id out of range or one the mask forbids raises (``TypeError``,
    ``ValueError``, :class:`~cardgame_core.aec.IllegalActionError` naming the game, the action as
    text and the legal ones) and changes nothing. ``infos["action_mask"]`` (int8 ``[N,
    n_actions]``) and ``infos["learner_seat"]`` (int64 ``[N]``) come with every reset and step,
    each with its ``_key`` mask (all True), as Gymnasium's vector envs give infos.

    Autoreset: ``metadata["autoreset_mode"]`` is ``AutoresetMode.SAME_STEP``: a game whose
    learner episode ends in a step is dealt again in that step, so the observation and mask
    returned are the new episode's first decision (after the opponents moved up to it), and
    ``infos["final_obs"]`` holds the learner's last observation of the ended one (an object array,
    as Gymnasium's own vector envs give it: an observation where ``infos["_final_obs"]``, None
    elsewhere), with ``infos["final_info"]`` (its
    ``learner_seat``, ``final_payoffs`` of every seat, and an all-zero ``action_mask``: nothing is
    legal in a finished episode). Every game waits for its learner after every call, so there is
    never a step whose action is ignored.
    """

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        vector_env: VectorCardEnv,
        opponents: Any | Sequence[Any],
        *,
        learner_seat: int | str = 0,
        opponent_draw: str = "per_seat",
        opponent_sampler: Callable[[np.random.Generator, int], Any] | None = None,
        observation_space: gym.spaces.Box | None = None,
        copy: bool = True,
    ) -> None:
        if not isinstance(copy, bool):
            raise TypeError(f"copy must be a bool, got {type(copy).__name__} {copy!r}")
        self.games = LearnerGames(
            vector_env,
            opponents,
            learner_seat=learner_seat,
            opponent_draw=opponent_draw,
            opponent_sampler=opponent_sampler,
        )
        self.vector_env = vector_env
        self.copy = copy
        self.num_envs = int(vector_env.n_envs)
        self.n_actions = int(vector_env.n_actions)
        shape, dtype = (int(vector_env.obs_dim),), np.dtype(vector_env.observation_dtype)
        if observation_space is None:
            limits = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype)
            observation_space = gym.spaces.Box(limits.min, limits.max, shape, dtype)
        elif observation_space.shape != shape or observation_space.dtype != dtype:
            raise ValueError(
                f"observation_space must have shape {shape} and dtype {dtype} (the batched env's), got "
                f"{observation_space.shape} {observation_space.dtype}"
            )
        self.single_observation_space = observation_space
        self.single_action_space = gym.spaces.Discrete(self.n_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._has_reset = False
        self._no_action = np.zeros(self.n_actions, dtype=np.int8)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Deal every game anew; ``seed`` (an int) fixes the deals, the opponents' draws and the
        opponents' own randomness. Gymnasium's per-env seed lists and reset options do not apply:
        the games' seeds are drawn from the one seed, and game options are constructor options."""
        if options is not None:
            raise ValueError(
                f"{type(self).__name__}.reset takes no options (the game options are given when the env "
                f"is made), got {options!r}"
            )
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise TypeError(f"seed must be an int or None, got {type(seed).__name__} {seed!r}")
        self.games.restart(None if seed is None else int(seed))
        self._has_reset = True
        return self._observations(), self._infos()

    def step(self, actions: Any):
        if not self._has_reset:
            raise RuntimeError("call reset() before step()")
        self.games.play_learner_step(self._checked_actions(actions))
        games = self.games
        dones = games.step_dones
        truncated = dones & games.ended_truncated
        infos = self._infos()
        if dones.any():
            self._add_final_infos(infos)
        return self._observations(), games.step_rewards.copy(), dones & ~truncated, truncated, infos

    def action_masks(self) -> np.ndarray:
        """``[num_envs, n_actions]`` bool: the learner's legal actions in every game (a copy)."""
        if not self._has_reset:
            raise RuntimeError("call reset() before action_masks()")
        return self.games.current.action_mask.copy()

    def close(self, **kwargs: Any) -> None:
        self.vector_env.close()
        self.closed = True

    # -- helpers ------------------------------------------------------------------------------
    def _checked_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as the int64 ``[N]`` array the batched env takes, or the error that names
        what is wrong (legality is checked by the batched env, before any game changes)."""
        if (
            isinstance(actions, np.ndarray)
            and actions.dtype == np.int64
            and actions.shape == (self.num_envs,)
            and actions.flags.c_contiguous
            and actions.min() >= 0
        ):
            return actions  # the usual case, in one pass; the batched env checks range and mask
        if not isinstance(actions, np.ndarray) and callable(getattr(actions, "detach", None)):
            actions = actions.detach().cpu().numpy()  # a torch tensor, on whatever device
        actions = np.asarray(actions)
        if actions.dtype.kind not in "iu":
            raise TypeError(
                f"actions must be integer action ids (a numpy array, list or tensor), got dtype "
                f"{actions.dtype}"
            )
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), one per game, got {actions.shape}")
        # Checked before the cast (a uint64 of 2**64 - 1 must not wrap to -1, "skip this game"):
        # every game waits for its learner, none may be skipped.
        too_low = False if actions.dtype.kind == "u" else actions < 0
        out_of_range = np.flatnonzero(too_low | (actions >= self.n_actions))
        if out_of_range.size:
            game = int(out_of_range[0])
            raise IllegalActionError(
                f"game {game}: action {int(actions[game])} is out of range 0..{self.n_actions - 1}"
            )
        return np.ascontiguousarray(actions, dtype=np.int64)

    def _observations(self) -> np.ndarray:
        observation = self.games.current.observation
        return observation.copy() if self.copy else observation

    def _infos(self) -> dict[str, Any]:
        mask = self.games.current.action_mask.view(np.int8)  # 0/1 bytes: a view, no conversion
        everyone = np.ones(self.num_envs, dtype=bool)
        return {
            "action_mask": mask.copy() if self.copy else mask,
            "_action_mask": everyone,
            "learner_seat": self.games.learner_seat.copy(),
            "_learner_seat": everyone.copy(),
        }

    def _add_final_infos(self, infos: dict[str, Any]) -> None:
        games = self.games
        dones = games.step_dones.copy()
        ended = np.flatnonzero(dones)
        # As Gymnasium's own vector envs give it: one array per ended game, None for the others
        # (rows of one small copy, handed over through a 1-d object array so that numpy sets
        # each as one element).
        final_obs = np.empty(self.num_envs, dtype=object)
        rows = np.empty(ended.size, dtype=object)
        rows[:] = list(games.ended_observation[ended])
        final_obs[ended] = rows
        seats = np.zeros(self.num_envs, dtype=np.int64)
        seats[ended] = games.ended_seat[ended]
        payoffs = np.zeros((self.num_envs, games.n_players))
        payoffs[ended] = games.ended_payoffs[ended]
        final_info: dict[str, Any] = {
            "learner_seat": seats,
            "_learner_seat": dones,
            "final_payoffs": payoffs,
            "_final_payoffs": dones,
            # Nothing is legal in a finished episode: a read-only view of one row of zeros.
            "action_mask": np.broadcast_to(self._no_action, (self.num_envs, self.n_actions)),
            "_action_mask": dones,
        }
        if games.opponent_draw == "per_game":
            opponents = np.full(self.num_envs, -1, dtype=np.int64)
            opponents[ended] = games.ended_opponent[ended]
            final_info["opponent_index"] = opponents
            final_info["_opponent_index"] = dones
        infos.update(final_obs=final_obs, _final_obs=dones, final_info=final_info, _final_info=dones)


# -- what the registered ids build ---------------------------------------------------------------
def _game_envs(game: str) -> tuple[Callable[..., Any], type[VectorCardEnv]]:
    """The game's bare AEC env and its batched env (its spec's ``table_envs()``)."""
    return game_spec(game).table_envs()


def _opponent(opponents: Any, game: str, table: Any) -> Any:
    """The opponent the options name: an agent of :mod:`madiao_mao.agents.registry` by name (``table``: the
    AEC env, for the agents that read it), or the agent or callable given."""
    if isinstance(opponents, str):
        return make_agent(opponents, game, env=table)
    if isinstance(opponents, (list, tuple)):
        raise TypeError(
            "opponents must be one agent name, agent or callable for every other seat; for one per "
            "seat or a pool, build SingleAgentCardEnv or LearnerVectorEnv directly"
        )
    return opponents


def _single_env(
    game: str,
    opponents: Any,
    learner_seat: int | str,
    illegal_action: str,
    illegal_reward: float,
    render_mode: str | None,
    options: dict[str, Any],
) -> SingleAgentCardEnv:
    raw_env, _ = _game_envs(game)
    table = raw_env(render_mode=render_mode, **options)
    return SingleAgentCardEnv(
        table,
        _opponent(opponents, game, table),
        learner_seat=learner_seat,
        illegal_action=illegal_action,
        illegal_reward=illegal_reward,
    )


def _vector_env(
    game: str,
    num_envs: int,
    opponents: Any,
    learner_seat: int | str,
    illegal_action: str,
    copy: bool,
    options: dict[str, Any],
) -> LearnerVectorEnv:
    if illegal_action != "raise":
        raise ValueError(
            f"the batched VectorEnv refuses an illegal action (it raises IllegalActionError and changes "
            f"nothing): illegal_action='raise' is its only mode, got {illegal_action!r}; for "
            "'terminate' use gymnasium.make_vec(..., vectorization_mode='sync')"
        )
    raw_env, vector_class = _game_envs(game)
    batched = vector_class(num_envs, copy=False, **options)
    # The single observation's space is the AEC env's (bounds included): one definition for both.
    table = raw_env(**batched.env_kwargs)
    space = table.observation_space(table.possible_agents[0])["observation"]
    return LearnerVectorEnv(
        batched,
        _opponent(opponents, game, None),
        learner_seat=learner_seat,
        observation_space=space,
        copy=copy,
    )


def make_single_env(
    *,
    game: str,
    opponents: Any = "random",
    learner_seat: int | str = 0,
    illegal_action: str = "terminate",
    illegal_reward: float = -1.0,
    render_mode: str | None = None,
    **options: Any,
) -> SingleAgentCardEnv:
    """``gymnasium.make(gymnasium_id(game), ...)`` (``make_<game>``): one table of ``game``, the learner at
    ``learner_seat``, ``opponents`` at the others; ``options``: the game's AEC env's (Madiao:
    ``obs_type``, ``episode``, ``stake``, ``max_redeals``, ``face_up_discard``; Mao: ``n_players``,
    ``max_steps``, ``talking``, ..., :class:`mao_env.options.MaoOptions`). See the module docstring."""
    return _single_env(game, opponents, learner_seat, illegal_action, illegal_reward, render_mode, options)


def make_vector_env(
    num_envs: int = 1,
    *,
    game: str,
    opponents: Any = "random",
    learner_seat: int | str = 0,
    illegal_action: str = "raise",
    copy: bool = True,
    **options: Any,
) -> LearnerVectorEnv:
    """``gymnasium.make_vec(gymnasium_id(game), num_envs, ...)`` (``make_<game>_vector``): ``num_envs``
    batched games as a :class:`LearnerVectorEnv`; ``options``: those of :func:`make_single_env`, plus
    the batched env's own (Mao's ``rules``, ``fixed_rules``, ``rule_pool`` and ``pool_draws``:
    :mod:`mao_env.vector`)."""
    return _vector_env(game, num_envs, opponents, learner_seat, illegal_action, copy, options)


def __getattr__(name: str) -> Callable[..., Any]:
    """``make_<game>`` (:func:`make_single_env`) and ``make_<game>_vector`` (:func:`make_vector_env`)
    of every registered game: the entry points of its Gymnasium id (``madiao_mao.gymnasium_ids``)."""
    game, vector = name.removeprefix("make_"), name.endswith("_vector")
    game = game.removesuffix("_vector") if vector else game
    if not name.startswith("make_") or game not in game_names():
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return partial(make_vector_env if vector else make_single_env, game=game)
