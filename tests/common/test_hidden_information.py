"""No player that may not see hidden cards decides from them (issue 33).

Two tables with the same public history (one seat, the *observer*, sees exactly the same
observation at every step of both) but the hidden cards moved among the other seats and the
stock (Madiao: face-down sloughs too; Mao: the secret rules in force as well) must get the same
decisions, and the same values where a player shows them (the search's values per candidate, a
learned policy's action probabilities), from every registered player built with the same seed.
The players come from the registry, so a new one is covered without a line here; only the ones
whose spec declares ``sees_hidden`` (the oracles) are exempt. A player that peeks (its decisions a
function of the whole state) is caught, which shows the tables do differ in what is hidden.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

pytest.importorskip("madiao_env.madiao_v0")

from madiao_mao.agents.base import Agent
from madiao_mao.agents.registry import agent_names, game_agents, make_agent
from madiao_mao.games import game_names
from madiao_mao.training.scorecard import game_module, scorecard_games

#: Decisions of the observer each history runs to.
OBSERVER_DECISIONS = 6
#: Agents' seed (the same at both tables: a seeded search samples the same deals at both).
AGENT_SEED = 33


@dataclass(frozen=True)
class Table:
    """A table to replay: the env as ``make_env`` deals it, then ``actions`` stepped."""

    make_env: Callable[[], Any]
    actions: tuple[int, ...]


@dataclass(frozen=True)
class TablePair:
    """Two tables the observer cannot tell apart, whose hidden cards differ."""

    name: str
    observer: int
    first: Table
    second: Table


def _seat(env) -> int:
    return env.possible_agents.index(env.agent_selection)


def _observed(env, observer: int) -> tuple[bytes, bytes]:
    seen = env.observe(env.possible_agents[observer])
    return np.asarray(seen["observation"]).tobytes(), np.asarray(seen["action_mask"]).tobytes()


def _state_digest(env) -> str:
    """A digest of the whole game state (what hidden cards there are, where)."""
    arrays = env.get_state()["arrays"]
    arrays = arrays.values() if isinstance(arrays, dict) else arrays
    return hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)).hexdigest()


def _record(make_env: Callable[[], Any], game: str, player: str, observer: int, seed: int) -> tuple[int, ...]:
    """The actions of a game of ``player`` in every seat, until the observer is to make its
    ``OBSERVER_DECISIONS``-th decision."""
    env = make_env()
    seats = range(len(env.possible_agents))
    players = [make_agent(player, game, seed=seed + seat, env=env) for seat in seats]
    actions: list[int] = []
    made = 0
    while env.agents:
        seat = _seat(env)
        if seat == observer:
            if made == OBSERVER_DECISIONS:
                return tuple(actions)
            made += 1
        seen = env.observe(env.agent_selection)
        actions.append(int(players[seat].act(seen["observation"], seen["action_mask"])))
        env.step(actions[-1])
    raise AssertionError("the game ended before the observer's decisions")


def _indistinguishable(first: Table, second: Table, observer: int) -> bool:
    """Whether the second table replays with the same seat to act and the same observation of
    the observer at every step, its hidden state differing from the first's at the end."""
    one, two = first.make_env(), second.make_env()
    for step in range(len(first.actions) + 1):
        if _seat(one) != _seat(two) or _observed(one, observer) != _observed(two, observer):
            return False
        if step == len(first.actions):
            break
        if not two.observe(two.agent_selection)["action_mask"][second.actions[step]]:
            return False
        one.step(first.actions[step])
        two.step(second.actions[step])
        if not two.agents:
            return False
    return _seat(one) == observer and _state_digest(one) != _state_digest(two)


# ---- Madiao: the cards of two other seats' hands, or of a hand and the stock, swapped


