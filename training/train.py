"""Self-play training with sb3-contrib MaskablePPO (a CleanRL-style straight script).

    python -m madiao_mao.training.train            # or: madiao-mao train [--total-timesteps N ...]

One learner policy plays a random seat of every game (so both Madiao roles, banker and player),
against a league member drawn per game (Madiao's default, below) or opponents drawn seat by seat
from a pool of scripted agents, frozen snapshots of itself and its live self (Mao's default); it
is rewarded with its own seat's payoff (see ``madiao_mao.training.sb3_adapter.LearnerVecEnv``).
With ``imitate`` set (Mao's default), a fresh policy first copies a scripted teacher playing the
learner's seat (``madiao_mao.training.imitation``); PPO then goes on from there.
Everything a run writes lives in its own folder ``runs_dir/game__exp_name__seed__unixtime`` (made
exclusively: a second run started in the same second gets a ``_2`` suffix): ``config.json``,
TensorBoard events (tags ``charts/``, ``losses/``, ``eval/``), ``progress.csv`` (the same names as
the TensorBoard tags), ``eval.json`` (the learning curve: by default about ten evaluations per
run), atomic checkpoints (``checkpoint.zip`` + ``state.json``, the first at step 0), snapshots, and
at the end ``final_model.zip`` and the evaluation report.

With ``opponents="league"`` (``madiao-mao train --opponents league``; Madiao's default), one
member of a league (the live policy, its snapshots, scripted anchors) plays all the opponent
seats of a game, drawn by
prioritized fictitious self-play from the learner's payoff table (``madiao_mao.training.league``; see
``TrainConfig.opponents``), and ``league.json`` is saved beside every checkpoint (a resumed
league run needs it and its snapshot files).

PPO collects whole rollouts (``n_envs * n_steps`` learner steps), so a run ends at its budget
rounded up to a whole rollout; the progress bar ends there and the summary gives the true count.
An interrupted run continues from its last checkpoint with ``train(resume=run_dir)``
(``madiao-mao train --resume RUN_DIR``), appending to its logs; a folder whose ``config.json``,
``state.json`` or ``checkpoint.zip`` is missing or damaged is refused with an error naming the
file, before anything in it changes. Ctrl-C saves a checkpoint of what the policy has learned and
prints the command that resumes the run.

Where things are: the config and its step arithmetic in ``madiao_mao.training.config``; what differs by game
(env, defaults, policy features, evaluation, report) in one spec per game, ``madiao_mao.training.games``; the
SB3 callback (progress, snapshots, evaluations, checkpoints between rollouts) in
``madiao_mao.training.training_callback``. ``train`` reads top to bottom: open the run, build the opponents,
the env and the model, warm start, learn, finish.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import json
import os
import shlex
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from madiao_mao.training.config import (
    FEATURES,
    GAMES,
    LR_SCHEDULES,
    MAO_RULE_POOLS,
    OPPONENT_MODES,
    TrainConfig,
    evaluation_interval,
    rollout_size,
    steps_at_end,
)
from madiao_mao.training.games import GAME_DEFAULTS, POLICY_FEATURES, game_spec
from madiao_mao.training.logging_utils import atomic_save_model

from cardgame_core.files import atomic_write_json

# Names this module has always offered, now defined in madiao_mao.training.config and madiao_mao.training.games.
__all__ = [
    "FEATURES",
    "GAMES",
    "GAME_DEFAULTS",
    "LEAGUE_FILE",
    "LR_SCHEDULES",
    "MAO_RULE_POOLS",
    "OPPONENT_MODES",
    "STATE_FIELDS",
    "TrainConfig",
    "evaluate_against_baselines",
    "evaluation_interval",
    "export_policy",
    "final_report",
    "league_report",
    "learning_rate_schedule",
    "load_league",
    "load_run",
    "make_run_dir",
    "make_vector_env",
    "new_league",
    "policy_class",
    "policy_kwargs",
    "rollout_size",
    "snapshot_agent",
    "steps_at_end",
    "train",
    "warm_start",
]

#: The league saved beside every checkpoint of a league run.
LEAGUE_FILE = "league.json"


# ---- the per-game pieces, from the game's spec (module-level so that tests can replace them)


def make_vector_env(config: TrainConfig, n_envs: int, seed: int | None):
    """The batched env of the training games (``GameSpec.make_vector_env``)."""
    return game_spec(config.game).make_vector_env(config, n_envs, seed)


def evaluate_against_baselines(model, config: TrainConfig, n_deals: int, seed: int) -> dict[str, dict]:
    """The results of the learned policy against each of ``config.eval_opponents``, a point of the
    learning curve (``GameSpec.evaluate``: Madiao duplicate stakes/hand; Mao held-out rules)."""
    return game_spec(config.game).evaluate(model, config, n_deals, seed)


def learning_rate_schedule(config: TrainConfig):
    """The learning rate for SB3: a constant, or a function of the remaining progress (1 -> 0).

    Linear: each PPO update runs at the rate of its rollout's start, decaying linearly over the
    run's real length (its budget rounded up to whole rollouts, ``steps_at_end``), as CleanRL
    anneals it: the first update at the full rate, the last at ``1 / rollouts`` of it. SB3 reads
    the progress after collecting a rollout (1 - steps / total, and ``learn`` passes the real
    length as the total), so it reaches 0 at the last update; the schedule adds the one rollout's
    share back. A rate of the progress alone gave the last rollout a rate of 0 (a budget of
    20,000 steps runs three rollouts of 8,192: the third learned nothing).
    """
    if config.lr_schedule == "constant":
        return config.learning_rate
    start = config.learning_rate
    rollout_share = rollout_size(config) / steps_at_end(config, 0)
    return lambda progress_remaining: start * min(max(progress_remaining, 0.0) + rollout_share, 1.0)


#: Adam as SB3 sets it up for PPO (eps 1e-5), with torch's fused CPU kernel: one kernel over all
#: parameters instead of a Python loop over them; the same update rule, and the update is
#: compute-bound (benchmarks/learner.py).
ADAM_OPTIONS = {"eps": 1e-5, "fused": True}


def policy_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The MaskablePPO policy options of a config (network sizes, features extractor, optimizer)."""
    _, extra = POLICY_FEATURES[config.features].policy()
    return {"net_arch": list(config.net_arch), "optimizer_kwargs": dict(ADAM_OPTIONS), **extra}


