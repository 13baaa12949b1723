"""``madiao-mao``: train, evaluate, play, replay, match and bench from one console script.

madiao-mao train                      # the main job: short self-play run + evaluation report
madiao-mao train --config RUN/config.json --seed 2   # that run's settings again, another seed
madiao-mao agents --game mao          # every agent spec of a game, one line each
madiao-mao match                      # one full Madiao match between baseline agents, printed
madiao-mao match --game mao --record mao.json   # a Mao game between agents, printed and recorded
madiao-mao play --seat 0              # you against three heuristic players in the terminal
madiao-mao play --game mao            # Mao: you against three Bayesian rule-learning players
madiao-mao evaluate --agents heuristic greedy random --deals 200 --out results/
madiao-mao scorecard model --suite dev   # a policy against every baseline on a fixed suite
madiao-mao expert-iteration --iterations 3   # the policy learns the search player's moves, in rounds
madiao-mao replay game.json           # a recorded game (either game), move by move, with the result
madiao-mao bench                      # python -m madiao_mao.benchmarks
madiao-mao serve                      # play and replay both games in the browser (127.0.0.1:8000)

`madiao-mao train` is generated from its config dataclass (``madiao_mao.training.train_command``): every
``TrainConfig`` field is a flag; `madiao-mao COMMAND --help` describes each command's flags.

Every user error (a bad option value, a missing or unreadable model or record, an output path
that cannot be written) ends the command before any work starts, with one line on stderr naming
the problem and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from cardgame_core.version import __version__
from madiao_mao.games import default_game, game_names, get_game
from madiao_mao.training.cli_args import (
    OneLineArgumentParser,
    check_output_folder,
    non_negative_int,
    port_number,
    positive_int,
    run_reporting_user_errors,
    seat_number,
)
from madiao_mao.training.exploit import exploit_games
from madiao_mao.training.rllib import cli as rllib_cli
from madiao_mao.training.train_command import command_train

AGENTS_HELP = "agent specs (madiao-mao agents --game GAME lists them, one line each)"


@dataclass
class AgentsCommand:
    """Every agent spec of each game, one line each: what --agents, --opponents and --model, the
    trainer's opponent lists and the scorecard take."""

    game: Annotated[str | None, tyro.conf.arg(metavar="GAME")] = None
    """Only this game's agents (default: every game's)."""


SEARCH_BUDGET_HELP = (
    "Madiao: the budget of every 'search' agent named, as search options (e.g. samples=32 or "
    "samples=16,policy=PATH; see madiao_mao.agents.madiao.search); same as naming it search:OPTIONS"
)


