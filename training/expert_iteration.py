"""Expert iteration: a policy learns an expert's decisions, then plays league self-play; the
improved policy becomes the expert's own policy, and again, while it improves.

    madiao-mao expert-iteration --iterations 3 --decisions 90000 --ppo-steps 0 --workers 2
    madiao-mao expert-iteration --resume runs/madiao__expert-iteration__0__1764000000 --iterations 5

The loop of Anthony et al. (2017), "Thinking fast and slow with deep learning and tree search":
a slow expert (a search player) makes decisions, a fast policy learns them, and the better policy
makes the next expert better. One iteration:

1. The expert, an agent spec in which ``{policy}`` stands for the best policy's model file so far
   (the search player's play-out and inference model), plays whole games in every seat (the
   game's ``collect``): ``decisions`` of its decisions that had a choice are kept with the
   observation the policy reads, the mask, its move and the return that followed
   (``iteration_NN/decisions.npz``).
2. The best policy so far is fitted to them, its value head to the returns
   (``madiao_mao.training.sb3.imitation.fit_policy``): ``iteration_NN/imitation.zip``.
3. ``ppo_steps`` learner steps of the trainer's self-play (the game's default opponents: Madiao's
   league) start from it (``TrainConfig.init_model``; the SB3 run folder sits in the iteration's):
   ``iteration_NN/model.zip`` (the fitted policy itself when ``ppo_steps`` is 0).
4. The trainer's evaluation (``GameSpec.evaluate``; Madiao: duplicate deals, seats rotated) scores
   it against the starting policy and the game's reference players, on the same deals every
   iteration; its *strength* is the mean of those scores. With ``expert_deals``, the expert is
   scored against the starting policy too: a policy can only learn to play as well as its expert.

An iteration stronger than the best so far becomes the best (``best_model.zip``): the next
expert's policy and the next iteration's start. The run stops after ``patience`` iterations in a
row without improvement, or after ``iterations``.

The run folder (``runs_dir/GAME__expert-iteration__SEED__TIME``, as ``madiao_mao.training.run_folder``
names a training run's): ``config.json`` (the settings), ``state.json`` (each finished iteration's
figures and the best; written when an iteration ends, so an interrupted run resumes at the
iteration it was in, which is done again from its start: ``--resume``, where ``--iterations`` and
``--patience`` may change and any other option must be the run's), the ``iteration_NN/``
folders, ``best_model.zip``, the learning curve (``learning_curve.json``, ``learning_curve.md``,
``learning_curve.png``) and ``report.md``. Every iteration is seeded from the run's seed and its
number, so a resumed run plays the iterations an uninterrupted one would.

What a game contributes is an :class:`ExpertIterationGame` (``GameSpec.expert_iteration`` in its training
module); the loop, the fitting, the self-play and the evaluation are the trainer's.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import multiprocessing
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cardgame_core.files import atomic_write_json, atomic_write_text
from madiao_mao.agents.learned import load_model
from madiao_mao.games import default_game, get_game
from madiao_mao.training.cli_args import load_agent
from madiao_mao.training.config import TrainConfig
from madiao_mao.training.game_spec import game_part, game_spec, games_with, policy_table
from madiao_mao.training.run_folder import (
    CONFIG_FILE,
    REPORT_FILE,
    STATE_FILE,
    make_run_dir,
    read_run_json,
    read_state,
    write_config,
)
from madiao_mao.training.stats import markdown_table, plot_curves

#: The run folder's files of its own besides the iterations' folders (its config, state and report
#: are the run folder contract's, ``madiao_mao.training.run_folder``).
BEST_MODEL_FILE = "best_model.zip"
CURVE_FILE = "learning_curve"
#: The name of a run's folder between the game and the seed.
EXP_NAME = "expert-iteration"
#: What stands for the best policy's model file in the expert's spec.
POLICY_FIELD = "policy"
#: The settings a resumed run may change (its budget); any other must be the run's.
RESUMABLE = ("iterations", "patience")
#: Settings added after runs were saved, with the value an older run's config stands for.
ADDED_SETTINGS = {"workers": 1}
#: The name of the starting policy among the evaluation's opponents.
START = "start"


@dataclass(frozen=True)
class ExpertIterationGame:
    """What expert iteration does for one game (``GameSpec.expert_iteration`` of its training spec)."""

    #: The expert when none is given: an agent spec in which ``{policy}`` is the best model's path.
    default_expert: str
    #: The players the policy is evaluated against besides the starting policy (agent specs).
    references: tuple[str, ...]
    #: ``seat_expert(spec, config, seed) -> (agent, env)``: the expert and the env it plays in (a
    #: bad spec is an error here, before any work).
    seat_expert: Callable[[str, Any, int], tuple[Any, Any]]
    #: ``collect(agent, env, n_decisions, seed, gamma) -> TeacherData``: the expert's decisions.
    collect: Callable[[Any, Any, int, int, float], Any]
    #: ``score_expert(agent, env, opponent, n_deals, seed) -> figures``: the expert against
    #: ``opponent`` (an agent), figures shaped as ``GameSpec.evaluate``'s per opponent.
    score_expert: Callable[[Any, Any, Any, int, int], dict[str, Any]]


def expert_iteration_games() -> tuple[str, ...]:
    """The registered games whose spec has an ``expert_iteration``."""
    return games_with(lambda spec: spec.expert_iteration)


def expert_iteration_game(game: str) -> ExpertIterationGame:
    """The game's part; a game without one is a ValueError listing those with one."""
    return game_part(game, lambda spec: spec.expert_iteration)


