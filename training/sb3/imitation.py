"""Warm start by imitation: a scripted teacher plays the learner's seat, the policy learns its moves.

Self-play PPO on Mao from a random policy finds a poor local optimum: a play that draws a call
costs a penalty card at once, while what a play gains (a shorter road to winning the round) lies
far ahead, so the policy learns to draw instead of playing and stops learning about rules. A
teacher that already plays sensibly (the Bayesian rule-inference player) shows the policy what a
turn looks like; PPO then starts from there. This is behaviour cloning with the value head fitted
on the same data, so that the first PPO updates have sensible advantages:

1. ``collect_teacher_decisions``: the teacher acts in the learner's seat of the training env
   (the same opponents, rewards and rule draws as PPO will meet) for ``n_decisions`` decisions;
   every observation, mask, teacher action and reward is kept.
2. ``fit_policy``: minibatch Adam on the policy's masked log-likelihood of the teacher's actions
   plus ``vf_coef`` times the squared error of the value head against the discounted returns
   that followed (steps after a game's last end in the data have no finished return and only
   train the policy).

``teacher_agreement`` says how closely a policy follows the teacher's moves (log-likelihood and
accuracy). Expert iteration (``madiao_mao.training.expert_iteration``) fits a trained policy the
same way to a search player's decisions.

Only the policy's inputs reach the network: the teacher's own knowledge (its posterior over the
rule library) is in its actions, never in the observation. The teacher meets only the training
env's rules, so a policy cloned from it is still tested on rules it never saw.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from madiao_mao.agents.base import Agent
from madiao_mao.agents.registry import make_agent
from madiao_mao.training.config import TrainConfig
from madiao_mao.training.fast.ppo import latents_of_features


@dataclass
class TeacherData:
    """What ``collect_teacher_decisions`` gathered: one row per learner decision."""

    observations: np.ndarray
    """``[n, obs_dim]`` float32."""
    masks: np.ndarray
    """``[n, n_actions]`` bool."""
    actions: np.ndarray
    """``[n]`` int64: the teacher's choice."""
    returns: np.ndarray
    """``[n]`` float32: discounted sum of the rewards from this decision to its game's end."""
    has_return: np.ndarray
    """``[n]`` bool: the game of this decision ended inside the data (its return is complete)."""
    episode_returns: np.ndarray
    """Undiscounted return of every finished game (the teacher's score, for the log)."""
    seconds: float


