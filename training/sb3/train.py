"""The SB3 engine: self-play training with sb3-contrib MaskablePPO (a CleanRL-style straight script).

    python -m madiao_mao.training.sb3.train        # or: madiao-mao train [--total-timesteps N ...]

One learner policy plays a random seat of every game (so both Madiao roles, banker and player),
against a league member drawn per game (Madiao's default, below) or opponents drawn seat by seat
from a pool of scripted agents, frozen snapshots of itself and its live self (Mao's default); it
is rewarded with its own seat's payoff (see ``madiao_mao.training.sb3.adapter.LearnerVecEnv``).
With ``imitate`` set (Mao's default), a fresh policy first copies a scripted teacher playing the
learner's seat (``madiao_mao.training.sb3.imitation``); PPO then goes on from there.
Everything a run writes lives in its own folder (``madiao_mao.training.run_folder``, the contract both
engines keep): ``config.json``, TensorBoard events (tags ``charts/``, ``losses/``, ``eval/``),
``progress.csv`` (the same names as the TensorBoard tags), ``eval.json`` (the learning curve: by
default about ten evaluations per run), atomic checkpoints (``checkpoint.zip`` + ``state.json``,
the first at step 0), snapshots, and at the end ``final_model.zip`` and the evaluation report.

With ``opponents="league"`` (``madiao-mao train --opponents league``; Madiao's default), one
member of a league (the live policy, its snapshots, scripted anchors) plays all the opponent
seats of a game, drawn by
prioritized fictitious self-play from the learner's payoff table (``madiao_mao.training.league``; see
``TrainConfig.opponents``), and ``league.json`` is saved beside every checkpoint (a resumed
league run needs it and its snapshot files).

The policy trains on ``config.device`` (``madiao_mao.training.config.resolve_device``: "auto" takes
a CUDA GPU when torch sees one); the opponents' saved snapshots and the models a run saves play
on the CPU wherever they are loaded (``madiao_mao.agents.learned.load_model``).

PPO collects whole rollouts (``n_envs * n_steps`` learner steps), so a run ends at its budget
rounded up to a whole rollout; the progress bar ends there and the summary gives the true count.
An interrupted run continues from its last checkpoint with ``train(resume=run_dir)``
(``madiao-mao train --resume RUN_DIR``), appending to its logs; a folder whose ``config.json``,
``state.json`` or ``checkpoint.zip`` is missing or damaged is refused with an error naming the
file, before anything in it changes. Ctrl-C saves a checkpoint of what the policy has learned and
prints the command that resumes the run.

Where things are: the config and its step arithmetic in ``madiao_mao.training.config``; what differs by
game (env, defaults, policy features, evaluation, report) in one spec per game,
``madiao_mao.training.game_spec``; the
model (policy, optimizer, learning-rate schedule, export) in ``madiao_mao.training.sb3.model``; the SB3
callback (progress, snapshots, evaluations, checkpoints between rollouts) in
``madiao_mao.training.sb3.callback``. ``train`` reads top to bottom: open the run, build the opponents, the
env and the model, warm start, learn, finish.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from madiao_mao.agents.learned import policy_agent
from madiao_mao.training.config import TrainConfig, resolve_device, rollout_size, steps_at_end
from madiao_mao.training.env_workers import ShardedOpponents, ShardedVecEnv, copy_weights, shared_cpu_copy
from madiao_mao.training.game_spec import POLICY_FEATURES, game_spec
from madiao_mao.training.league import League
from madiao_mao.training.learner_games import TimedVectorEnv
from madiao_mao.training.logging_utils import atomic_save_model, make_logger
from madiao_mao.training.opponents import build_opponents, snapshot_agent
from madiao_mao.training.run_folder import (
    SB3_ENGINE,
    commit_checkpoint,
    reopen_run,
    say_interrupted,
    start_training,
    write_config,
    write_final_report,
    write_learning_curve,
)
from madiao_mao.training.sb3.adapter import LearnerVecEnv
from madiao_mao.training.sb3.callback import TrainingCallback
from madiao_mao.training.sb3.imitation import warm_start
from madiao_mao.training.sb3.model import (
    CHECKPOINT_FILE,
    load_checkpoint,
    new_model,
    save_for_play,
)
from madiao_mao.training.sb3.privileged import PrivilegedObservations

FINAL_MODEL_FILE = "final_model.zip"
#: ``state.json``'s ``"engine"`` of a run this engine trained (last).
ENGINE_NAME = SB3_ENGINE
#: Apart from the run's seed by more than a call's (``Run.call_seed``: 1000 per resume), so that
#: no shard's deals are another shard's or another call's (``build_env``).
SHARD_SEED_STRIDE = 1_000_003


# ---- the per-game pieces, from the game's spec (module-level so that tests can replace them)


def make_vector_env(config: TrainConfig, n_envs: int, seed: int | None):
    """The batched env of the training games (``GameSpec.make_vector_env``)."""
    return game_spec(config.game).make_vector_env(config, n_envs, seed)


def evaluate_against_baselines(model, config: TrainConfig, n_deals: int, seed: int) -> dict[str, dict]:
    """The results of the learned policy against each of ``config.eval_opponents``, a point of the
    learning curve (``GameSpec.evaluate``: Madiao duplicate stakes/hand; Mao held-out rules)."""
    return game_spec(config.game).evaluate(model, config, n_deals, seed)


# ---- training: the steps of train(), in the order it runs them


@dataclass
class Run:
    """A run this call trains: its config (with this call's display settings) and the config as
    saved, its ``state.json`` contents, the torch device it trains on this time
    (``resolve_device``), its folder (made once the model is built) and its league (league mode)."""

    config: TrainConfig
    saved_config: dict[str, Any]
    state: dict[str, Any]
    device: str = "cpu"
    run_dir: Path | None = None
    league: League | None = None
    resumed: bool = False

    @property
    def call_seed(self) -> int:
        """The seed of this training call's deals and draws: the run's seed for a new run, and
        another for each resume, so that a resumed run does not replay the deals and draws its
        earlier calls made (``state.json``'s ``resumes`` lists the earlier resumes)."""
        return self.config.seed + 1000 * (len(self.state.get("resumes", [])) + self.resumed)

    def save_checkpoint(self, model) -> None:
        """An atomic checkpoint: the model, then the league and ``state.json`` (which a resume trusts)."""
        atomic_save_model(model, self.run_dir / CHECKPOINT_FILE)
        commit_checkpoint(self.run_dir, self.state, self.league, model.num_timesteps)


def train(
    config: TrainConfig | None = None,
    resume: str | Path | None = None,
    *,
    total_timesteps: int | None = None,
    torch_threads: int | None = None,
    quiet: bool = False,
    learn_with: Callable[..., None] | None = None,
    engine: str | None = None,
) -> Path:
    """Run a training run from ``config``, or continue the one in folder ``resume`` (its own saved
    config is used; ``total_timesteps`` may raise its budget, ``torch_threads`` sets its torch threads
    from there on); returns the run folder.

    ``learn_with(model, run, callback, say)`` replaces SB3's ``learn`` (another engine's loop on
    the same model, ``madiao_mao.training.fast``), and ``engine`` is then its name in ``state.json``
    (else ``ENGINE_NAME``: ``state.json`` names the engine that trained last).

    ``quiet`` turns the progress bar off for this call (a run's verbose setting then prints a
    line per rollout instead); a resumed run always says where it resumed. A run folder that
    cannot be resumed (a file missing or damaged) is refused before anything in it is changed.
    Ctrl-C (KeyboardInterrupt) during training saves a checkpoint of what was learned, prints how
    to resume, and is raised again."""
    run = open_run(config, resume, total_timesteps=total_timesteps, torch_threads=torch_threads, quiet=quiet)
    config = run.config
    torch.set_num_threads(config.torch_threads)
    say = print if config.verbose else _say_nothing
    pool = build_opponents(run)
    vector_env, venv = build_env(run, pool)
    if config.env_workers > 1:
        pool = ShardedOpponents(pool, venv)
    model = load_checkpoint(run, venv) if resume is not None else new_model(run, venv)
    run.state["engine"] = engine or ENGINE_NAME
    write_config(run.run_dir, run.saved_config)
    if resume is None:
        # A checkpoint from the first moment: a run stopped at any point can be resumed.
        run.save_checkpoint(model)
    model.set_logger(
        make_logger(run.run_dir, resume_step=model.num_timesteps if resume is not None else None)
    )
    callback = None
    try:
        if config.env_workers > 1:
            start_env_workers(venv, run, model, pool)
        warm_start_once(model, venv, run, say)
        pool.set_current(live_policy_agent(model, vector_env, run))
        start_training(run.state, model.num_timesteps, resumed=resume is not None, device=run.device)
        callback = TrainingCallback(
            config,
            run.run_dir,
            run.state,
            vector_env,
            pool,
            save_checkpoint=run.save_checkpoint,
            evaluate=evaluate_against_baselines,
            snapshot_agent=snapshot_agent,
            say=say,
        )
        (learn_with or learn)(model, run, callback, say)
        finish(model, run)
    except KeyboardInterrupt:
        save_interrupted(model, run, callback)
        raise
    finally:
        venv.close()
        model.logger.close()
    return run.run_dir


def _say_nothing(*args: Any, **kwargs: Any) -> None:
    """``print``'s stand-in for a run that is not verbose."""


def open_run(
    config: TrainConfig | None,
    resume: str | Path | None,
    *,
    total_timesteps: int | None,
    quiet: bool,
    torch_threads: int | None = None,
) -> Run:
    """The run to train: a new one from ``config`` (its folder is made later, once nothing can
    fail), or the one in folder ``resume``, whose files are all checked before anything runs."""
    if resume is None:
        if config is None:
            raise ValueError("give a TrainConfig for a new run, or resume=RUN_DIR")
        device = resolve_device(config.device)  # a device this machine lacks is refused here
        saved_config = config.to_json()
        if quiet:
            config = dataclasses.replace(config, progress_bar=False)
        return Run(config, saved_config, state={}, device=device)
    run_dir = Path(resume)
    config, state, league = reopen_run(
        run_dir, checkpoint=CHECKPOINT_FILE, total_timesteps=total_timesteps, torch_threads=torch_threads
    )
    saved_config = config.to_json()
    # Display settings belong to this call, not to the run: they are not saved.
    config = dataclasses.replace(config, progress_bar=not quiet)
    device = resolve_device(config.device, resuming=True)
    return Run(config, saved_config, state, device=device, run_dir=run_dir, league=league, resumed=True)


def league_learner_env(vector_env, pool, seed: int | None) -> LearnerVecEnv:
    """The learner's view of ``vector_env``'s games against a league's members (``pool``, a
    ``LeagueOpponents``): one member per game, drawn by PFSP, plays every opponent seat of it, and
    the league sees which games are under way."""
    venv = LearnerVecEnv(
        vector_env,
        pool.slots,
        learner_seat="rotate",
        seed=seed,
        opponent_draw="per_game",
        opponent_sampler=pool.sample,
    )
    pool.attach(venv)
    return venv


def build_env(run: Run, pool, shard: int = 0) -> tuple[Any, Any]:
    """The timed batched env of the training games and the learner's SB3 view of it (the learner
    seat rotates per finished game, so it plays every seat: both Madiao roles), with the game's
    reward shaping (``GameSpec.shape_reward``) and, for a privileged critic, the learner seat's
    privileged vector after its observation. With ``env_workers`` > 1: shard ``shard``'s games
    (``n_envs / env_workers`` of them, dealt from a seed of their own), the first shard's learner
    view being the ``ShardedVecEnv`` of every shard."""
    config, seed = run.config, run.call_seed + SHARD_SEED_STRIDE * shard
    n_envs = config.n_envs // config.env_workers
    vector_env = TimedVectorEnv(make_vector_env(config, n_envs, seed=seed))
    if run.league is not None:
        venv = league_learner_env(vector_env, pool, seed)
    else:
        venv = LearnerVecEnv(vector_env, pool.slots, learner_seat="rotate", seed=seed)
    venv = game_spec(config.game).shape_reward(venv, config)
    wrap_for_policy = POLICY_FEATURES[config.features].learner_env
    if wrap_for_policy is not None:
        venv = wrap_for_policy(venv, vector_env)
    if config.trains_on_hidden_state:
        venv = PrivilegedObservations(venv, vector_env)
    if config.env_workers > 1 and shard == 0:
        # The trainer's view of every shard's games (the workers join at ``start_env_workers``).
        venv = ShardedVecEnv(venv, config.env_workers)
    return vector_env, venv


def live_policy_agent(model, vector_env, run: Run):
    """The live policy as an opponent: its moves sampled from a generator seeded by the run's
    seed, so that a run is reproducible when it plays."""
    return policy_agent(
        model=model, table=vector_env, deterministic=False, name="current", seed=run.call_seed
    )


def start_env_workers(venv: ShardedVecEnv, run: Run, model, opponents: ShardedOpponents) -> None:
    """Fork the workers of the training games' shards after the first
    (``madiao_mao.training.env_workers``). Each builds its shard and its own opponents as
    :func:`build_env` and ``build_opponents`` build the first's, and plays the live policy from a
    copy of the trainer's model on the CPU in shared memory (``shared_cpu_copy``; the trainer may
    learn on a GPU, which a forked process must not use), to which the trainer copies its
    weights before every rollout (``opponents.before_rollout``)."""
    shared = shared_cpu_copy(model)
    opponents.share_weights = lambda: copy_weights(model, shared)

    def build_shard(index: int):
        # A worker's policy calls are small batches: one torch thread (as a DataLoader worker's).
        torch.set_num_threads(1)
        pool = build_opponents(run)
        vector_env, shard_venv = build_env(run, pool, shard=index)

        def add_snapshot(path: str, step: int) -> list[int]:
            agent = snapshot_agent(run.run_dir / path, run.config.seed)
            stale = getattr(pool, "stale_games", set())
            stale.clear()  # the trainer keeps the stale games of every shard (ShardedOpponents)
            pool.add_snapshot(agent, path=path, step=step)
            return sorted(stale)

        calls = {
            "set_current": lambda: pool.set_current(live_policy_agent(shared, vector_env, run)),
            "add_snapshot": add_snapshot,
        }
        if run.league is not None:
            # The worker's copy of the league records nothing: it draws its games' opponents by
            # the standings of the trainer's, which records every shard's games.
            calls["sync"] = run.league.set_standings
        return shard_venv, calls

    if run.league is not None:
        venv.sync = run.league.standings
    venv.start(build_shard)


def warm_start_once(model, venv, run: Run, say: Callable[..., None]) -> None:
    """The warm start (``config.imitate``) of a fresh policy, once per run: a run resumed after it
    does not repeat it, and a policy started from ``init_model`` is not fresh. What it measured
    is logged (``imitation/``) and checkpointed."""
    config, state = run.config, run.state
    fresh = config.init_model is None and model.num_timesteps == 0
    if config.imitate == "none" or "imitation" in state or not fresh:
        return
    state["imitation"] = warm_start(model, venv, config, say)
    for key, value in state["imitation"].items():
        model.logger.record(f"imitation/{key}", value)
    model.logger.dump(0)
    run.save_checkpoint(model)


@contextlib.contextmanager
def unchecked_distributions() -> Iterator[None]:
    """torch's distributions without their argument checks, restored afterwards. The policy's
    logits are masked with a finite constant and never NaN unless training has already diverged,
    while the checks (a pass over every logit of every batch) cost a few percent of a run."""
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        torch.distributions.Distribution.set_default_validate_args(before)


def training_end(config: TrainConfig, start: int, say: Callable[..., None]) -> int | None:
    """The step a training call from step ``start`` ends at (the budget rounded up to whole
    rollouts, said when it differs), or None when the budget is already reached."""
    if config.total_timesteps <= start:
        return None
    end = steps_at_end(config, start)
    if end != config.total_timesteps:
        say(
            f"training to step {end}: the budget of {config.total_timesteps} learner steps "
            f"rounded up to whole rollouts of {rollout_size(config)} (n_envs * n_steps)"
        )
    return end


def learn(model, run: Run, callback, say: Callable[..., None]) -> None:
    """PPO up to the budget (rounded up to whole rollouts), then the speed summary."""
    start = model.num_timesteps
    end = training_end(run.config, start, say)
    if end is None:
        return
    with unchecked_distributions():
        # Up to the real end, so that SB3's progress (and the learning rate) ends at the last update.
        model.learn(end - start, callback=callback, reset_num_timesteps=False)
    run.state["final_speed"] = say_speed(callback.speed(), model.num_timesteps - start, say)


def say_speed(speed: dict[str, float], steps: int, say: Callable[..., None]) -> dict[str, float]:
    """The closing line of a training call (its learner steps/s and where the time went); returns
    ``speed``."""
    say(
        f"trained {steps} learner steps in {speed['seconds']:.1f} s "
        f"({speed['sps']:,.0f} learner steps/s, env + learner + opponents): game env "
        f"{100 * speed['env_time_fraction']:.0f}%, opponent policies "
        f"{100 * speed['opponent_time_fraction']:.0f}%, PPO updates "
        f"{100 * speed['update_time_fraction']:.0f}% of the time"
    )
    return speed


def finish(model, run: Run) -> None:
    """The run's last checkpoint, its final model and its learning curve (``eval.json``)."""
    run.save_checkpoint(model)
    # What agents load: the actor alone when the critic read the hidden cards.
    save_for_play(model, run.run_dir / FINAL_MODEL_FILE)
    write_learning_curve(run.run_dir, run.state)


def save_interrupted(model, run: Run, callback) -> None:
    """After Ctrl-C: checkpoint what the policy has learned and say how to resume."""
    if callback is not None:
        callback.close_bar()
        if callback.collecting:
            # The steps of an unfinished rollout were never learned from: not counted.
            model.num_timesteps = callback.learned_steps
        run.save_checkpoint(model)
    # (Interrupted in the warm start, the step-0 checkpoint of the fresh policy stands.)
    say_interrupted(run.run_dir, model.num_timesteps)


# ---- the policy as an opponent, and the final report


def final_report(run_dir: Path, *, n_deals: int | None = None, verbose: bool = True) -> str:
    """The end-of-training evaluation: the run's speed, its league (league mode) and the game's
    sections (``GameSpec.report``: Madiao, a tournament of the final model and the baselines with
    learning curves and ratings as PNGs; Mao, the held-out rules), written to ``report.md``."""
    learner = policy_agent(Path(run_dir) / FINAL_MODEL_FILE, name="learned")
    return write_final_report(run_dir, learner, _speed_line, n_deals=n_deals, verbose=verbose)


def _speed_line(state: dict[str, Any]) -> str:
    speed = state["final_speed"]
    return (
        f"Throughput: {speed['sps']:,.0f} learner steps/s; "
        f"game env {100 * speed['env_time_fraction']:.0f}%, "
        f"opponent policies {100 * speed['opponent_time_fraction']:.0f}% and PPO updates "
        f"{100 * speed.get('update_time_fraction', float('nan')):.0f}% of training time "
        f"({speed.get('seconds', float('nan')):.0f} s).\n"
    )


if __name__ == "__main__":
    # ``python -m madiao_mao.training.sb3.train [FLAGS]`` is ``madiao-mao train [FLAGS]``. The command line
    # sits above the trainer (madiao_mao.cli imports this module, never the reverse): only this
    # script entry, which never runs on import, reaches up to it.
    from madiao_mao.cli.main import main as cli_main

    sys.exit(cli_main(["train", *sys.argv[1:]]))
