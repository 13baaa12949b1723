"""The trainer's SB3 callback (``madiao_mao.training.sb3.train.train``): what a run shows and saves as it
goes.

The progress bar ends where PPO does: SB3 collects whole rollouts, so a run ends at its budget
rounded up to whole rollouts (``madiao_mao.training.config.steps_at_end``), and the bar's total is that count.
It shows one speed, the run's learner steps/s over ``learn()`` (with the game env's share of the
time). Snapshots, evaluations and checkpoints are taken between rollouts, where the step count is
exactly what the policy has learned from (an unfinished rollout's steps are not), and once more
when training ends, so the learning curve reaches the final policy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from tqdm import tqdm

from madiao_mao.training.config import TrainConfig, evaluation_interval, steps_at_end
from madiao_mao.training.game_spec import game_spec
from madiao_mao.training.logging_utils import atomic_save_model, log_evaluation, log_league
from madiao_mao.training.run_folder import STEP_COLUMN, newest_snapshots, snapshot_path


class TrainingCallback(BaseCallback):
    """The trainer's SB3 callback: the progress bar, speed, role returns, and between rollouts
    (where the step count is what the policy has learned from) snapshots, evaluations and
    checkpoints."""

    def __init__(
        self,
        config: TrainConfig,
        run_dir: Path,
        state: dict[str, Any],
        vector_env,
        pool,
        *,
        save_checkpoint: Callable[[Any], None],
        evaluate: Callable[..., dict[str, dict]],
        snapshot_agent: Callable[[Path, int], Any],
        say: Callable[..., None] = print,
    ) -> None:
        """``state`` is the run's ``state.json`` contents (snapshots and evaluations are added to
        it); ``vector_env`` and ``pool`` are timed (``madiao_mao.training.opponents``) for the speed shares;
        ``evaluate(model, config, n_deals, seed)`` gives the results per baseline."""
        super().__init__()
        self.config = config
        self.run_dir = run_dir
        self.state = state
        self.vector_env = vector_env
        self.pool = pool
        self.save_checkpoint = save_checkpoint
        self.evaluate_model = evaluate
        self.snapshot_agent = snapshot_agent
        self.say = say
        #: What differs by game: the learner's roles and how its terminal observation tells
        #: them apart, and how an evaluation result is summed up in one line.
        self.spec = game_spec(config.game)
        self.role_returns: dict[str, list[float]] = {role: [] for role in self.spec.roles}
        self.bar = None
        #: True while a rollout is being collected (its steps are not learned from yet).
        self.collecting = False
        #: The step count at the start of the last rollout: what the policy has learned from.
        self.learned_steps = 0

    def _on_training_start(self) -> None:
        config = self.config
        steps = self.model.num_timesteps
        # Speeds are measured over learn() alone: the env's first reset (and any kernel
        # compilation in it) happens before this point and is not training time.
        self.wall_start = time.perf_counter()
        self.steps_start = steps
        self.learned_steps = steps
        self.env_seconds_start = self.vector_env.seconds
        self.pool_seconds_start = self.pool.seconds
        # Time in PPO's gradient updates: from the end of a rollout to the next one's start.
        self.update_seconds = 0.0
        self.rollout_ended: float | None = None
        self.next_checkpoint = (steps // config.checkpoint_every + 1) * config.checkpoint_every
        self.next_snapshot = (steps // config.snapshot_every + 1) * config.snapshot_every
        self.eval_every = evaluation_interval(config)
        self.next_eval = (steps // self.eval_every + 1) * self.eval_every if self.eval_every else None
        if config.progress_bar:
            # The bar ends where PPO does (the budget rounded up to whole rollouts) and shows one
            # speed, the run's learner steps/s (tqdm's own rate is left out of the format).
            self.bar = tqdm(
                total=steps_at_end(config, steps),
                initial=steps,
                unit="step",
                dynamic_ncols=True,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]",
            )
        self.last_steps = steps

    def _on_step(self) -> bool:
        steps = self.model.num_timesteps
        for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
            if done and "episode" in info:
                learner_role = self.spec.learner_role
                role = learner_role(info["terminal_observation"]) if learner_role else self.spec.roles[0]
                self.role_returns[role].append(info["episode"]["r"])
        record_games = getattr(self.pool, "record_games", None)
        if record_games is not None:
            # League mode: each finished game is a result against the one member that played it.
            record_games(self.locals["dones"], self.locals["infos"])
        if self.bar is not None:
            self.bar.update(steps - self.last_steps)
        self.last_steps = steps
        return True

    def _between_rollouts(self, checkpoint: bool = True) -> None:
        """Snapshot, evaluate and checkpoint when due; the policy has learned from every step."""
        config, steps = self.config, self.model.num_timesteps
        if steps >= self.next_snapshot:
            self.next_snapshot = (steps // config.snapshot_every + 1) * config.snapshot_every
            path = snapshot_path(self.run_dir, steps, ".zip")
            atomic_save_model(self.model, path)
            self.pool.add_snapshot(
                self.snapshot_agent(path, config.seed),
                path=path.relative_to(self.run_dir).as_posix(),
                step=int(steps),
            )
            self.state["snapshots"] = [
                str(p) for p in newest_snapshots(self.run_dir, ".zip", config.max_snapshots)
            ]
        if self.next_eval is not None and steps >= self.next_eval:
            self.next_eval = (steps // self.eval_every + 1) * self.eval_every
            self.evaluate(steps)
        if checkpoint and steps >= self.next_checkpoint:
            self.next_checkpoint = (steps // config.checkpoint_every + 1) * config.checkpoint_every
            self.save_checkpoint(self.model)

    def evaluate(self, steps: int) -> None:
        """Evaluate the policy against the baselines: a point of the learning curve."""
        config = self.config
        results = self.evaluate_model(self.model, config, config.eval_deals, config.seed + 7)
        self.state["eval"].append({"timesteps": steps, "results": results})
        # Written now, at the step the policy has learned from (eval.json's): SB3 writes its
        # logger's values after the next rollout, one rollout later, and never after the last
        # update, where the final evaluation is made. The rollout's own values wait for SB3.
        now = Logger(folder=None, output_formats=self.logger.output_formats)
        summary = log_evaluation(now, self.spec, results)
        now.record(STEP_COLUMN, steps)
        now.dump(steps)
        (self.bar.write if self.bar is not None else self.say)(f"[eval @ {steps}] learned {summary}")

    def speed(self) -> dict[str, float]:
        """Learner steps/s and the shares of learn() time spent in the env and opponents."""
        elapsed = max(time.perf_counter() - self.wall_start, 1e-9)
        return {
            "seconds": elapsed,
            "sps": (self.model.num_timesteps - self.steps_start) / elapsed,
            "env_time_fraction": (self.vector_env.seconds - self.env_seconds_start) / elapsed,
            "opponent_time_fraction": (self.pool.seconds - self.pool_seconds_start) / elapsed,
            "update_time_fraction": self.update_seconds / elapsed,
        }

    def _count_update_time(self) -> None:
        if self.rollout_ended is not None:
            self.update_seconds += time.perf_counter() - self.rollout_ended
            self.rollout_ended = None

    def _on_rollout_start(self) -> None:
        self._count_update_time()
        self.learned_steps = self.model.num_timesteps
        self._between_rollouts()
        before_rollout = getattr(self.pool, "before_rollout", None)
        if before_rollout is not None:
            # Games in worker processes: they get the weights the rollout is collected with.
            before_rollout()
        set_oracle_factor = getattr(self.model.policy, "set_oracle_factor_at", None)
        if set_oracle_factor is not None:
            # Oracle guiding's fade, by rollout: a rollout and its update see the same actor.
            factor = set_oracle_factor(self.model.num_timesteps)
            if self.model.policy.oracle_guiding_steps:
                self.model.logger.record("charts/oracle_factor", factor)
        self.collecting = True

    def _on_rollout_end(self) -> None:
        self.collecting = False
        speed = self.speed()
        sps, env_fraction = speed["sps"], speed["env_time_fraction"]
        self.logger.record("charts/SPS", sps)
        self.logger.record("charts/env_time_fraction", env_fraction)
        self.logger.record("charts/opponent_time_fraction", speed["opponent_time_fraction"])
        self.logger.record("charts/update_time_fraction", speed["update_time_fraction"])
        for role, values in self.role_returns.items():
            if values:
                self.logger.record(f"charts/return_{role}", float(np.mean(values)))
                values.clear()
        league = getattr(self.pool, "league", None)
        if league is not None:
            log_league(self.logger, league)
        if self.bar is not None:
            self.bar.set_postfix_str(f"{sps:,.0f} steps/s, env {100 * env_fraction:.0f}%")
        elif self.config.verbose:
            self.say(
                f"step {self.model.num_timesteps}: {sps:,.0f} learner steps/s, "
                f"env {100 * env_fraction:.0f}% of wall time"
            )
        self.state["last_speed"] = speed
        self.rollout_ended = time.perf_counter()

    def _on_training_end(self) -> None:
        self._count_update_time()
        self.learned_steps = self.model.num_timesteps
        # The last update is learned from: its snapshot and evaluation point are due (the trainer
        # saves the final checkpoint itself).
        self._between_rollouts(checkpoint=False)
        self.close_bar()

    def close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