def _positive(name: str, value: Any, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {kind}, got {value!r}")


@dataclass(frozen=True)
class ExpertIterationSettings:
    """One expert-iteration run (the command's options; saved as the run's ``config.json``)."""

    game: str = default_game()
    """A registered game whose spec has an ``expert_iteration``."""
    iterations: int = 3
    """The most iterations the run makes."""
    decisions: int = 4000
    """The expert's decisions (with a choice) collected per iteration."""
    expert: str | None = None
    """The expert's agent spec, ``{policy}`` standing for the best policy's model file (e.g.
    ``search:samples=128,guard=2,screen=16,policy={policy}``); None: the game's default."""
    ppo_steps: int = 100_000
    """Learner steps of self-play after the fitting, per iteration (0: none; rounded up to whole
    PPO rollouts)."""
    eval_deals: int = 500
    """The evaluation's size per opponent, in the game's unit (Madiao: duplicate deals of 4 hands)."""
    expert_deals: int = 0
    """Deals of the expert against the starting policy per iteration (0: not measured)."""
    patience: int = 1
    """Iterations in a row without improvement after which the run stops."""
    fit_epochs: int = 4
    """Passes over an iteration's decisions when fitting the policy."""
    fit_learning_rate: float = 1e-4
    """Adam's learning rate of the fitting."""
    seed: int = 0
    """Seeds the expert, the fitting, the self-play and the evaluation deals."""
    workers: int = 1
    """Processes that collect the expert's decisions, each a share of them on hands of its own
    seed (1: in this process, on the iteration's seed). The decisions depend on the number of
    workers, so a resumed run keeps it."""
    runs_dir: str = "runs"
    """Folder the run's folder is made in."""
    start_from: str | None = None
    """The starting policy's model file (a MaskablePPO ``.zip``); None: the game's shipped model."""
    train_overrides: Mapping[str, Any] = field(default_factory=dict)
    """Further ``TrainConfig`` fields of the self-play and the fitting's minibatch (tests: small
    rollouts)."""

    def __post_init__(self) -> None:
        game = expert_iteration_game(self.game)
        if self.expert is None:
            object.__setattr__(self, "expert", game.default_expert)
        if self.start_from is None:
            object.__setattr__(self, "start_from", str(_shipped_model(self.game)))
        for name in ("iterations", "decisions", "eval_deals", "patience", "fit_epochs", "workers"):
            _positive(name, getattr(self, name))
        for name in ("ppo_steps", "expert_deals", "seed"):
            _positive(name, getattr(self, name), minimum=0)
        rate = self.fit_learning_rate
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate < 1:
            raise ValueError(f"fit_learning_rate must be in (0, 1), got {rate!r}")
        expert_spec(self.expert, "MODEL")  # a template that names nothing but {policy}
        if not Path(self.start_from).is_file():
            raise FileNotFoundError(f"start_from: no saved model at {self.start_from}")
        if not isinstance(self.train_overrides, Mapping):
            raise ValueError(
                f"train_overrides must map TrainConfig fields to values, got {self.train_overrides!r}"
            )
        try:
            self.train_config()
        except TypeError as error:  # a field TrainConfig does not have
            raise ValueError(f"train_overrides: {error}") from None

    @functools.cached_property
    def _start_table(self) -> dict[str, str]:
        # The run reads the variant its starting policy reads (a summary policy is fitted on the
        # summary, whatever the game's default for a new run).
        return policy_table(self.game, f"model:{self.start_from}")

    def train_config(self, **changes: Any):
        """The trainer's config of this run: the game's defaults, the overrides, ``changes``; its
        evaluation plays the starting policy and the game's references."""

        references = (f"model:{self.start_from}", *expert_iteration_game(self.game).references)
        values = {
            "game": self.game,
            "seed": self.seed,
            "eval_opponents": references,
            "eval_every": 0,
            "progress_bar": False,
            **self._start_table,
            **self.train_overrides,
            **changes,
        }
        return TrainConfig(**values)

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "train_overrides": dict(self.train_overrides)}


