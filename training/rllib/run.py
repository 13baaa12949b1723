"""``madiao-mao train --engine rllib``: PPO on Ray RLlib with the run-folder contract of both engines.

A run folder (``madiao_mao.training.run_folder``) holds what an SB3 run holds, under the same names where the
content is the same:

- ``config.json`` (``TrainConfig``) and ``state.json`` (``madiao_mao.training.run_folder.STATE_FIELDS`` plus
  ``"engine": "rllib"`` and the engine's settings), ``eval.json`` (the learning curve);
- TensorBoard events and ``progress.csv`` with the same tags (``madiao_mao.training.logging_utils``):
  ``charts/SPS``, ``charts/return_<role>``, ``charts/env_time_fraction``,
  ``charts/opponent_time_fraction``, ``charts/update_time_fraction``, ``losses/policy_gradient_loss``,
  ``losses/value_loss``, ``losses/entropy_loss``, ``eval/...``, ``league/...``;
- ``rllib_checkpoint/`` (RLlib's own checkpoint of the algorithm: module, optimizer, runners'
  connector states), written atomically with ``league.json`` beside it (league mode) before
  ``state.json``; ``--resume`` restores all three;
- ``snapshots/snapshot_<step>.pt`` and ``final_model.pt``: the policy exported as a
  ``torch.export`` program (``madiao_mao.training.rllib.module.export_policy_program``), played by
  ``madiao_mao.agents.exported_policy`` with torch alone (``model:runs/RUN/final_model.pt`` in
  ``evaluate``, ``play``, ``match``);
- ``report.md``: the same final evaluation as the SB3 engine (``GameSpec.report``).

Ray: ``address=None`` starts a local Ray instance for the run and stops it at the end;
``address="HOST:PORT"`` (or ``"auto"``) joins a running cluster (``ray start --head``) and only
disconnects. Inside an already connected driver (the tests) the connection is left as it is.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cardgame_core.files import atomic_write_bytes
from madiao_mao.agents.exported_policy import ExportedPolicy, exported_policy_agent
from madiao_mao.training.config import TrainConfig, evaluation_interval, resolve_device
from madiao_mao.training.game_spec import game_spec
from madiao_mao.training.logging_utils import log_evaluation, log_league, make_logger
from madiao_mao.training.rllib.config import ppo_config, rllib_features
from madiao_mao.training.rllib.options import EngineOptions
from madiao_mao.training.run_folder import (
    RLLIB_ENGINE,
    commit_checkpoint,
    device_text,
    make_run_dir,
    new_league,
    newest_snapshots,
    reopen_run,
    say_interrupted,
    snapshot_path,
    snapshot_step,
    start_training,
    write_config,
    write_final_report,
    write_learning_curve,
)

CHECKPOINT_DIR = "rllib_checkpoint"
FINAL_MODEL = "final_model.pt"
ENGINE = RLLIB_ENGINE


def is_rllib_run(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a run of this engine (its RLlib checkpoint folder)."""
    return (Path(run_dir) / CHECKPOINT_DIR).is_dir()


class _RayConnection:
    """``ray.init`` for the run unless the process is already connected; ``close`` undoes only
    what this made (a local instance is stopped, a joined cluster is left running)."""

    # Ray is imported by a run that starts it, not with this module (the CLI reads is_rllib_run).
    def __init__(self, address: str | None) -> None:
        # Imported here: keeps Ray off this module's import path.
        import ray

        self.owned = not ray.is_initialized()
        if self.owned:
            if address is None:
                ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)

    def close(self) -> None:
        # Imported here: keeps Ray off this module's import path.
        import ray

        if self.owned:
            ray.shutdown()