def policy_class(config: TrainConfig):
    """The MaskablePPO policy of a config's features: the MLP policy, or for Mao's "rules"
    features the policy whose action layer also reads the per-card rule planes."""
    policy, _ = POLICY_FEATURES[config.features].policy()
    return policy


# ---- run folders


def make_run_dir(config: TrainConfig, clock: Callable[[], float] | None = None) -> Path:
    """Create a new run's folder ``runs_dir/game__exp_name__seed__unixtime`` and return it.

    The folder is made with an exclusive ``mkdir``: a second run with the same name in the same
    second (``clock``, default ``time.time``) gets ``..._2`` (then ``_3``...) instead of a
    traceback or a folder shared by two runs."""
    runs_dir = Path(config.runs_dir)
    runs_dir.mkdir(parents=True, exist_ok=True)
    now = (clock or time.time)()
    base_name = f"{config.game}__{config.exp_name}__{config.seed}__{int(now)}"
    for attempt in itertools.count(1):
        run_dir = runs_dir / (base_name if attempt == 1 else f"{base_name}_{attempt}")
        try:
            run_dir.mkdir()
        except FileExistsError:
            continue
        return run_dir
    raise AssertionError("unreachable")


def _read_run_json(path: Path) -> Any:
    """A run folder's JSON file; a damaged one is a ValueError that names it."""
    try:
        return json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is damaged (not valid JSON: {error})") from None


#: The fields of ``state.json`` a resumed run reads, with their JSON types.
STATE_FIELDS: dict[str, type] = {
    "num_timesteps": int,
    "snapshots": list,
    "eval": list,
    "resumes": list,
    "imitation": dict,
    "last_speed": dict,
    "final_speed": dict,
}


