"""Mao in the terminal: a person in one seat, agents in the others (``madiao-mao play --game mao``),
a game between agents (``madiao-mao match --game mao``) and recorded games (``madiao-mao replay``).

The person sees only what their seat may know: at the start of each of their turns the env's
``seat_view`` (own hand, top card, suit to follow, direction, the others' hand sizes, the secret
rules they authored, the recent public events with the Mao Master's calls), and as the game goes
every public move of the table (plays, draws, what is said, the turn ends) and every call the Mao
Master makes (with ``calls="players"``: every call a seat makes, and the bad calls), to whom and
for how many cards. The rule another seat adds after winning a round is
secret: only the fact that a rule was added is shown; a proposal the Mao Master refuses (the rule
is already in force) is told to its proposer alone.

Without a person at the table (``viewer=None``: a match between agents, a replay) nothing is
secret: every seat's hand is listed at each deal and a new rule is shown with its text.

A :class:`MaoGameLog` collects what a game's record needs as it is played (the reset's seed and
options, every action's text, every seat's reward); ``log.record(env, seats)`` makes the record
of :mod:`mao_env.records` that ``madiao-mao replay`` and the web app replay.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from madiao_mao.agents.base import Agent
from mao_env import cards, rules
from mao_env.cards import END_TURN

#: The scripted player the other seats default to (it infers the secret rules from the calls).
DEFAULT_MAO_OPPONENT = "bayes"


def make_mao_env(n_players: int, num_rounds: int):
    """The raw Mao AEC env for terminal play, which raises on an illegal action (an agent's illegal
    move is a bug to stop at, not a game to end with a penalty as ``env()`` would). Imported here:
    the env compiles on first use.

    Its step cap is the env's default cap of a one-round episode for each round: a round between
    players who never learn the secret rules can take thousands of steps (the default ``match``,
    seed 0: its third round, under two rules the base-rules players keep breaking, took 3,500),
    while a round can also reach a table where no seat holds a card it may play and the stack is
    empty, which never ends: the cap ends that game.
    """
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from mao_env import mao_v0
    from mao_env.options import MAX_COUNT_OPTION, MaoOptions

    max_steps = min(MaoOptions.max_steps * num_rounds, MAX_COUNT_OPTION)
    return mao_v0.raw_env(n_players=n_players, num_rounds=num_rounds, max_steps=max_steps)


def cut_off_text(unwrapped, rounds_won: int) -> str:
    """What a game cut off by the env's step cap says (a truncation is never silent)."""
    return (
        f"The game was cut off at the step cap ({unwrapped.max_steps} steps) after {rounds_won} of "
        f"{unwrapped.num_rounds} round(s)."
    )


@dataclass
class MaoGameLog:
    """A Mao game as it is played, for its record: the reset, every action's text, every seat's
    total reward so far (a game left early still has a record that replays)."""

    seed: int | None
    options: dict | None = None
    actions: list[str] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)

    def add(self, env, action: int) -> None:
        """Log ``action``, just stepped in ``env`` (wrapped or raw), with the rewards it gave."""
        unwrapped = env.unwrapped
        if not self.returns:
            self.returns = [0.0] * unwrapped.n_players
        self.actions.append(unwrapped.describe_action(action))
        for seat, name in enumerate(unwrapped.possible_agents):
            self.returns[seat] += float(unwrapped.rewards.get(name, 0.0))

    def record(self, env, seats: Sequence[str]) -> dict[str, Any]:
        """The game's record (:func:`mao_env.records.make_record`)."""
        # Imported here: keeps Numba and PettingZoo off this module's import path.
        from mao_env.records import make_record

        unwrapped = env.unwrapped
        return make_record(
            unwrapped, seed=self.seed, options=self.options, seats=seats, actions=self.actions,
            returns=self.returns or [0.0] * unwrapped.n_players,
        )  # fmt: skip


def _refused(unwrapped, seat: int, action: int) -> bool:
    """Whether ``seat``'s ``action``, just stepped, was a proposal of a rule already in force
    (the mask offers no rule refused before, so the rule is among the refused ones just now)."""
    return action >= cards.CHOOSE_RULE_0 and action - cards.CHOOSE_RULE_0 in unwrapped.refused_rules(seat)