def train_rllib(
    config: TrainConfig | None = None,
    resume: str | Path | None = None,
    *,
    options: EngineOptions | None = None,
    total_timesteps: int | None = None,
    torch_threads: int | None = None,
    quiet: bool = False,
) -> Path:
    """Train a new run from ``config`` (or continue the RLlib run in folder ``resume``) with RLlib
    PPO; returns the run folder. See the module doc for what the folder holds. Ctrl-C saves a
    checkpoint of the iterations completed and prints how to resume."""
    options = options or EngineOptions()
    options.check()
    run_dir, config, state, league = _open(config, resume, total_timesteps, torch_threads)
    # A new run on a device this machine lacks is refused here; a resumed one goes on where it can.
    device = resolve_device(config.device, resuming=resume is not None)
    options.check_device(device)
    if config.imitate != "none" and resume is None:
        raise ValueError(
            f"the rllib engine has no warm start (imitate={config.imitate!r}): pass --imitate none "
            "(Mao's default is an imitation warm start, an SB3-engine feature)"
        )
    if config.init_model is not None and resume is None:
        raise ValueError(
            f"the rllib engine cannot start from a saved model (init_model={config.init_model!r}): "
            "that is an SB3-engine feature"
        )
    if config.trains_on_hidden_state:
        raise ValueError(
            "the rllib engine has no privileged critic (privileged_critic, oracle_guiding_steps): "
            "use --engine sb3 or --engine fast"
        )
    if config.env_workers > 1:
        raise ValueError(
            f"the rllib engine steps its games in its own env runners (env_workers={config.env_workers}): "
            "pass --env-workers 1 and give RLlib its runners (--num-env-runners)"
        )
    # (No progress bar here: ``quiet`` changes nothing; a verbose run prints a line per iteration.)
    say = print if config.verbose else (lambda *a, **k: None)
    # With num_learners=0 the learner runs in this process, on the config's threads as in SB3
    # (learner actors set their own: madiao_mao.training.rllib.learner).
    torch.set_num_threads(config.torch_threads)
    connection = _RayConnection(options.address)
    algo = None
    try:
        algo, state, league = _build(config, state, league, options, device, run_dir, resume is not None)
        trainer = _Trainer(
            config, run_dir, state, league, algo, say, device=device, resumed=resume is not None
        )
        try:
            trainer.learn()
        except KeyboardInterrupt:
            # As the SB3 engine: keep what was learned (the iterations completed) and say how to go on.
            trainer.save_checkpoint()
            say_interrupted(trainer.run_dir, trainer.steps)
            raise
        trainer.finish()
        run_dir = trainer.run_dir
    finally:
        if algo is not None:
            algo.stop()
        connection.close()
    return run_dir


def _open(config: TrainConfig | None, resume, total_timesteps: int | None, torch_threads: int | None = None):
    if resume is None:
        if config is None:
            raise ValueError("give a TrainConfig for a new run, or resume=RUN_DIR")
        # The features the module builds ("flat", Madiao's "cards"; Mao's "rules"/"memory" are
        # SB3 policies: flat instead): the saved config says what the run used.
        config = dataclasses.replace(config, features=rllib_features(config))
        league = new_league(config) if config.opponents == "league" else None
        return None, config, {}, league
    run_dir = Path(resume)
    config, state, league = reopen_run(
        run_dir,
        checkpoint=CHECKPOINT_DIR,
        engine=ENGINE,
        total_timesteps=total_timesteps,
        torch_threads=torch_threads,
    )
    return run_dir, config, state, league


def _build(config, state, league, options: EngineOptions, device: str, run_dir, resumed: bool):
    env_config = {
        "train_config": config.to_json(),
        "resumes": len(state.get("resumes", [])) + (1 if resumed else 0),
        "league": league.to_dict() if league is not None else None,
    }
    algo = ppo_config(
        config,
        num_env_runners=options.num_env_runners,
        envs_per_runner=options.games_per_runner(config),
        env_config=env_config,
        num_learners=options.num_learners,
        cpus_per_learner=options.cpus_per_learner,
        device=device,
    ).build_algo()
    if resumed:
        algo.restore_from_path(str((run_dir / CHECKPOINT_DIR).resolve()))
    state.setdefault("engine", ENGINE)
    state["rllib"] = {
        "num_env_runners": options.num_env_runners,
        "envs_per_runner": options.games_per_runner(config),
        "num_learners": options.num_learners,
        "cpus_per_learner": options.cpus_per_learner,
        "address": options.address,
    }
    return algo, state, league