def build_parser() -> argparse.ArgumentParser:
    games = game_names()  # read when the parser is built: a game registered at run time is a choice
    parser = OneLineArgumentParser(
        prog="madiao-mao",
        description=__doc__.split("\n\n")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # train and agents are parsed from their dataclasses and bench by python -m madiao_mao.benchmarks: main()
    # routes them before argparse sees them; they are here to be listed in --help.
    commands.add_parser(
        "train",
        help="self-play training with MaskablePPO (or RLlib), then an evaluation report",
        add_help=False,
    )
    commands.add_parser("agents", help="list every agent spec of each game, one line each", add_help=False)

    evaluate = commands.add_parser(
        "evaluate", help="duplicate-deal tournament of agents with CIs and ratings"
    )
    evaluate.add_argument(
        "--game", choices=games, default=default_game(), help="game to play (default %(default)s)"
    )
    evaluate.add_argument(
        "--agents",
        nargs="+",
        default=None,
        metavar="AGENT",
        help=f"the agents of the tournament, two or more: {AGENTS_HELP}; default: the game's baselines",
    )
    evaluate.add_argument(
        "--model", help="a saved MaskablePPO model to include as 'model' (default: the pretrained one)"
    )
    evaluate.add_argument(
        "--deals", type=positive_int, default=100, help="duplicate deals per pairing (Madiao) / rounds (Mao)"
    )
    evaluate.add_argument("--search-budget", metavar="OPTIONS", help=SEARCH_BUDGET_HELP)
    evaluate.add_argument(
        "--seed", type=non_negative_int, default=0, help="seed of the deals and the agents (default 0)"
    )
    evaluate.add_argument("--out", help="folder for the markdown report and PNG plots")
    evaluate.add_argument(
        "--record",
        help="write the first hands played as a JSON game record (Mao: the first game, the first "
        "agent's; a Mao record holds one game, replayed from its seed)",
    )
    evaluate.add_argument(
        "--record-hands", type=positive_int, default=None, help="Madiao: hands kept in --record (default 8)"
    )
    rllib_cli.add_evaluate_options(evaluate)

    play = commands.add_parser("play", help="play Madiao or Mao in the terminal against agents")
    play.add_argument(
        "--game", choices=games, default=default_game(), help="game to play (default %(default)s)"
    )
    play.add_argument("--seat", type=seat_number, default=0, help="your seat (Madiao 0..3, Mao 0..players-1)")
    play.add_argument(
        "--opponents",
        "--agents",
        nargs="+",
        default=None,
        metavar="AGENT",
        help="one agent for every other seat, or one per other seat in seat order (Madiao default "
        f"heuristic, Mao default bayes): {AGENTS_HELP}",
    )
    play.add_argument(
        "--players", type=positive_int, default=None, help="Mao: players at the table (2..8, default 4)"
    )
    play.add_argument("--rounds", type=positive_int, default=None, help="Mao: rounds to play (default 1)")
    play.add_argument(
        "--model", help="a saved MaskablePPO model that plays the other seats (else heuristics)"
    )
    play.add_argument(
        "--match", action="store_true", help="Madiao: play a whole match (every seat banker once)"
    )
    play.add_argument(
        "--hands",
        type=positive_int,
        default=None,
        help="Madiao: hands to play (default 1; not with --match)",
    )
    play.add_argument("--search-budget", metavar="OPTIONS", help=SEARCH_BUDGET_HELP)
    play.add_argument(
        "--seed",
        type=non_negative_int,
        default=None,
        help="seed of the deal and the agents (default: random)",
    )
    play.add_argument("--record", help="write the game as JSON (for 'replay' and the web app's replay)")

    replay = commands.add_parser("replay", help="print a recorded game (Madiao or Mao) move by move")
    replay.add_argument("record", help="a JSON game record written by match/play/evaluate --record")

    match = commands.add_parser(
        "match", help="play and print one full Madiao match (or Mao game) between baseline agents"
    )
    match.add_argument(
        "--game", choices=games, default=default_game(), help="game to play (default %(default)s)"
    )
    match.add_argument(
        "--agents",
        nargs="+",
        default=None,
        metavar="AGENT",
        help="agents by seat. "
        + "; ".join(
            f"{get_game(game).title}: {_game_commands(game).MATCH_AGENTS_HELP}"
            for game in games
            if _has_commands(game)
        ),
    )
    match.add_argument(
        "--players", type=positive_int, default=None, help="Mao: players at the table (2..8, default 4)"
    )
    match.add_argument(
        "--rounds",
        type=positive_int,
        default=None,
        help="games played in rounds (Mao): rounds to play (default: the game's; each winner adds a secret "
        "rule)",
    )
    match.add_argument("--search-budget", metavar="OPTIONS", help=SEARCH_BUDGET_HELP)
    match.add_argument(
        "--seed", type=non_negative_int, default=0, help="seed of the deals and the agents (default 0)"
    )
    match.add_argument("--model", help="a saved MaskablePPO model; 'model' in --agents refers to it")
    match.add_argument("--record", help="write the match as JSON (for 'replay' and the web app's replay)")

    exploit = commands.add_parser(
        "exploit",
        help="exploitability proxy: train a fresh PPO best response against a frozen agent, score it",
    )
    exploit.add_argument(
        "--model",
        required=True,
        metavar="PATH|AGENT",
        help=f"the frozen target: {AGENTS_HELP}; a bare .zip path is read as model:PATH",
    )
    exploit.add_argument(
        "--game",
        choices=exploit_games(),
        default=default_game(),
        help="game of the target (default %(default)s)",
    )
    exploit.add_argument(
        "--steps", type=positive_int, default=300_000, help="the exploiter's training budget (learner steps)"
    )
    exploit.add_argument(
        "--deals",
        type=positive_int,
        default=None,
        help="evaluation: Madiao duplicate deals (default 1000); Mao games per secret rule (default 2)",
    )
    exploit.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        help="seed of the exploiter's training and the deals (default 0)",
    )
    exploit.add_argument("--out", default="runs", help="folder the exploiter's run folder is made in")
    exploit.add_argument(
        "--run",
        metavar="RUN_DIR",
        help="evaluate the exploiter already trained in RUN_DIR instead of training one (--steps unused)",
    )

    scorecard = commands.add_parser(
        "scorecard", help="a policy's scorecard on a fixed suite: every baseline, CIs, JSON + markdown + plot"
    )
    from madiao_mao.training.scorecard import add_arguments as add_scorecard_arguments

    add_scorecard_arguments(scorecard)

    expert_iteration = commands.add_parser(
        "expert-iteration",
        help="expert iteration: the policy learns a search player's decisions, then plays self-play; "
        "the better policy plays the search's play-outs next time",
    )
    from madiao_mao.training.expert_iteration import add_arguments as add_expert_iteration_arguments

    add_expert_iteration_arguments(expert_iteration)

    serve = commands.add_parser(
        "serve", help="a local web app to play and replay both games in the browser (extra: web)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: this machine only)")
    serve.add_argument("--port", type=port_number, default=8000, help="TCP port (default 8000)")
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name the app also answers to (repeatable; the localhost names and --host always)",
    )

    # Everything after "bench" goes to python -m madiao_mao.benchmarks untouched (main() routes it there
    # before argparse sees it, so "bench --quick" and "bench --help" reach the benchmarks).
    commands.add_parser(
        "bench", help="run the benchmarks: python -m madiao_mao.benchmarks [ARGS]", add_help=False
    )
    return parser


