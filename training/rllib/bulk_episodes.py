"""RLlib episodes built in bulk from the arrays of a sampling call (``CardGameEnvRunner``'s sampler).

RLlib's generic sampling loop keeps one ``SingleAgentEpisode`` per game and appends every step to
it game by game (``add_env_step``), then runs its env-to-module connectors over those episodes to
batch the next observations again: per game and per step Python, most of a runner's sampling time
with hundreds of games (cProfile). The runner's sampler instead records each step of ALL games as
one row of arrays (``StepArrays``) and builds the episodes here, once per sampling call, from whole
slices: one ``SingleAgentEpisode(observations=..., actions=..., ...)`` per game segment.

The episodes are the ones RLlib's loop would have returned, field for field (the tests compare
both): a segment is what one game played within the call, ended by its game's end (a done
episode) or by the end of the call (an ongoing chunk, continued by the next call under the same
id with ``t_started`` advanced and its last step kept as a one-step lookback buffer, as
``SingleAgentEpisode.cut(len_lookback_buffer=1)`` does); done episodes come first in the order
their games ended (step, then game), then the ongoing chunks in game order.

Gymnasium's next-step autoreset is read from the flags: the step after a game's end returns the
new game's first observation and steps nothing (the "waiting" games, whose sampled action the env
ignores), so that step is the first observation of the game's next episode.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import numpy as np
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.utils.metrics import WEIGHTS_SEQ_NO

from madiao_mao.training.rllib.module import MASK_KEY, OBS_KEY

#: The module outputs kept per step in the episodes (what PPO's learner connectors read).
EXTRA_OUTPUTS = (Columns.ACTION_LOGP, Columns.ACTION_DIST_INPUTS)


@dataclasses.dataclass
class GameCarry:
    """What a runner's games carry from one sampling call to the next.

    ``observations``/``masks``: the last observation of every game (the next forward pass's input);
    ``waiting``: the game ended at the last step (its next step returns the new game's first
    observation); per game, the id and start timestep of its ongoing episode and the one-step
    lookback of its next chunk (None: the chunk starts with its game)."""

    observations: np.ndarray
    masks: np.ndarray
    waiting: np.ndarray
    episode_ids: list[str]
    t_started: np.ndarray
    lookback: list[dict[str, Any] | None]

    @classmethod
    def after_reset(cls, observations: np.ndarray, masks: np.ndarray) -> GameCarry:
        """Every game at its first observation, in a new episode."""
        n_games = int(observations.shape[0])
        return cls(
            observations=observations,
            masks=masks,
            waiting=np.zeros(n_games, dtype=bool),
            episode_ids=[uuid.uuid4().hex for _ in range(n_games)],
            t_started=np.zeros(n_games, dtype=np.int64),
            lookback=[None] * n_games,
        )


class StepArrays:
    """The steps of one sampling call, one row per step for all games (``record``), turned into
    game-major arrays by ``stack``."""

    def __init__(self, carry: GameCarry) -> None:
        self.observations = [carry.observations]
        self.masks = [carry.masks]
        self.waiting = [carry.waiting]
        self.actions: list[np.ndarray] = []
        self.rewards: list[np.ndarray] = []
        self.truncated: list[np.ndarray] = []
        self.extra: dict[str, list[np.ndarray]] = {key: [] for key in EXTRA_OUTPUTS}

    def record(
        self,
        actions: np.ndarray,
        extra: dict[str, np.ndarray],
        observations: np.ndarray,
        masks: np.ndarray,
        rewards: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
    ) -> None:
        """One step of every game: the actions sent and the module's outputs for them, then what
        the env returned."""
        self.actions.append(actions)
        for key in EXTRA_OUTPUTS:
            self.extra[key].append(extra[key])
        self.observations.append(observations)
        self.masks.append(masks)
        self.rewards.append(rewards)
        self.truncated.append(truncated)
        self.waiting.append(terminated | truncated)

    @property
    def n_steps(self) -> int:
        return len(self.actions)


def _game_major(rows: list[np.ndarray]) -> np.ndarray:
    """Per-step rows (n_games, ...) as one contiguous (n_games, n_rows, ...) array (one copy), so
    that a game's slices are contiguous."""
    return np.stack(rows, axis=1)


def build_episodes(
    steps: StepArrays,
    carry: GameCarry,
    *,
    weights_seq_no: int,
    observation_space: Any,
    action_space: Any,
) -> tuple[list[SingleAgentEpisode], list[SingleAgentEpisode], GameCarry]:
    """The done episodes and ongoing chunks of a sampling call (module doc), and what the games
    carry to the next call. ``steps`` started from ``carry``."""
    n_steps = steps.n_steps
    observations = _game_major(steps.observations)  # (games, n_steps + 1, obs_dim)
    masks = _game_major(steps.masks)
    waiting = np.stack(steps.waiting)  # (n_steps + 1, games): waiting[s]: before step s
    if n_steps:
        actions = _game_major(steps.actions)
        rewards = _game_major(steps.rewards)
        extra = {key: _game_major(rows) for key, rows in steps.extra.items()}
    n_games = observations.shape[0]
    seq_no = np.int64(weights_seq_no)
    done: list[tuple[int, int, SingleAgentEpisode]] = []
    ongoing: list[SingleAgentEpisode] = []
    next_ids = list(carry.episode_ids)
    next_t = carry.t_started.copy()
    next_lookback: list[dict[str, Any] | None] = list(carry.lookback)

    def segment(game: int, first: int, last: int, *, continued: bool, ended: bool, truncated: bool):
        """Game ``game``'s observations ``first..last`` and the steps between them."""
        lookback = carry.lookback[game] if continued else None
        n_back = 0 if lookback is None else 1
        obs = {
            OBS_KEY: observations[game, first : last + 1],
            MASK_KEY: masks[game, first : last + 1],
        }
        act = actions[game, first:last] if n_steps else np.zeros(0, dtype=np.int64)
        rew = rewards[game, first:last] if n_steps else np.zeros(0, dtype=np.float32)
        outputs = {key: values[game, first:last] for key, values in extra.items()} if n_steps else {}
        seq = np.full(last - first, seq_no)
        if lookback is not None:
            obs = {key: np.concatenate([lookback["obs"][key][None], value]) for key, value in obs.items()}
            act = np.concatenate([[lookback["action"]], act])
            rew = np.concatenate([[lookback["reward"]], rew])
            outputs = {key: np.concatenate([lookback[key][None], value]) for key, value in outputs.items()}
            seq = np.concatenate([[lookback[WEIGHTS_SEQ_NO]], seq])
        # A game reset at the call's last step has no step yet (RLlib's empty buffers).
        outputs = {} if last == first and lookback is None else {**outputs, WEIGHTS_SEQ_NO: seq}
        episode = SingleAgentEpisode(
            id_=carry.episode_ids[game] if continued else uuid.uuid4().hex,
            observations=obs,
            observation_space=observation_space,
            infos=InfiniteLookbackBuffer([{} for _ in range(last - first + 1 + n_back)], lookback=n_back),
            actions=act,
            action_space=action_space,
            rewards=rew,
            extra_model_outputs=outputs,
            terminated=ended and not truncated,
            truncated=ended and truncated,
            t_started=int(carry.t_started[game]) if continued else 0,
            len_lookback_buffer=n_back,
        )
        return episode

    for game in range(n_games):
        ends = np.flatnonzero(waiting[1:, game])  # steps at which the game ended
        # The first observation of the call's first segment: the carried one, unless the game
        # ended at the previous call's last step (then step 0 brings its next game's first).
        continued = not bool(waiting[0, game])
        first = 0 if continued else 1
        for end in ends:
            step_truncated = bool(steps.truncated[end][game])
            episode = segment(game, first, end + 1, continued=continued, ended=True, truncated=step_truncated)
            done.append((int(end), game, episode))
            continued, first = False, int(end) + 2
        if first > n_steps:
            # Ended at the last step: the next call's first step brings the next game.
            next_ids[game], next_t[game], next_lookback[game] = uuid.uuid4().hex, 0, None
            continue
        chunk = segment(game, first, n_steps, continued=continued, ended=False, truncated=False)
        next_ids[game] = chunk.id_
        next_t[game] = chunk.t
        if first < n_steps:
            ongoing.append(chunk)
            last_step = n_steps - 1
            next_lookback[game] = {
                "obs": {OBS_KEY: observations[game, last_step], MASK_KEY: masks[game, last_step]},
                "action": actions[game, last_step],
                "reward": rewards[game, last_step],
                WEIGHTS_SEQ_NO: seq_no,
                **{key: values[game, last_step] for key, values in extra.items()},
            }
        elif not continued:
            # Reset at the last step: a new episode of no step, continued by the next call.
            next_lookback[game] = None
    done.sort(key=lambda item: (item[0], item[1]))
    next_carry = GameCarry(
        observations=steps.observations[-1],
        masks=steps.masks[-1],
        waiting=steps.waiting[-1],
        episode_ids=next_ids,
        t_started=next_t,
        lookback=next_lookback,
    )
    return [episode for _, _, episode in done], ongoing, next_carry
