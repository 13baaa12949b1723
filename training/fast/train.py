"""The fast engine: self-play training with this project's own PPO loop (``madiao_mao.training.fast.ppo``).

    madiao-mao train --engine fast [--total-timesteps N ...]

Everything around the loop is the SB3 engine's (``madiao_mao.training.sb3.train``): the run folder
and its resume, the opponents (league or pool), the learner's batched env with the game's reward
shaping and policy features, the MaskablePPO model (its policy network, optimizer and learning
rate schedule; it is what a run saves, so ``final_model.zip`` loads as ``model:PATH`` wherever
models load), the warm start, and the callback that shows progress and takes snapshots,
evaluations and checkpoints between rollouts. What differs is ``learn``: SB3's
``collect_rollouts``/``train`` are replaced by a rollout that writes the env's arrays into storage
the policy reads in place and samples actions on the device, a GAE over all games at once, and a
PPO update with statistics kept on the device (see ``madiao_mao.training.fast.ppo`` for what is
left out and why it is faster). A run's random streams (action draws, minibatch order) come
from generators seeded by the run's seed: a seeded run on the CPU gives the same weights.

A checkpoint of either engine resumes with either (same ``checkpoint.zip``); ``state.json`` says
which engine trained last (``"engine": "fast"``), and ``madiao-mao train --resume RUN_DIR``
continues a fast run with the fast engine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from madiao_mao.training.config import TrainConfig
from madiao_mao.training.fast.ppo import (
    RolloutForward,
    RolloutStorage,
    UpdateSettings,
    masked_log_probabilities,
    ppo_update,
    sample_actions,
)
from madiao_mao.training.run_folder import FAST_ENGINE, last_engine
from madiao_mao.training.sb3 import train as sb3_train
from madiao_mao.training.sb3.callback import TrainingCallback

#: ``state.json``'s ``"engine"`` of a run this engine trained.
ENGINE_NAME = FAST_ENGINE


def is_fast_run(run_dir: str | Path) -> bool:
    """Whether the run in ``run_dir`` was last trained by the fast engine (its ``state.json``
    says so; a folder without one is not)."""
    return last_engine(run_dir) == ENGINE_NAME


def train(
    config: TrainConfig | None = None,
    resume: str | Path | None = None,
    *,
    total_timesteps: int | None = None,
    torch_threads: int | None = None,
    quiet: bool = False,
) -> Path:
    """Train a run from ``config``, or continue the one in folder ``resume``; returns the run
    folder (the arguments and behaviour of ``madiao_mao.training.sb3.train.train``, whose steps
    this engine shares, with ``learn`` below in place of SB3's)."""
    return sb3_train.train(
        config,
        resume,
        total_timesteps=total_timesteps,
        torch_threads=torch_threads,
        quiet=quiet,
        learn_with=learn,
        engine=ENGINE_NAME,
    )


def learn(model, run: sb3_train.Run, callback: TrainingCallback, say: Callable[..., None]) -> None:
    """PPO up to the budget (rounded up to whole rollouts), then the speed summary."""
    start = model.num_timesteps
    end = sb3_train.training_end(run.config, start, say)
    if end is None:
        return
    loop = FastLoop(model, model.get_env(), run.config, seed=run.call_seed)
    callback.init_callback(model)
    callback.on_training_start(locals(), globals())
    while model.num_timesteps < end:
        callback.on_rollout_start()
        loop.collect(callback)
        callback.on_rollout_end()
        model._current_progress_remaining = 1.0 - model.num_timesteps / end
        loop.update(model._current_progress_remaining)
    callback.on_training_end()
    run.state["final_speed"] = sb3_train.say_speed(callback.speed(), model.num_timesteps - start, say)


class FastLoop:
    """The rollout and the update of one run: storage, the env's current observations, the
    generators of action draws (on the device) and of minibatch orders (on the CPU)."""

    def __init__(self, model, venv, config: TrainConfig, *, seed: int) -> None:
        self.model, self.venv, self.config = model, venv, config
        self.policy = model.policy
        self.device = torch.device(model.device)
        self.storage = RolloutStorage(
            config.n_steps,
            venv.num_envs,
            int(np.prod(venv.observation_space.shape)),
            int(venv.action_space.n),
            self.device,
        )
        self.forward = RolloutForward(self.policy)
        self.action_generator = torch.Generator(device=self.device).manual_seed(seed)
        self.order_generator = torch.Generator().manual_seed(seed + 1)
        self.observations = venv.reset()
        self.last_dones = torch.zeros(venv.num_envs, dtype=torch.float32, device=self.device)
        self._dones_np = np.zeros(venv.num_envs, dtype=np.float32)
        self._episode_returns: list[float] = []
        self._episode_lengths: list[int] = []

    def collect(self, callback: TrainingCallback | None = None) -> None:
        """One rollout of ``n_steps`` learner steps in every game; the callback (if any) sees
        every step."""
        storage, model, venv = self.storage, self.model, self.venv
        gamma = float(self.config.gamma)
        self.policy.set_training_mode(False)
        # Inference mode, not no_grad: nothing made here is ever differentiated (the update reads
        # the storage, which keeps copies), and torch skips the bookkeeping of every operation.
        with torch.inference_mode():
            self.forward.start_rollout()
            for step in range(storage.n_steps):
                observations, masks = storage.stage(step, self.observations, venv.action_masks())
                logits, values = self.forward(observations)
                log_probabilities = masked_log_probabilities(logits, masks)
                actions = sample_actions(log_probabilities, self.action_generator)
                storage.actions[step] = actions
                storage.log_probabilities[step] = log_probabilities.gather(1, actions[:, None]).squeeze(1)
                storage.values[step] = values
                storage.episode_starts[step] = self.last_dones
                self.observations, rewards, dones, infos = venv.step(actions.cpu().numpy())
                model.num_timesteps += venv.num_envs
                rewards = self._bootstrap_truncated(rewards, dones, infos, gamma)
                storage.rewards[step] = torch.from_numpy(np.asarray(rewards, dtype=np.float32)).to(
                    self.device
                )
                np.copyto(self._dones_np, dones)
                self.last_dones = torch.from_numpy(self._dones_np).to(self.device, copy=True)
                for game in np.flatnonzero(dones):
                    episode = infos[game].get("episode")
                    if episode is not None:
                        self._episode_returns.append(episode["r"])
                        self._episode_lengths.append(episode["l"])
                if callback is not None:
                    callback.update_locals({"dones": dones, "infos": infos})
                    callback.on_step()
            last_observations = torch.as_tensor(
                np.asarray(self.observations, dtype=np.float32), device=self.device
            )
            _, last_values = self.forward(last_observations)
        storage.compute_advantages(last_values, self.last_dones, gamma, float(self.config.gae_lambda))

    def _bootstrap_truncated(self, rewards: np.ndarray, dones: np.ndarray, infos: list[dict], gamma: float):
        """Rewards plus ``gamma`` times the value of the terminal observation of games cut short
        (SB3's ``collect_rollouts`` does the same: a cut is not an end)."""
        cut = [g for g in np.flatnonzero(dones) if infos[g].get("TimeLimit.truncated", False)]
        if not cut:
            return rewards
        terminal = np.stack([infos[g]["terminal_observation"] for g in cut]).astype(np.float32)
        with torch.no_grad():
            _, values = self.forward(torch.as_tensor(terminal, device=self.device))
        rewards = np.array(rewards, dtype=np.float32)
        rewards[cut] += gamma * values.cpu().numpy()
        return rewards

    def update(self, progress_remaining: float) -> None:
        """The PPO update of the rollout just collected, at the schedules' rates for
        ``progress_remaining`` (SB3's reading: 1 - steps / the run's real end), and its log row."""
        model, config = self.model, self.config
        settings = UpdateSettings(
            n_epochs=config.n_epochs,
            batch_size=config.batch_size,
            clip_range=float(model.clip_range(progress_remaining)),
            ent_coef=float(config.ent_coef),
            vf_coef=float(config.vf_coef),
            max_grad_norm=float(model.max_grad_norm),
            learning_rate=float(model.lr_schedule(progress_remaining)),
        )
        started = time.perf_counter()
        statistics = ppo_update(self.policy, self.storage, settings, self.order_generator)
        n_minibatches = int(statistics.pop("n_minibatches"))
        model._n_updates += config.n_epochs
        logger = model.logger
        for key, value in statistics.items():
            logger.record(f"train/{key}", value)
        logger.record("train/n_updates", model._n_updates)
        logger.record(
            "train/minibatches_per_second", n_minibatches / max(time.perf_counter() - started, 1e-9)
        )
        if self._episode_returns:
            logger.record("rollout/ep_rew_mean", float(np.mean(self._episode_returns)))
            logger.record("rollout/ep_len_mean", float(np.mean(self._episode_lengths)))
            self._episode_returns.clear()
            self._episode_lengths.clear()
        logger.record("time/total_timesteps", model.num_timesteps)
        logger.dump(model.num_timesteps)
