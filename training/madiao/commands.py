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

from madiao_mao.training.cli_args import check_at_least, check_output_file, check_output_folder, load_agent

DEFAULT_MATCH_AGENTS = ("heuristic", "greedy", "heuristic", "greedy")
#: The ``match --agents`` help's part for this game.
MATCH_AGENTS_HELP = f"four (default {' '.join(DEFAULT_MATCH_AGENTS)})"


def _agent(spec: str, *, seed: int | None, env, model: str | None):
    if spec == "model" and model is not None:
        spec = f"model:{model}"  # without --model, 'model' is the pretrained policy shipped
    return load_agent(spec, "madiao", seed=seed, env=env)


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
    from madiao_mao.agents.registry import reads_env
    from madiao_mao.training.madiao.evaluation import run_tournament, table_obs_type, write_report

    check_output_folder(args.out, "--out")
    check_output_file(args.record, "--record")
    names = tournament_agents(args)
    seeds = {name: args.seed + i for i, name in enumerate(names)}
    # Agents that decide from their observation alone first: they say which observation variant
    # the table is played at (a policy may read the record), and the env of those that read it
    # (the search player) is made at that variant.
    agents = {
        name: _agent(name, seed=seeds[name], env=None, model=args.model)
        for name in names
        if not reads_env(name, "madiao")
    }
    obs_type = table_obs_type(agents.values())
    env_for_search = None
    if len(agents) < len(names):
        # Imported here: keeps Numba and PettingZoo off this module's import path.
        from madiao_mao.training.madiao.matches import make_env

        env_for_search = make_env(obs_type=obs_type)
        for name in names:
            if name not in agents:
                agents[name] = _agent(name, seed=seeds[name], env=env_for_search, model=args.model)
    agents = {name: agents[name] for name in names}
    recorded = []
    record_hands = 8 if args.record_hands is None else args.record_hands
    report = run_tournament(
        agents,
        n_deals=args.deals,
        seed=args.seed,
        on_hand=recorded.append if args.record else None,
        record_hands=record_hands,
        progress=True,
        env=env_for_search,
        env_kwargs=None if env_for_search is not None else {"obs_type": obs_type},
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
    from madiao_mao.training.madiao.matches import make_env, play_episode

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


def match(args: argparse.Namespace) -> int:
    """``madiao-mao match``: one full match between four agents, printed and optionally recorded."""
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from madiao_env.records import EventPrinter, make_record, write_record
    from madiao_mao.training.madiao.matches import make_env, play_episode

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


def replay(args: argparse.Namespace) -> int:
    """``madiao-mao replay``: a Madiao record printed move by move."""
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from madiao_env.records import print_record, read_record

    print_record(read_record(args.record))
    return 0