def load_run(run_dir: str | Path) -> tuple[TrainConfig, dict[str, Any]]:
    """The saved config and state of the run in ``run_dir``, checked before anything is written:
    a missing ``config.json``, ``state.json`` or ``checkpoint.zip`` is a FileNotFoundError, a
    damaged ``config.json`` or ``state.json`` a ValueError, each naming the file."""
    run_dir = Path(run_dir)
    config_path, state_path = run_dir / "config.json", run_dir / "state.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{run_dir} is not a run folder (no config.json)")
    data = _read_run_json(config_path)
    if not isinstance(data, dict):
        raise ValueError(f"{config_path} is damaged: expected an object of config fields, got {data!r:.60}")
    try:
        config = TrainConfig.from_json(data)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{config_path} is damaged: {error}") from None
    missing = [path.name for path in (run_dir / "checkpoint.zip", state_path) if not path.is_file()]
    if missing:
        # Starting again from step 0 here would overwrite the run's snapshots and logs.
        raise FileNotFoundError(
            f"cannot resume {run_dir}: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
            "missing, so there is no checkpoint to continue from (start a new run instead)"
        )
    state = _read_run_json(state_path)
    if not isinstance(state, dict):
        raise ValueError(f"{state_path} is damaged: expected an object, got {state!r:.60}")
    for name, kind in STATE_FIELDS.items():
        value = state.get(name, kind())
        if not isinstance(value, kind) or (kind is int and (isinstance(value, bool) or value < 0)):
            raise ValueError(
                f"{state_path} is damaged: {name} should be a {kind.__name__}, got {value!r:.60}"
            )
    if not all(isinstance(path, str) for path in state.get("snapshots", [])):
        raise ValueError(f"{state_path} is damaged: snapshots should be a list of file names")
    if not all(
        isinstance(point, dict)
        and isinstance(point.get("timesteps"), int)
        and isinstance(point.get("results"), dict)
        for point in state.get("eval", [])
    ):
        raise ValueError(f"{state_path} is damaged: eval should be a list of {{timesteps, results}} points")
    return config, state


# ---- training: the steps of train(), in the order it runs them


@dataclass
class Run:
    """A run this call trains: its config (with this call's display settings) and the config as
    saved, its ``state.json`` contents, its folder (made once the model is built) and its league
    (league mode)."""

    config: TrainConfig
    saved_config: dict[str, Any]
    state: dict[str, Any]
    run_dir: Path | None = None
    league: Any = None

    def save_checkpoint(self, model) -> None:
        """An atomic checkpoint: the model, the league, then ``state.json`` (which a resume trusts)."""
        atomic_save_model(model, self.run_dir / "checkpoint.zip")
        if self.league is not None:
            # Before state.json, which a resume trusts: the league is never older than it says.
            atomic_write_json(self.run_dir / LEAGUE_FILE, self.league.to_dict())
        self.state["num_timesteps"] = int(model.num_timesteps)
        atomic_write_json(self.run_dir / "state.json", self.state)


def train(
    config: TrainConfig | None = None,
    resume: str | Path | None = None,
    *,
    total_timesteps: int | None = None,
    quiet: bool = False,
) -> Path:
    """Run a training run from ``config``, or continue the one in folder ``resume`` (its own saved
    config is used; ``total_timesteps`` may raise its budget); returns the run folder.

    ``quiet`` turns the progress bar off for this call (a run's verbose setting then prints a
    line per rollout instead); a resumed run always says where it resumed. A run folder that
    cannot be resumed (a file missing or damaged) is refused before anything in it is changed.
    Ctrl-C (KeyboardInterrupt) during training saves a checkpoint of what was learned, prints how
    to resume, and is raised again."""
    import torch
    from madiao_mao.agents.learned import policy_agent
    from madiao_mao.training.logging_utils import make_logger
    from madiao_mao.training.training_callback import TrainingCallback

    run = open_run(config, resume, total_timesteps=total_timesteps, quiet=quiet)
    config = run.config
    torch.set_num_threads(config.torch_threads)
    say = print if config.verbose else _say_nothing
    pool = build_opponents(run)
    vector_env, venv = build_env(run, pool)
    model = load_model(run, venv) if resume is not None else new_model(run, venv)
    atomic_write_json(run.run_dir / "config.json", run.saved_config)
    if resume is None:
        # A checkpoint from the first moment: a run stopped at any point can be resumed.
        run.save_checkpoint(model)
    model.set_logger(
        make_logger(run.run_dir, resume_step=model.num_timesteps if resume is not None else None)
    )
    callback = None
    try:
        warm_start_once(model, venv, run, say)
        # Opponent copies of the policy sample their moves from generators seeded by the run's
        # seed, so that a run is reproducible when they play.
        pool.set_current(
            policy_agent(model=model, table=vector_env, deterministic=False, name="current", seed=config.seed)
        )
        run.state.setdefault("snapshots", [])
        run.state.setdefault("eval", [])
        run.state.setdefault("resumes", [])
        if resume is not None:
            run.state["resumes"].append(int(model.num_timesteps))
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
        learn(model, run, callback, say)
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
    config: TrainConfig | None, resume: str | Path | None, *, total_timesteps: int | None, quiet: bool
) -> Run:
    """The run to train: a new one from ``config`` (its folder is made later, once nothing can
    fail), or the one in folder ``resume``, whose files are all checked before anything runs."""
    if resume is None:
        if config is None:
            raise ValueError("give a TrainConfig for a new run, or resume=RUN_DIR")
        saved_config = config.to_json()
        if quiet:
            config = dataclasses.replace(config, progress_bar=False)
        return Run(config, saved_config, state={})
    run_dir = Path(resume)
    config, state = load_run(run_dir)
    league = load_league(run_dir) if config.opponents == "league" else None
    if total_timesteps is not None:
        config.total_timesteps = total_timesteps
        config.__post_init__()  # the new budget is checked like any other
    saved_config = config.to_json()
    # Display settings belong to this call, not to the run: they are not saved.
    config = dataclasses.replace(config, progress_bar=not quiet)
    return Run(config, saved_config, state, run_dir=run_dir, league=league)