def _madiao_pairs() -> Iterator[TablePair]:
    from madiao_env import cards, madiao_v0

    # At the record variant, which begins with the summary: the observer's record is the same at
    # both tables too, and every player reads the variant it was trained on from it.
    for seed in (1, 2, 3):
        probe = madiao_v0.raw_env(obs_type="record")
        probe.reset(seed=seed)
        dealt = probe.table()
        observer = (dealt["banker"] + seed) % cards.N_SEATS

        def table(hands, stock, dealt=dealt, seed=seed):
            def make_env():
                env = madiao_v0.raw_env(obs_type="record")
                options = {"hands": hands, "stock": stock, "banker": dealt["banker"], "first": dealt["first"]}
                env.reset(seed=seed, options=options)
                return env

            return make_env

        actions = _record(table(dealt["hands"], dealt["stock"]), "madiao", "heuristic", observer, seed)
        first = Table(table(dealt["hands"], dealt["stock"]), actions)
        rng = np.random.default_rng(seed)
        # Hidden places: another seat's hand (by seat) or the stock under the upcard (seat 4).
        places = [(s, i) for s in range(cards.N_SEATS) if s != observer for i in range(cards.HAND_SIZE)]
        places += [(cards.N_SEATS, i) for i in range(1, cards.STOCK_SIZE)]
        for _ in range(200):
            a, b = (places[k] for k in rng.choice(len(places), 2, replace=False))
            if a[0] == b[0]:
                continue
            hands = [list(hand) for hand in dealt["hands"]] + [list(dealt["stock"])]
            x, y = hands[a[0]][a[1]], hands[b[0]][b[1]]
            hands[a[0]][a[1]], hands[b[0]][b[1]] = y, x
            # A face-down slough of a swapped card is the other card's at the second table.
            swap = {cards.ACTION_SLOUGH + cards.card_id(x): cards.ACTION_SLOUGH + cards.card_id(y)}
            swap |= {v: k for k, v in swap.items()}
            moved = tuple(swap.get(action, action) for action in actions)
            second = Table(table(hands[: cards.N_SEATS], hands[cards.N_SEATS]), moved)
            if _indistinguishable(first, second, observer):
                yield TablePair(f"madiao-{seed}-{x}-{y}", observer, first, second)
                break
        else:
            raise AssertionError(f"no indistinguishable Madiao table found for seed {seed}")


# ---- Mao: a card of another seat's hand swapped with one deep in the stack, and other secret rules


def _mao_pairs() -> Iterator[TablePair]:
    from mao_env import cards
    from mao_env.env import raw_env
    from mao_env.rules import HELD_OUT_RULES, TRAINING_RULES

    rules = [*TRAINING_RULES, *HELD_OUT_RULES]
    for seed in (1, 2):
        probe = raw_env()
        n_players, hand_size = probe.n_players, 5
        rng = np.random.default_rng(seed)
        deck = [card for card in range(cards.N_CARD_TYPES) for _ in range(2 if card == cards.JOKER else 1)]
        deck = [cards.CARD_NAMES[card] for card in rng.permutation(deck) if card != cards.JOKER]
        hands = {seat: deck[seat * hand_size : (seat + 1) * hand_size] for seat in range(n_players)}
        pile, stack = [deck[n_players * hand_size]], deck[n_players * hand_size + 1 :]
        observer = seed % n_players

        def table(hands, stack, rule, pile=pile, seed=seed):
            def make_env():
                env = raw_env()
                env.reset(seed=seed, options={"hands": hands, "pile": pile, "stack": stack, "rules": [rule]})
                return env

            return make_env

        first_rule = int(rules[seed])
        actions = _record(table(hands, stack, first_rule), "mao", "base", observer, seed)
        first = Table(table(hands, stack, first_rule), actions)
        others = [seat for seat in range(n_players) if seat != observer]
        for _ in range(200):
            seat, card = int(rng.choice(others)), int(rng.integers(hand_size))
            deep = -1 - int(rng.integers(8))  # among the last cards of the stack: not drawn yet
            swapped = {s: list(h) for s, h in hands.items()}
            new_stack = list(stack)
            swapped[seat][card], new_stack[deep] = new_stack[deep], swapped[seat][card]
            rule = int(rng.choice(rules))
            if swapped[seat][card] == hands[seat][card] or rule == first_rule:
                continue
            second = Table(table(swapped, new_stack, rule), actions)
            if _indistinguishable(first, second, observer):
                yield TablePair(f"mao-{seed}-rule{first_rule}-rule{rule}", observer, first, second)
                break
        else:
            raise AssertionError(f"no indistinguishable Mao table found for seed {seed}")


