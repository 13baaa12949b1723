"""The run folder: what a training run writes and reads back, the same for both engines.

A run lives in its own folder ``runs_dir/game__exp_name__seed__unixtime`` (made exclusively: a
second run started in the same second gets a ``_2`` suffix, ``make_run_dir``). The SB3 engine
(``madiao_mao.training.sb3``) and the RLlib engine (``madiao_mao.training.rllib``) write the same files under
the same
names where the content is the same:

- ``config.json``: the run's ``TrainConfig`` (``write_config``); a resume trains on it;
- ``state.json``: what a resume needs besides the policy (``STATE_FIELDS``: the step count, the
  snapshots, the learning curve, the steps it was resumed at, the warm start's and the speed's
  figures, the torch device of the last training call; the RLlib engine adds ``"engine": "rllib"``
  and its settings);
- the engine's checkpoint (``checkpoint.zip``, ``rllib_checkpoint/``), written first, then
  ``league.json`` (league mode) and last ``state.json`` (``commit_checkpoint``), so that the files
  a resume trusts are never newer than the checkpoint they describe;
- ``snapshots/snapshot_<step>.<suffix>``: frozen copies of the policy (``snapshot_path``);
- ``eval.json`` (the learning curve, ``write_learning_curve``), TensorBoard events and
  ``progress.csv`` (``madiao_mao.training.logging_utils``);
- ``report.md``: the final evaluation (``write_final_report``) with the league's section and its
  plots (``league_payoffs.png``, ``league_ratings.png``) and the game's own
  (``GameSpec.report``).

A folder that cannot be resumed (a file missing or damaged) is refused with an error naming the
file before anything in it changes (``reopen_run``).
"""

from __future__ import annotations

import csv
import itertools
import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cardgame_core.files import atomic_write_json, atomic_write_text
from madiao_mao.training.config import TrainConfig
from madiao_mao.training.game_spec import game_spec
from madiao_mao.training.league import League
from madiao_mao.training.stats import plot_curves

CONFIG_FILE = "config.json"
STATE_FILE = "state.json"
#: The CSV of every logged scalar (the logger writes it: ``madiao_mao.training.logging_utils``).
PROGRESS_FILE = "progress.csv"
#: The progress.csv column that says at which learner step a row was logged.
STEP_COLUMN = "charts/total_timesteps"
#: The league saved beside every checkpoint of a league run.
LEAGUE_FILE = "league.json"
LEARNING_CURVE_FILE = "eval.json"
REPORT_FILE = "report.md"
SNAPSHOT_DIR = "snapshots"
#: The training engines' names: ``madiao-mao train --engine`` and ``state.json``'s ``"engine"``.
FAST_ENGINE, SB3_ENGINE, RLLIB_ENGINE = "fast", "sb3", "rllib"

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


# ---- a new run


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


def write_config(run_dir: Path, saved_config: dict[str, Any]) -> None:
    """``config.json``: the run's config as its ``to_json`` gives it (a ``TrainConfig``, or the
    settings of an expert-iteration run)."""
    atomic_write_json(run_dir / CONFIG_FILE, saved_config)


def new_league(config: TrainConfig) -> League:
    """A fresh league for ``config``: the main agent and the ``league_anchors``."""
    league = League(
        weighting=config.pfsp_weighting,
        power=config.pfsp_power,
        floor=config.pfsp_floor,
        max_snapshots=config.max_snapshots,
    )
    for name in config.league_anchors:
        league.add_anchor(name)
    return league


def start_training(state: dict[str, Any], steps: int, *, resumed: bool, device: str) -> None:
    """Ready ``state`` for a training call at step ``steps`` on torch ``device``: its lists exist,
    a resumed run notes the step it was resumed at, and ``"device"`` is this call's device (the
    report names it; a resumed run may train on another machine's)."""
    for key in ("snapshots", "eval", "resumes"):
        state.setdefault(key, [])
    if resumed:
        state["resumes"].append(int(steps))
    state["device"] = device


def device_text(asked: str, device: str) -> str:
    """How a training call names the torch ``device`` it uses for the ``TrainConfig.device``
    ``asked``: with the reason when a resumed run could not have the GPU it asks for."""
    if asked in ("auto", device):
        return device
    return f"{device} (the run asks for {asked}, which this machine lacks)"


