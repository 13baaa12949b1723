"""``madiao-mao agents``, ``exploit``, ``scorecard``, ``expert-iteration``, ``serve`` and
``bench``: each command's options are one dataclass (tyro makes the flags, the field docstrings
their help), checked in one place (its ``check()``) before any work starts."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import tyro

from madiao_mao.games import default_game, game_names
from madiao_mao.training.cli_args import check_at_least, check_output_folder, parse_dataclass


def _games_metavar(games: tuple[str, ...]) -> Any:
    return tyro.conf.arg(metavar="{" + ",".join(games) + "}")


def _check_game(game: str | None, games: tuple[str, ...]) -> None:
    if game is not None and game not in games:
        raise ValueError(f"--game must be one of {', '.join(games)}, got {game!r}")


@dataclass
class AgentsOptions:
    """Every agent spec of each game, one line each: what --agents, --opponents and --model, the
    trainer's opponent lists and the scorecard take."""

    game: Annotated[str | None, tyro.conf.arg(metavar="GAME")] = None
    """Only this game's agents (default: every game's)."""

    def check(self) -> None:
        _check_game(self.game, game_names())


def command_agents(argv: list[str]) -> int:
    # Each command imports what it runs when it runs: the other commands and --help need none of it.
    from madiao_mao.agents.registry import agent_specs

    options = parse_dataclass(AgentsOptions, argv, prog="madiao-mao agents")
    options.check()
    for game in game_names() if options.game is None else (options.game,):
        specs = agent_specs(game)
        width = max(len(spec) for spec, _ in specs)
        if options.game is None:
            print(f"{game}:")
        for spec, description in specs:
            print(f"  {spec:<{width}}  {description}")
    return 0


@dataclass
class ExploitOptions:
    """Exploitability proxy: train a fresh PPO best response against a frozen agent, score it."""

    model: Annotated[str, tyro.conf.arg(metavar="PATH|AGENT")]
    """The frozen target: an agent spec (madiao-mao agents --game GAME lists them); a bare .zip
    path is read as model:PATH."""
    game: str = default_game()
    """Game of the target."""
    steps: int = 300_000
    """The exploiter's training budget (learner steps)."""
    deals: int | None = None
    """Evaluation size, in the game's own unit of evaluation (default: the game's, set by its
    exploitability spec)."""
    seed: int = 0
    """Seed of the exploiter's training and the deals."""
    out: str = "runs"
    """Folder the exploiter's run folder is made in."""
    run: Annotated[str | None, tyro.conf.arg(metavar="RUN_DIR")] = None
    """Evaluate the exploiter already trained in RUN_DIR instead of training one (--steps unused)."""

    def check(self) -> None:
        # Imported when the command runs (see command_agents).
        from madiao_mao.training.exploit import exploit_games

        _check_game(self.game, exploit_games())
        check_at_least("--steps", self.steps, 1)
        check_at_least("--deals", self.deals, 1)
        check_at_least("--seed", self.seed, 0)
        check_output_folder(self.out, "--out")


def command_exploit(argv: list[str]) -> int:
    # The exploiter's module imports the trainer: only for this command.
    from madiao_mao.training.exploit import ExploitSettings, exploit

    options = parse_dataclass(ExploitOptions, argv, prog="madiao-mao exploit")
    options.check()
    # The other options are ExploitSettings fields of the same names.
    fields = dataclasses.asdict(options)
    target = fields.pop("model")
    if target.endswith(".zip") and not target.startswith("model:"):
        target = f"model:{target}"
    report = exploit(ExploitSettings(target, **fields))
    print(report["markdown"])
    print(f"report written to {Path(report['run_dir']) / 'exploit.md'} (and exploit.json)")
    return 0


