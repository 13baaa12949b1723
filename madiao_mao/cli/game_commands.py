"""``madiao-mao evaluate``, ``play``, ``match`` and ``replay``: the options every game shares are
the fields of a dataclass here; each game's own options are a dataclass of its commands module
(``GameCommands.OPTIONS``), shown as a group under the game's name. The options are checked here
once per command; another game's option given is refused on one line. The game's commands module
then plays (``GameSpec.commands``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

import tyro

from madiao_mao.games import default_game, game_names
from madiao_mao.training.cli_args import check_at_least, parse_dataclass
from madiao_mao.training.game_spec import game_spec, games_with

AGENTS_HELP = "agent specs (madiao-mao agents --game GAME lists them, one line each)"

Agents = Annotated[tuple[str, ...] | None, tyro.conf.arg(metavar="AGENT [AGENT ...]")]


@runtime_checkable
class GameCommands(Protocol):
    """What a game's commands module (``GameSpec.commands()``) defines: the four commands, each
    given the options as one namespace (the shared ones and the game's own), ``prepare`` (the
    game's own options applied to the shared ones before any game is played), the ``match
    --agents`` help's part for the game, and its own options per command (a dataclass whose fields
    have defaults, docstrings and a ``check()``), by command name."""

    prepare: Callable[[argparse.Namespace], None]
    evaluate: Callable[[argparse.Namespace], int]
    play: Callable[[argparse.Namespace], int]
    match: Callable[[argparse.Namespace], int]
    replay: Callable[[argparse.Namespace], int]
    MATCH_AGENTS_HELP: str
    OPTIONS: Mapping[str, type]


def command_games() -> tuple[str, ...]:
    """The registered games with commands."""
    return games_with(lambda spec: spec.commands)


def game_commands(game: str) -> GameCommands:
    """The commands module of ``game`` (a ValueError when the game has none)."""
    commands = game_spec(game).commands
    if commands is None:
        raise ValueError(f"game {game!r} has no evaluate, play, match or replay commands")
    module = commands()
    if not isinstance(module, GameCommands):
        missing = [part for part in GameCommands.__annotations__ if not hasattr(module, part)]
        raise TypeError(f"{module.__name__} is not a game's commands module: it lacks {', '.join(missing)}")
    return module


def _game() -> Any:
    return tyro.conf.arg(metavar="{" + ",".join(command_games()) + "}")


@dataclass
class EvaluateOptions:
    """Duplicate-deal tournament of agents with CIs and ratings."""

    game: Annotated[str, _game()] = default_game()
    """Game to play."""
    agents: Agents = None
    """The agents of the tournament, two or more (agent specs: madiao-mao agents --game GAME lists
    them); default: the game's baselines."""
    model: str | None = None
    """A saved MaskablePPO model to include as 'model' (default: the pretrained one)."""
    deals: int = 100
    """Games per pairing, in the game's own unit of evaluation (a duplicate deal, a round)."""
    seed: int = 0
    """Seed of the deals and the agents."""
    out: str | None = None
    """Folder for the markdown report and PNG plots."""
    record: str | None = None
    """Write the first hands played as a JSON game record (as much play as one record of the game
    holds)."""
    engine: Literal["local", "ray"] = "local"
    """local: this process; ray: the game's evaluation sharded over Ray tasks."""
    address: str | None = None
    """ray: the running Ray cluster to use (default: a local Ray instance)."""

    def check(self) -> None:
        check_at_least("--deals", self.deals, 1)
        check_at_least("--seed", self.seed, 0)


@dataclass
class PlayOptions:
    """Play a game in the terminal against agents."""

    game: Annotated[str, _game()] = default_game()
    """Game to play."""
    seat: int = 0
    """Your seat of the game, 0 to players-1 (the game's options set how many players)."""
    opponents: Annotated[
        tuple[str, ...] | None, tyro.conf.arg(aliases=("--agents",), metavar="AGENT [AGENT ...]")
    ] = None
    """One agent for every other seat, or one per other seat in seat order (agent specs: madiao-mao
    agents --game GAME lists them); default: the game's."""
    model: str | None = None
    """A saved MaskablePPO model that plays the other seats (else heuristics)."""
    seed: int | None = None
    """Seed of the deal and the agents (default: random)."""
    record: str | None = None
    """Write the game as JSON (for 'replay' and the web app's replay)."""

    def check(self) -> None:
        check_at_least("--seat", self.seat, 0)
        check_at_least("--seed", self.seed, 0)