# ---- reading a run back


def read_run_json(path: Path) -> Any:
    """A run folder's JSON file; a damaged one is a ValueError that names it."""
    try:
        return json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is damaged (not valid JSON: {error})") from None


def last_engine(run_dir: str | Path) -> str | None:
    """The engine that trained the run in ``run_dir`` last, as its ``state.json`` names it
    (``SB3_ENGINE`` for a run saved before engines were named); None when the folder has no
    readable ``state.json``."""
    path = Path(run_dir) / STATE_FILE
    if not path.is_file():
        return None
    try:
        state = read_run_json(path)
    except ValueError:
        return None
    return state.get("engine", SB3_ENGINE) if isinstance(state, dict) else None


def read_state(run_dir: Path) -> dict[str, Any]:
    """A finished run's ``state.json``."""
    return json.loads((Path(run_dir) / STATE_FILE).read_text())


def read_config(run_dir: Path) -> TrainConfig:
    """A finished run's ``config.json`` as its ``TrainConfig``."""
    return TrainConfig.from_json(json.loads((Path(run_dir) / CONFIG_FILE).read_text()))


def load_run(
    run_dir: str | Path, *, checkpoint: str, engine: str | None = None
) -> tuple[TrainConfig, dict[str, Any]]:
    """The saved config and state of the run in ``run_dir``, checked before anything is written:
    a missing ``config.json``, ``state.json`` or ``checkpoint`` (the engine's checkpoint file or
    folder) is a FileNotFoundError, a damaged ``config.json`` or ``state.json`` a ValueError, each
    naming the file. With ``engine``, a run that another engine trained is a ValueError."""
    run_dir = Path(run_dir)
    config_path, state_path = run_dir / CONFIG_FILE, run_dir / STATE_FILE
    if not config_path.is_file():
        raise FileNotFoundError(f"{run_dir} is not a run folder (no {CONFIG_FILE})")
    data = read_run_json(config_path)
    if not isinstance(data, dict):
        raise ValueError(f"{config_path} is damaged: expected an object of config fields, got {data!r:.60}")
    try:
        config = TrainConfig.from_json(data)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{config_path} is damaged: {error}") from None
    missing = [path.name for path in (run_dir / checkpoint, state_path) if not path.exists()]
    if missing:
        # Starting again from step 0 here would overwrite the run's snapshots and logs.
        raise FileNotFoundError(
            f"cannot resume {run_dir}: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
            "missing, so there is no checkpoint to continue from (start a new run instead)"
        )
    state = read_run_json(state_path)
    check_state(state, state_path)
    if engine is not None and state.get("engine") != engine:
        raise ValueError(
            f"{run_dir} was not trained by the {engine} engine (resume it without --engine {engine})"
        )
    return config, state


def check_state(state: Any, state_path: Path) -> None:
    """A ValueError naming ``state.json`` unless ``state`` has the fields a resume reads."""
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


def load_league(run_dir: Path) -> League:
    """The league saved with a run's checkpoint (``league.json``) with its snapshot files; a
    missing file is a FileNotFoundError, damaged data a ValueError, each naming the file."""
    path = run_dir / LEAGUE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"cannot resume the league run {run_dir}: {LEAGUE_FILE} is missing")
    try:
        league = League.from_dict(read_run_json(path))
    except ValueError as error:
        message = str(error)
        raise ValueError(message if str(path) in message else f"{path} is damaged: {message}") from None
    for name in league.names("snapshot"):
        snapshot = run_dir / league.members[name].path
        if not snapshot.is_file():
            raise FileNotFoundError(f"{path}: the file of snapshot {name!r} is missing ({snapshot})")
    return league