def public_move_text(env, seat: int, action: int, viewer: int | None) -> str | None:
    """What ``viewer`` sees of ``seat``'s move, just stepped (``viewer=None``: a spectator who
    sees everything, new rules included; ``None``: nothing)."""
    name = "you" if seat == viewer else env.unwrapped.possible_agents[seat]
    if action >= cards.CHOOSE_RULE_0:
        rule = action - cards.CHOOSE_RULE_0
        if _refused(env.unwrapped, seat, action):  # said to the proposer alone
            if viewer is not None and seat != viewer:
                return None
            return f'{name}: rule {rule}? Mao Master: "That rule is already in force." (propose another)'
        if viewer is None:
            return f"{name}: new secret rule {rule}: {rules.RULE_DESCRIPTIONS[rule]}"
        if seat == viewer:
            return f"{name}: new secret rule {env.unwrapped.describe_action(action)}"
        return f'{name}: "Introducing a new rule." (secret)'
    return f"{name}: {env.unwrapped.describe_action(action)}"


def _choosing_rule(unwrapped) -> bool:
    """Whether the seat to act is choosing a new rule (the next round is dealt after that)."""
    mask = unwrapped.observe(unwrapped.agent_selection)["action_mask"]
    return bool(mask[cards.CHOOSE_RULE_0 :].any())


def _write_deal(
    unwrapped, names: Sequence[str] | None, round_number: int, write: Callable[[str], None]
) -> None:
    write(f"Round {round_number}: the deal (pile top {unwrapped.top_card()}).")
    for seat, agent in enumerate(unwrapped.possible_agents):
        who = f"{agent} ({names[seat]})" if names else agent
        write(f"  {who} hand: {' '.join(unwrapped.hand(seat))}")


def write_step(
    env, seat: int, action: int, viewer: int | None, write: Callable[[str], None], *, show_own_move: bool
) -> bool:
    """Print what ``viewer`` (None: a spectator) sees of ``seat``'s ``action``, just stepped: the
    move, the Mao Master's calls and the end of a round. Returns whether the move won a round."""
    unwrapped = env.unwrapped
    move = public_move_text(env, seat, action, viewer)
    if move is not None and (show_own_move or seat != viewer or _refused(unwrapped, seat, action)):
        write("  " + move)
    me = unwrapped.possible_agents[viewer] if viewer is not None else None
    for call in unwrapped.last_calls:
        whom = "you" if call["player"] == me else call["player"]
        caller = call.get("caller")
        if caller is None:
            write(f'  Mao Master to {whom}: "{call["call"]}." ({call["cards"]} penalty card(s))')
        elif call["bad_call"]:
            who = "you" if caller == me else caller
            called = call.get("called", "?")
            write(f'  {who}: bad call ("{called}"), {call["cards"]} penalty card(s) to {who}')
        else:
            who = "you" if caller == me else caller
            write(f'  {who} to {whom}: "{call["call"]}." ({call["cards"]} penalty card(s))')
    if unwrapped.game_view.round_blocked:
        # Imported here: keeps Numba and PettingZoo off this module's import path.
        from mao_env.records import BLOCKED_ROUND_TEXT

        write(f"  {BLOCKED_ROUND_TEXT}")
        return True
    # A turn is settled at its END_TURN (the Mao Master) or when its call window closes.
    if action not in (END_TURN, cards.NO_CALL, cards.POINT_OF_ORDER) or unwrapped.round_won_by < 0:
        return False
    events = unwrapped.public_events()
    # The env adds the winner's rule itself (rule_choice "fixed"/"sampled") right after the turn.
    added = 0
    while added < len(events) and events[-1 - added]["kind"] == "new rule":
        added += 1
    seat = unwrapped.round_won_by
    winner = unwrapped.possible_agents[seat]
    write(f"  {'You win' if seat == viewer else winner + ' wins'} the round.")
    for rule, author in unwrapped.active_rules()[len(unwrapped.active_rules()) - added :]:
        if viewer is None or author == viewer:
            text = rules.RULE_DESCRIPTIONS[rule]
            write(f"  Mao Master: new secret rule {rule} for {unwrapped.possible_agents[author]}: {text}")
        else:
            write(f"  Mao Master: a new secret rule for {unwrapped.possible_agents[author]}.")
    return True