def scripted_agents(config: TrainConfig, names: tuple[str, ...], what: str) -> list:
    """The scripted opponents ``names``, each seeded by its place; an agent that cannot sit in the
    training games is a ValueError naming it (``what`` says what it was to be)."""
    from madiao_mao.agents.registry import make_agent
    from madiao_mao.training.learner_games import refuse_memory_without_keys

    agents = []
    for number, name in enumerate(names):
        try:
            agents.append(make_agent(name, config.game, seed=config.seed + number))
        except ValueError as error:
            # e.g. Madiao's search player, which needs a whole env of its own per game.
            raise ValueError(f"{what} {name!r} cannot sit in the training pool: {error}") from None
    for name, agent in zip(names, agents, strict=True):
        # Checked here, before the run folder exists: inside the pool the agent sits in a slot,
        # which takes keys whatever it holds (Mao's Bayesian player takes them).
        refuse_memory_without_keys(agent, f"{what} {name!r}")
    return agents


def build_opponents(run: Run):
    """The opponents of the training games: the weighted pool of scripted agents, snapshots and the
    live policy, or in league mode the league's members (``run.league``, made here for a new run),
    with the snapshots a resumed run had."""
    from madiao_mao.training.opponents import LeagueOpponents, OpponentPool

    config = run.config
    if config.opponents != "league":
        pool = OpponentPool(
            scripted_agents(config, config.scripted_opponents, "scripted opponent"),
            weights=config.opponent_weights,
            max_snapshots=config.max_snapshots,
        )
        for path in run.state.get("snapshots", []):
            if Path(path).is_file():
                pool.add_snapshot(snapshot_agent(Path(path), config.seed))
        return pool
    league = run.league = run.league or new_league(config)
    anchors = league.names("anchor")
    scripted = scripted_agents(config, tuple(league.members[name].agent for name in anchors), "league anchor")
    pool = LeagueOpponents(
        league, dict(zip(anchors, scripted, strict=True)), max_snapshots=config.max_snapshots
    )
    for name in league.names("snapshot"):
        path = run.run_dir / league.members[name].path
        try:
            agent = snapshot_agent(path, config.seed)
        except Exception as error:  # a damaged zip fails in zipfile, torch or pickle, each its own way
            raise ValueError(
                f"{path}, snapshot {name!r} of {LEAGUE_FILE}, is damaged ({type(error).__name__}: {error})"
            ) from None
        pool.bind_snapshot(name, agent)
    return pool


