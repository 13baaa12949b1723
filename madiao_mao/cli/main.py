"""madiao-mao: train, evaluate, play, replay, match and bench from one console script.

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

Every command's options come from a dataclass (``madiao_mao.cli``); `madiao-mao COMMAND --help`
describes each command's flags, each game's own options under the game's name.

Every user error (a bad option value, a missing or unreadable model or record, an output path
that cannot be written) ends the command before any work starts, with one line on stderr naming
the problem and exit status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial

from cardgame_core.version import __version__
from madiao_mao.cli import commands, game_commands
from madiao_mao.cli.train import command_train
from madiao_mao.training.cli_args import run_reporting_user_errors

#: Each command: its one line of help and what runs it on the rest of the command line.
COMMANDS: dict[str, tuple[str, Callable[[list[str]], int]]] = {
    "train": ("self-play training with MaskablePPO (or RLlib), then an evaluation report", command_train),
    "agents": ("list every agent spec of each game, one line each", commands.command_agents),
    "evaluate": (
        "duplicate-deal tournament of agents with CIs and ratings",
        partial(game_commands.run_game_command, "evaluate"),
    ),
    "play": (
        "play a game in the terminal against agents",
        partial(game_commands.run_game_command, "play"),
    ),
    "replay": ("print a recorded game move by move", game_commands.run_replay),
    "match": (
        "play and print one full match between baseline agents",
        partial(game_commands.run_game_command, "match"),
    ),
    "exploit": (
        "exploitability proxy: train a fresh PPO best response against a frozen agent, score it",
        commands.command_exploit,
    ),
    "scorecard": (
        "a policy's scorecard on a fixed suite: every baseline, CIs, JSON + markdown + plot",
        commands.command_scorecard,
    ),
    "expert-iteration": (
        "expert iteration: the policy learns a search player's decisions, then plays self-play; "
        "the better policy plays the search's play-outs next time",
        commands.command_expert_iteration,
    ),
    "serve": (
        "a local web app to play and replay every game in the browser (extra: web)",
        commands.command_serve,
    ),
    "bench": ("run the benchmarks: python -m madiao_mao.benchmarks [ARGS]", commands.command_bench),
}


def usage() -> str:
    """``madiao-mao --help``: the commands, one line each, then the examples."""
    width = max(map(len, COMMANDS))
    lines = [
        "usage: madiao-mao [-h] [--version] COMMAND ...",
        "",
        __doc__.split("\n\n")[0].strip(),
        "",
        "commands:",
        *(f"  {name:<{width}}  {help_line}" for name, (help_line, _) in COMMANDS.items()),
        "",
        __doc__.split("\n\n", 1)[1].rstrip(),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``madiao-mao`` console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # --help, --version and a missing or unknown command end in SystemExit, as every command's own
    # --help does (tyro's, like argparse's).
    if argv and argv[0] in ("-h", "--help"):
        sys.stdout.write(usage())
        raise SystemExit(0)
    if argv and argv[0] == "--version":
        print(f"madiao-mao {__version__}")
        raise SystemExit(0)
    if not argv or argv[0] not in COMMANDS:
        problem = (
            "the following arguments are required: COMMAND"
            if not argv
            else f"argument COMMAND: invalid choice: {argv[0]!r} (choose from {', '.join(COMMANDS)})"
        )
        print(f"madiao-mao: error: {problem} (see madiao-mao --help)", file=sys.stderr)
        raise SystemExit(2)
    name, rest = argv[0], argv[1:]
    if name == "bench":  # the benchmarks' own options, --help included, pass through untouched
        return commands.command_bench(rest)
    return run_reporting_user_errors(f"madiao-mao {name}", lambda: COMMANDS[name][1](rest))


if __name__ == "__main__":
    sys.exit(main())