def _shipped_model(game: str) -> Path:
    path = get_game(game).layer("agents").PRETRAINED_MODEL
    if path is None:
        raise ValueError(f"no {game} model is shipped: give the starting policy (start_from)")
    return Path(path)


def expert_spec(template: str, policy: str | Path) -> str:
    """The expert's agent spec: ``template`` with ``{policy}`` replaced by ``policy``; a template
    naming anything else in braces is a ValueError."""
    if not isinstance(template, str) or not template:
        raise ValueError(f"expert must be an agent spec, got {template!r}")
    try:
        return template.format(**{POLICY_FIELD: policy})
    except (KeyError, IndexError, ValueError) as error:
        raise ValueError(
            f"expert {template!r}: only {{{POLICY_FIELD}}} may stand in braces "
            f"({type(error).__name__}: {error})"
        ) from None


def check_before_work(settings: ExpertIterationSettings) -> None:
    """Refuse, before any work, a starting policy that cannot be loaded or does not fit the game's
    observations and actions, and an expert that cannot be built (its spec made with the starting
    policy)."""

    config = settings.train_config()
    start = load_agent(f"model:{settings.start_from}", settings.game)
    table = game_spec(settings.game).make_vector_env(config, 1, settings.seed)
    fits = (start.obs_dim, start.model.action_space.n) == (table.obs_dim, table.n_actions)
    table.close()
    if not fits:
        raise ValueError(
            f"the starting policy {settings.start_from} reads {start.obs_dim} inputs and chooses among "
            f"{start.model.action_space.n} actions; the run's env has {table.obs_dim} and {table.n_actions}"
        )
    if "{" + POLICY_FIELD + "}" in settings.expert and "," in settings.start_from + settings.runs_dir:
        # The policy's path goes into the expert's options, which commas separate.
        raise ValueError(
            f"the expert names {{{POLICY_FIELD}}}, and the starting policy's or the run's path holds a "
            "comma, which separates an agent's options: use paths without one"
        )
    _expert, env = expert_iteration_game(settings.game).seat_expert(
        expert_spec(settings.expert, settings.start_from), config, settings.seed
    )
    env.close()


# ---- the run's state


@dataclass
class Run:
    """A run this call makes: its settings, folder and ``state.json`` contents."""

    settings: ExpertIterationSettings
    run_dir: Path
    state: dict[str, Any]

    @property
    def done(self) -> list[dict[str, Any]]:
        return self.state["iterations"]

    def best_model(self) -> str:
        """The best policy's model file so far (the starting policy before any improvement)."""
        best = self.state["best"]
        return self.settings.start_from if best == 0 else str(self.run_dir / self.done[best - 1]["model"])

    def stopped(self) -> str | None:
        """Why the run is over (None while it goes on)."""
        if self.state["stale"] >= self.settings.patience:
            stale, patience = self.state["stale"], self.settings.patience
            return f"no improvement in {stale} iteration(s) in a row (patience {patience})"
        if len(self.done) >= self.settings.iterations:
            return f"{self.settings.iterations} iteration(s) made"
        return None

    def commit(self) -> None:

        atomic_write_json(self.run_dir / STATE_FILE, self.state)