@dataclass
class ScorecardOptions:
    """A policy's scorecard on a fixed suite: every baseline, CIs, JSON + markdown + plot."""

    policy: tyro.conf.Positional[str]
    """Agent spec (heuristic, model, model:PATH, search:OPTIONS, ...) or module:callable."""
    game: str = default_game()
    """Game of the policy."""
    suite: str = "dev"
    """A shipped suite: dev, test, or smoke (a quick check of an install)."""
    exploit_steps: int | None = None
    """Also the exploitability proxy, an exploiter trained this many steps."""
    batched: Annotated[bool, tyro.conf.FlagCreatePairsOff] = False
    """module:callable takes batches of observations and masks."""
    baselines: Annotated[tuple[str, ...] | None, tyro.conf.arg(metavar="BASELINE [BASELINE ...]")] = None
    """Play only these baselines (a partial scorecard for quick checks; default: all of the game's)."""
    out: str | None = None
    """Folder for scorecard.json/.md/.png and the cache (default scorecards/GAME-SUITE-POLICY)."""
    reference_cache: str | None = None
    """Folder keeping the reference's games for every scorecard to reuse (default:
    $MADIAO_MAO_CACHE/scorecard-references, else ~/.cache/madiao-mao/scorecard-references)."""
    no_progress: Annotated[bool, tyro.conf.FlagCreatePairsOff] = False
    """No progress bars."""

    def check(self) -> None:
        # Imported when the command runs (see command_agents).
        from madiao_mao.training.scorecard import scorecard_games

        _check_game(self.game, scorecard_games())
        check_at_least("--exploit-steps", self.exploit_steps, 1)


def command_scorecard(argv: list[str]) -> int:
    # The scorecard's module imports the games' evaluations: only for this command.
    from madiao_mao.training.scorecard import command_scorecard as scorecard

    options = parse_dataclass(ScorecardOptions, argv, prog="madiao-mao scorecard")
    options.check()
    return scorecard(argparse.Namespace(**dataclasses.asdict(options)))


@dataclass
class ExpertIterationOptions:
    """Expert iteration: the policy learns a search player's decisions, then plays self-play; the
    better policy plays the search's play-outs next time. Each option left out is the new run's
    default (``madiao_mao.training.expert_iteration.ExpertIterationSettings``) or a resumed run's own."""

    game: str | None = None
    """The game (default: the first game with an expert)."""
    iterations: Annotated[int | None, tyro.conf.arg(metavar="N")] = None
    """The most iterations (a resumed run may raise it) (default 3)."""
    decisions: Annotated[int | None, tyro.conf.arg(metavar="N")] = None
    """The expert's decisions with a choice collected per iteration (default 4,000)."""
    expert: Annotated[str | None, tyro.conf.arg(metavar="SPEC")] = None
    """The expert's agent spec, {policy} standing for the best policy's model file, e.g.
    'search:samples=128,guard=2,screen=16,policy={policy}'; default: the game's."""
    ppo_steps: Annotated[int | None, tyro.conf.arg(metavar="N")] = None
    """Self-play learner steps after the fitting, per iteration (0: none) (default 100,000)."""
    eval_deals: Annotated[int | None, tyro.conf.arg(metavar="N")] = None
    """Evaluation size per opponent, in the game's unit (duplicate deals) (default 500)."""
    expert_deals: Annotated[int | None, tyro.conf.arg(metavar="N")] = None
    """Deals of the expert against the starting policy per iteration (default 0)."""
    patience: Annotated[int | None, tyro.conf.arg(metavar="N")] = None
    """Iterations in a row without improvement that stop the run (default 1)."""
    fit_epochs: Annotated[int | None, tyro.conf.arg(metavar="N")] = None
    """Passes over an iteration's decisions when fitting (default 4)."""
    fit_learning_rate: Annotated[float | None, tyro.conf.arg(metavar="RATE")] = None
    """Adam's learning rate of the fitting (default 0.0001)."""
    seed: Annotated[int | None, tyro.conf.arg(metavar="N")] = None
    """Seed of the expert, the fitting, the self-play and the deals (default 0)."""
    workers: Annotated[int | None, tyro.conf.arg(metavar="N")] = None
    """Processes that collect the expert's decisions, each a share on hands of its own seed
    (default 1)."""
    runs_dir: Annotated[str | None, tyro.conf.arg(name="out", metavar="FOLDER")] = None
    """Folder the run's folder is made in (default runs)."""
    start_from: Annotated[str | None, tyro.conf.arg(metavar="PATH")] = None
    """The starting policy, a saved MaskablePPO model; default: the game's shipped one."""
    resume: Annotated[str | None, tyro.conf.arg(metavar="RUN_DIR")] = None
    """Go on with the run in RUN_DIR."""
    config: Annotated[str | None, tyro.conf.arg(metavar="FILE")] = None
    """Start a new run from the settings saved in this JSON file (a run folder's config.json runs
    that run again); the other options given override its values."""

    def check(self) -> None:
        if self.config is not None and self.resume is not None:
            raise ValueError(
                "--config and --resume cannot be combined (a resumed run keeps its own settings)"
            )
        # Imported when the command runs (see command_agents).
        from madiao_mao.training.expert_iteration import expert_iteration_games

        _check_game(self.game, expert_iteration_games())
        for flag, value in (
            ("--iterations", self.iterations),
            ("--decisions", self.decisions),
            ("--eval-deals", self.eval_deals),
            ("--patience", self.patience),
            ("--fit-epochs", self.fit_epochs),
            ("--workers", self.workers),
        ):
            check_at_least(flag, value, 1)
        for flag, value in (
            ("--ppo-steps", self.ppo_steps),
            ("--expert-deals", self.expert_deals),
            ("--seed", self.seed),
        ):
            check_at_least(flag, value, 0)
        rate = self.fit_learning_rate
        if rate is not None and not rate > 0:
            raise ValueError(f"--fit-learning-rate: expected a number > 0, got {rate}")
        if self.resume is None:
            check_output_folder(self.runs_dir, "--out")