def collect_teacher_decisions(venv, teacher: Agent, n_decisions: int, gamma: float) -> TeacherData:
    """Let ``teacher`` play the learner seat of SB3 VecEnv ``venv`` (which has ``action_masks()``)
    for at least ``n_decisions`` decisions and record them (module doc). ``venv`` is reset first."""
    if n_decisions <= 0:
        raise ValueError(f"n_decisions must be positive, got {n_decisions}")
    started = time.perf_counter()
    n_envs = venv.num_envs
    n_steps = -(-n_decisions // n_envs)
    observations = np.zeros((n_steps, n_envs, venv.observation_space.shape[0]), dtype=np.float32)
    masks = np.zeros((n_steps, n_envs, venv.action_space.n), dtype=bool)
    actions = np.zeros((n_steps, n_envs), dtype=np.int64)
    rewards = np.zeros((n_steps, n_envs), dtype=np.float64)
    dones = np.zeros((n_steps, n_envs), dtype=bool)
    episode_returns: list[float] = []
    # The teacher reads the table's observation: a policy reading more (belief inputs) has them
    # appended after it (``madiao_mao.training.mao.wrappers.BeliefObservations``).
    table_obs_dim = getattr(venv, "table_obs_dim", venv.observation_space.shape[0])
    teacher.reset()
    observation = venv.reset()
    for step in range(n_steps):
        mask = np.asarray(venv.action_masks(), dtype=bool)
        action = np.asarray(teacher.act_batch(observation[:, :table_obs_dim], mask), dtype=np.int64)
        observations[step], masks[step], actions[step] = observation, mask, action
        observation, reward, done, infos = venv.step(action)
        rewards[step], dones[step] = reward, done
        finished = np.flatnonzero(done)
        if finished.size:
            # A row's next game is a new game (and, with a rotating learner, a new seat).
            teacher.reset_rows(finished)
            episode_returns.extend(float(infos[i]["episode"]["r"]) for i in finished if "episode" in infos[i])
    # Discounted returns backwards per game; a row's tail after its last end has none.
    returns = np.zeros((n_steps, n_envs), dtype=np.float64)
    has_return = np.zeros((n_steps, n_envs), dtype=bool)
    running = np.zeros(n_envs)
    complete = np.zeros(n_envs, dtype=bool)
    for step in range(n_steps - 1, -1, -1):
        running = np.where(dones[step], 0.0, running * gamma) + rewards[step]
        complete |= dones[step]
        returns[step], has_return[step] = running, complete
    return TeacherData(
        observations=observations.reshape(n_steps * n_envs, -1),
        masks=masks.reshape(n_steps * n_envs, -1),
        actions=actions.reshape(-1),
        returns=returns.reshape(-1).astype(np.float32),
        has_return=has_return.reshape(-1),
        episode_returns=np.asarray(episode_returns),
        seconds=time.perf_counter() - started,
    )


def fit_policy(
    policy,
    data: TeacherData,
    *,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    vf_coef: float,
    seed: int,
) -> list[dict[str, float]]:
    """Train a MaskablePPO ``policy`` on ``data`` (module doc); returns per-epoch means of the
    policy loss (negative log-likelihood), value loss and teacher-action accuracy."""
    generator = np.random.default_rng(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate, eps=1e-5)
    policy.set_training_mode(True)
    history = []
    n = data.actions.size
    for _epoch in range(epochs):
        order = generator.permutation(n)
        totals = np.zeros(3)
        batches = 0
        for start in range(0, n, batch_size):
            rows = order[start : start + batch_size]
            observations = torch.as_tensor(data.observations[rows], device=policy.device)
            actions = torch.as_tensor(data.actions[rows], device=policy.device)
            masks = data.masks[rows]
            values, log_prob, probabilities = _values_and_choices(policy, observations, actions, masks)
            policy_loss = -log_prob.mean()
            with_return = torch.as_tensor(data.has_return[rows], device=policy.device)
            value_error = (values.flatten() - torch.as_tensor(data.returns[rows], device=policy.device)) ** 2
            value_loss = (value_error * with_return).sum() / with_return.sum().clamp(min=1)
            loss = policy_loss + vf_coef * value_loss
            # The policy's choices on this batch before the update.
            accuracy = (probabilities.argmax(1) == actions).float().mean().item()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            optimizer.step()
            totals += (policy_loss.item(), value_loss.item(), accuracy)
            batches += 1
        mean = totals / max(batches, 1)
        history.append({"policy_loss": mean[0], "value_loss": mean[1], "accuracy": mean[2]})
    policy.set_training_mode(False)
    return history


def _values_and_choices(policy, observations: torch.Tensor, actions: torch.Tensor, masks: np.ndarray):
    """What sb3-contrib's ``MaskableActorCriticPolicy.evaluate_actions`` computes (the values and
    the log-probabilities of ``actions``, the same operations), and the masked distribution's
    probabilities of every action, detached, from the same forward pass. A second pass
    (``get_distribution``) gives the same probabilities and costs the fit a whole forward pass
    (benchmarks/README.md, "The imitation fit in one forward pass")."""
    latent_pi, latent_vf = latents_of_features(policy, policy.extract_features(observations))
    distribution = policy._get_action_dist_from_latent(latent_pi)
    distribution.apply_masking(masks)
    values = policy.value_net(latent_vf)
    return values, distribution.log_prob(actions), distribution.distribution.probs.detach()


def teacher_agreement(policy, data: TeacherData, *, batch_size: int = 4096) -> dict[str, float]:
    """How closely a MaskablePPO ``policy`` follows ``data``'s teacher: the mean masked
    log-likelihood of the teacher's actions and the share of decisions where the policy's most
    likely action is the teacher's (what ``fit_policy`` raises)."""
    log_likelihood = agreed = 0.0
    with torch.no_grad():
        for start in range(0, data.actions.size, batch_size):
            rows = slice(start, start + batch_size)
            observations = torch.as_tensor(data.observations[rows])
            actions = torch.as_tensor(data.actions[rows])
            distribution = policy.get_distribution(observations, action_masks=data.masks[rows]).distribution
            log_likelihood += distribution.log_prob(actions).sum().item()
            agreed += (distribution.probs.argmax(1) == actions).sum().item()
    n = max(data.actions.size, 1)
    return {"log_likelihood": log_likelihood / n, "accuracy": agreed / n}


def warm_start(model, venv, config: TrainConfig, say: Callable[..., None] = print) -> dict[str, float]:
    """Fit a fresh ``model``'s policy and value head to ``config.imitate`` playing the learner's
    seat of ``venv`` (the module doc); returns what was measured (for the log)."""
    teacher = make_agent(config.imitate, config.game, seed=config.seed + 500)
    say(f"warm start: {config.imitate} plays {config.imitation_decisions:,} learner decisions")
    data = collect_teacher_decisions(venv, teacher, config.imitation_decisions, config.gamma)
    started = time.perf_counter()
    history = fit_policy(
        model.policy,
        data,
        epochs=config.imitation_epochs,
        batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        vf_coef=config.vf_coef,
        seed=config.seed,
    )
    fit_seconds = time.perf_counter() - started
    last = history[-1]
    teacher_return = float(np.mean(data.episode_returns)) if data.episode_returns.size else float("nan")
    say(
        f"warm start: {data.actions.size:,} decisions in {data.seconds:.0f} s, fitted in "
        f"{fit_seconds:.0f} s; the policy picks the teacher's move in {100 * last['accuracy']:.1f}% "
        f"of them (teacher's mean game return {teacher_return:+.3f})"
    )
    return {
        "decisions": int(data.actions.size),
        "collect_seconds": data.seconds,
        "fit_seconds": fit_seconds,
        "teacher_return": teacher_return,
        **last,
    }