class _Trainer:
    """The loop of one call: iterations, logging, snapshots, evaluations, checkpoints."""

    def __init__(
        self,
        config: TrainConfig,
        run_dir: Path | None,
        state: dict,
        league,
        algo,
        say,
        *,
        device: str,
        resumed: bool,
    ):
        self.config, self.state, self.league, self.algo, self.say = config, state, league, algo, say
        self.spec = game_spec(config.game)
        if run_dir is None:
            run_dir = make_run_dir(config)
        self.run_dir = run_dir
        self.steps = int(state.get("num_timesteps", 0))
        start_training(state, self.steps, resumed=resumed, device=device)
        state.setdefault("num_timesteps", self.steps)
        if resumed:
            say(
                f"resumed {run_dir} at step {self.steps} on {device_text(config.device, device)} "
                f"(budget {config.total_timesteps} learner steps)"
            )
        write_config(run_dir, config.to_json())
        self.logger = make_logger(run_dir, resume_step=self.steps if resumed else None)
        self.eval_every = evaluation_interval(config)
        self.next_eval = (self.steps // self.eval_every + 1) * self.eval_every if self.eval_every else None
        self.next_snapshot = (self.steps // config.snapshot_every + 1) * config.snapshot_every
        self.next_checkpoint = (self.steps // config.checkpoint_every + 1) * config.checkpoint_every
        self.timing_start = self._timing()
        if resumed:
            self._resend_snapshots()
        else:
            self.save_checkpoint()

    # -- pieces ---------------------------------------------------------------------------------
    def _runners(self, func):
        """``func(runner)`` on every runner that has games (the driver's local one has none
        when remote runners sample)."""
        return [r for r in self.algo.env_runner_group.foreach_env_runner(func) if r is not None]

    def _timing(self) -> dict[str, float]:
        totals = defaultdict(float)
        for timing in self._runners(lambda r: r.timing()):
            for key, value in timing.items():
                totals[key] += value
        return dict(totals)

    def module(self):
        return self.algo.get_module()

    def export(self) -> bytes:
        # The module imports torch and Ray: not on this module's import (the CLI reads is_rllib_run).
        from madiao_mao.training.rllib.module import export_policy_program

        return export_policy_program(
            self.module(), {"game": self.config.game, "obs_type": self.config.obs_type, "step": self.steps}
        )

    def _resend_snapshots(self) -> None:
        """A resumed run's runners get its snapshots again, oldest first (pool or league)."""
        if self.league is not None:
            items = [
                (name, self.league.members[name].path, self.league.members[name].step)
                for name in self.league.names("snapshot")
            ]
        else:
            # Paths relative to the run folder (snapshot()).
            items = [(Path(p).stem, p, snapshot_step(p)) for p in self.state["snapshots"]]
        for name, relative, step in items:
            data = (self.run_dir / relative).read_bytes()
            self._runners(lambda r, n=name, p=relative, s=step, d=data: r.add_snapshot(n, p, s, d))

    def save_checkpoint(self) -> None:
        """The RLlib checkpoint (to a temp folder, then swapped in), the league, then state.json."""
        target = self.run_dir / CHECKPOINT_DIR
        temporary = self.run_dir / f".{CHECKPOINT_DIR}.tmp"
        old = self.run_dir / f".{CHECKPOINT_DIR}.old"
        for folder in (temporary, old):
            shutil.rmtree(folder, ignore_errors=True)
        self.algo.save_to_path(str(temporary.resolve()))
        if target.exists():
            os.replace(target, old)
        os.replace(temporary, target)
        shutil.rmtree(old, ignore_errors=True)
        commit_checkpoint(self.run_dir, self.state, self.league, self.steps)

    def snapshot(self) -> None:
        path = snapshot_path(self.run_dir, self.steps, ".pt")
        name = path.stem
        data = self.export()
        atomic_write_bytes(path, data)
        relative = path.relative_to(self.run_dir).as_posix()
        if self.league is not None:
            self.league.add_snapshot(name, relative, int(self.steps))
        step = int(self.steps)
        # The function goes to the runners: it must not hold self (the algorithm does not pickle).
        self._runners(lambda r: r.add_snapshot(name, relative, step, data))
        # Relative to the run folder, so that a moved run folder still resumes.
        self.state["snapshots"] = [
            p.relative_to(self.run_dir).as_posix()
            for p in newest_snapshots(self.run_dir, ".pt", self.config.max_snapshots)
        ]

    def evaluate(self) -> None:
        """A point of the learning curve: the greedy policy against the baselines."""
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "policy.pt"
            atomic_write_bytes(path, self.export())
            model = ExportedPolicy(path)
        results = self.spec.evaluate(model, self.config, self.config.eval_deals, self.config.seed + 7)
        self.state["eval"].append({"timesteps": int(self.steps), "results": results})
        summary = log_evaluation(self.logger, self.spec, results)
        self.say(f"[eval @ {self.steps}] learned {summary}")

    def _between_iterations(self, checkpoint: bool = True) -> None:
        if self.steps >= self.next_snapshot:
            self.next_snapshot = (self.steps // self.config.snapshot_every + 1) * self.config.snapshot_every
            self.snapshot()
        if self.next_eval is not None and self.steps >= self.next_eval:
            self.next_eval = (self.steps // self.eval_every + 1) * self.eval_every
            self.evaluate()
        if checkpoint and self.steps >= self.next_checkpoint:
            self.next_checkpoint = (
                self.steps // self.config.checkpoint_every + 1
            ) * self.config.checkpoint_every
            self.save_checkpoint()

    def _record_games(self) -> None:
        role_returns: dict[str, list[float]] = defaultdict(list)
        for games in self._runners(lambda r: r.pop_finished()):
            for game in games:
                role_returns[game["role"]].append(game["return"])
                if self.league is not None and game["member"] is not None:
                    self.league.record(game["member"], [game["return"]])
        for role, values in role_returns.items():
            self.logger.record(f"charts/return_{role}", float(np.mean(values)))
        if self.league is not None:
            data = self.league.to_dict()
            self._runners(lambda r: r.sync_league(data))
            log_league(self.logger, self.league)

    def learn(self) -> None:
        """RLlib iterations (one train batch each) up to the budget."""
        config = self.config
        start, started = self.steps, time.perf_counter()
        update_seconds = 0.0
        while self.steps < config.total_timesteps:
            result = self.algo.train()
            self.steps += int(result["env_runners"]["num_env_steps_sampled"])
            # RLlib's learner timer (a smoothed per-iteration mean): the PPO update's share.
            update_seconds += float(result.get("timers", {}).get("learner_update_timer", 0.0))
            self._record_games()
            learner = result["learners"]["default_policy"]
            speed = self._speed(start, started, update_seconds)
            for tag, key, sign in (
                ("losses/policy_gradient_loss", "policy_loss", 1.0),
                ("losses/value_loss", "vf_loss", 1.0),
                ("losses/entropy_loss", "entropy", -1.0),
            ):
                if key in learner:
                    self.logger.record(tag, sign * float(learner[key]))
            self.logger.record("charts/SPS", speed["sps"])
            for key in ("env_time_fraction", "opponent_time_fraction", "update_time_fraction"):
                self.logger.record(f"charts/{key}", speed[key])
            self.logger.record("charts/total_timesteps", int(self.steps))
            self.state["last_speed"] = speed
            self.say(f"step {self.steps}: {speed['sps']:,.0f} learner steps/s")
            # Evaluations land in this step's row of the logs.
            self._between_iterations()
            self.logger.dump(int(self.steps))
        if self.steps > start:
            speed = self._speed(start, started, update_seconds)
            self.state["final_speed"] = speed
            self.say(
                f"trained {self.steps - start} learner steps in {speed['seconds']:.1f} s "
                f"({speed['sps']:,.0f} learner steps/s, rllib engine)"
            )

    def _speed(self, start: int, started: float, update_seconds: float) -> dict[str, float]:
        elapsed = max(time.perf_counter() - started, 1e-9)
        timing = self._timing()
        runners = max(1, len(self._runners(lambda r: True if r.env is not None else None)))
        env = (timing.get("env_seconds", 0.0) - self.timing_start.get("env_seconds", 0.0)) / runners
        opponents = (
            timing.get("opponent_seconds", 0.0) - self.timing_start.get("opponent_seconds", 0.0)
        ) / runners
        return {
            "seconds": elapsed,
            "sps": (self.steps - start) / elapsed,
            # Per runner (runners sample in parallel): the share of wall time a runner spent there.
            "env_time_fraction": env / elapsed,
            "opponent_time_fraction": opponents / elapsed,
            "update_time_fraction": min(update_seconds / elapsed, 1.0),
        }

    def finish(self) -> None:
        self._between_iterations(checkpoint=False)
        self.save_checkpoint()
        atomic_write_bytes(self.run_dir / FINAL_MODEL, self.export())
        write_learning_curve(self.run_dir, self.state)
        self.logger.close()


def _learners_text(num_learners: int) -> str:
    """Where the report says the run's PPO update ran."""
    if not num_learners:
        return "the learner in the driver"
    return f"{num_learners} learner actor{'s' if num_learners > 1 else ''}"


def final_report(run_dir: str | Path, *, n_deals: int | None = None, verbose: bool = True) -> str:
    """The end-of-training report of an RLlib run: the SB3 engine's (``madiao_mao.training.sb3.train.
    final_report``) with the exported policy as the learner."""
    learner = exported_policy_agent(Path(run_dir) / FINAL_MODEL, name="learned")
    return write_final_report(run_dir, learner, _speed_line, n_deals=n_deals, verbose=verbose)


def _speed_line(state: dict[str, Any]) -> str:
    speed, rllib = state["final_speed"], state.get("rllib", {})
    return (
        f"Engine: RLlib PPO, {rllib.get('num_env_runners')} env runner(s) x "
        f"{rllib.get('envs_per_runner')} games, {_learners_text(rllib.get('num_learners', 0))}. "
        f"Throughput: {speed['sps']:,.0f} learner steps/s "
        f"({speed.get('seconds', float('nan')):.0f} s).\n"
    )