def new_run(settings: ExpertIterationSettings) -> Run:
    """A new run's folder with its ``config.json`` (the state follows the baseline evaluation)."""
    config = settings.train_config(exp_name=EXP_NAME, runs_dir=settings.runs_dir)
    run_dir = make_run_dir(config)
    write_config(run_dir, settings.to_json())
    return Run(settings, run_dir, {"iterations": [], "best": 0, "stale": 0})


def reopen_run(run_dir: str | Path, given: Mapping[str, Any]) -> Run:
    """The run in ``run_dir`` to go on with: its saved settings, with ``given`` options (None:
    not given) checked against them (only ``RESUMABLE`` ones may differ); a missing or damaged
    file is an error naming it, before anything in the folder changes."""
    run_dir = Path(run_dir)
    config_path, state_path = run_dir / CONFIG_FILE, run_dir / STATE_FILE
    for path in (config_path, state_path):
        if not path.is_file():
            raise FileNotFoundError(f"{run_dir} is not an expert-iteration run folder (no {path.name})")
    saved = read_run_json(config_path)
    if isinstance(saved, dict):
        saved = {**ADDED_SETTINGS, **saved}
    if not isinstance(saved, dict) or set(saved) != {
        f.name for f in dataclasses.fields(ExpertIterationSettings)
    }:
        raise ValueError(f"{config_path} is not an expert-iteration config")
    for name, value in given.items():
        if value is None or name in RESUMABLE:
            continue
        if value != saved[name]:
            raise ValueError(
                f"--{name.replace('_', '-')} {value} differs from the run's {saved[name]}: a resumed run "
                f"keeps its settings (only {' and '.join('--' + n for n in RESUMABLE)} may change)"
            )
    budget = {name: given[name] for name in RESUMABLE if given.get(name) is not None}
    try:
        settings = ExpertIterationSettings(**{**saved, **budget})
    except (TypeError, ValueError) as error:
        raise ValueError(f"{config_path}: {error}") from None
    state = read_run_json(state_path)
    _check_state(state, state_path, run_dir)
    return Run(settings, run_dir, state)


def _check_state(state: Any, path: Path, run_dir: Path) -> None:
    if not (
        isinstance(state, dict)
        and isinstance(state.get("iterations"), list)
        and all(isinstance(item, dict) and isinstance(item.get("model"), str) for item in state["iterations"])
        and isinstance(state.get("best"), int)
        and 0 <= state["best"] <= len(state["iterations"])
        and isinstance(state.get("stale"), int)
        and isinstance(state.get("baseline"), dict)
    ):
        raise ValueError(
            f"{path} is damaged (expected the iterations, the best, the stale count and the baseline)"
        )
    for item in state["iterations"]:
        if not (run_dir / item["model"]).is_file():
            raise FileNotFoundError(
                f"{path}: the model of iteration {item.get('iteration')} is missing ({item['model']})"
            )


# ---- one iteration


def evaluate(model_path: str | Path, settings: ExpertIterationSettings) -> dict[str, Any]:
    """The policy at ``model_path`` against the starting policy and the references on the run's
    fixed deals (the trainer's evaluation), with its strength (the mean of its scores)."""

    config = settings.train_config()
    results = game_spec(settings.game).evaluate(
        load_model(model_path), config, settings.eval_deals, settings.seed + 7
    )
    start = config.eval_opponents[0]
    results = {START if name == start else name: figures for name, figures in results.items()}
    return {"results": results, "strength": sum(r["all"]["mean"] for r in results.values()) / len(results)}


