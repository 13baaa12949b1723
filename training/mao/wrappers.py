"""Mao's wrappers of the learner's SB3 env, which its spec puts on it (``GameSpec.shape_reward``,
``PolicyFeatures.learner_env``; the RLlib engine's learner env too): the hand-size reward
(``HandSizeReward``) and the belief inputs a Mao belief policy reads beside its observation
(``BeliefObservations``)."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnvWrapper

from madiao_mao.agents.mao.belief_inputs import BELIEF_WIDTH, BeliefTracker


class HandSizeReward(VecEnvWrapper):
    """Mao training: adds ``reward_per_card`` for every card the learner's hand shrinks by (and
    takes it away for every card it grows by) between two of its decisions.

    Drawing is always allowed in Mao and never called, so under penalty rewards alone a policy
    learns that drawing instead of playing is the safe move: it stops calls at once and the cost
    (a longer road to winning) lies far in the future. Counting hand size makes a draw cost what a
    card costs. Over an episode the added rewards sum to ``reward_per_card * (5 - final hand)``:
    they reward shedding cards, not a particular way of doing it. The hand is read from the
    observation (its per-card-type counts), the last one of a game from the terminal observation.
    """

    def __init__(self, venv, reward_per_card: float, hand: slice) -> None:
        super().__init__(venv)
        self.reward_per_card = float(reward_per_card)
        self.hand = hand
        self._held = np.zeros(venv.num_envs, dtype=np.float64)

    def _hand_size(self, observations: np.ndarray) -> np.ndarray:
        return np.asarray(observations)[..., self.hand].sum(axis=-1).astype(np.float64)

    def reset(self) -> np.ndarray:
        observations = self.venv.reset()
        self._held = self._hand_size(observations)
        return observations

    def step_wait(self):
        observations, rewards, dones, infos = self.venv.step_wait()
        now = self._hand_size(observations)
        ended = now.copy()
        for game in np.flatnonzero(dones):
            ended[game] = self._hand_size(infos[game]["terminal_observation"])
        shaped = rewards + self.reward_per_card * (self._held - ended)
        self._held = now
        return observations, shaped.astype(np.float32), dones, infos


class BeliefObservations(VecEnvWrapper):
    """Mao policies that read belief inputs (features "belief", ``madiao_mao.agents.mao.belief_inputs``): the
    learner's observation with its seat's belief inputs appended.

    The wrapper keeps one posterior per game (the learner's seat of it, keyed by the game's row),
    takes every learner observation into it, tells it each learner action, and starts it afresh
    when the game ends, exactly as ``madiao_mao.agents.mao.policy.BeliefPolicyAgent`` does for a seat it plays
    (so the policy reads the same inputs in training as in play). A terminal observation, which
    has no decision, gets zero inputs. ``table_obs_dim`` is the table's observation length (what a
    scripted teacher in the learner's seat reads, ``madiao_mao.training.sb3.imitation``). ``posterior``: the
    table's posterior options (``madiao_mao.agents.mao.players.posterior_options``).
    """

    def __init__(self, venv, posterior: dict | None = None) -> None:
        self.table_obs_dim = int(venv.observation_space.shape[0])
        space = spaces.Box(-np.inf, np.inf, (self.table_obs_dim + BELIEF_WIDTH,), np.float32)
        super().__init__(venv, observation_space=space)
        self.beliefs = BeliefTracker(posterior)
        self._games = np.arange(venv.num_envs)

    def _posteriors(self) -> list:
        return self.beliefs.seat_posteriors(self.num_envs, self._games)

    def _with_beliefs(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self.beliefs.policy_observations(observations, masks, self._posteriors())

    def _masks(self) -> np.ndarray:
        return np.asarray(self.venv.env_method("action_masks"), dtype=bool)

    def reset(self) -> np.ndarray:
        observations = self.venv.reset()
        self.beliefs.reset()
        return self._with_beliefs(observations, self._masks())

    def step_async(self, actions: np.ndarray) -> None:
        self.beliefs.note_actions(self._posteriors(), np.asarray(actions).reshape(-1))
        self.venv.step_async(actions)

    def step_wait(self):
        observations, rewards, dones, infos = self.venv.step_wait()
        ended = np.flatnonzero(dones)
        for game in ended:
            terminal = np.asarray(infos[game]["terminal_observation"], dtype=np.float32)
            infos[game]["terminal_observation"] = np.concatenate(
                [terminal, np.zeros(self.observation_space.shape[0] - terminal.size, dtype=np.float32)]
            )
        self.beliefs.forget(ended)  # the row holds a new game (and a new learner seat) now
        return self._with_beliefs(observations, self._masks()), rewards, dones, infos
