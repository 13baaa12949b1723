"""The fast engine's PPO, CleanRL-style: storage allocated once, actions sampled on the device,
GAE vectorised over games, minibatches by index permutation, no distribution objects.

It trains an SB3 ``MaskableActorCriticPolicy`` in place (the network the SB3 engine builds, so a
run's saved model is a MaskablePPO zip that loads wherever models load) with the loss SB3's
``MaskablePPO.train`` computes: the clipped surrogate on advantages normalised per minibatch, the
value loss without clipping, the entropy of the masked distribution, and the gradient norm
clipped to ``max_grad_norm``. What makes it fast is what it leaves out: no ``MaskableCategorical``
per call (the mask is applied to the logits once, a log-softmax gives log-probabilities and
entropy), no per-step tensor conversions (observations and masks are written into storage the
policy reads in place), statistics summed on the device, read once per update, and, for the
common network (plain MLPs over features with nothing to learn), a backward pass written out
(``HandBackward``) in place of autograd's, with first layers over only the non-zero entries of
sparse features (``madiao_mao.training.fast.sparse_features``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from madiao_mao.agents.torch_mlp import (
    Layers,
    NonzeroEntries,
    SparseFirstLayer,
    activate_rounded_,
    actor_layers,
    critic_layers,
    mlp_outputs,
    sparse_mlp_output,
)
from madiao_mao.training.fast.sparse_features import SparseMinibatch, SparseRows, weights_by_column

#: The logit of an illegal action: what sb3-contrib's ``MaskableCategorical`` puts there, so the
#: probabilities, log-probabilities and entropies are the SB3 engine's.
MASKED_LOGIT = -1e8


def logits_and_values(policy, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The action logits and state values of ``observations`` through an SB3 actor-critic
    ``policy`` (its features extractor, MLP extractor, action and value heads), one pass."""
    return logits_and_values_of_features(policy, policy.extract_features(observations))


def logits_and_values_of_features(policy, features) -> tuple[torch.Tensor, torch.Tensor]:
    """The action logits and state values from the output of ``policy.extract_features`` (one
    tensor when the actor and the critic share their features extractor, else a pair)."""
    latent_pi, latent_vf = latents_of_features(policy, features)
    return policy.action_net(latent_pi), policy.value_net(latent_vf).flatten()


def latents_of_features(policy, features) -> tuple[torch.Tensor, torch.Tensor]:
    """The actor's and the critic's latents from the output of ``policy.extract_features``, as
    sb3-contrib's ``MaskableActorCriticPolicy.evaluate_actions`` computes them."""
    if policy.share_features_extractor:
        return policy.mlp_extractor(features)
    pi_features, vf_features = features
    return policy.mlp_extractor.forward_actor(pi_features), policy.mlp_extractor.forward_critic(vf_features)