def collect_decisions(
    game: ExpertIterationGame,
    expert: Any,
    table: Any,
    spec: str,
    config: TrainConfig,
    settings: ExpertIterationSettings,
    seed: int,
) -> Any:
    """The iteration's ``settings.decisions`` decisions of the expert (``TeacherData``): by
    ``expert`` on ``table`` in this process, or in ``settings.workers`` processes, each seating
    its own expert of ``spec`` and playing its share of the decisions on hands of its own seed
    (``worker_seeds``); ``seconds`` is the collection's wall time."""
    if settings.workers == 1:
        return game.collect(expert, table, settings.decisions, seed, config.gamma)
    # Imported here: keeps torch off this module's import path.
    from madiao_mao.training.sb3.imitation import TeacherData

    workers = settings.workers
    shares = [settings.decisions // workers + (k < settings.decisions % workers) for k in range(workers)]
    # The run's torch threads (its usable cores unless set) shared among the workers.
    threads = max(1, config.torch_threads // workers)
    started = time.perf_counter()
    # Spawned, not forked: the parent holds torch's and Numba's threads.
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        parts = list(
            pool.map(
                _collect_share,
                [settings.game] * workers,
                [spec] * workers,
                [config] * workers,
                worker_seeds(seed, workers),
                shares,
                [threads] * workers,
            )
        )
    rows = [f.name for f in dataclasses.fields(TeacherData) if f.name != "seconds"]
    return TeacherData(
        **{name: np.concatenate([getattr(part, name) for part in parts]) for name in rows},
        seconds=time.perf_counter() - started,
    )


def worker_seeds(seed: int, workers: int) -> list[int]:
    """The seeds of ``workers`` collecting processes of an iteration seeded ``seed``: independent
    streams of one ``SeedSequence``."""
    return [int(child.generate_state(1)[0]) for child in np.random.SeedSequence(seed).spawn(workers)]


def _collect_share(game_name: str, spec: str, config: TrainConfig, seed: int, n_decisions: int, threads: int):
    """One worker of ``collect_decisions``: its own expert and table, ``n_decisions`` of its decisions."""
    # Imported here: keeps torch off this module's import path (the worker needs it for its threads).
    import torch

    torch.set_num_threads(threads)
    game = expert_iteration_game(game_name)
    expert, table = game.seat_expert(spec, config, seed)
    try:
        return game.collect(expert, table, n_decisions, seed, config.gamma)
    finally:
        table.close()


def run_iteration(run: Run, number: int, say: Callable[..., None]) -> dict[str, Any]:
    """Iteration ``number`` (module doc); returns its figures. Its folder is made afresh (an
    interrupted attempt's files are removed first)."""

    # Imported here: keeps torch and stable-baselines3 off this module's import path.
    from madiao_mao.training.logging_utils import atomic_save_model
    from madiao_mao.training.sb3.imitation import fit_policy, teacher_agreement
    from madiao_mao.training.sb3.train import FINAL_MODEL_FILE, train

    settings, game = run.settings, expert_iteration_game(run.settings.game)
    started = time.perf_counter()
    folder = run.run_dir / f"iteration_{number:02d}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    seed = settings.seed + 1000 * number
    config = settings.train_config(seed=seed)
    spec = expert_spec(settings.expert, run.best_model())
    # This process plays the expert only to collect alone or to score it; workers seat their own.
    plays_here = settings.workers == 1 or bool(settings.expert_deals)
    expert, table = game.seat_expert(spec, config, seed) if plays_here else (None, None)
    try:
        say(f"iteration {number}: {spec} makes {settings.decisions:,} decisions")
        data = collect_decisions(game, expert, table, spec, config, settings, seed)
        np.savez_compressed(
            folder / "decisions.npz",
            observations=data.observations,
            masks=data.masks,
            actions=data.actions,
            returns=data.returns,
        )
        expert_score = None
        if settings.expert_deals:
            start = load_agent(f"model:{settings.start_from}", settings.game, seed=seed)
            expert_score = game.score_expert(expert, table, start, settings.expert_deals, settings.seed + 11)
    finally:
        if table is not None:
            table.close()
    model = load_model(run.best_model())
    before = teacher_agreement(model.policy, data)
    fit_started = time.perf_counter()
    fit_policy(
        model.policy,
        data,
        epochs=settings.fit_epochs,
        batch_size=config.batch_size,
        learning_rate=settings.fit_learning_rate,
        vf_coef=config.vf_coef,
        seed=seed,
    )
    after = teacher_agreement(model.policy, data)
    atomic_save_model(model, folder / "imitation.zip")
    imitation = {
        "seconds": time.perf_counter() - fit_started,
        **{f"{key}_before": value for key, value in before.items()},
        **{f"{key}_after": value for key, value in after.items()},
    }
    say(
        f"iteration {number}: {data.actions.size:,} decisions in {data.seconds:.0f} s; the policy "
        f"picks the expert's move in {100 * before['accuracy']:.1f}% of them before the fit, "
        f"{100 * after['accuracy']:.1f}% after"
    )
    ppo: dict[str, Any] = {"steps": 0}
    if settings.ppo_steps:
        say(f"iteration {number}: {settings.ppo_steps:,} learner steps of self-play")
        ppo_config = dataclasses.replace(
            config,
            exp_name="self-play",
            total_timesteps=settings.ppo_steps,
            init_model=str(folder / "imitation.zip"),
            runs_dir=str(folder),
            verbose=False,
        )
        ppo_dir = train(ppo_config, quiet=True)
        shutil.copyfile(ppo_dir / FINAL_MODEL_FILE, folder / "model.zip")

        state = read_state(ppo_dir)
        ppo = {
            "steps": int(state["num_timesteps"]),
            "seconds": float(state.get("final_speed", {}).get("seconds", math.nan)),
            "run": ppo_dir.name,
        }
    else:
        shutil.copyfile(folder / "imitation.zip", folder / "model.zip")
    evaluation = evaluate(folder / "model.zip", settings)
    return {
        "iteration": number,
        "model": str((folder / "model.zip").relative_to(run.run_dir)),
        "expert": spec,
        "decisions": int(data.actions.size),
        "collect_seconds": data.seconds,
        "imitation": imitation,
        "ppo": ppo,
        "expert_score": expert_score,
        **evaluation,
        "seconds": time.perf_counter() - started,
    }


# ---- the whole run


def expert_iteration(
    settings: ExpertIterationSettings | None = None,
    *,
    resume: str | Path | None = None,
    given: Mapping[str, Any] | None = None,
    say: Callable[..., None] = print,
) -> Path:
    """Make a new run of ``settings``, or go on with the one in ``resume`` (``given``: the options
    of this call, None where not given, checked against the run's); returns the run folder."""
    if resume is None:
        if settings is None:
            raise ValueError("give the settings of a new run, or resume=RUN_DIR")
        check_before_work(settings)
        run = new_run(settings)
        say(f"expert iteration in {run.run_dir}: the starting policy {settings.start_from}")
        run.state["baseline"] = evaluate(settings.start_from, settings)
        run.commit()
    else:
        run = reopen_run(resume, given or {})
        say(f"resumed {run.run_dir} after iteration {len(run.done)}")
    while run.stopped() is None:
        number = len(run.done) + 1
        try:
            result = run_iteration(run, number, say)
        except KeyboardInterrupt:
            print(
                f"interrupted in iteration {number}; resume with: madiao-mao expert-iteration --resume "
                f"{shlex.quote(str(run.run_dir))}",
                file=sys.stderr,
            )
            raise
        best_strength = _strength(run, run.state["best"])
        result["improved"] = result["strength"] > best_strength
        run.done.append(result)
        if result["improved"]:
            _copy_atomically(run.run_dir / result["model"], run.run_dir / BEST_MODEL_FILE)
            run.state["best"], run.state["stale"] = number, 0
        else:
            run.state["stale"] += 1
        run.commit()
        write_learning_curve(run)
        say(
            f"iteration {number}: strength {result['strength']:+.3f} (best so far {best_strength:+.3f}"
            f"{', improved' if result['improved'] else ''}) in {result['seconds']:.0f} s"
        )
    text = write_learning_curve(run)
    say(text)
    say(f"stopped: {run.stopped()}; report in {run.run_dir / REPORT_FILE}")
    return run.run_dir


def _strength(run: Run, iteration: int) -> float:
    return run.state["baseline"]["strength"] if iteration == 0 else run.done[iteration - 1]["strength"]


def _copy_atomically(source: Path, destination: Path) -> None:
    temporary = destination.with_name(f".{destination.name}.tmp")
    shutil.copyfile(source, temporary)
    os.replace(temporary, destination)


# ---- the learning curve and the report


def curve_points(run: Run) -> list[dict[str, Any]]:
    """The learning curve: the starting policy (iteration 0) and every iteration's evaluation."""
    points = [
        {
            "iteration": 0,
            "strength": run.state["baseline"]["strength"],
            "results": run.state["baseline"]["results"],
        }
    ]
    for item in run.done:
        points.append(
            {
                "iteration": item["iteration"],
                "strength": item["strength"],
                "results": item["results"],
                "improved": item["improved"],
                "expert_score": item["expert_score"],
                "imitation": item["imitation"],
                "ppo_steps": item["ppo"]["steps"],
            }
        )
    return points


def _interval(figures: Mapping[str, float]) -> str:
    return f"{figures['mean']:+.3f} [{figures['low']:+.3f}, {figures['high']:+.3f}]"


def curve_markdown(run: Run) -> str:
    """The learning curve as markdown tables: strength per iteration, then by role."""

    settings = run.settings
    points = curve_points(run)
    opponents = list(points[0]["results"])
    rows = []
    for point in points:
        imitation = point.get("imitation")
        agreement = (
            f"{100 * imitation['accuracy_before']:.1f}% → {100 * imitation['accuracy_after']:.1f}%"
            if imitation
            else ""
        )
        expert = point.get("expert_score")
        rows.append(
            [
                point["iteration"] or "0 (start)",
                agreement,
                f"{point.get('ppo_steps', 0):,}" if imitation else "",
                *(_interval(point["results"][name]["all"]) for name in opponents),
                f"{point['strength']:+.3f}",
                _interval(expert["all"]) if expert else "",
                "best" if point["iteration"] == run.state["best"] else "",
            ]
        )
    table = markdown_table(
        [
            "iteration",
            "policy picks the expert's move (before → after fit)",
            "self-play steps",
            *(f"vs {name} [95% CI]" for name in opponents),
            "strength",
            f"expert vs {START}",
            "",
        ],
        rows,
    )
    roles = game_spec(settings.game).roles
    role_rows = [
        [
            point["iteration"],
            *(_interval(point["results"][name][role]) for name in opponents for role in roles),
        ]
        for point in points
        if all(role in point["results"][name] for name in opponents for role in roles)
    ]
    by_role = ""
    if roles and role_rows:
        by_role = "\n\nBy role:\n\n" + markdown_table(
            ["iteration", *(f"vs {name}, as {role}" for name in opponents for role in roles)], role_rows
        )
    hands = points[0]["results"][opponents[0]].get("hands")
    return (
        f"Expert `{settings.expert}` ({{policy}}: the best policy so far), {settings.decisions:,} decisions "
        f"and {settings.ppo_steps:,} self-play steps per iteration; the policy alone in one seat against "
        f"each opponent in the others, on the same {settings.eval_deals:,} evaluation deals every iteration"
        + (f" ({hands:,} hands)" if hands else "")
        + f"; `{START}` is the starting policy ({Path(settings.start_from).name}); strength is the mean of "
        "the scores; 95% intervals over deal blocks.\n\n" + table + by_role + "\n"
    )


def write_learning_curve(run: Run) -> str:
    """``learning_curve.json``, ``.md`` and ``.png`` and ``report.md`` of the run so far; returns
    the report's text."""

    points = curve_points(run)
    atomic_write_json(run.run_dir / f"{CURVE_FILE}.json", points)
    table = curve_markdown(run)
    atomic_write_text(run.run_dir / f"{CURVE_FILE}.md", table)
    xs = [point["iteration"] for point in points]
    curves, bands = {}, {}
    for name in points[0]["results"]:
        figures = [point["results"][name]["all"] for point in points]
        curves[f"vs {name}"] = (xs, [f["mean"] for f in figures])
        bands[f"vs {name}"] = ([f["low"] for f in figures], [f["high"] for f in figures])
    plot_curves(
        curves,
        run.run_dir / f"{CURVE_FILE}.png",
        xlabel="iteration (0: the starting policy)",
        ylabel="score, 1 seat vs the others",
        title="Expert iteration: the policy per iteration",
        bands=bands,
        whole_x=True,
    )
    stopped = run.stopped()
    best = run.state["best"]
    text = (
        f"# Expert iteration: {run.run_dir.name}\n\n"
        + (f"Stopped: {stopped}. " if stopped else f"In progress: {len(run.done)} iteration(s) made. ")
        + (f"Best: iteration {best} (`{BEST_MODEL_FILE}`).\n\n" if best else "Best: the starting policy.\n\n")
        + table
        + f"\nLearning curve: `{CURVE_FILE}.png`.\n"
    )
    atomic_write_text(run.run_dir / REPORT_FILE, text)
    return text