def _has_commands(game: str) -> bool:
    return hasattr(get_game(game).layer("training"), "commands_module")


def _game_commands(game: str):
    """The module holding ``game``'s evaluate, play, match and replay commands."""
    if not _has_commands(game):
        raise ValueError(f"game {game!r} has no evaluate, play, match or replay commands")
    return get_game(game).layer("training").commands_module()


def command_evaluate(args: argparse.Namespace) -> int:
    _game_commands(args.game).apply_search_budget(args)
    if args.engine == "ray":
        return rllib_cli.evaluate(args)
    return _game_commands(args.game).evaluate(args)


def command_play(args: argparse.Namespace) -> int:
    _game_commands(args.game).apply_search_budget(args)
    return _game_commands(args.game).play(args)


def command_match(args: argparse.Namespace) -> int:
    _game_commands(args.game).apply_search_budget(args)
    return _game_commands(args.game).match(args)


def command_replay(args: argparse.Namespace) -> int:
    return _game_commands(record_game_name(args.record)).replay(args)


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


def command_exploit(args: argparse.Namespace) -> int:
    from madiao_mao.training.exploit import ExploitSettings, exploit

    check_output_folder(args.out, "--out")
    target = args.model
    if target.endswith(".zip") and not target.startswith("model:"):
        target = f"model:{target}"
    settings = ExploitSettings(
        target, game=args.game, steps=args.steps, deals=args.deals, seed=args.seed, out=args.out, run=args.run
    )
    report = exploit(settings)
    print(report["markdown"])
    print(f"report written to {Path(report['run_dir']) / 'exploit.md'} (and exploit.json)")
    return 0


def command_scorecard(args: argparse.Namespace) -> int:
    from madiao_mao.training.scorecard import command_scorecard as scorecard

    return scorecard(args)


def command_expert_iteration(args: argparse.Namespace) -> int:
    from madiao_mao.training.expert_iteration import command

    return command(args)


def command_serve(args: argparse.Namespace) -> int:
    try:
        from madiao_mao_web.app import serve
    except ImportError as error:
        raise ImportError(f"{error}; the web app needs the web extra: pip install -e '.[web]'") from None
    print(f"madiao-mao web app on http://{args.host}:{args.port}/ (Ctrl-C stops it)")
    serve(host=args.host, port=args.port, allow_hosts=args.allow_host)
    return 0


def command_bench(bench_args: list[str]) -> int:
    import importlib.util

    if importlib.util.find_spec("madiao_mao.benchmarks.__main__") is None:
        print(
            "no benchmarks here: the benchmarks package has no __main__ (python -m madiao_mao.benchmarks)",
            file=sys.stderr,
        )
        return 1
    return subprocess.call([sys.executable, "-m", "madiao_mao.benchmarks", *bench_args])


def command_agents(argv: list[str]) -> int:
    """``madiao-mao agents [--game GAME]``: every agent spec of each game, one line each."""
    from madiao_mao.agents.registry import agent_specs
    from madiao_mao.training.cli_args import parse_dataclass

    command = parse_dataclass(AgentsCommand, argv, prog="madiao-mao agents")
    if command.game is not None and command.game not in game_names():
        raise ValueError(f"--game must be one of {', '.join(game_names())}, got {command.game!r}")
    for game in game_names() if command.game is None else (command.game,):
        specs = agent_specs(game)
        width = max(len(spec) for spec, _ in specs)
        if command.game is None:
            print(f"{game}:")
        for spec, description in specs:
            print(f"  {spec:<{width}}  {description}")
    return 0


#: Commands parsed from a dataclass (tyro) rather than by ``build_parser``.
DATACLASS_COMMANDS = {"train": command_train, "agents": command_agents}

COMMANDS = {
    "evaluate": command_evaluate,
    "play": command_play,
    "replay": command_replay,
    "match": command_match,
    "serve": command_serve,
    "exploit": command_exploit,
    "scorecard": command_scorecard,
    "expert-iteration": command_expert_iteration,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``madiao-mao`` console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "bench":
        return command_bench(argv[1:])
    if argv and argv[0] in DATACLASS_COMMANDS:
        command = DATACLASS_COMMANDS[argv[0]]
        return run_reporting_user_errors(f"madiao-mao {argv[0]}", lambda: command(argv[1:]))
    parser = build_parser()
    args = parser.parse_args(argv)
    return run_reporting_user_errors(f"madiao-mao {args.command}", lambda: COMMANDS[args.command](args))


if __name__ == "__main__":
    sys.exit(main())