def build_env(run: Run, pool) -> tuple[Any, Any]:
    """The timed batched env of the training games and the learner's SB3 view of it (the learner
    seat rotates per finished game, so it plays every seat: both Madiao roles), with the game's
    reward shaping (``GameSpec.shape_reward``)."""
    from madiao_mao.training.opponents import TimedVectorEnv
    from madiao_mao.training.sb3_adapter import LearnerVecEnv

    config = run.config
    # A resumed run continues with a fresh deal stream (a new seed per resume).
    seed = config.seed + 1000 * len(run.state.get("resumes", []))
    vector_env = TimedVectorEnv(make_vector_env(config, config.n_envs, seed=seed))
    if run.league is not None:
        # One member per game, drawn by PFSP, plays every opponent seat of it.
        venv = LearnerVecEnv(
            vector_env,
            pool.slots,
            learner_seat="rotate",
            seed=config.seed,
            opponent_draw="per_game",
            opponent_sampler=pool.sample,
        )
        pool.attach(venv)
    else:
        venv = LearnerVecEnv(vector_env, pool.slots, learner_seat="rotate", seed=config.seed)
    venv = game_spec(config.game).shape_reward(venv, config)
    wrap_for_policy = POLICY_FEATURES[config.features].learner_env
    return vector_env, (venv if wrap_for_policy is None else wrap_for_policy(venv, vector_env))


def make_model(config: TrainConfig, venv):
    """A fresh MaskablePPO model of ``config`` on ``venv`` (what a run trains; the learner
    benchmark builds the same model)."""
    from sb3_contrib import MaskablePPO

    return MaskablePPO(
        policy_class(config),
        venv,
        learning_rate=learning_rate_schedule(config),
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        policy_kwargs=policy_kwargs(config),
        seed=config.seed,
        device="cpu",
        verbose=0,
    )


def new_model(run: Run, venv):
    """A fresh MaskablePPO model of the run's config; the run's folder is made now that it can
    start (a bad option leaves no empty folder)."""
    model = make_model(run.config, venv)
    run.run_dir = make_run_dir(run.config)
    return model


def load_model(run: Run, venv):
    """The model of a resumed run's checkpoint; a checkpoint that does not load is a ValueError
    naming it (the env is closed first)."""
    from sb3_contrib import MaskablePPO

    checkpoint = run.run_dir / "checkpoint.zip"
    try:
        # The schedule of the run's config (a resume may raise the budget), not the saved one.
        model = MaskablePPO.load(
            str(checkpoint), env=venv, device="cpu", learning_rate=learning_rate_schedule(run.config)
        )
    except Exception as error:  # a damaged zip fails in zipfile, torch or pickle, each its own way
        venv.close()
        raise ValueError(
            f"{checkpoint} is damaged or does not fit this run ({type(error).__name__}: {error})"
        ) from None
    budget = run.config.total_timesteps
    print(f"resumed {run.run_dir} at step {model.num_timesteps} (budget {budget} learner steps)")
    return model


def warm_start_once(model, venv, run: Run, say: Callable[..., None]) -> None:
    """The warm start (``config.imitate``) of a fresh policy, once per run: a run resumed after it
    does not repeat it. What it measured is logged (``imitation/``) and checkpointed."""
    config, state = run.config, run.state
    if config.imitate == "none" or "imitation" in state or model.num_timesteps != 0:
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
    import torch

    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(False)
    try:
        yield
    finally:
        torch.distributions.Distribution.set_default_validate_args(before)


def learn(model, run: Run, callback, say: Callable[..., None]) -> None:
    """PPO up to the budget (rounded up to whole rollouts), then the speed summary."""
    config, start = run.config, model.num_timesteps
    if config.total_timesteps <= start:
        return
    end = steps_at_end(config, start)
    if end != config.total_timesteps:
        say(
            f"training to step {end}: the budget of {config.total_timesteps} learner steps "
            f"rounded up to whole rollouts of {rollout_size(config)} (n_envs * n_steps)"
        )
    with unchecked_distributions():
        # Up to the real end, so that SB3's progress (and the learning rate) ends at the last update.
        model.learn(end - start, callback=callback, reset_num_timesteps=False)
    speed = callback.speed()
    say(
        f"trained {model.num_timesteps - start} learner steps in {speed['seconds']:.1f} s "
        f"({speed['sps']:,.0f} learner steps/s, env + learner + opponents): game env "
        f"{100 * speed['env_time_fraction']:.0f}%, opponent policies "
        f"{100 * speed['opponent_time_fraction']:.0f}%, PPO updates "
        f"{100 * speed['update_time_fraction']:.0f}% of the time"
    )
    run.state["final_speed"] = speed


def finish(model, run: Run) -> None:
    """The run's last checkpoint, its final model and its learning curve (``eval.json``)."""
    run.save_checkpoint(model)
    atomic_save_model(model, run.run_dir / "final_model.zip")
    atomic_write_json(run.run_dir / "eval.json", run.state["eval"])
    atomic_write_json(run.run_dir / "state.json", run.state)


