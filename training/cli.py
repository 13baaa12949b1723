"""``madiao-mao``: train, evaluate, play, replay, match and bench from one console script.

madiao-mao train                      # the main job: short self-play run + evaluation report
madiao-mao match                      # one full Madiao match between baseline agents, printed
madiao-mao match --game mao --record mao.json   # a Mao game between agents, printed and recorded
madiao-mao play --seat 0              # you against three heuristic players in the terminal
madiao-mao play --game mao            # Mao: you against three Bayesian rule-learning players
madiao-mao evaluate --agents heuristic greedy random --deals 200 --out results/
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
import math
import secrets
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

DEFAULT_MATCH_AGENTS = ("heuristic", "greedy", "heuristic", "greedy")
#: A Mao match's seats, repeated around the table: a rule learner against base-rules players.
DEFAULT_MAO_MATCH_AGENTS = ("bayes", "base")
DEFAULT_MAO_MATCH_ROUNDS = 3
#: What a user can get wrong (bad values, paths, a missing extra); anything else is a bug and
#: keeps its traceback.
USER_ERRORS = (ValueError, OSError, ImportError)


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse with its usage errors on one line (the problem, then where to read more)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def one_line(error: BaseException) -> str:
    """An exception's message on one line, without a leading "Error: " (some libraries put one
    there, and the caller already says "error:")."""
    text = " ".join(str(error).split()) or type(error).__name__
    while text.lower().startswith("error:"):
        text = text[len("error:") :].lstrip()
    return text


def run_reporting_user_errors(prog: str, body: Callable[[], int]) -> int:
    """``body()``, with a user error turned into one line on stderr and status 2 (130 on Ctrl-C)."""
    try:
        return body()
    except USER_ERRORS as error:
        print(f"{prog}: error: {one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _integer(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = _integer(text, "a positive integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0 (seeds: numpy refuses negative ones)."""
    value = _integer(text, "an integer >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def finite_float(text: str) -> float:
    """argparse type: a finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


_positive_int = positive_int


def _seat(text: str) -> int:
    # The game's own range (Madiao 0..3, Mao 0..players-1) is checked once the game is known.
    value = _integer(text, "a seat number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"a seat is 0 or more, got {value}")
    return value


def check_output_folder(path: str | None, option: str) -> None:
    """A folder to write into: it may exist (as a folder) or be created (no file in the way)."""
    if path is None:
        return
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{option} {path} is an existing file, not a folder")
    _check_creatable(folder.parent, option, path)


def check_output_file(path: str | None, option: str) -> None:
    """A file to write: not a folder, and its folder exists or can be created."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"{option} {path} is a folder; give a file name")
    _check_creatable(target.parent, option, path)


def _check_creatable(folder: Path, option: str, path: str) -> None:
    for ancestor in (folder, *folder.parents):
        if ancestor.exists():
            if not ancestor.is_dir():
                raise ValueError(f"{option} {path}: {ancestor} is a file, not a folder")
            return


def check_model(spec: str, game: str) -> None:
    """Load a ``model:PATH`` spec once (nothing for other specs), so that a missing or corrupt
    model is reported before any game is played by code that loads its agents later."""
    from agents.registry import MODEL_PREFIX

    if spec.startswith(MODEL_PREFIX):
        load_agent(spec, game)


def load_agent(spec: str, game: str, *, seed: int | None = None, env=None):
    """``agents.registry.make_agent`` with a model that cannot be loaded reported as one
    ValueError naming the file (SB3 raises many kinds of errors for a corrupt zip)."""
    from agents.registry import MODEL_PREFIX, make_agent

    if not spec.startswith(MODEL_PREFIX):
        return make_agent(spec, game, seed=seed, env=env)
    path = spec[len(MODEL_PREFIX) :]
    if not Path(path).is_file():
        raise FileNotFoundError(f"no saved model at {path}")
    try:
        return make_agent(spec, game, seed=seed, env=env)
    except Exception as error:
        raise ValueError(f"cannot load the model {path}: {one_line(error)}") from error


def build_parser() -> argparse.ArgumentParser:
    from training.config import TrainConfig
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
    train.add_argument("--game", choices=("madiao", "mao"), default=defaults.game, help="game to train on")
    train.add_argument(
        "--total-timesteps",
        type=_positive_int,
        default=None,
        help=(
            f"learner steps (default {GAME_DEFAULTS['madiao']['total_timesteps']:,} for Madiao, "
            f"{GAME_DEFAULTS['mao']['total_timesteps']:,} for Mao; with --resume: the run's own budget)"
        ),
    )
    train.add_argument("--n-envs", type=_positive_int, default=defaults.n_envs, help="games stepped together")
    train.add_argument(
        "--n-steps", type=_positive_int, default=defaults.n_steps, help="rollout length per game"
    )
    train.add_argument(
        "--batch-size", type=_positive_int, default=defaults.batch_size, help="PPO minibatch size"
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
    train.add_argument("--eval-deals", type=_positive_int, default=defaults.eval_deals)
    train.add_argument(
        "--final-eval-deals",
        type=_positive_int,
        default=None,
        help="final report: duplicate deals per pairing (Madiao, default "
        f"{GAME_DEFAULTS['madiao']['final_eval_deals']}) or own turns per held-out rule (Mao, default "
        f"{GAME_DEFAULTS['mao']['final_eval_deals']})",
    )
    train.add_argument("--checkpoint-every", type=_positive_int, default=defaults.checkpoint_every)
    train.add_argument("--snapshot-every", type=_positive_int, default=defaults.snapshot_every)
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
        type=_positive_int,
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
        "--league",
        action="store_true",
        help="league self-play: one member per game (the live policy, its snapshots or a scripted "
        "anchor) drawn by prioritized fictitious self-play; the league is saved with each checkpoint",
    )
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument("--no-report", action="store_true", help="skip the final evaluation report")

    evaluate = commands.add_parser(
        "evaluate", help="duplicate-deal tournament of agents with CIs and ratings"
    )
    evaluate.add_argument("--game", choices=("madiao", "mao"), default="madiao")
    evaluate.add_argument(
        "--agents", nargs="+", default=None, help="agent names (see 'play --help'), model:PATH allowed"
    )
    evaluate.add_argument(
        "--model", help="a saved MaskablePPO model to include as 'model' (default: the pretrained one)"
    )
    evaluate.add_argument(
        "--deals", type=_positive_int, default=100, help="duplicate deals per pairing (Madiao) / rounds (Mao)"
    )
    evaluate.add_argument("--seed", type=non_negative_int, default=0)
    evaluate.add_argument("--out", help="folder for the markdown report and PNG plots")
    evaluate.add_argument(
        "--record",
        help="write the first hands played as a JSON game record (Mao: the first game, the first "
        "agent's; a Mao record holds one game, replayed from its seed)",
    )
    evaluate.add_argument(
        "--record-hands", type=_positive_int, default=None, help="Madiao: hands kept in --record (default 8)"
    )

    play = commands.add_parser("play", help="play Madiao or Mao in the terminal against agents")
    play.add_argument("--game", choices=("madiao", "mao"), default="madiao", help="game to play")
    play.add_argument("--seat", type=_seat, default=0, help="your seat (Madiao 0..3, Mao 0..players-1)")
    play.add_argument(
        "--opponents",
        "--agents",
        nargs="+",
        default=None,
        help="one agent for every other seat, or one per other seat in seat order. Madiao (default "
        "heuristic): random, greedy, heuristic, search, model = the pretrained policy, model:PATH; "
        "Mao (default bayes): random, base, bayes, oracle, model:PATH",
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
        type=_positive_int,
        default=None,
        help="Madiao: hands to play (default 1; not with --match)",
    )
    play.add_argument("--seed", type=non_negative_int, default=None)
    play.add_argument("--record", help="write the game as JSON (for 'replay' and the web app's replay)")

    replay = commands.add_parser("replay", help="print a recorded game (Madiao or Mao) move by move")
    replay.add_argument("record", help="a JSON game record written by match/play/evaluate --record")

    match = commands.add_parser(
        "match", help="play and print one full Madiao match (or Mao game) between baseline agents"
    )
    match.add_argument("--game", choices=("madiao", "mao"), default="madiao", help="game to play")
    match.add_argument(
        "--agents",
        nargs="+",
        default=None,
        metavar="AGENT",
        help=f"agents by seat. Madiao: four (default {' '.join(DEFAULT_MATCH_AGENTS)}); Mao: one per "
        f"seat, or one for every seat (default {' '.join(DEFAULT_MAO_MATCH_AGENTS)} repeated)",
    )
    match.add_argument(
        "--players", type=positive_int, default=None, help="Mao: players at the table (2..8, default 4)"
    )
    match.add_argument(
        "--rounds",
        type=positive_int,
        default=None,
        help=f"Mao: rounds to play (default {DEFAULT_MAO_MATCH_ROUNDS}; each winner adds a secret rule)",
    )
    match.add_argument("--seed", type=non_negative_int, default=0)
    match.add_argument("--model", help="a saved MaskablePPO model; 'model' in --agents refers to it")
    match.add_argument("--record", help="write the match as JSON (for 'replay' and the web app's replay)")

    serve = commands.add_parser(
        "serve", help="a local web app to play and replay both games in the browser (extra: web)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: this machine only)")
    serve.add_argument("--port", type=_port, default=8000, help="TCP port (default 8000)")

    # Everything after "bench" goes to python -m benchmarks untouched (main() routes it there
    # before argparse sees it, so "bench --quick" and "bench --help" reach the benchmarks).
    commands.add_parser("bench", help="run the benchmarks: python -m benchmarks [ARGS]", add_help=False)
    return parser


def _agent(spec: str, *, seed: int | None, env, model: str | None):
    if spec == "model" and model is not None:
        spec = f"model:{model}"  # without --model, 'model' is the pretrained policy shipped
    return load_agent(spec, "madiao", seed=seed, env=env)


def command_train(args: argparse.Namespace) -> int:
    from training.train import final_report, train

    check_output_folder(args.runs_dir, "--runs-dir")
    if args.resume:
        run_dir = train(resume=args.resume, total_timesteps=args.total_timesteps, quiet=args.no_progress)
    else:
        run_dir = train(_config_from_args(args))
    print(f"run folder: {run_dir}")
    if not args.no_report:
        final_report(run_dir)
        print(f"report written to {run_dir / 'report.md'}")
    return 0


def _config_from_args(args: argparse.Namespace):
    from training.config import TrainConfig

    return TrainConfig(
        game=args.game,
        total_timesteps=args.total_timesteps or TrainConfig.total_timesteps,
        n_envs=args.n_envs,
        n_steps=args.n_steps,
        batch_size=min(args.batch_size, args.n_envs * args.n_steps),
        seed=args.seed,
        exp_name=args.exp_name,
        runs_dir=args.runs_dir,
        eval_every=args.eval_every,
        eval_deals=args.eval_deals,
        final_eval_deals=args.final_eval_deals,
        checkpoint_every=args.checkpoint_every,
        snapshot_every=args.snapshot_every,
        mao_rule_pool=args.mao_rule_pool,
        mao_penalty_card_reward=args.mao_penalty_card_reward,
        mao_hand_card_reward=args.mao_hand_card_reward,
        imitate=args.imitate,
        imitation_decisions=args.imitation_decisions,
        opponents="league" if args.league else "pool",
        progress_bar=not args.no_progress,
    )


def command_evaluate(args: argparse.Namespace) -> int:
    if args.game == "mao":
        from training.mao_evaluation import command_evaluate_mao

        return command_evaluate_mao(args)
    from madiao_env.records import make_record, write_record
    from training.madiao_evaluation import run_tournament, write_report

    check_output_folder(args.out, "--out")
    check_output_file(args.record, "--record")
    names = list(args.agents or ["heuristic", "greedy", "random"])
    if args.model and "model" not in names:
        names.insert(0, "model")
    if len(set(names)) != len(names):
        raise ValueError(f"agent names repeat: {' '.join(names)}")
    if len(names) < 2:
        raise ValueError(f"--agents: a tournament needs at least two agents, got {' '.join(names)}")
    env_for_search = None
    if "search" in names:
        from training.madiao_games import make_env

        env_for_search = make_env()
    agents = {
        name: _agent(name, seed=args.seed + i, env=env_for_search, model=args.model)
        for i, name in enumerate(names)
    }
    recorded = []
    record_hands = 8 if args.record_hands is None else args.record_hands

    def keep(episode) -> None:
        if len(recorded) < record_hands:
            recorded.append(episode)

    report = run_tournament(
        agents,
        n_deals=args.deals,
        seed=args.seed,
        on_hand=keep if args.record else None,
        progress=True,
        env=env_for_search,
    )
    print(report.markdown())
    if args.out:
        paths = write_report(report, Path(args.out))
        print("wrote " + ", ".join(str(p) for p in paths))
    if args.record:
        first = report.pairs[0]
        seats = [first.agent if s == 0 else first.opponent for s in range(4)]
        write_record(args.record, make_record(seats, {}, args.seed, recorded))
        print(f"wrote {len(recorded)} hands to {args.record} (each hand names its seats)")
    return 0


def _table_view(env, seat: int, write) -> None:
    """What one seat can see: own hand, upcard, the trick (others' face-down cards hidden), tricks."""
    from madiao_env import cards
    from madiao_env.records import format_hand, role_name

    table = env.unwrapped.table()
    banker = table["banker"]
    write("")
    write(
        f"You are seat {seat} ({role_name(seat, banker)}); banker is seat {banker}. "
        f"Upcard: {table['stock'][0]}"
    )
    write(
        "Tricks won: "
        + "  ".join(f"seat {s}: {t}" for s, t in enumerate(table["tricks_won"]))
        + f"   (trick {min(table['trick_number'] + 1, cards.N_TRICKS)} of {cards.N_TRICKS})"
    )
    if table["current_trick"]:
        shown = []
        for trick_seat, name, face_up in table["current_trick"]:
            shown.append(
                f"seat {trick_seat}: {name if face_up or trick_seat == seat else 'face down'}"
                + ("" if face_up else " (sloughed)" if trick_seat == seat else "")
            )
        write("This trick: " + ", ".join(shown))
    else:
        write("This trick: you lead." if table["to_act"] == seat else "This trick: (empty)")
    write(f"Your hand: {format_hand(table['hands'][seat])}")


def command_play(args: argparse.Namespace) -> int:
    if args.game == "mao":
        return _command_play_mao(args)
    from agents.human import HumanAgent, HumanQuit
    from madiao_env.records import EventPrinter, make_record, write_record
    from training.madiao_games import make_env, play_episode

    for option, value in (("--players", args.players), ("--rounds", args.rounds)):
        if value is not None:
            raise ValueError(f"{option} is a Mao option (with --game mao)")
    if args.seat > 3:
        raise ValueError(f"--seat: a seat is 0, 1, 2 or 3, got {args.seat}")
    if args.match and args.hands is not None:
        raise ValueError("--hands and --match exclude each other (a match has one hand per banker)")
    check_output_file(args.record, "--record")
    episode_kind = "match" if args.match else "hand"
    env = make_env(episode=episode_kind)
    opponents = list(args.opponents or ["heuristic"])
    if args.model and args.opponents is None:
        opponents = ["model"]
    if len(opponents) not in (1, 3):
        raise ValueError(f"--opponents takes one name or three, got {len(opponents)}")
    if len(opponents) == 1:
        opponents = opponents * 3
    seat_agents = []
    names = []
    other = iter(opponents)
    human = HumanAgent(show_state=lambda: _table_view(env, args.seat, print))
    for seat in range(4):
        if seat == args.seat:
            seat_agents.append(human)
            names.append("you")
        else:
            spec = next(other)
            seat_agents.append(
                _agent(spec, seed=None if args.seed is None else args.seed + seat, env=env, model=args.model)
            )
            names.append(spec if not spec.startswith("model") else "model")
    printer = EventPrinter(names, print, reveal_hands=False, reveal_seat=args.seat)
    print(f"Madiao: you are seat {args.seat}. Type 'help' at the prompt for how to enter moves.")
    results = []
    n_episodes = 1 if args.match else args.hands or 1
    try:
        for number in range(n_episodes):
            seed = None if args.seed is None else args.seed + number
            results.append(play_episode(env, seat_agents, seed=seed, on_event=printer))
    except HumanQuit:
        print("Game left. Goodbye.")
    finally:
        if args.record and results:
            write_record(args.record, make_record(names, {"episode": episode_kind}, args.seed, results))
            print(f"game record written to {args.record}")
    if results:
        totals = sum(r.returns for r in results)
        print("Final totals: " + "  ".join(f"{n} {t:+g}" for n, t in zip(names, totals, strict=True)))
    return 0


def _command_play_mao(args: argparse.Namespace) -> int:
    """``play --game mao``: the person in ``--seat``, agents in the other seats."""
    from agents.human import HumanQuit, MaoHumanAgent
    from mao_env import rules
    from training.mao_play import (
        DEFAULT_MAO_OPPONENT,
        MaoGameLog,
        build_mao_seats,
        make_mao_env,
        play_mao_game,
    )

    for option, value in (("--match", args.match), ("--hands", args.hands)):
        if value:
            raise ValueError(f"{option} is a Madiao option; a Mao game is --rounds rounds")
    check_output_file(args.record, "--record")
    players = 4 if args.players is None else args.players
    if not 2 <= players <= 8:
        raise ValueError(f"--players: Mao is played by 2 to 8 players, got {players}")
    if args.seat >= players:
        raise ValueError(f"--seat: with {players} players a seat is 0..{players - 1}, got {args.seat}")
    opponents = list(args.opponents or ["model" if args.model else DEFAULT_MAO_OPPONENT])
    if args.model:  # as for Madiao: --model plays the seats named 'model' (all of them by default)
        opponents = [f"model:{args.model}" if name == "model" else name for name in opponents]
    env = make_mao_env(players, args.rounds or 1)
    human = MaoHumanAgent(
        rules.N_RULES,
        read_line=lambda prompt: input(prompt),  # looked up at each call (tests replace input)
        show_state=lambda: print(env.unwrapped.seat_view(args.seat)),
        show_state_each_move=False,  # play_mao_game shows the table at the start of each turn
    )
    seat_agents, names = build_mao_seats(opponents, human, args.seat, env, args.seed, load_agent)
    print(
        f"Mao: you are {env.unwrapped.possible_agents[args.seat]}; the others: "
        + ", ".join(f"{env.unwrapped.possible_agents[s]} {n}" for s, n in enumerate(names) if s != args.seat)
        + ". Type 'help' at the prompt for how to enter moves."
    )
    # A record replays from its seed: a game without --seed gets one drawn here.
    seed = args.seed if args.seed is not None or not args.record else secrets.randbelow(2**31)
    log = MaoGameLog(seed)
    try:
        returns = play_mao_game(env, seat_agents, args.seat, log=log)
    except HumanQuit:
        print("Game left. Goodbye.")
        return 0
    finally:  # the moves made so far are kept, also when the person leaves early
        if args.record and log.actions:
            from mao_env.records import write_record

            write_record(args.record, log.record(env, names))
            print(f"game record written to {args.record}")
    print("Game over. Rewards: " + _mao_rewards_text(env, names, returns))
    return 0


def _mao_rewards_text(env, names: list[str], returns) -> str:
    agents = env.unwrapped.possible_agents
    return "  ".join(f"{agents[s]} ({n}) {r:+g}" for s, (n, r) in enumerate(zip(names, returns, strict=True)))


def record_game_name(path: str | Path) -> str:
    """Which game a record file holds, from its "game" key (a file that cannot be read as JSON is
    left to the Madiao reader, whose errors name what is wrong)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return "madiao"
    game = data.get("game") if isinstance(data, dict) else None
    if game not in ("madiao", "mao"):
        raise ValueError(f'{path} is not a game record ("game" is neither "madiao" nor "mao")')
    return game


def command_replay(args: argparse.Namespace) -> int:
    if record_game_name(args.record) == "mao":
        from mao_env.records import read_record as read_mao_record
        from training.mao_play import print_mao_record

        print_mao_record(read_mao_record(args.record))
        return 0
    from madiao_env.records import print_record, read_record

    print_record(read_record(args.record))
    return 0


def command_match(args: argparse.Namespace) -> int:
    if args.game == "mao":
        return _command_match_mao(args)
    from madiao_env.records import EventPrinter, make_record, write_record
    from training.madiao_games import make_env, play_episode

    for option, value in (("--players", args.players), ("--rounds", args.rounds)):
        if value is not None:
            raise ValueError(f"{option} is a Mao option (with --game mao)")
    if args.agents is None:
        args.agents = list(DEFAULT_MATCH_AGENTS)
    if len(args.agents) != 4:
        raise ValueError(f"--agents: a Madiao match needs 4 agents (seats 0..3), got {len(args.agents)}")
    check_output_file(args.record, "--record")
    env = make_env(episode="match")
    seat_agents = [
        _agent(spec, seed=args.seed + seat, env=env, model=args.model)
        for seat, spec in enumerate(args.agents)
    ]
    names = [f"{spec}" for spec in args.agents]
    print(f"Madiao match, seed {args.seed}: " + ", ".join(f"seat {s} {n}" for s, n in enumerate(names)))
    printer = EventPrinter(names, print)
    result = play_episode(env, seat_agents, seed=args.seed, on_event=printer)
    print(
        f"\nMatch over after {printer.hands_played} hands. Final: "
        + "  ".join(f"{n} {t:+g}" for n, t in zip(names, result.returns, strict=True))
    )
    if args.record:
        write_record(args.record, make_record(names, {"episode": "match"}, args.seed, [result]))
        print(f"match record written to {args.record}")
    return 0


def _command_match_mao(args: argparse.Namespace) -> int:
    """``match --game mao``: one game of ``--rounds`` rounds between agents, printed for a
    spectator (every hand at each deal, every move, call and new rule) and recorded."""
    from training.mao_play import MaoGameLog, make_mao_env, play_mao_game

    players = 4 if args.players is None else args.players
    if not 2 <= players <= 8:
        raise ValueError(f"--players: Mao is played by 2 to 8 players, got {players}")
    if args.agents is None:
        specs = [DEFAULT_MAO_MATCH_AGENTS[seat % len(DEFAULT_MAO_MATCH_AGENTS)] for seat in range(players)]
    else:
        specs = list(args.agents)
    if len(specs) == 1:
        specs = specs * players
    if len(specs) != players:
        raise ValueError(
            f"--agents: name one agent for every seat or one per seat ({players}), got {len(specs)}"
        )
    if "model" in specs and args.model is None:
        raise ValueError("--agents: 'model' needs --model PATH (Mao has no pretrained policy)")
    specs = [f"model:{args.model}" if spec == "model" else spec for spec in specs]
    check_output_file(args.record, "--record")
    env = make_mao_env(players, args.rounds or DEFAULT_MAO_MATCH_ROUNDS)
    seat_agents = [load_agent(spec, "mao", seed=args.seed + seat, env=env) for seat, spec in enumerate(specs)]
    names = [spec if not spec.startswith("model:") else "model" for spec in specs]
    unwrapped = env.unwrapped
    print(
        f"Mao game, seed {args.seed}, {unwrapped.num_rounds} round(s): "
        + ", ".join(f"{agent} {name}" for agent, name in zip(unwrapped.possible_agents, names, strict=True))
    )
    log = MaoGameLog(args.seed)
    returns = play_mao_game(env, seat_agents, None, log=log, names=names)
    print("Game over. Rewards: " + _mao_rewards_text(env, names, returns))
    if args.record:
        from mao_env.records import write_record

        write_record(args.record, log.record(env, names))
        print(f"game record written to {args.record}")
    return 0


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a port is an integer 1..65535, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is an integer 1..65535, got {value}")
    return value


def command_serve(args: argparse.Namespace) -> int:
    try:
        from madiao_mao_web.app import serve
    except ImportError as error:
        raise ImportError(f"{error}; the web app needs the web extra: pip install -e '.[web]'") from None
    print(f"madiao-mao web app on http://{args.host}:{args.port}/ (Ctrl-C stops it)")
    serve(host=args.host, port=args.port)
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