@dataclass
class MatchOptions:
    """Play and print one full match between baseline agents."""

    game: Annotated[str, _game()] = default_game()
    """Game to play."""
    agents: Agents = None
    """Agents by seat (the game's options say how many and its default)."""
    seed: int = 0
    """Seed of the deals and the agents."""
    model: str | None = None
    """A saved MaskablePPO model; 'model' in --agents refers to it."""
    record: str | None = None
    """Write the match as JSON (for 'replay' and the web app's replay)."""

    def check(self) -> None:
        check_at_least("--seed", self.seed, 0)


@dataclass
class ReplayOptions:
    """Print a recorded game move by move."""

    record: tyro.conf.Positional[str]
    """A JSON game record written by match/play/evaluate --record."""

    def check(self) -> None:
        """Nothing to check before the record is read."""


SHARED = {"evaluate": EvaluateOptions, "play": PlayOptions, "match": MatchOptions}


def command_class(command: str) -> type:
    """The options of ``command``: the shared dataclass with one group per game that has options
    of its own for it (read when the command is parsed: a game registered at run time has its
    group)."""
    groups = []
    for game in command_games():
        options = game_commands(game).OPTIONS.get(command)
        if options is not None:
            groups.append(
                (game, Annotated[options, tyro.conf.OmitArgPrefixes], field(default_factory=options))
            )
    return dataclasses.make_dataclass(SHARED[command].__name__, groups, bases=(SHARED[command],))


def namespace_for_game(options: Any, command: str) -> argparse.Namespace:
    """The shared options and the chosen game's own as one namespace; an option of another game
    that was given is a ValueError naming its flags."""
    shared = {f.name: getattr(options, f.name) for f in dataclasses.fields(SHARED[command])}
    if options.game not in game_names():
        raise ValueError(f"--game must be one of {', '.join(command_games())}, got {options.game!r}")
    game_commands(options.game)  # a registered game without commands is named as such
    own: dict[str, Any] = {}
    for game in command_games():
        game_options = game_commands(game).OPTIONS.get(command)
        if game_options is None:
            continue
        given = getattr(options, game)
        if game == options.game:
            given.check()
            own = dataclasses.asdict(given)
            continue
        changed = [
            "--" + f.name.replace("_", "-")
            for f in dataclasses.fields(game_options)
            if getattr(given, f.name) != getattr(game_options(), f.name)
        ]
        if changed:
            raise ValueError(f"{', '.join(changed)}: an option of {game}, not of {options.game}")
    for game in command_games():  # every game's option name is there: a game reads only its own
        game_options = game_commands(game).OPTIONS.get(command)
        for f in dataclasses.fields(game_options) if game_options is not None else ():
            own.setdefault(f.name, None)
    options.check()
    return argparse.Namespace(**shared, **own)


def run_game_command(command: str, argv: list[str]) -> int:
    """``madiao-mao COMMAND ARGS`` for evaluate, play and match."""
    options = parse_dataclass(command_class(command), argv, prog=f"madiao-mao {command}")
    args = namespace_for_game(options, command)
    module = game_commands(args.game)
    module.prepare(args)
    if command == "evaluate" and args.engine == "ray":
        # Ray is imported only for a Ray evaluation.
        from madiao_mao.training.rllib import cli as rllib_cli

        return rllib_cli.evaluate(args)
    return {"evaluate": module.evaluate, "play": module.play, "match": module.match}[command](args)


def record_game_name(path: str | Path) -> str:
    """Which game a record file holds, from its "game" key (a file that cannot be read as JSON is
    left to the first game's reader, whose errors name what is wrong)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return default_game()
    game = data.get("game") if isinstance(data, dict) else None
    if game not in game_names():
        raise ValueError(f'{path} is not a game record ("game" is not one of {", ".join(game_names())})')
    return game


def run_replay(argv: list[str]) -> int:
    """``madiao-mao replay RECORD``."""
    options = parse_dataclass(ReplayOptions, argv, prog="madiao-mao replay")
    return game_commands(record_game_name(options.record)).replay(argparse.Namespace(record=options.record))