def expert_iteration_settings(options: ExpertIterationOptions) -> Any:
    """The settings of a new run: the options given, over those of ``--config FILE`` if given,
    over the defaults (``ExpertIterationSettings``, which checks them)."""
    # Expert iteration imports the trainer: only for this command.
    from madiao_mao.training.expert_iteration import ExpertIterationSettings
    from madiao_mao.training.run_folder import read_run_json

    values: dict[str, Any] = {}
    if options.config is not None:
        if not Path(options.config).is_file():
            raise FileNotFoundError(f"--config: no settings file at {options.config}")
        saved = read_run_json(Path(options.config))
        known = {f.name for f in dataclasses.fields(ExpertIterationSettings)}
        if not isinstance(saved, dict) or not set(saved) <= known:
            raise ValueError(f"--config: {options.config} is not an expert-iteration config")
        values.update(saved)
    values.update({name: value for name, value in _given(options).items() if value is not None})
    return ExpertIterationSettings(**values)


def _given(options: ExpertIterationOptions) -> dict[str, Any]:
    """The settings' fields given as options (None where not given)."""
    # Imported when the command runs (see command_agents).
    from madiao_mao.training.expert_iteration import ExpertIterationSettings

    return {
        f.name: getattr(options, f.name)
        for f in dataclasses.fields(ExpertIterationSettings)
        if f.name != "train_overrides"
    }


def command_expert_iteration(argv: list[str]) -> int:
    # Expert iteration imports the trainer and torch: only for this command.
    from madiao_mao.training.expert_iteration import expert_iteration

    options = parse_dataclass(ExpertIterationOptions, argv, prog="madiao-mao expert-iteration")
    options.check()
    if options.resume is not None:
        expert_iteration(resume=options.resume, given=_given(options))
        return 0
    expert_iteration(expert_iteration_settings(options))
    return 0


@dataclass
class ServeOptions:
    """A local web app to play and replay every game in the browser (extra: web)."""

    host: str = "127.0.0.1"
    """Address to bind (default: this machine only)."""
    port: int = 8000
    """TCP port."""
    allow_host: Annotated[tuple[str, ...], tyro.conf.UseAppendAction, tyro.conf.arg(metavar="NAME")] = ()
    """A Host name the app also answers to (repeatable; the localhost names and --host always)."""

    def check(self) -> None:
        if isinstance(self.port, bool) or not 1 <= self.port <= 65535:
            raise ValueError(f"--port: expected a port number 1..65535, got {self.port}")


def command_serve(argv: list[str]) -> int:
    options = parse_dataclass(ServeOptions, argv, prog="madiao-mao serve")
    options.check()
    try:
        # The web extra (fastapi, uvicorn) is needed by this command alone.
        from madiao_mao_web.app import serve
    except ImportError as error:
        raise ImportError(f"{error}; the web app needs the web extra: pip install -e '.[web]'") from None
    print(f"madiao-mao web app on http://{options.host}:{options.port}/ (Ctrl-C stops it)")
    serve(host=options.host, port=options.port, allow_hosts=list(options.allow_host))
    return 0


def command_bench(argv: list[str]) -> int:
    """Everything after ``bench`` goes to ``python -m madiao_mao.benchmarks`` untouched, its own
    options and ``--help`` included."""
    if importlib.util.find_spec("madiao_mao.benchmarks.__main__") is None:
        print(
            "no benchmarks here: the benchmarks package has no __main__ (python -m madiao_mao.benchmarks)",
            file=sys.stderr,
        )
        return 1
    return subprocess.call([sys.executable, "-m", "madiao_mao.benchmarks", *argv])
