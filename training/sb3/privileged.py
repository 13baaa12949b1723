"""Train with what the table hides, play with what the seat sees: the privileged critic and oracle
guiding (``TrainConfig.privileged_critic``, ``TrainConfig.oracle_guiding_steps``).

The other seats' plays tell little about the hidden cards, so a value network that reads only the
seat's view learns slowly. With the privileged critic, the learner's observation is the seat's own
observation followed by the privileged vector of its seat (every hand, the stock, the face-down
cards: the batched env's ``privileged_observation``), ``[seat observation | privileged]``
(:class:`PrivilegedObservations`). The policy (:class:`PrivilegedCriticPolicy`) has separate
features extractors: the critic reads both parts, the actor reads the seat's part only (the
privileged part reaches it multiplied by the oracle factor, 0 unless oracle guiding is on). This
is PerfectDou's "perfect-training, imperfect-execution"; the critic reads the seat's observation
(which carries the game's history) as well as the state because a critic of the state alone can
bias the policy gradient, one of history and state cannot (Baisero & Amato, AAMAS 2022).
Oracle guiding without the privileged critic (``oracle_guiding_steps`` alone) uses the same
policy with a critic whose privileged part reads zeros (``critic_reads_privileged=False``).

Oracle guiding (Suphx): the actor also reads the privileged vector, multiplied by a factor that
fades linearly from 1 at step 0 to 0 at ``oracle_guiding_steps`` learner steps and stays 0
(:func:`oracle_factor`, a function of the step count, set at the start of every rollout so that
the rollout and its update see the same policy; a resumed run picks it up from its step count).

Play uses the actor alone: :func:`actor_only` makes the plain MaskablePPO model of the seat's
observation (the actor's weights on the privileged columns, which read zeros once the fade is
over, are dropped; the value head keeps only its seat columns and is not used in play), which a
run saves as ``final_model.zip`` and ``export_policy`` writes. Checkpoints keep the whole model
for resume. Snapshot opponents and the live policy as an opponent or under evaluation are handed
the seat's observation only (``table_obs_dim``): their privileged part reads as zeros.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, FlattenExtractor
from stable_baselines3.common.vec_env import VecEnvWrapper


def oracle_factor(steps: int, fade_steps: int) -> float:
    """The weight of the privileged inputs in the actor at learner step ``steps``: 1 at step 0,
    linearly down to 0 at ``fade_steps``, then 0 (always 0 when ``fade_steps`` is 0: no oracle)."""
    if fade_steps <= 0:
        return 0.0
    return max(0.0, 1.0 - steps / fade_steps)


class PrivilegedInputs(BaseFeaturesExtractor):
    """Features of ``[seat observation | privileged]`` rows: the seat features extractor's output
    (``seat_features_class``, on the first ``table_obs_dim`` columns) followed by the privileged
    columns, whole for the critic (``critic=True``; zeros instead with
    ``critic_reads_privileged=False``: oracle guiding without a privileged critic), times
    ``oracle_factor`` for the actor (zeros while it is 0, so nothing hidden reaches the actor).
    Rows of the seat's observation alone (an opponent, an evaluation) get zeros for the
    privileged part."""

    def __init__(
        self,
        observation_space: spaces.Box,
        *,
        table_obs_dim: int,
        privileged_dim: int,
        oracle_guiding_steps: int = 0,
        seat_features_class: type[BaseFeaturesExtractor] = FlattenExtractor,
        seat_features_kwargs: dict[str, Any] | None = None,
        critic: bool = False,
        critic_reads_privileged: bool = True,
    ) -> None:
        seat_space = seat_observation_space(table_obs_dim)
        seat_features = seat_features_class(seat_space, **(seat_features_kwargs or {}))
        super().__init__(observation_space, seat_features.features_dim + privileged_dim)
        if int(np.prod(observation_space.shape)) != table_obs_dim + privileged_dim:
            raise ValueError(
                f"observations of length {observation_space.shape} are not a seat observation of "
                f"{table_obs_dim} and a privileged vector of {privileged_dim}"
            )
        self.seat_features = seat_features
        self.table_obs_dim = table_obs_dim
        self.privileged_dim = privileged_dim
        self.oracle_guiding_steps = oracle_guiding_steps
        self.critic = critic
        # The default keeps the checkpoints saved before this option loading as they were trained.
        self.reads_privileged = critic_reads_privileged if critic else False
        #: The actor's weight on the privileged columns (``oracle_factor`` of the step count).
        self.oracle_factor = 0.0

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        features = self.seat_features(observations[:, : self.table_obs_dim])
        has_privileged = observations.shape[1] > self.table_obs_dim
        if has_privileged and self.reads_privileged:
            privileged = observations[:, self.table_obs_dim :]
        elif has_privileged and self.oracle_factor > 0:
            privileged = observations[:, self.table_obs_dim :] * self.oracle_factor
        else:
            privileged = features.new_zeros(features.shape[0], self.privileged_dim)
        return torch.cat((features, privileged), dim=1)


def seat_observation_space(table_obs_dim: int) -> spaces.Box:
    """The observation space of a seat's own observation (what a model for play reads)."""
    return spaces.Box(-np.inf, np.inf, (table_obs_dim,), np.float32)


class PrivilegedCriticPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's actor-critic with a features extractor each for the actor and the critic
    (:class:`PrivilegedInputs`): the critic reads the privileged columns, the actor the seat's
    observation (and the privileged columns times the oracle factor).

    A game's policy that reads more than the MLP policy (Mao's belief policy) has a privileged
    variant of its own, a subclass of this one and of it (``PolicyFeatures.privileged_policy``),
    naming the policy its actor plays as (``plain_policy_class``)."""

    #: The policy class of the actor alone (:func:`actor_only`).
    plain_policy_class: type[MaskableActorCriticPolicy] = MaskableActorCriticPolicy

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["share_features_extractor"] = False
        super().__init__(*args, **kwargs)
        #: The length of the observations an agent playing this policy is handed (its seat's).
        self.table_obs_dim = self.pi_features_extractor.table_obs_dim

    def make_features_extractor(self) -> BaseFeaturesExtractor:
        # SB3 makes the actor's extractor first (``features_extractor``), the critic's second.
        critic = "features_extractor" in self._modules
        return self.features_extractor_class(
            self.observation_space, critic=critic, **self.features_extractor_kwargs
        )

    @property
    def oracle_guiding_steps(self) -> int:
        return int(self.pi_features_extractor.oracle_guiding_steps)

    def set_oracle_factor_at(self, steps: int) -> float:
        """Set the actor's weight on the privileged columns for learner step ``steps``; returns it."""
        factor = oracle_factor(steps, self.oracle_guiding_steps)
        self.pi_features_extractor.oracle_factor = factor
        return factor


def is_privileged(model_or_policy: Any) -> bool:
    """Whether a MaskablePPO model (or its policy) is one with a privileged critic."""
    policy = getattr(model_or_policy, "policy", model_or_policy)
    return isinstance(policy, PrivilegedCriticPolicy)


def privileged_policy(
    base_policy: Any,
    base_kwargs: dict[str, Any],
    *,
    table_obs_dim: int,
    privileged_dim: int,
    oracle_guiding_steps: int,
    critic_reads_privileged: bool = True,
    privileged_class: type[PrivilegedCriticPolicy] | None = None,
) -> tuple[type, dict[str, Any]]:
    """The policy class and options of a privileged-critic run whose seat features are those of
    ``base_policy`` with ``base_kwargs``: :class:`PrivilegedCriticPolicy` for the MLP policy
    (``"MlpPolicy"``), ``privileged_class`` for another policy (its privileged variant, whose
    ``plain_policy_class`` is ``base_policy``); another policy without one is a ValueError.
    ``table_obs_dim``: the length of the seat's part of the observation (what the actor reads);
    ``critic_reads_privileged=False``: the critic reads the seat's part alone (oracle guiding
    without a privileged critic)."""
    if privileged_class is None:
        if base_policy not in ("MlpPolicy", MaskableActorCriticPolicy):
            name = getattr(base_policy, "__name__", base_policy)
            raise ValueError(f"privileged_critic works with the MLP policy's features, not with {name}")
        privileged_class = PrivilegedCriticPolicy
    elif privileged_class.plain_policy_class is not base_policy:
        base_name = getattr(base_policy, "__name__", base_policy)
        raise ValueError(
            f"{privileged_class.__name__} is the privileged variant of "
            f"{privileged_class.plain_policy_class.__name__}, not of {base_name}"
        )
    seat_features = base_kwargs.get(
        "features_extractor_class", getattr(base_policy, "features_class", FlattenExtractor)
    )
    extra = {key: value for key, value in base_kwargs.items() if not key.startswith("features_extractor")}
    features_kwargs = {
        "table_obs_dim": table_obs_dim,
        "privileged_dim": privileged_dim,
        "oracle_guiding_steps": oracle_guiding_steps,
        "critic_reads_privileged": critic_reads_privileged,
        "seat_features_class": seat_features,
        "seat_features_kwargs": dict(base_kwargs.get("features_extractor_kwargs", {})),
    }
    return privileged_class, {
        **extra,
        "features_extractor_class": PrivilegedInputs,
        "features_extractor_kwargs": features_kwargs,
    }


