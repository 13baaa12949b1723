"""Mao in the terminal: a person in one seat, agents in the others (``madiao-mao play --game mao``).

The person sees only what their seat may know: at the start of each of their turns the env's
``seat_view`` (own hand, top card, suit to follow, direction, the others' hand sizes, the secret
rules they authored, the recent public events with the Mao Master's calls), and as the game goes
every public move of the table (plays, draws, what is said, the turn ends) and every call the Mao
Master makes, to whom and for how many cards. The rule another seat adds after winning a round is
secret: only the fact that a rule was added is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from agents.base import Agent
from mao_env.cards import END_TURN

#: The scripted player the other seats default to (it infers the secret rules from the calls).
DEFAULT_MAO_OPPONENT = "bayes"


def make_mao_env(n_players: int, num_rounds: int):
    """The wrapped Mao AEC env for terminal play (imported here: the env compiles on first use)."""
    from mao_env import mao_v0

    return mao_v0.env(n_players=n_players, num_rounds=num_rounds)


def public_move_text(env, seat: int, action: int, viewer: int) -> str | None:
    """What the table sees of ``seat``'s move (None for a move nobody else sees in detail)."""
    from mao_env import cards

    name = "you" if seat == viewer else env.unwrapped.possible_agents[seat]
    if action >= cards.CHOOSE_RULE_0:
        if seat == viewer:
            return f"{name}: new secret rule {env.unwrapped.describe_action(action)}"
        return f'{name}: "Introducing a new rule." (secret)'
    return f"{name}: {env.unwrapped.describe_action(action)}"


def play_mao_game(
    env,
    seat_agents: Sequence[Agent],
    human_seat: int,
    *,
    seed: int | None = None,
    write: Callable[[str], None] = print,
) -> np.ndarray:
    """Play one episode of ``env`` (``num_rounds`` rounds) and return every seat's total reward.

    ``seat_agents[human_seat]`` is the person (a ``MaoHumanAgent``); the loop prints the table's
    public moves and the Mao Master's calls, and the person's ``seat_view`` when their turn starts.
    """
    unwrapped = env.unwrapped
    if len(seat_agents) != unwrapped.n_players:
        raise ValueError(f"need one agent per seat ({unwrapped.n_players}), got {len(seat_agents)}")
    for agent in seat_agents:
        agent.reset()
    env.reset(seed=seed)
    returns = np.zeros(unwrapped.n_players, dtype=np.float64)
    previous_actor: int | None = None
    for agent_name in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        seat = unwrapped.possible_agents.index(agent_name)
        returns[seat] += reward
        if terminated or truncated:
            env.step(None)
            continue
        if seat == human_seat and previous_actor != human_seat:
            write("")
            write(unwrapped.seat_view(human_seat))
        action = int(seat_agents[seat].act(observation["observation"], observation["action_mask"]))
        env.step(action)
        previous_actor = seat
        move = public_move_text(env, seat, action, human_seat)
        if move is not None and seat != human_seat:
            write("  " + move)
        for call in unwrapped.last_calls:
            whom = "you" if call["player"] == unwrapped.possible_agents[human_seat] else call["player"]
            write(f'  Mao Master to {whom}: "{call["call"]}." ({call["cards"]} penalty card(s))')
        if action == END_TURN:
            events = unwrapped.public_events()
            if events and events[-1]["won"] and events[-1]["seat"] == seat:
                write(f"  {'You win' if seat == human_seat else agent_name + ' wins'} the round.")
    return returns


def build_mao_seats(
    opponents: Sequence[str],
    human: Agent,
    human_seat: int,
    env,
    seed: int | None,
    load_agent: Callable[..., Agent],
) -> tuple[list[Agent], list[str]]:
    """The agents by seat and their names ("you" for the person): ``opponents`` is one name for
    every other seat or one per other seat, in seat order."""
    n_players = env.unwrapped.n_players
    others = n_players - 1
    if len(opponents) not in (1, others):
        raise ValueError(f"--opponents takes one name or {others} (one per other seat), got {len(opponents)}")
    names = list(opponents) * others if len(opponents) == 1 else list(opponents)
    agents: list[Agent] = []
    seat_names: list[str] = []
    other = iter(names)
    for seat in range(n_players):
        if seat == human_seat:
            agents.append(human)
            seat_names.append("you")
            continue
        spec = next(other)
        agents.append(load_agent(spec, "mao", seed=None if seed is None else seed + seat, env=env))
        seat_names.append(spec)
    return agents, seat_names
