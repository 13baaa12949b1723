"""``madiao-mao``: train, evaluate, play, replay, match and bench from one console script.

madiao-mao train                      # the main job: short self-play run + evaluation report
madiao-mao match                      # one full Madiao match between baseline agents, printed
madiao-mao match --game mao --record mao.json   # a Mao game between agents, printed and recorded
madiao-mao play --seat 0              # you against three heuristic players in the terminal
madiao-mao play --game mao            # Mao: you against three Bayesian rule-learning players
madiao-mao evaluate --agents heuristic greedy random --deals 200 --out results/
madiao-mao scorecard model --suite dev   # a policy against every baseline on a fixed suite
madiao-mao replay game.json           # a recorded game (either game), move by move, with the result
madiao-mao bench                      # python -m benchmarks
madiao-mao serve                      # play and replay both games in the browser (127.0.0.1:8000)

Every user error (a bad option value, a missing or unreadable model or record, an output path
that cannot be written) ends the command before any work starts, with one line on stderr naming
the problem and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from training import madiao_commands, mao_commands
from training.cli_args import (
    OneLineArgumentParser,
    check_output_folder,
    finite_float,
    non_negative_int,
    port_number,
    positive_int,
    run_reporting_user_errors,
    seat_number,
)
from training.rllib import cli as rllib_cli

#: Each game's evaluate, play, match and replay commands (modules with the same four functions).
GAME_COMMANDS = {"madiao": madiao_commands, "mao": mao_commands}
GAMES = tuple(GAME_COMMANDS)

SEARCH_BUDGET_HELP = (
    "Madiao: the budget of every 'search' agent named, as search options (e.g. samples=32 or "
    "samples=16,policy=PATH; see agents.madiao_search); same as naming it search:OPTIONS"
)


def build_parser() -> argparse.ArgumentParser:
    from training.config import FEATURES, OPPONENT_MODES, TrainConfig
    from training.games import GAME_DEFAULTS

    parser = OneLineArgumentParser(
        prog="madiao-mao",
        description=__doc__.split("\n\n")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    defaults = TrainConfig()

    train = commands.add_parser(
        "train", help="self-play training with MaskablePPO, then an evaluation report"
    )
    train.add_argument("--game", choices=GAMES, default=defaults.game, help="game to train on")
    train.add_argument(
        "--total-timesteps",
        type=positive_int,
        default=None,
        help=(
            f"learner steps (default {GAME_DEFAULTS['madiao']['total_timesteps']:,} for Madiao, "
            f"{GAME_DEFAULTS['mao']['total_timesteps']:,} for Mao; with --resume: the run's own budget)"
        ),
    )
    train.add_argument("--n-envs", type=positive_int, default=defaults.n_envs, help="games stepped together")
    train.add_argument(
        "--n-steps", type=positive_int, default=defaults.n_steps, help="rollout length per game"
    )
    train.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help=f"PPO minibatch size (default {GAME_DEFAULTS['madiao']['batch_size']} for Madiao, "
        f"{GAME_DEFAULTS['mao']['batch_size']} for Mao)",
    )
    train.add_argument(
        "--learning-rate",
        type=finite_float,
        default=None,
        help=f"Adam learning rate at the start (default {GAME_DEFAULTS['madiao']['learning_rate']:g} for "
        f"Madiao, {GAME_DEFAULTS['mao']['learning_rate']:g} for Mao; decays linearly to 0)",
    )
    train.add_argument("--seed", type=non_negative_int, default=defaults.seed)
    train.add_argument("--exp-name", default=defaults.exp_name)
    train.add_argument("--runs-dir", default=defaults.runs_dir, help="folder of run folders")
    train.add_argument(
        "--eval-every",
        type=non_negative_int,
        default=defaults.eval_every,
        help="steps between evaluations (0: none; default: a tenth of the budget, at least one rollout)",
    )
    train.add_argument("--eval-deals", type=positive_int, default=defaults.eval_deals)
    train.add_argument(
        "--final-eval-deals",
        type=positive_int,
        default=None,
        help="final report: duplicate deals per pairing (Madiao, default "
        f"{GAME_DEFAULTS['madiao']['final_eval_deals']}) or own turns per held-out rule (Mao, default "
        f"{GAME_DEFAULTS['mao']['final_eval_deals']})",
    )
    train.add_argument("--checkpoint-every", type=positive_int, default=defaults.checkpoint_every)
    train.add_argument("--snapshot-every", type=positive_int, default=defaults.snapshot_every)
    train.add_argument(
        "--resume", metavar="RUN_DIR", help="continue an interrupted run from its last checkpoint"
    )
    train.add_argument(
        "--imitate",
        metavar="AGENT",
        default=None,
        help="warm start: fit the fresh policy to this scripted agent's moves before PPO, or 'none' "
        f"(default {GAME_DEFAULTS['madiao']['imitate']} for Madiao, {GAME_DEFAULTS['mao']['imitate']} "
        "for Mao)",
    )
    train.add_argument(
        "--imitation-decisions",
        type=positive_int,
        default=defaults.imitation_decisions,
        help="teacher decisions recorded for the warm start",
    )
    train.add_argument(
        "--mao-rule-pool",
        choices=("train", "all", "none"),
        default=defaults.mao_rule_pool,
        help="Mao: the secret rule each training episode starts with, drawn from the library without "
        "the held-out rules (train), from all of it (all), or none",
    )
    train.add_argument(
        "--mao-penalty-card-reward",
        type=finite_float,
        default=defaults.mao_penalty_card_reward,
        help="Mao: the learner's reward per penalty card in training games",
    )
    train.add_argument(
        "--mao-hand-card-reward",
        type=finite_float,
        default=None,
        help="Mao: the learner's reward per card its hand shrinks by (minus per card it grows by); "
        f"default {GAME_DEFAULTS['mao']['mao_hand_card_reward']}",
    )
    train.add_argument(
        "--opponents",
        choices=OPPONENT_MODES,
        default=None,
        help="league: self-play in a league, one member per game (the live policy, its snapshots or "
        "a scripted anchor) drawn by prioritized fictitious self-play, the league saved with each "
        "checkpoint; pool: each opponent seat drawn from a weighted pool of scripted players and "
        f"snapshots (default {GAME_DEFAULTS['madiao']['opponents']} for Madiao, "
        f"{GAME_DEFAULTS['mao']['opponents']} for Mao)",
    )
    train.add_argument(
        "--league-anchors",
        nargs="+",
        metavar="AGENT",
        default=None,
        help="league: the scripted members (default "
        f"{' '.join(GAME_DEFAULTS['madiao']['league_anchors'])} for Madiao)",
    )
    train.add_argument(
        "--features",
        choices=FEATURES,
        default=None,
        help="what the policy reads: the observation (flat) or planes derived from it; Madiao: cards; "
        "Mao: rules, memory (attention over a 16-event window), belief (the seat's posterior over "
        f"the secret rules, a memory of the whole game). Default {GAME_DEFAULTS['madiao']['features']} "
        f"for Madiao, {GAME_DEFAULTS['mao']['features']} for Mao",
    )
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument("--no-report", action="store_true", help="skip the final evaluation report")
    rllib_cli.add_train_options(train)

    evaluate = commands.add_parser(
        "evaluate", help="duplicate-deal tournament of agents with CIs and ratings"
    )
    evaluate.add_argument("--game", choices=GAMES, default="madiao")
    evaluate.add_argument(
        "--agents", nargs="+", default=None, help="agent names (see 'play --help'), model:PATH allowed"
    )
    evaluate.add_argument(
        "--model", help="a saved MaskablePPO model to include as 'model' (default: the pretrained one)"
    )
    evaluate.add_argument(
        "--deals", type=positive_int, default=100, help="duplicate deals per pairing (Madiao) / rounds (Mao)"
    )
    evaluate.add_argument("--search-budget", metavar="OPTIONS", help=SEARCH_BUDGET_HELP)
    evaluate.add_argument("--seed", type=non_negative_int, default=0)
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
    play.add_argument("--game", choices=GAMES, default="madiao", help="game to play")
    play.add_argument("--seat", type=seat_number, default=0, help="your seat (Madiao 0..3, Mao 0..players-1)")
    play.add_argument(
        "--opponents",
        "--agents",
        nargs="+",
        default=None,
        help="one agent for every other seat, or one per other seat in seat order. Madiao (default "
        "heuristic): random, greedy, heuristic, search, model = the pretrained policy, model:PATH; "
        "Mao (default bayes): random, base, bayes, oracle, model = the pretrained policy, model:PATH",
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
    play.add_argument("--seed", type=non_negative_int, default=None)
    play.add_argument("--record", help="write the game as JSON (for 'replay' and the web app's replay)")

    replay = commands.add_parser("replay", help="print a recorded game (Madiao or Mao) move by move")
    replay.add_argument("record", help="a JSON game record written by match/play/evaluate --record")

    match = commands.add_parser(
        "match", help="play and print one full Madiao match (or Mao game) between baseline agents"
    )
    match.add_argument("--game", choices=GAMES, default="madiao", help="game to play")
    match.add_argument(
        "--agents",
        nargs="+",
        default=None,
        metavar="AGENT",
        help="agents by seat. Madiao: four (default "
        + " ".join(madiao_commands.DEFAULT_MATCH_AGENTS)
        + "); Mao: one per seat, or one for every seat (default "
        + " ".join(mao_commands.DEFAULT_MAO_MATCH_AGENTS)
        + " repeated)",
    )
    match.add_argument(
        "--players", type=positive_int, default=None, help="Mao: players at the table (2..8, default 4)"
    )
    match.add_argument(
        "--rounds",
        type=positive_int,
        default=None,
        help=f"Mao: rounds to play (default {mao_commands.DEFAULT_MAO_MATCH_ROUNDS}; "
        "each winner adds a secret rule)",
    )
    match.add_argument("--search-budget", metavar="OPTIONS", help=SEARCH_BUDGET_HELP)
    match.add_argument("--seed", type=non_negative_int, default=0)
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
        help="the frozen target: an agent name (heuristic, greedy, random, model = the pretrained "
        "policy) or model:PATH (a bare .zip path is read as model:PATH)",
    )
    exploit.add_argument("--game", choices=("madiao", "mao"), default="madiao")
    exploit.add_argument(
        "--steps", type=positive_int, default=300_000, help="the exploiter's training budget (learner steps)"
    )
    exploit.add_argument(
        "--deals",
        type=positive_int,
        default=None,
        help="evaluation: Madiao duplicate deals (default 1000); Mao games per secret rule (default 2)",
    )
    exploit.add_argument("--seed", type=non_negative_int, default=0)
    exploit.add_argument("--out", default="runs", help="folder the exploiter's run folder is made in")
    exploit.add_argument(
        "--run",
        metavar="RUN_DIR",
        help="evaluate the exploiter already trained in RUN_DIR instead of training one (--steps unused)",
    )

    scorecard = commands.add_parser(
        "scorecard", help="a policy's scorecard on a fixed suite: every baseline, CIs, JSON + markdown + plot"
    )
    from training.scorecard import add_arguments as add_scorecard_arguments

    add_scorecard_arguments(scorecard)

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

    # Everything after "bench" goes to python -m benchmarks untouched (main() routes it there
    # before argparse sees it, so "bench --quick" and "bench --help" reach the benchmarks).
    commands.add_parser("bench", help="run the benchmarks: python -m benchmarks [ARGS]", add_help=False)
    return parser


def command_train(args: argparse.Namespace) -> int:
    from training.config import train_config_from_args
    from training.sb3.train import final_report, train

    check_output_folder(args.runs_dir, "--runs-dir")
    if rllib_cli.uses_rllib(args):
        return rllib_cli.train(args)
    if args.resume:
        run_dir = train(resume=args.resume, total_timesteps=args.total_timesteps, quiet=args.no_progress)
    else:
        run_dir = train(train_config_from_args(args))
    print(f"run folder: {run_dir}")
    if not args.no_report:
        final_report(run_dir)
        print(f"report written to {run_dir / 'report.md'}")
    return 0


def _game_commands(game: str):
    """The module holding ``game``'s evaluate, play, match and replay commands."""
    return GAME_COMMANDS[game]


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
    left to the Madiao reader, whose errors name what is wrong)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return "madiao"
    game = data.get("game") if isinstance(data, dict) else None
    if game not in GAMES:
        raise ValueError(f'{path} is not a game record ("game" is not one of {", ".join(GAMES)})')
    return game


def command_exploit(args: argparse.Namespace) -> int:
    from training.exploit import ExploitSettings, exploit

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
    from training.scorecard import command_scorecard as scorecard

    return scorecard(args)


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

    if importlib.util.find_spec("benchmarks.__main__") is None:
        print(
            "no benchmarks here: the benchmarks package has no __main__ (python -m benchmarks)",
            file=sys.stderr,
        )
        return 1
    return subprocess.call([sys.executable, "-m", "benchmarks", *bench_args])


COMMANDS = {
    "train": command_train,
    "evaluate": command_evaluate,
    "play": command_play,
    "replay": command_replay,
    "match": command_match,
    "serve": command_serve,
    "exploit": command_exploit,
    "scorecard": command_scorecard,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``madiao-mao`` console script; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "bench":
        return command_bench(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    return run_reporting_user_errors(f"madiao-mao {args.command}", lambda: COMMANDS[args.command](args))


if __name__ == "__main__":
    sys.exit(main())