def save_interrupted(model, run: Run, callback) -> None:
    """After Ctrl-C: checkpoint what the policy has learned and say how to resume."""
    if callback is not None:
        callback.close_bar()
        if callback.collecting:
            # The steps of an unfinished rollout were never learned from: not counted.
            model.num_timesteps = callback.learned_steps
        run.save_checkpoint(model)
    # (Interrupted in the warm start, the step-0 checkpoint of the fresh policy stands.)
    print(
        f"interrupted at step {model.num_timesteps}; resume with: "
        f"madiao-mao train --resume {shlex.quote(str(run.run_dir))}",
        file=sys.stderr,
    )


# ---- the league (league mode)


def new_league(config: TrainConfig):
    """A fresh league for ``config``: the main agent and the ``league_anchors``."""
    from madiao_mao.training.league import League

    league = League(
        weighting=config.pfsp_weighting,
        power=config.pfsp_power,
        floor=config.pfsp_floor,
        max_snapshots=config.max_snapshots,
    )
    for name in config.league_anchors:
        league.add_anchor(name)
    return league


def load_league(run_dir: Path):
    """The league saved with a run's checkpoint (``league.json``) with its snapshot files; a
    missing file is a FileNotFoundError, damaged data a ValueError, each naming the file."""
    from madiao_mao.training.league import League

    path = run_dir / LEAGUE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"cannot resume the league run {run_dir}: {LEAGUE_FILE} is missing")
    try:
        league = League.from_dict(_read_run_json(path))
    except ValueError as error:
        message = str(error)
        raise ValueError(message if str(path) in message else f"{path} is damaged: {message}") from None
    for name in league.names("snapshot"):
        snapshot = run_dir / league.members[name].path
        if not snapshot.is_file():
            raise FileNotFoundError(f"{path}: the file of snapshot {name!r} is missing ({snapshot})")
    return league


def league_report(run_dir: Path) -> str:
    """The report's league section: the payoff table saved with the run, and its history from
    ``progress.csv`` plotted as ``league_payoffs.png`` and ``league_ratings.png`` (empty text
    for a run without a league)."""
    from madiao_mao.training.league import League

    path = Path(run_dir) / LEAGUE_FILE
    if not path.is_file():
        return ""
    league = League.from_dict(_read_run_json(path))
    plots = plot_league_history(Path(run_dir))
    return (
        "## League\n\nThe main agent's results in its training games against each member (one "
        "member plays all the other seats of a game), the member's PFSP draw probability at the end "
        "and its openskill rating.\n\n"
        + league.markdown()
        + (f"\nOver training: {', '.join(f'`{name}`' for name in plots)}.\n" if plots else "")
    )


def plot_league_history(run_dir: Path) -> list[str]:
    """Plot the ``league/payoff/`` and ``league/rating/`` columns of a run's ``progress.csv``
    against the learner step; returns the names of the PNG files written."""
    import csv

    from madiao_mao.training.logging_utils import STEP_COLUMN
    from madiao_mao.training.stats import plot_curves

    progress = run_dir / "progress.csv"
    if not progress.is_file():
        return []
    with progress.open(newline="") as file:
        rows = list(csv.DictReader(file))
    written = []
    for kind, ylabel, name in (
        ("payoff", "learner's mean return vs member", "league_payoffs.png"),
        ("rating", "member's openskill mu", "league_ratings.png"),
    ):
        prefix = f"league/{kind}/"
        curves = {}
        for column in rows[0] if rows else {}:
            if not column.startswith(prefix):
                continue
            points = [
                (float(row[STEP_COLUMN]), float(row[column]))
                for row in rows
                if row[column] and row[STEP_COLUMN]
            ]
            if points:
                curves[column[len(prefix) :]] = ([x for x, _ in points], [y for _, y in points])
        if curves:
            plot_curves(
                curves, run_dir / name, xlabel="learner steps", ylabel=ylabel, title=f"League {kind}s"
            )
            written.append(name)
    return written


def snapshot_agent(path: Path, seed: int):
    """A frozen snapshot of the learner as a sampling opponent, seeded by the run's seed and the
    snapshot's step (``snapshot_000250112.zip``)."""
    from madiao_mao.agents.learned import policy_agent

    steps = int(path.stem.rsplit("_", 1)[-1])
    return policy_agent(path, deterministic=False, name=path.stem, seed=seed * 1_000_003 + steps)


