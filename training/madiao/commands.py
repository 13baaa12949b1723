"""The Madiao side of the game commands of ``madiao-mao`` (evaluate, play, match, replay).

``madiao_mao.cli.game_commands`` picks this module (Madiao's ``GameSpec.commands``) by ``--game``
(or by a record's "game" key); it defines what ``madiao_mao.cli.game_commands.GameCommands``
lists, so the CLI never branches on the game. ``OPTIONS`` are Madiao's own options of each command.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Annotated

import tyro

from madiao_mao.training.cli_args import check_at_least, check_output_file, check_output_folder

DEFAULT_MATCH_AGENTS = ("heuristic", "greedy", "heuristic", "greedy")
#: The ``match --agents`` help's part for this game.
MATCH_AGENTS_HELP = f"four (default {' '.join(DEFAULT_MATCH_AGENTS)})"


def _spec(name: str, model: str | None) -> str:
    """The registry spec of an agent named on the command line."""
    # Without --model, 'model' is the pretrained policy shipped.
    return f"model:{model}" if name == "model" and model is not None else name


SearchBudget = Annotated[str | None, tyro.conf.arg(metavar="OPTIONS")]


@dataclass
class EvaluateOptions:
    """Madiao's own options of ``evaluate``."""

    search_budget: SearchBudget = None
    """The budget of every 'search' agent named, as search options (e.g. samples=32 or
    samples=16,policy=PATH; see madiao_mao.agents.madiao.search); same as naming it search:OPTIONS."""
    record_hands: int | None = None
    """Hands kept in --record (default 8)."""

    def check(self) -> None:
        check_at_least("--record-hands", self.record_hands, 1)


@dataclass
class PlayOptions:
    """Madiao's own options of ``play``."""

    match: Annotated[bool, tyro.conf.FlagCreatePairsOff] = False
    """Play a whole match (every seat banker once)."""
    hands: int | None = None
    """Hands to play (default 1; not with --match)."""
    search_budget: SearchBudget = None
    """The budget of every 'search' agent named (see evaluate --help)."""

    def check(self) -> None:
        check_at_least("--hands", self.hands, 1)


@dataclass
class MatchOptions:
    """Madiao's own options of ``match``."""

    search_budget: SearchBudget = None
    """The budget of every 'search' agent named (see evaluate --help)."""

    def check(self) -> None:
        """Nothing to check before the agents are made."""


#: Madiao's own options of each command, by command.
OPTIONS = MappingProxyType({"evaluate": EvaluateOptions, "play": PlayOptions, "match": MatchOptions})


def prepare(args: argparse.Namespace) -> None:
    """``--search-budget OPTIONS``: every agent named ``search`` becomes ``search:OPTIONS``
    (checked before any game is played)."""
    if args.search_budget is None:
        return
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from madiao_mao.agents.madiao.search import parse_search_options

    parse_search_options(args.search_budget)
    named = False
    for option in ("agents", "opponents"):
        names = getattr(args, option, None)
        if names:
            named = named or "search" in names
            setattr(args, option, [f"search:{args.search_budget}" if n == "search" else n for n in names])
    if not named:
        raise ValueError("--search-budget: no agent named 'search' on the command line")


def tournament_agents(args: argparse.Namespace) -> list[str]:
    """The agents of ``evaluate``'s tournament (``--agents``, with ``model`` first when ``--model``
    is given), checked: no repeats, at least two."""
    names = list(args.agents or ["heuristic", "greedy", "random"])
    if args.model and "model" not in names:
        names.insert(0, "model")
    if len(set(names)) != len(names):
        raise ValueError(f"agent names repeat: {' '.join(names)}")
    if len(names) < 2:
        raise ValueError(f"--agents: a tournament needs at least two agents, got {' '.join(names)}")
    return names


def evaluate(args: argparse.Namespace) -> int:
    """``madiao-mao evaluate``: a duplicate-deal round robin between agents, printed (``--out``: markdown
    and plots; ``--record``: the first hands as a game record)."""
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from madiao_env.records import make_record, write_record
    from madiao_mao.training.madiao.evaluation import agents_at_their_table, run_tournament, write_report

    check_output_folder(args.out, "--out")
    check_output_file(args.record, "--record")
    names = tournament_agents(args)
    table = agents_at_their_table(
        {name: (_spec(name, args.model), args.seed + i) for i, name in enumerate(names)}
    )
    recorded = []
    record_hands = 8 if args.record_hands is None else args.record_hands
    report = run_tournament(
        table.agents,
        n_deals=args.deals,
        seed=args.seed,
        on_hand=recorded.append if args.record else None,
        record_hands=record_hands,
        progress=True,
        env=table.env,
        env_kwargs=None if table.env is not None else {"obs_type": table.obs_type},
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
    # Imported here: keeps Numba and PettingZoo off this module's import path.
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


def play(args: argparse.Namespace) -> int:
    """``madiao-mao play``: the person in ``--seat``, agents in the other three seats."""
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from madiao_env.records import EventPrinter, make_record, write_record
    from madiao_mao.agents.human import HumanAgent, HumanQuit
    from madiao_mao.training.madiao.evaluation import agents_at_their_table
    from madiao_mao.training.madiao.matches import play_episode

    if args.seat > 3:
        raise ValueError(f"--seat: a seat is 0, 1, 2 or 3, got {args.seat}")
    if args.match and args.hands is not None:
        raise ValueError("--hands and --match exclude each other (a match has one hand per banker)")
    check_output_file(args.record, "--record")
    episode_kind = "match" if args.match else "hand"
    opponents = list(args.opponents or ["heuristic"])
    if args.model and args.opponents is None:
        opponents = ["model"]
    if len(opponents) not in (1, 3):
        raise ValueError(f"--opponents takes one name or three, got {len(opponents)}")
    if len(opponents) == 1:
        opponents = opponents * 3
    other_seats = [seat for seat in range(4) if seat != args.seat]
    table = agents_at_their_table(
        {
            seat: (_spec(name, args.model), None if args.seed is None else args.seed + seat)
            for seat, name in zip(other_seats, opponents, strict=True)
        },
        env_kwargs={"episode": episode_kind},
        make_env_always=True,
    )
    env = table.env
    human = HumanAgent(show_state=lambda: _table_view(env, args.seat, print))
    seat_agents = [human if seat == args.seat else table.agents[seat] for seat in range(4)]
    names = ["you"] * 4
    for seat, name in zip(other_seats, opponents, strict=True):
        names[seat] = "model" if name.startswith("model") else name
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


def match(args: argparse.Namespace) -> int:
    """``madiao-mao match``: one full match between four agents, printed and optionally recorded."""
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from madiao_env.records import EventPrinter, make_record, write_record
    from madiao_mao.training.madiao.evaluation import agents_at_their_table
    from madiao_mao.training.madiao.matches import play_episode

    if args.agents is None:
        args.agents = list(DEFAULT_MATCH_AGENTS)
    if len(args.agents) != 4:
        raise ValueError(f"--agents: a Madiao match needs 4 agents (seats 0..3), got {len(args.agents)}")
    check_output_file(args.record, "--record")
    table = agents_at_their_table(
        {seat: (_spec(name, args.model), args.seed + seat) for seat, name in enumerate(args.agents)},
        env_kwargs={"episode": "match"},
        make_env_always=True,
    )
    env = table.env
    seat_agents = list(table.agents.values())
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


def replay(args: argparse.Namespace) -> int:
    """``madiao-mao replay``: a Madiao record printed move by move."""
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from madiao_env.records import print_record, read_record

    print_record(read_record(args.record))
    return 0