def play_mao_game(
    env,
    seat_agents: Sequence[Agent],
    human_seat: int | None,
    *,
    seed: int | None = None,
    write: Callable[[str], None] = print,
    log: MaoGameLog | None = None,
    names: Sequence[str] | None = None,
) -> np.ndarray:
    """Play one episode of ``env`` (``num_rounds`` rounds) and return every seat's total reward.

    ``seat_agents[human_seat]`` is the person (a ``MaoHumanAgent``); the loop prints the table's
    public moves and the Mao Master's calls, and the person's ``seat_view`` when their turn starts.
    ``human_seat=None`` is a game between agents printed for a spectator (every deal's hands,
    named by ``names``, and every new rule shown). ``log`` (its seed is the reset's; ``seed`` is
    ignored then) collects the game for a record as it goes, so a game left early keeps its moves.
    """
    unwrapped = env.unwrapped
    if len(seat_agents) != unwrapped.n_players:
        raise ValueError(f"need one agent per seat ({unwrapped.n_players}), got {len(seat_agents)}")
    for agent in seat_agents:
        agent.reset()
    if log is not None:
        env.reset(seed=log.seed, options=log.options)
    else:
        env.reset(seed=seed)
    returns = np.zeros(unwrapped.n_players, dtype=np.float64)
    previous_actor: int | None = None
    round_number = 1
    deal_pending = human_seat is None  # a spectator sees every hand of each deal
    cut_off = False
    for agent_name in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        seat = unwrapped.possible_agents.index(agent_name)
        returns[seat] += reward
        if terminated or truncated:
            cut_off = cut_off or truncated
            env.step(None)
            continue
        if deal_pending and not _choosing_rule(unwrapped):
            _write_deal(unwrapped, names, round_number, write)
            deal_pending = False
        if seat == human_seat and previous_actor != human_seat:
            write("")
            write(unwrapped.seat_view(human_seat))
        action = int(seat_agents[seat].act(observation["observation"], observation["action_mask"]))
        env.step(action)
        if log is not None:
            log.add(env, action)
        previous_actor = seat
        if write_step(env, seat, action, human_seat, write, show_own_move=False):
            round_number += 1
            deal_pending = human_seat is None
    if cut_off:
        write(cut_off_text(unwrapped, round_number - 1))
    return returns


def print_mao_record(record: dict[str, Any], write: Callable[[str], None] = print) -> None:
    """Print a Mao record (``mao_env.records``) move by move, all hands open: each deal, every
    action, the Mao Master's calls, the rounds' winners and the returns (the ``replay`` command).
    The whole record is replayed before anything is printed, so a record that does not replay
    prints nothing but its error."""
    # Imported here: keeps Numba and PettingZoo off this module's import path.
    from mao_env.records import replay

    lines: list[str] = []
    seats = record["seats"]
    returns = np.zeros(len(seats), dtype=np.float64)
    round_number = 1
    deal_pending = True
    actor = 0  # the seat whose action the next step applies
    for step, env in enumerate(replay(record)):
        if step == 0:
            lines.append(
                f"Mao game record: {env.n_players} players, {env.num_rounds} round(s), "
                f"seed {record['seed']}: "
                + ", ".join(f"{agent} {name}" for agent, name in zip(env.possible_agents, seats, strict=True))
            )
            for rule, author in env.active_rules():
                lines.append(
                    f"Secret rule {rule} from the start (seat {author}): {rules.RULE_DESCRIPTIONS[rule]}"
                )
        else:
            action = env.action_from_text(record["actions"][step - 1])
            returns += [env.rewards.get(name, 0.0) for name in env.possible_agents]
            if write_step(env, actor, action, None, lines.append, show_own_move=True):
                round_number += 1
                deal_pending = True
        truncated = env.truncations[env.agent_selection]
        over = env.terminations[env.agent_selection] or truncated
        if deal_pending and not over and not _choosing_rule(env):
            _write_deal(env, seats, round_number, lines.append)
            deal_pending = False
        actor = env.current_seat
    if truncated:
        lines.append(cut_off_text(env, round_number - 1))
    elif not over:
        lines.append("The record ends before the game does (the game was left).")
    lines.append(
        "final returns: "
        + "  ".join(
            f"{agent} ({name}) {value:+g}"
            for agent, name, value in zip(env.possible_agents, seats, returns, strict=True)
        )
    )
    for line in lines:
        write(line)


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