def warm_start(model, venv, config: TrainConfig, say=print) -> dict[str, float]:
    """Fit a fresh ``model``'s policy and value head to ``config.imitate`` playing the learner's
    seat of ``venv`` (``madiao_mao.training.imitation``); returns what was measured (for the log)."""
    from madiao_mao.agents.registry import make_agent
    from madiao_mao.training.imitation import collect_teacher_decisions, fit_policy

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


def export_policy(model_path: str | Path, destination: str | Path) -> Path:
    """Save an inference-only copy of a trained model (the optimizer's moment estimates, two
    thirds of a checkpoint, are dropped; it still loads with ``MaskablePPO.load``). This is how
    ``agents/pretrained/madiao_selfplay.zip`` is made from a run's ``final_model.zip``."""
    import torch
    from sb3_contrib import MaskablePPO

    model = MaskablePPO.load(str(model_path), device="cpu")
    # A fresh optimizer holds no moment estimates (its rate is the schedule's starting rate).
    model.policy.optimizer = torch.optim.Adam(model.policy.parameters(), lr=model.lr_schedule(1.0))
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    stored = io.BytesIO()
    model.save(stored)
    # SB3 stores its archive uncompressed; its "data" member (the spaces, pickled) shrinks several
    # times when deflated, which keeps the shipped models small. ``MaskablePPO.load`` reads both.
    temporary = destination.with_name(f".{destination.stem}.tmp.zip")
    with zipfile.ZipFile(stored) as source, zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item.filename, source.read(item.filename))
    os.replace(temporary, destination)
    return destination


def final_report(run_dir: Path, *, n_deals: int | None = None, verbose: bool = True) -> str:
    """The end-of-training evaluation: the run's speed, its league (league mode) and the game's
    sections (``GameSpec.report``: Madiao, a tournament of the final model and the baselines with
    learning curves and ratings as PNGs; Mao, the held-out rules), written to ``report.md``."""
    from madiao_mao.agents.learned import policy_agent

    run_dir = Path(run_dir)
    state = json.loads((run_dir / "state.json").read_text())
    speed_line = None
    if "final_speed" in state:
        speed = state["final_speed"]
        speed_line = (
            f"Throughput: {speed['sps']:,.0f} learner steps/s; "
            f"game env {100 * speed['env_time_fraction']:.0f}%, "
            f"opponent policies {100 * speed['opponent_time_fraction']:.0f}% and PPO updates "
            f"{100 * speed.get('update_time_fraction', float('nan')):.0f}% of training time "
            f"({speed.get('seconds', float('nan')):.0f} s).\n"
        )
    learner = policy_agent(run_dir / "final_model.zip", name="learned")
    return write_final_report(run_dir, learner, speed_line, n_deals=n_deals, verbose=verbose)


def write_final_report(
    run_dir: Path, learner, speed_line: str | None, *, n_deals: int | None = None, verbose: bool = True
) -> str:
    """``report.md`` of a finished run of either engine: its title, ``speed_line``, the league
    (league mode) and the game's sections played by ``learner`` (the final policy)."""
    from cardgame_core.files import atomic_write_text

    run_dir = Path(run_dir)
    config = TrainConfig.from_json(json.loads((run_dir / "config.json").read_text()))
    state = json.loads((run_dir / "state.json").read_text())
    n_deals = n_deals or config.final_eval_deals
    sections = [f"# Training report: {run_dir.name}\n"]
    if speed_line:
        sections.append(speed_line)
    league_section = league_report(run_dir)
    if league_section:
        sections.append(league_section)
    sections += game_spec(config.game).report(learner, config, run_dir, n_deals, state)
    text = "\n".join(sections)
    atomic_write_text(run_dir / "report.md", text)
    if verbose:
        print(text)
    return text


if __name__ == "__main__":
    # ``python -m madiao_mao.training.train [FLAGS]`` is ``madiao-mao train [FLAGS]``. The command line sits
    # above the trainer (madiao_mao.training.cli imports this module, never the reverse): only this script
    # entry, which never runs on import, reaches up to it.
    from madiao_mao.training.cli import main as cli_main

    sys.exit(cli_main(["train", *sys.argv[1:]]))
