"""``madiao-mao train``: its flags are generated (tyro) from ``TrainConfig`` and the engine's
``EngineOptions``, so every config field is a flag whose help is the field's docstring, and the
config's own check is the only validation.

- ``--config FILE`` starts from a config saved as JSON (a run folder's ``config.json`` re-runs that
  run); the flags given override its values;
- ``--resume RUN_DIR`` continues an interrupted run with its own saved config;
- ``--engine rllib`` trains with RLlib PPO (its options: ``madiao_mao.training.rllib.options``);
- ``--engine fast`` trains with the project's own batched PPO loop (``madiao_mao.training.fast``).
- each game with settings of its own (``GameSpec.settings``) has them as a group of flags named
  after it, ``--GAME.FIELD``; a game's flags given for another game are refused.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import tyro

from madiao_mao.training.cli_args import check_output_folder, parse_dataclass
from madiao_mao.training.config import ConfigError, TrainConfig, resolve_device
from madiao_mao.training.game_spec import GAME_SPECS
from madiao_mao.training.rllib import cli as rllib_cli
from madiao_mao.training.rllib.options import EngineOptions
from madiao_mao.training.run_folder import FAST_ENGINE, RLLIB_ENGINE, SB3_ENGINE, last_engine

PROG = "madiao-mao train"
ENGINES = (FAST_ENGINE, SB3_ENGINE, RLLIB_ENGINE)
# Written out rather than ``Literal[...] | None``: tyro lists the choices of an optional literal
# with None among them, and None is not a value to give (it means "the default").
ENGINE_CHOICE = tyro.constructors.PrimitiveConstructorSpec(
    nargs=1,
    metavar="{" + ",".join(ENGINES) + "}",
    instance_from_str=lambda words: words[0],
    is_instance=lambda value: value is None or value in ENGINES,
    str_from_instance=lambda value: [str(value)],
    choices=ENGINES,
)


@dataclass
class TrainFlags(TrainConfig):
    """A ``TrainConfig``'s fields as the flags give them, before the config fills in its game's
    defaults and checks them (``TrainCommand.train_config``): tyro would report a failed check in
    a box of its own; the command line reports it on one line, naming the flag."""

    def __post_init__(self) -> None:
        """Nothing yet: ``TrainCommand.train_config`` makes the checked config."""


def flag_name(field_name: str) -> str:
    """The flag of a config field, as tyro spells it."""
    return "--" + field_name.replace("_", "-")


@dataclass
class TrainCommand:
    """Self-play training (MaskablePPO's model; RLlib PPO with --engine rllib), then an evaluation report.

    Every flag below that is not about the command itself is a field of ``TrainConfig``
    (training/config.py); a field whose default says "by game" takes its game's value."""

    config: Annotated[str | None, tyro.conf.arg(metavar="FILE")] = None
    """Start from the TrainConfig saved in this JSON file (a run folder's config.json re-runs that
    run); the other flags given override its values."""
    resume: Annotated[str | None, tyro.conf.arg(metavar="RUN_DIR")] = None
    """Continue an interrupted run from its last checkpoint, with its own saved config
    (--total-timesteps may raise its budget, --torch-threads sets its torch threads from here on,
    --no-progress hides the bar; other flags are not used; its saved --device is resolved again
    here, a GPU this machine lacks being the CPU)."""
    no_report: Annotated[bool, tyro.conf.FlagCreatePairsOff] = False
    """Skip the final evaluation report."""
    engine: Annotated[str | None, ENGINE_CHOICE] = None
    """fast: MaskablePPO's model trained in this process by the project's batched PPO loop
    (docs/training.md, "The fast engine"); sb3: the same model trained by sb3-contrib's
    MaskablePPO; rllib: RLlib PPO with env runners on Ray (docs/scaling-out.md), the options below
    marked rllib are its. Default: fast for a new run; a resumed run continues with the engine
    that trained it last (given here, fast or sb3 takes over the other's checkpoint)."""
    settings: Annotated[TrainFlags, tyro.conf.OmitArgPrefixes, tyro.conf.arg(name="")] = field(
        default_factory=TrainFlags
    )
    rllib: Annotated[EngineOptions, tyro.conf.OmitArgPrefixes, tyro.conf.arg(name="")] = field(
        default_factory=EngineOptions
    )

    def train_config(self) -> TrainConfig:
        """The checked config of a new run (a bad value is a ValueError naming its flag), with a
        device this machine has (``resolve_device``)."""
        values = {f.name: getattr(self.settings, f.name) for f in dataclasses.fields(TrainConfig)}
        for name, settings in game_settings_given(self).items():
            if name == values["game"]:
                values["game_settings"] = settings
            elif settings != GAME_SPECS[name].settings():
                raise ValueError(
                    f"--{name}.* options are settings of the game {name}, not of {values['game']}"
                )
        if self.engine == RLLIB_ENGINE and values["imitate"] is None:
            # The RLlib engine has no warm start: its default is PPO from a random policy.
            values["imitate"] = "none"
        config = _named_by_flag(lambda: TrainConfig(**values))
        _named_by_flag(lambda: resolve_device(config.device))
        return config

    def check_engine_options(self) -> None:
        _named_by_flag(self.rllib.check)


def command_class() -> type[TrainCommand]:
    """``TrainCommand`` with one field per registered game that has settings of its own, named
    after the game (read when the command is parsed: a game registered at run time has its group)."""
    groups = [
        (name, Annotated[spec.settings, tyro.conf.arg(name=name)], field(default_factory=spec.settings))
        for name, spec in GAME_SPECS.items()
        if spec.settings is not None
    ]
    return dataclasses.make_dataclass("TrainCommand", groups, bases=(TrainCommand,))


def game_settings_given(command: TrainCommand) -> dict[str, Any]:
    """The settings of every game with a group of flags, by game (its defaults where none was given)."""
    return {name: getattr(command, name) for name, spec in GAME_SPECS.items() if spec.settings is not None}


def _named_by_flag(make):
    try:
        return make()
    except ConfigError as error:
        if error.field is None:
            raise
        raise ValueError(f"{flag_name(error.field)}: {error}") from None


def parse_train_command(argv: list[str]) -> TrainCommand:
    """``madiao-mao train``'s flags; with ``--config FILE`` the file's values are the defaults the
    other flags override (so the flags are read twice: once to find the file)."""
    command_type = command_class()
    command = parse_dataclass(command_type, argv, prog=PROG)
    if command.config is None:
        return command
    if command.resume is not None:
        raise ValueError("--config and --resume cannot be combined (a resumed run keeps its own config)")
    saved = TrainConfig.from_file(command.config)
    start = command_type(
        settings=TrainFlags(**{f.name: getattr(saved, f.name) for f in dataclasses.fields(TrainConfig)}),
        **({saved.game: saved.game_settings} if saved.game_settings is not None else {}),
    )
    return parse_dataclass(command_type, argv, prog=PROG, default=start)


def engine_of(command: TrainCommand) -> str:
    """The engine that trains: rllib for a run RLlib trained (only RLlib reads its checkpoint),
    else the one asked for, else the resumed run's own (``state.json``'s ``"engine"``; a run
    without one was trained by SB3), else fast. RLlib options given to another engine are a
    ValueError (they would change nothing)."""
    if rllib_cli.uses_rllib(command.engine or FAST_ENGINE, command.rllib, command.resume):
        return RLLIB_ENGINE
    if command.engine is not None:
        return command.engine
    if command.resume is None:
        return FAST_ENGINE
    return FAST_ENGINE if last_engine(command.resume) == FAST_ENGINE else SB3_ENGINE


def resumed_torch_threads(command: TrainCommand) -> int | None:
    """``--torch-threads`` as given to a resumed run (None: the run keeps its own), which sets them
    from here on: a run goes on on a machine with other cores, or shared with other jobs."""
    return command.settings.torch_threads if command.resume is not None else None


def command_train(argv: list[str]) -> int:
    """``madiao-mao train ARGS``: train a run (or resume one), then write its report."""
    command = parse_train_command(argv)
    command.check_engine_options()
    quiet = not command.settings.progress_bar
    config = None if command.resume else command.train_config()
    check_output_folder(command.settings.runs_dir, "--runs-dir")
    engine = engine_of(command)
    # Each engine's run module imports torch and its engine: only the one the run uses.
    if engine == RLLIB_ENGINE:
        # Imported here: keeps torch and stable-baselines3 off this module's import path.
        from madiao_mao.training.rllib.run import final_report

        run_dir = rllib_cli.train(
            config,
            command.rllib,
            resume=command.resume,
            total_timesteps=command.settings.total_timesteps,
            torch_threads=resumed_torch_threads(command),
            quiet=quiet,
        )
    else:
        # Imported here: each engine's module imports torch and stable-baselines3.
        from madiao_mao.training.sb3.train import final_report

        if engine == FAST_ENGINE:
            # Imported here: madiao_mao.training.fast.train imports this module (a cycle at the top).
            from madiao_mao.training.fast.train import train
        else:
            # Imported here: it imports torch and stable-baselines3.
            from madiao_mao.training.sb3.train import train

        run_dir = train(
            config,
            resume=command.resume,
            total_timesteps=command.settings.total_timesteps,
            torch_threads=resumed_torch_threads(command),
            quiet=quiet,
        )
    print(f"run folder: {run_dir}")
    if not command.no_report:
        final_report(Path(run_dir))
        print(f"report written to {Path(run_dir) / 'report.md'}")
    return 0