def reopen_run(
    run_dir: str | Path,
    *,
    checkpoint: str,
    engine: str | None = None,
    total_timesteps: int | None = None,
    torch_threads: int | None = None,
) -> tuple[TrainConfig, dict[str, Any], League | None]:
    """A run to resume: its config (with its budget raised to ``total_timesteps`` and its torch
    threads set to ``torch_threads`` if given, each checked like any other value: a run goes on
    on another machine), its state and its league (league mode), each checked (``load_run``,
    ``load_league``) before anything in the folder changes."""
    run_dir = Path(run_dir)
    config, state = load_run(run_dir, checkpoint=checkpoint, engine=engine)
    league = load_league(run_dir) if config.opponents == "league" else None
    if total_timesteps is not None:
        config.total_timesteps = total_timesteps
    if torch_threads is not None:
        config.torch_threads = torch_threads
    if total_timesteps is not None or torch_threads is not None:
        config.__post_init__()  # the values given are checked like any other
    return config, state, league


# ---- during training


def commit_checkpoint(
    run_dir: Path, state: dict[str, Any], league: League | None, num_timesteps: int
) -> None:
    """After the engine has written its checkpoint: the league, then ``state.json`` (which a
    resume trusts), so that neither is ever newer than the checkpoint."""
    if league is not None:
        atomic_write_json(run_dir / LEAGUE_FILE, league.to_dict())
    state["num_timesteps"] = int(num_timesteps)
    atomic_write_json(run_dir / STATE_FILE, state)


def snapshot_path(run_dir: Path, steps: int, suffix: str) -> Path:
    """Where the snapshot of the policy at ``steps`` goes (``snapshots/snapshot_000250112.zip``);
    the folder is made."""
    folder = run_dir / SNAPSHOT_DIR
    folder.mkdir(exist_ok=True)
    return folder / f"snapshot_{steps:09d}{suffix}"


def snapshot_step(path: str | Path) -> int:
    """The learner step a snapshot file was taken at, from its name."""
    return int(Path(path).stem.rsplit("_", 1)[-1])


def newest_snapshots(run_dir: Path, suffix: str, keep: int) -> list[Path]:
    """The run's ``keep`` newest snapshot files, oldest first."""
    return sorted((run_dir / SNAPSHOT_DIR).glob(f"snapshot_*{suffix}"))[-keep:]


def write_learning_curve(run_dir: Path, state: dict[str, Any]) -> None:
    """At the end of a training call: ``eval.json`` (the learning curve) and ``state.json``."""
    atomic_write_json(run_dir / LEARNING_CURVE_FILE, state["eval"])
    atomic_write_json(run_dir / STATE_FILE, state)


def say_interrupted(run_dir: Path, steps: int) -> None:
    """After Ctrl-C and the checkpoint of what was learned: how to resume the run."""
    print(
        f"interrupted at step {steps}; resume with: madiao-mao train --resume {shlex.quote(str(run_dir))}",
        file=sys.stderr,
    )


# ---- the final report


def write_final_report(
    run_dir: Path,
    learner,
    speed_line: Callable[[dict[str, Any]], str] | None,
    *,
    n_deals: int | None = None,
    verbose: bool = True,
) -> str:
    """``report.md`` of a finished run of either engine: its title, the engine's ``speed_line(state)``
    of a run whose state has its ``final_speed``, the league (league mode) and the game's sections
    played by ``learner`` (the final policy)."""
    run_dir = Path(run_dir)
    config = read_config(run_dir)
    state = read_state(run_dir)
    n_deals = n_deals or config.final_eval_deals
    sections = [f"# Training report: {run_dir.name}\n"]
    if speed_line is not None and "final_speed" in state:
        sections.append(speed_line(state))
    if "device" in state:
        sections.append(f"Learner device: {state['device']} (the torch device of the last training call).\n")
    league_section = league_report(run_dir)
    if league_section:
        sections.append(league_section)
    sections += game_spec(config.game).report(learner, config, run_dir, n_deals, state)
    text = "\n".join(sections)
    atomic_write_text(run_dir / REPORT_FILE, text)
    if verbose:
        print(text)
    return text


def league_report(run_dir: Path) -> str:
    """The report's league section: the payoff table saved with the run, and its history from
    ``progress.csv`` plotted as ``league_payoffs.png`` and ``league_ratings.png`` (empty text
    for a run without a league)."""
    path = Path(run_dir) / LEAGUE_FILE
    if not path.is_file():
        return ""
    league = League.from_dict(read_run_json(path))
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
    progress = run_dir / PROGRESS_FILE
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
