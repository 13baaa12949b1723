"""The Mao side of the game commands of ``madiao-mao`` (evaluate, play, match, replay), with
Mao's own options of each (``OPTIONS``); see ``madiao_mao.training.madiao.commands`` for the
Madiao side and why there are two."""

from __future__ import annotations

import argparse
import secrets
from dataclasses import dataclass
from types import MappingProxyType

from madiao_mao.training.cli_args import check_at_least, check_output_file, load_agent

#: A Mao match's seats, repeated around the table: a rule learner against base-rules players.
DEFAULT_MAO_MATCH_AGENTS = ("bayes", "base")
DEFAULT_MAO_MATCH_ROUNDS = 3
#: The ``match --agents`` help's part for this game.
MATCH_AGENTS_HELP = (
    f"one per seat, or one for every seat (default {' '.join(DEFAULT_MAO_MATCH_AGENTS)} repeated)"
)


@dataclass
class TableOptions:
    """Mao's own options of ``play`` and ``match``: the table and how long it plays."""

    players: int | None = None
    """Players at the table (2..8, default 4)."""
    rounds: int | None = None
    """Rounds to play (default: play 1, match 3; each round's winner adds a secret rule)."""

    def check(self) -> None:
        check_at_least("--players", self.players, 1)
        check_at_least("--rounds", self.rounds, 1)


#: Mao's own options of each command, by command.
OPTIONS = MappingProxyType({"play": TableOptions, "match": TableOptions})


def prepare(args: argparse.Namespace) -> None:
    """Nothing: Mao's options need no translation before a game is played."""


def evaluate(args: argparse.Namespace) -> int:
    """``madiao-mao evaluate --game mao``: see ``madiao_mao.training.mao.evaluation.command_evaluate_mao``."""
    # Imported here: keeps Numba and Gymnasium off this module's import path.
    from madiao_mao.training.mao.evaluation import command_evaluate_mao

    return command_evaluate_mao(args)


def play(args: argparse.Namespace) -> int:
    """``play --game mao``: the person in ``--seat``, agents in the other seats."""
    # Imported here: keeps Gymnasium off this module's import path.
    from madiao_mao.agents.human import HumanQuit, MaoHumanAgent
    from madiao_mao.training.mao.play import (
        DEFAULT_MAO_OPPONENT,
        MaoGameLog,
        build_mao_seats,
        make_mao_env,
        play_mao_game,
    )
    from mao_env import rules

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
            # Imported here: keeps Numba and PettingZoo off this module's import path.
            from mao_env.records import write_record

            write_record(args.record, log.record(env, names))
            print(f"game record written to {args.record}")
    print("Game over. Rewards: " + _mao_rewards_text(env, names, returns))
    return 0


def _mao_rewards_text(env, names: list[str], returns) -> str:
    agents = env.unwrapped.possible_agents
    return "  ".join(f"{agents[s]} ({n}) {r:+g}" for s, (n, r) in enumerate(zip(names, returns, strict=True)))


def match(args: argparse.Namespace) -> int:
    """``match --game mao``: one game of ``--rounds`` rounds between agents, printed for a
    spectator (every hand at each deal, every move, call and new rule) and recorded."""
    # Imported here: keeps Gymnasium off this module's import path.
    from madiao_mao.training.mao.play import MaoGameLog, make_mao_env, play_mao_game

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
    if args.model:  # without --model, 'model' is the pretrained Mao policy shipped
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
        # Imported here: keeps Numba and PettingZoo off this module's import path.
        from mao_env.records import write_record

        write_record(args.record, log.record(env, names))
        print(f"game record written to {args.record}")
    return 0


def replay(args: argparse.Namespace) -> int:
    """``madiao-mao replay`` of a Mao record: printed move by move."""
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from madiao_mao.training.mao.play import print_mao_record
    from mao_env.records import read_record

    print_mao_record(read_record(args.record))
    return 0