class RolloutForward:
    """The logits and values of a rollout's observations (``logits_and_values``' pass), for the
    common network (plain actor and critic MLPs) with each first layer over the non-zero entries
    of its features when they are sparse enough (``madiao_mao.agents.torch_mlp.SparseFirstLayer``):
    the same up to float rounding, as the sparse update computes them. Its copies of the first
    layers' weights are renewed by ``start_rollout``, since the update changes them in place."""

    def __init__(self, policy) -> None:
        self.policy = policy
        self.actor, self.critic = actor_layers(policy), critic_layers(policy)
        self.first_layers: tuple[SparseFirstLayer, SparseFirstLayer] | None = None
        if self.actor is not None and self.critic is not None:
            self.first_layers = (SparseFirstLayer(self.actor[0][0]), SparseFirstLayer(self.critic[0][0]))
        #: Whether this rollout's features have been sparse enough so far (dense ones, as Mao's
        #: belief planes, are not scanned again at every step).
        self.sparse = self.first_layers is not None

    def start_rollout(self) -> None:
        """The policy's weights may have changed since the last rollout: copy them again."""
        self.sparse = self.first_layers is not None
        if self.first_layers is not None:
            for first_layer in self.first_layers:
                first_layer.refresh()

    def __call__(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.sparse:
            return logits_and_values(self.policy, observations)
        features = self.policy.extract_features(observations)
        if isinstance(features, torch.Tensor):
            actor_features = critic_features = features
        else:
            actor_features, critic_features = features
        actor_entries = NonzeroEntries.of(actor_features)
        if critic_features is actor_features or torch.equal(critic_features, actor_features):
            critic_entries = actor_entries
        else:
            critic_entries = None if actor_entries is None else NonzeroEntries.of(critic_features)
        if actor_entries is None or critic_entries is None:
            self.sparse = False
            return logits_and_values_of_features(self.policy, features)
        logits = sparse_mlp_output(self.actor, self.first_layers[0], actor_entries)
        values = sparse_mlp_output(self.critic, self.first_layers[1], critic_entries)
        return logits, values.flatten()


def fixed_features(policy, observations: torch.Tensor):
    """``policy.extract_features`` of every row of ``observations``, computed once, when no
    features extractor of ``policy`` has a parameter to learn (Madiao's card planes, Mao's rule
    planes, a flat observation): their output is then the same in every epoch of an update, and
    each minibatch takes its rows of it instead of extracting them again in every epoch. None
    when one learns (Mao's memory features), which a minibatch must then run for its gradient."""
    extractors = (
        [policy.features_extractor]
        if policy.share_features_extractor
        else [policy.pi_features_extractor, policy.vf_features_extractor]
    )
    if any(parameter.requires_grad for extractor in extractors for parameter in extractor.parameters()):
        return None
    with torch.no_grad():
        return policy.extract_features(observations)


def _rows_of(features, rows: torch.Tensor):
    """The ``rows`` of ``fixed_features``'s output (a tensor or a pair of tensors)."""
    if isinstance(features, torch.Tensor):
        return features[rows]
    return tuple(part[rows] for part in features)


def _actor_and_critic_rows(features, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``rows`` of ``fixed_features``'s output as (the actor's input, the critic's input):
    the same rows twice when the two share their features."""
    selected = _rows_of(features, rows)
    return (selected, selected) if isinstance(selected, torch.Tensor) else selected


def masked_log_probabilities(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Log-probabilities of every action under ``masks`` (bool, True = legal)."""
    return torch.log_softmax(logits.masked_fill(~masks, MASKED_LOGIT), dim=-1)


def sample_actions(log_probabilities: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One action per row drawn from ``log_probabilities`` (Gumbel-max, on their device, from
    ``generator``: a seeded run draws the same actions)."""
    uniform = torch.rand(
        log_probabilities.shape,
        generator=generator,
        device=log_probabilities.device,
        dtype=log_probabilities.dtype,
    )
    gumbel = -torch.log(-torch.log(uniform.clamp_(1e-20, 1.0)))
    return torch.argmax(log_probabilities + gumbel, dim=-1)


def entropy_of(log_probabilities: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """The entropy of each row's masked distribution (illegal actions contribute nothing).

    The illegal actions' log-probabilities (about ``MASKED_LOGIT``) are set to 0 before ``exp``,
    which contributes ``exp(0) * 0 = 0`` for them, the same sum bit for bit, because torch's CPU
    ``exp`` of inputs below about -88 takes a slow path (benchmarks/README.md, "The fast engine's
    entropy without exp of the illegal actions")."""
    legal_only = log_probabilities.masked_fill(~masks, 0.0)
    return -(legal_only.exp() * legal_only).sum(-1)


class RolloutStorage:
    """One rollout of ``n_steps`` learner steps in ``n_envs`` games, allocated once on the
    training device. On the CPU the observation and mask slots are numpy views of the same memory
    (``observations_np``, ``masks_np``): the env's arrays are written into them and the policy reads
    them in place. On a GPU they are written into pinned host staging rows and sent with one
    asynchronous copy per step (``stage``)."""

    def __init__(self, n_steps: int, n_envs: int, obs_dim: int, n_actions: int, device: torch.device) -> None:
        self.n_steps, self.n_envs, self.device = n_steps, n_envs, device
        on_cpu = device.type == "cpu"
        self.observations = torch.zeros((n_steps, n_envs, obs_dim), dtype=torch.float32, device=device)
        self.masks = torch.zeros((n_steps, n_envs, n_actions), dtype=torch.bool, device=device)
        self.actions = torch.zeros((n_steps, n_envs), dtype=torch.int64, device=device)
        self.log_probabilities = torch.zeros((n_steps, n_envs), dtype=torch.float32, device=device)
        self.values = torch.zeros((n_steps, n_envs), dtype=torch.float32, device=device)
        self.rewards = torch.zeros((n_steps, n_envs), dtype=torch.float32, device=device)
        #: Whether the observation of step t is the first of an episode (the games before it ended).
        self.episode_starts = torch.zeros((n_steps, n_envs), dtype=torch.float32, device=device)
        if on_cpu:
            self._host_observations, self._host_masks = self.observations, self.masks
        else:
            self._host_observations = _pinned(torch.zeros((n_envs, obs_dim), dtype=torch.float32))
            self._host_masks = _pinned(torch.zeros((n_envs, n_actions), dtype=torch.bool))
        self.observations_np = self._host_observations.numpy()
        self.masks_np = self._host_masks.numpy()
        self.advantages = torch.zeros((n_steps, n_envs), dtype=torch.float32, device=device)
        self.returns = torch.zeros((n_steps, n_envs), dtype=torch.float32, device=device)

    def stage(
        self, step: int, observations: np.ndarray, masks: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the env's observations and masks as those of rollout step ``step``; returns them
        as the device tensors the policy reads."""
        if self.device.type == "cpu":
            np.copyto(self.observations_np[step], observations, casting="same_kind")
            np.copyto(self.masks_np[step], masks, casting="unsafe")
        else:
            np.copyto(self.observations_np, observations, casting="same_kind")
            np.copyto(self.masks_np, masks, casting="unsafe")
            self.observations[step].copy_(self._host_observations, non_blocking=True)
            self.masks[step].copy_(self._host_masks, non_blocking=True)
        return self.observations[step], self.masks[step]

    def compute_advantages(
        self, last_values: torch.Tensor, last_dones: torch.Tensor, gamma: float, gae_lambda: float
    ) -> None:
        """GAE(lambda) advantages and returns (advantage + value), as SB3's rollout buffer
        computes them, every game at once; ``last_values``: the values of the observations after
        the rollout, ``last_dones``: whether the rollout's last step ended each game."""
        next_advantage = torch.zeros_like(last_values)
        for step in reversed(range(self.n_steps)):
            if step == self.n_steps - 1:
                next_non_terminal, next_values = 1.0 - last_dones, last_values
            else:
                next_non_terminal, next_values = 1.0 - self.episode_starts[step + 1], self.values[step + 1]
            delta = self.rewards[step] + gamma * next_values * next_non_terminal - self.values[step]
            next_advantage = delta + gamma * gae_lambda * next_non_terminal * next_advantage
            self.advantages[step] = next_advantage
        torch.add(self.advantages, self.values, out=self.returns)


def _pinned(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` in page-locked memory when CUDA is here (what an asynchronous copy needs)."""
    return tensor.pin_memory() if torch.cuda.is_available() else tensor


@dataclass(frozen=True)
class UpdateSettings:
    """The PPO update's hyperparameters (the ``TrainConfig`` fields of the same names, and the
    rates of this update from the run's schedules)."""

    n_epochs: int
    batch_size: int
    clip_range: float
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    learning_rate: float


class HandBackward:
    """The PPO loss's gradients written out for the common network: an actor MLP and a critic
    MLP (linear layers with tanh or ReLU, SB3's ``MlpExtractor``) and their linear heads, over
    features with nothing to learn (``fixed_features``).

    Why not autograd: at the default minibatch of 256 rows, autograd's recording and replay of
    some forty small operations per minibatch cost about as much as the matrix multiplies they
    surround; this pass does the same multiplies (the first layer's input gradient, which nothing
    reads, is skipped as autograd skips it) with few operations around them, and gives the
    gradients autograd gives up to float rounding (``tests/common/test_fast_engine.py``). The
    measured gain is in ``benchmarks/README.md``, "The fast engine's backward written out"."""

    def __init__(self, actor: Layers, critic: Layers) -> None:
        self.actor, self.critic = actor, critic
        #: Within an update over sparse features: {id(first layer's weight): its parameter stored
        #: column by column} (``weights_by_column``), which the sparse products read and write.
        self.by_column: dict[int, nn.Parameter] = {}
        for layer, _ in self.actor + self.critic:
            for parameter in (layer.weight, layer.bias):
                if parameter.grad is None or parameter.grad.shape != parameter.shape:
                    parameter.grad = torch.zeros_like(parameter)

    @classmethod
    def of(cls, policy, features) -> HandBackward | None:
        """The written-out backward of ``policy`` for ``fixed_features``' output ``features``, or
        None (autograd then) when features must be learned, a network is not plain linear layers
        and known activations, or a parameter that needs a gradient lies outside them."""
        if features is None:
            return None
        actor, critic = actor_layers(policy), critic_layers(policy)
        if actor is None or critic is None:
            return None
        covered = {id(parameter) for layer, _ in actor + critic for parameter in (layer.weight, layer.bias)}
        if any(parameter.requires_grad and id(parameter) not in covered for parameter in policy.parameters()):
            return None
        return cls(actor, critic)

    @property
    def first_layers(self) -> list[nn.Linear]:
        """The actor's and the critic's first layers (those that read the features)."""
        return [self.actor[0][0], self.critic[0][0]]

    @torch.no_grad()
    def outputs(self, layers: Layers, inputs: torch.Tensor | SparseMinibatch) -> list:
        """``mlp_outputs`` of ``layers``, also for a minibatch of sparse features (the first
        layer over its non-zero entries)."""
        if not isinstance(inputs, SparseMinibatch):
            return mlp_outputs(layers, inputs)
        # Sums in another order than the dense product's already round differently from the
        # modules, so these outputs take the faster tanh too.
        first_layer, activation = layers[0]
        weight_by_column = self.by_column[id(first_layer.weight)]
        first = activate_rounded_(inputs.first_layer_output(weight_by_column, first_layer.bias), activation)
        return [inputs, *mlp_outputs(layers[1:], first, activate_rounded_)]

    @torch.no_grad()
    def backward(self, layers: list, outputs: list, output_gradient: torch.Tensor) -> None:
        """Every layer's weight and bias gradients (written into their ``.grad``) from the
        gradient of the last output."""
        gradient = output_gradient
        for index in range(len(layers) - 1, -1, -1):
            layer, activation = layers[index]
            output = outputs[index + 1]
            if activation is nn.Tanh:
                gradient = torch.ops.aten.tanh_backward(gradient, output)
            elif activation is nn.ReLU:
                gradient = torch.ops.aten.threshold_backward(gradient, output, 0)
            if isinstance(outputs[index], SparseMinibatch):
                weight_by_column = self.by_column[id(layer.weight)]
                outputs[index].first_layer_gradient(weight_by_column, layer.bias, gradient)
            else:
                torch.mm(gradient.t(), outputs[index], out=layer.weight.grad)
                torch.sum(gradient, 0, out=layer.bias.grad)
            if index > 0:
                gradient = gradient @ layer.weight


def sparse_inputs(features) -> tuple[SparseRows, SparseRows] | None:
    """The actor's and the critic's inputs (``fixed_features``' output) as ``SparseRows``, or
    None when either is not sparse enough to pay (``SparseRows.of``)."""
    if isinstance(features, torch.Tensor):
        rows = SparseRows.of(features)
        return None if rows is None else (rows, rows)
    actor_features, critic_features = features
    actor_rows = SparseRows.of(actor_features)
    if actor_rows is None:
        return None
    if critic_features is actor_features or torch.equal(critic_features, actor_features):
        return actor_rows, actor_rows
    critic_rows = SparseRows.of(critic_features)
    return None if critic_rows is None else (actor_rows, critic_rows)


def ppo_loss_gradients(
    log_probabilities: torch.Tensor,
    masks: torch.Tensor,
    entropy: torch.Tensor,
    actions: torch.Tensor,
    taken_gradient: torch.Tensor,
    values: torch.Tensor,
    returns: torch.Tensor,
    settings: UpdateSettings,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients of a minibatch's PPO loss (``ppo_update``'s) with respect to the logits and
    the values. ``taken_gradient``: d(policy loss)/d(log-probability of the action taken), per
    row (-advantage * ratio / rows where the unclipped term is the minimum, else 0), which
    reaches logit k as (1 if k was taken) - p_k. The entropy term: d(-entropy)/d(logit k) =
    p_k (log p_k + entropy), zero for illegal actions (p = 0)."""
    rows = log_probabilities.shape[0]
    legal = log_probabilities.masked_fill(~masks, 0.0)
    probabilities = legal.exp().mul_(masks)
    gradient = (legal + entropy[:, None]).mul_(probabilities).mul_(settings.ent_coef / rows)
    gradient.addcmul_(probabilities, taken_gradient[:, None], value=-1.0)
    gradient.scatter_add_(1, actions[:, None], taken_gradient[:, None])
    value_gradient = (values - returns).mul_(2.0 * settings.vf_coef / rows)
    return gradient, value_gradient[:, None]


def ppo_update(
    policy, storage: RolloutStorage, settings: UpdateSettings, generator: torch.Generator
) -> dict[str, float]:
    """``n_epochs`` passes of minibatch PPO over the rollout in ``storage``; returns the losses
    and statistics of the update (SB3's ``train/`` names), read from the device once."""
    for group in policy.optimizer.param_groups:
        group["lr"] = settings.learning_rate
    policy.set_training_mode(True)
    n_samples = storage.n_steps * storage.n_envs
    observations = storage.observations.reshape(n_samples, -1)
    masks = storage.masks.reshape(n_samples, -1)
    actions = storage.actions.reshape(n_samples)
    old_log_probabilities = storage.log_probabilities.reshape(n_samples)
    advantages = storage.advantages.reshape(n_samples)
    returns = storage.returns.reshape(n_samples)
    device = storage.device
    totals = torch.zeros(6, dtype=torch.float32, device=device)
    n_minibatches = 0
    features = fixed_features(policy, observations)
    hand_backward = HandBackward.of(policy, features)
    sparse = sparse_inputs(features) if hand_backward is not None else None
    with contextlib.ExitStack() as layout:
        # What the optimizer steps: in a sparse update, the first layers' weights by column.
        by_column: dict[int, nn.Parameter] = {}
        if sparse is not None:
            by_column = hand_backward.by_column = layout.enter_context(
                weights_by_column(hand_backward.first_layers, policy.optimizer)
            )
        parameters = [by_column.get(id(parameter), parameter) for parameter in policy.parameters()]
        for _ in range(settings.n_epochs):
            order = torch.randperm(n_samples, generator=generator).to(device)
            for start in range(0, n_samples, settings.batch_size):
                rows = order[start : start + settings.batch_size]
                minibatch_masks, minibatch_actions = masks[rows], actions[rows]
                with torch.set_grad_enabled(hand_backward is None):
                    if hand_backward is not None:
                        if sparse is None:
                            actor_inputs, critic_inputs = _actor_and_critic_rows(features, rows)
                        else:
                            actor_inputs = sparse[0].minibatch(rows)
                            critic_inputs = (
                                actor_inputs if sparse[1] is sparse[0] else sparse[1].minibatch(rows)
                            )
                        actor_outputs = hand_backward.outputs(hand_backward.actor, actor_inputs)
                        critic_outputs = hand_backward.outputs(hand_backward.critic, critic_inputs)
                        logits, values = actor_outputs[-1], critic_outputs[-1].flatten()
                    elif features is None:
                        logits, values = logits_and_values(policy, observations[rows])
                    else:
                        logits, values = logits_and_values_of_features(policy, _rows_of(features, rows))
                    log_probabilities = masked_log_probabilities(logits, minibatch_masks)
                    new_log_probability = log_probabilities.gather(1, minibatch_actions[:, None]).squeeze(1)
                    entropy = entropy_of(log_probabilities, minibatch_masks)
                    advantage = advantages[rows]
                    if rows.numel() > 1:
                        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
                    log_ratio = new_log_probability - old_log_probabilities[rows]
                    ratio = torch.exp(log_ratio)
                    unclipped_term = advantage * ratio
                    clip_low, clip_high = 1 - settings.clip_range, 1 + settings.clip_range
                    clipped_term = advantage * torch.clamp(ratio, clip_low, clip_high)
                    policy_loss = -torch.min(unclipped_term, clipped_term).mean()
                    minibatch_returns = returns[rows]
                    value_loss = functional.mse_loss(minibatch_returns, values)
                    entropy_loss = -entropy.mean()
                    loss = policy_loss + settings.ent_coef * entropy_loss + settings.vf_coef * value_loss
                if hand_backward is None:
                    policy.optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                else:
                    # torch.min passes the gradient to the unclipped term where it is the smaller
                    # (ties included: there the clamp passes its half too).
                    taken_gradient = (unclipped_term <= clipped_term) * unclipped_term / -rows.numel()
                    logits_gradient, values_gradient = ppo_loss_gradients(
                        log_probabilities,
                        minibatch_masks,
                        entropy,
                        minibatch_actions,
                        taken_gradient,
                        values,
                        minibatch_returns,
                        settings,
                    )
                    hand_backward.backward(hand_backward.actor, actor_outputs, logits_gradient)
                    hand_backward.backward(hand_backward.critic, critic_outputs, values_gradient)
                torch.nn.utils.clip_grad_norm_(parameters, settings.max_grad_norm)
                policy.optimizer.step()
                with torch.no_grad():
                    clipped = ((ratio - 1).abs() > settings.clip_range).float().mean()
                    approx_kl = ((ratio - 1) - log_ratio).mean()
                    totals += torch.stack((policy_loss, value_loss, entropy_loss, loss, clipped, approx_kl))
                n_minibatches += 1
    policy.set_training_mode(False)
    means = (totals / max(n_minibatches, 1)).tolist()
    explained = _explained_variance(storage.values.reshape(n_samples), returns)
    names = ("policy_gradient_loss", "value_loss", "entropy_loss", "loss", "clip_fraction", "approx_kl")
    statistics = dict(zip(names, means, strict=True))
    statistics.update(
        explained_variance=explained,
        learning_rate=settings.learning_rate,
        clip_range=settings.clip_range,
        n_minibatches=float(n_minibatches),
    )
    return statistics


def _explained_variance(predicted: torch.Tensor, target: torch.Tensor) -> float:
    """1 - Var[target - predicted] / Var[target] (SB3's ``explained_variance``; nan when the
    target does not vary)."""
    variance = target.var()
    if float(variance) == 0:
        return float("nan")
    return float(1 - (target - predicted).var() / variance)