#: Each game's pairs of tables its observer cannot tell apart.
TABLE_PAIRS: dict[str, Callable[[], Iterator[TablePair]]] = {"madiao": _madiao_pairs, "mao": _mao_pairs}


def test_every_game_has_tables_to_compare() -> None:
    assert set(game_names()) <= set(TABLE_PAIRS), "add a builder of indistinguishable tables for the new game"


_PAIRS: dict[str, list[TablePair]] = {}


def pairs(game: str) -> list[TablePair]:
    if game not in _PAIRS:
        _PAIRS[game] = list(TABLE_PAIRS[game]())
    return _PAIRS[game]


# ---- the players


def honest_specs(game: str) -> list[str]:
    """Every registered player of ``game`` that may not see hidden cards, and the scorecard's
    baselines with options (the search at its protocol budget)."""
    declared = game_agents(game)
    specs = [name for name in agent_names(game) if not (name in declared and declared[name].sees_hidden)]
    if game in scorecard_games():
        specs += [b for b in game_module(game).BASELINES if ":" in b and b.split(":")[0] in specs]
    return specs


def _values(agent: Agent, observation: np.ndarray, mask: np.ndarray) -> list[float]:
    """What the player shows of its values at this decision: a search's values per candidate,
    a learned policy's action log-probabilities (empty for a player that shows none, or whose
    network reads more than the table hands it: the Mao belief policy's memory)."""
    decision = getattr(agent, "last_decision", None)
    if decision is not None:
        return [float(v) for v in decision.values]
    if hasattr(agent, "action_log_probs") and agent.obs_dim == agent.table_obs_dim:
        return np.asarray(agent.action_log_probs(observation[None], mask[None])[0]).tolist()
    return []


def decisions(spec: str | Callable[[Any], Agent], game: str, table: Table, observer: int) -> list[Any]:
    """The player's decision (and values) at every decision of the observer along the table's
    history and at its end; the table's own actions are what is played."""
    env = table.make_env()
    agent = make_agent(spec, game, seed=AGENT_SEED, env=env) if isinstance(spec, str) else spec(env)
    agent.reset()
    made: list[Any] = []
    for step in range(len(table.actions) + 1):
        if _seat(env) == observer:
            seen = env.observe(env.agent_selection)
            observation, mask = np.asarray(seen["observation"]), np.asarray(seen["action_mask"])
            made.append((int(agent.act(observation, mask)), _values(agent, observation, mask)))
        if step < len(table.actions):
            env.step(table.actions[step])
    return made


HONEST = [(game, spec) for game in game_names() for spec in honest_specs(game)]


@pytest.mark.parametrize(("game", "spec"), HONEST, ids=[f"{game}-{spec}" for game, spec in HONEST])
def test_a_player_that_may_not_see_hidden_cards_decides_the_same_at_both_tables(game, spec) -> None:
    for pair in pairs(game):
        first = decisions(spec, game, pair.first, pair.observer)
        second = decisions(spec, game, pair.second, pair.observer)
        assert len(first) == OBSERVER_DECISIONS + 1
        assert first == second, f"{spec} decides from hidden state at {pair.name}"


class PeekingAgent(Agent):
    """A cheat: its decision is a function of the whole game state, hidden cards included."""

    def __init__(self, env) -> None:
        self.env = env

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = np.flatnonzero(action_mask)
        return int(legal[int(_state_digest(self.env.unwrapped)[:12], 16) % legal.size])


@pytest.mark.parametrize("game", game_names())
def test_a_player_that_peeks_is_caught(game) -> None:
    caught = [
        pair.name
        for pair in pairs(game)
        if decisions(PeekingAgent, game, pair.first, pair.observer)
        != decisions(PeekingAgent, game, pair.second, pair.observer)
    ]
    assert caught, "the tables do not differ in anything a decision could read"


def test_only_players_declared_to_see_hidden_state_are_exempt() -> None:
    for game in game_names():
        exempt = set(agent_names(game)) - set(honest_specs(game))
        assert exempt == {name for name, spec in game_agents(game).items() if spec.sees_hidden}
    assert "oracle" not in honest_specs("mao") and "search" in honest_specs("madiao")