class PrivilegedObservations(VecEnvWrapper):
    """The learner's observations with its seat's privileged vector appended,
    ``[seat observation | privileged]``, both of the same moment (the learner seat of each game is
    the inner view's ``learner_seat``, the seat whose decision is the current one).

    The terminal observation of a game that ended (read only to bootstrap a game cut short) gets
    the privileged vector of the learner's last decision in it: the batched env has already dealt
    the next game when the learner view sees the end. ``seat_obs_dim`` is the length of the seat's
    part (what the actor reads: the observation ``venv`` gives, belief inputs included where a
    wrapper appends them); ``table_obs_dim`` the table's observation within it (what a scripted
    teacher in the learner's seat reads, ``madiao_mao.training.sb3.imitation``)."""

    def __init__(self, venv, vector_env) -> None:
        privileged_dim = getattr(vector_env, "privileged_dim", None)
        if privileged_dim is None:
            raise ValueError(f"{type(vector_env).__name__} offers no privileged observation for a critic")
        self.seat_obs_dim = int(venv.observation_space.shape[0])
        self.table_obs_dim = int(getattr(venv, "table_obs_dim", self.seat_obs_dim))
        self.privileged_dim = int(privileged_dim)
        space = spaces.Box(-np.inf, np.inf, (self.seat_obs_dim + self.privileged_dim,), np.float32)
        super().__init__(venv, observation_space=space)
        self.vector_env = vector_env
        self._privileged = np.zeros((venv.num_envs, self.privileged_dim), dtype=np.float32)

    def _with_privileged(self, observations: np.ndarray) -> np.ndarray:
        seats = np.asarray(self.venv.get_attr("learner_seat")[0], dtype=np.int64)
        self._privileged = np.asarray(self.vector_env.privileged_observation(seats), dtype=np.float32)
        return np.concatenate((np.asarray(observations, dtype=np.float32), self._privileged), axis=1)

    def reset(self) -> np.ndarray:
        return self._with_privileged(self.venv.reset())

    def step_wait(self):
        observations, rewards, dones, infos = self.venv.step_wait()
        for game in np.flatnonzero(dones):
            terminal = np.asarray(infos[game]["terminal_observation"], dtype=np.float32)
            infos[game]["terminal_observation"] = np.concatenate((terminal, self._privileged[game]))
        return self._with_privileged(observations), rewards, dones, infos


def actor_only(model):
    """The model for play of a privileged-critic ``model``: a plain MaskablePPO model (the policy's
    ``plain_policy_class``, its own seat features) whose observation space is the seat's
    observation, with the actor's weights, and the critic's on the seat columns only (a value head
    that is not used in play). ``model`` itself is left as it was. An actor that still reads the
    privileged columns (oracle guiding not faded out at the model's step) is a ValueError."""
    policy = model.policy
    if not is_privileged(policy):
        raise ValueError("actor_only needs a model trained with privileged_critic")
    steps = int(model.num_timesteps)
    factor = oracle_factor(steps, policy.oracle_guiding_steps)
    if factor > 0:
        raise ValueError(
            f"this model's actor still reads the hidden cards: oracle guiding fades out at learner "
            f"step {policy.oracle_guiding_steps}, the model is at step {steps} (factor {factor:.3f}); "
            "train it to the end of the fade before saving it for play"
        )
    actor_features = policy.pi_features_extractor
    kwargs = dict(model.policy_kwargs)
    features_kwargs = kwargs.pop("features_extractor_kwargs")
    kwargs.pop("features_extractor_class")
    kwargs.pop("share_features_extractor", None)
    kwargs["features_extractor_class"] = features_kwargs["seat_features_class"]
    kwargs["features_extractor_kwargs"] = dict(features_kwargs["seat_features_kwargs"])
    kwargs["share_features_extractor"] = False
    seat_space = seat_observation_space(actor_features.table_obs_dim)
    plain_class = type(policy).plain_policy_class
    plain = plain_class(seat_space, model.action_space, model.lr_schedule, **kwargs)
    seat_width = actor_features.seat_features.features_dim
    state = {}
    for name, value in policy.state_dict().items():
        if name.startswith(("features_extractor.", "pi_features_extractor.", "vf_features_extractor.")):
            prefix, rest = name.split(".", 1)
            # The seat features extractor inside PrivilegedInputs becomes the extractor itself.
            state[f"{prefix}.{rest.removeprefix('seat_features.')}"] = value
        else:
            state[name] = value
    # The first layer of each MLP reads [seat features | privileged]: keep the seat's columns.
    first_layers = [
        name
        for name in state
        if name.startswith("mlp_extractor.") and name.endswith(("policy_net.0.weight", "value_net.0.weight"))
    ]
    for first in first_layers:
        state[first] = state[first][:, :seat_width].clone()
    plain.load_state_dict(state)
    # A shallow copy whose parts for play replace the training model's (nothing is changed in place).
    exported = copy.copy(model)
    exported.policy = plain
    exported.policy_class = plain_class
    exported.policy_kwargs = kwargs
    exported.observation_space = seat_space
    exported.env = None
    exported.rollout_buffer = None
    exported._last_obs = None
    return exported
