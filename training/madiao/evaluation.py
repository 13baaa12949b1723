"""Duplicate-deal tournaments for Madiao: mean stakes per hand with block CIs, ratings, report.

Duplicate deals cut the luck of the cards: every deal (a deck order and a banker) is replayed four
times, with the agent under test in each seat in turn and the opponent in the other three. The
four hands of a deal form one *block*; confidence intervals are computed over block means, so the
strong correlation inside a block is handled (see ``madiao_mao.training.stats``). The agent's score in a
hand is its own seat's payoff in whole stakes (the hands are played with ``stake`` 1: that option
only scales rewards); ``as banker`` uses the rotation in which it held the bank and ``as player``
the three others.

"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from madiao_env import cards
from madiao_env.layout import OBS_SIZES
from madiao_env.options import MadiaoOptions
from madiao_env.vector import MadiaoVectorEnv
from madiao_mao.agents.base import Agent
from madiao_mao.agents.registry import reads_env
from madiao_mao.training.cli_args import load_agent
from madiao_mao.training.madiao.matches import EpisodeResult, make_env, play_episode
from madiao_mao.training.stats import (
    MeanCI,
    markdown_table,
    mean_ci,
    openskill_ratings,
    plot_ratings,
)


@dataclass(frozen=True)
class Deal:
    """One duplicate deal: a deck order (top to bottom), the banker, and the env's reset seed
    (the same seed makes redeals and four-lowest re-deals identical across the rotations)."""

    deck: tuple[str, ...]
    banker: int
    env_seed: int

    def options(self) -> dict:
        return {"deck": list(self.deck), "banker": self.banker}


def table_obs_type(agents: Iterable[Agent]) -> str:
    """The observation variant a table of ``agents`` plays at: "record" when a policy among them
    reads it (the scripted players and the summary policies read its leading entries, the
    summary), else "summary"."""
    reads = {getattr(agent, "table_obs_dim", None) for agent in agents}
    return "record" if OBS_SIZES["record"] in reads else "summary"


@dataclass
class Table:
    """Agents and the table they play at (``agents_at_their_table``)."""

    agents: dict[Any, Agent]
    """The agents, in the order of their specs."""
    obs_type: str
    """The observation variant every seat is handed (``table_obs_type``)."""
    env: Any | None
    """The raw AEC env at that variant, or None where no agent reads the env and none was asked for."""


def agents_at_their_table(
    specs: Mapping[Any, tuple[str, int | None]],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    make_env_always: bool = False,
) -> Table:
    """The agents of ``specs`` (any key -> (``madiao_mao.agents.registry`` spec, seed)) and the
    table they play at, so that a policy that reads the record sits at a record table wherever it
    plays (evaluate, play, match, the Ray tournament).

    The agents that decide from their observation alone are made first: they say which observation
    variant the table is (``table_obs_type``). The env is then made at that variant with
    ``env_kwargs`` when ``make_env_always`` or an agent reads the env it plays in (the search
    player), and those agents are made on it."""
    agents = {
        key: load_agent(spec, "madiao", seed=seed)
        for key, (spec, seed) in specs.items()
        if not reads_env(spec, "madiao")
    }
    obs_type = table_obs_type(agents.values())
    env = None
    if make_env_always or len(agents) < len(specs):
        env = make_env(**{**(env_kwargs or {}), "obs_type": obs_type})
        for key, (spec, seed) in specs.items():
            if key not in agents:
                agents[key] = load_agent(spec, "madiao", seed=seed, env=env)
    return Table({key: agents[key] for key in specs}, obs_type, env)


def make_deals(n_deals: int, seed: int) -> list[Deal]:
    """``n_deals`` seeded uniform deals (the same seed gives the same deals for every pairing)."""
    if n_deals < 1:
        raise ValueError(f"n_deals must be at least 1, got {n_deals}")
    rng = np.random.default_rng(seed)
    deals = []
    for _ in range(n_deals):
        deck = tuple(cards.CARD_NAMES[i] for i in rng.permutation(cards.N_CARDS))
        deals.append(Deal(deck, int(rng.integers(cards.N_SEATS)), int(rng.integers(2**31 - 1))))
    return deals


@dataclass
class PairResult:
    """An agent's duplicate results against one opponent (the opponent fills the other seats)."""

    agent: str
    opponent: str
    deal_index: list[int] = field(default_factory=list)
    score: list[float] = field(default_factory=list)
    """The agent's payoff in stakes, one entry per hand."""
    banker: list[bool] = field(default_factory=list)
    """Whether the agent was the banker of that hand."""

    @property
    def n_hands(self) -> int:
        return len(self.score)

    def _ci(self, select: np.ndarray) -> MeanCI:
        deals = np.asarray(self.deal_index)[select]
        scores = np.asarray(self.score, dtype=np.float64)[select]
        if scores.size == 0:
            return mean_ci([])
        order = np.unique(deals)
        sums = np.bincount(np.searchsorted(order, deals), weights=scores)
        counts = np.bincount(np.searchsorted(order, deals))
        return mean_ci(sums / counts)

    def overall(self) -> MeanCI:
        return self._ci(np.ones(self.n_hands, dtype=bool))

    def as_banker(self) -> MeanCI:
        return self._ci(np.asarray(self.banker, dtype=bool))

    def as_player(self) -> MeanCI:
        return self._ci(~np.asarray(self.banker, dtype=bool))

    def figures(self) -> dict[str, Any]:
        """The hands played and the mean with its 95% interval overall ("all"), as banker and as
        player, as JSON-ready numbers (a point of the trainer's learning curve)."""
        intervals = (("all", self.overall()), ("banker", self.as_banker()), ("player", self.as_player()))
        return {
            "hands": self.n_hands,
            **{key: {"mean": ci.mean, "low": ci.low, "high": ci.high} for key, ci in intervals},
        }

    def block_scores(self) -> np.ndarray:
        """Mean score of each deal block (the unit the ratings are updated with)."""
        deals = np.asarray(self.deal_index)
        order = np.unique(deals)
        index = np.searchsorted(order, deals)
        return np.bincount(index, weights=np.asarray(self.score)) / np.bincount(index)


def paired_by_deal(ours: PairResult, reference: PairResult, role: str | None = None) -> MeanCI:
    """Mean over deals of (ours - reference), each side's mean score in the deal's hands in
    ``role`` ("banker", "player" or None for all), with a 95% interval; deals where either side
    never held the role are left out. Each side's own role counts: the players' decisions
    (declaring a redeal) can change who holds the bank, so the two sides' roles in the same
    rotation of a deal may differ."""

    def per_deal(pair: PairResult) -> dict[int, float]:
        banker = np.asarray(pair.banker, dtype=bool)
        keep = np.ones_like(banker) if role is None else (banker if role == "banker" else ~banker)
        deals = np.asarray(pair.deal_index)[keep]
        scores = np.asarray(pair.score, dtype=np.float64)[keep]
        return {int(d): float(scores[deals == d].mean()) for d in np.unique(deals)}

    mine, theirs = per_deal(ours), per_deal(reference)
    return mean_ci([mine[d] - theirs[d] for d in sorted(mine.keys() & theirs.keys())])


def duplicate_match(
    agent: Agent,
    opponent: Agent,
    deals: Sequence[Deal],
    *,
    env_kwargs: Mapping | None = None,
    agent_name: str | None = None,
    opponent_name: str | None = None,
    on_hand: Callable[[EpisodeResult], None] | None = None,
    record_hands: int | None = None,
    env=None,
) -> PairResult:
    """Play every deal four times, ``agent`` in seat 0..3 in turn and ``opponent`` elsewhere.

    ``env``: the env to play in (built from ``env_kwargs`` when None, at the record variant when
    either player reads it; its ``stake`` must be 1, as scores are whole stakes). Give it when an
    agent reads the env it plays in, as the search player does; it is then left open.
    ``on_hand`` receives each hand played (``record_hands``: only the first that many), its
    ``seats`` naming the agent in each seat of that rotation.

    When both players decide from their observation alone (``plays_in_batches``), the hands not
    recorded are played in batches on the vector env under the same options (an env given is then
    not played in): the same games for players that do not sample."""
    env_kwargs = dict(env_kwargs or {})
    if env is not None and env_kwargs:
        raise ValueError("give either env or env_kwargs, not both")
    episode = env.unwrapped.episode if env is not None else env_kwargs.get("episode", "hand")
    if episode != "hand":
        raise ValueError("duplicate tournaments play single hands: env option episode must be 'hand'")
    if env is not None and env.unwrapped.stake != 1.0:
        raise ValueError(
            "duplicate tournaments score hands in whole stakes: give an env with stake 1 "
            f"(the option only scales rewards), got stake {env.unwrapped.stake!r}"
        )
    own_env = env is None
    result = PairResult(agent_name or agent.name, opponent_name or opponent.name)
    if own_env:
        # Scores are whole stakes, so the hands are played unscaled: the stake option only
        # multiplies rewards (the game is the same), and is checked here like any other option.
        MadiaoOptions(stake=env_kwargs.get("stake", 1.0))
        env_kwargs = {**env_kwargs, "stake": 1.0}
        if table_obs_type([agent, opponent]) == "record":
            # A record policy sits at a record table, whatever variant the caller's options name
            # (a summary run's evaluation against a record opponent); the others read its lead.
            env_kwargs["obs_type"] = "record"
    else:
        env_kwargs = env.unwrapped.options.as_kwargs()
    _check_record_hands(record_hands)
    to_record = 0 if on_hand is None else len(deals) * cards.N_SEATS
    if record_hands is not None:
        to_record = min(to_record, record_hands)
    # The deals holding a recorded hand are played one hand at a time (a record needs the AEC
    # env's events); the rest in batches when both players allow it.
    batched = plays_in_batches(agent) and plays_in_batches(opponent)
    one_at_a_time = -(-to_record // cards.N_SEATS) if batched else len(deals)
    if one_at_a_time and own_env:
        env = make_env(**env_kwargs)
    for deal_number, deal in enumerate(deals[:one_at_a_time]):
        for agent_seat in range(cards.N_SEATS):
            lineup = [agent if seat == agent_seat else opponent for seat in range(cards.N_SEATS)]
            record = deal_number * cards.N_SEATS + agent_seat < to_record
            episode = play_episode(env, lineup, seed=deal.env_seed, options=deal.options(), record=record)
            result.deal_index.append(deal_number)
            result.score.append(float(episode.returns[agent_seat]))
            result.banker.append(episode.banker == agent_seat)
            if record:
                episode.seats = [
                    result.agent if seat == agent_seat else result.opponent for seat in range(cards.N_SEATS)
                ]
                on_hand(episode)
    if one_at_a_time and own_env:
        env.close()
    if one_at_a_time < len(deals):
        _play_in_batches(agent, opponent, deals[one_at_a_time:], env_kwargs, result, first_deal=one_at_a_time)
    return result


def _check_record_hands(record_hands: int | None) -> None:
    whole = isinstance(record_hands, (int, np.integer)) and not isinstance(record_hands, bool)
    if record_hands is not None and not (whole and record_hands >= 0):
        raise ValueError(f"record_hands must be a non-negative integer, got {record_hands!r}")


def plays_in_batches(agent: Any) -> bool:
    """Whether ``agent`` may play a tournament's hands in batches: it declares that it decides
    from the observation alone (``Agent.decides_from_observation``); anything else, duck-typed
    players included, plays one hand at a time."""
    return bool(getattr(agent, "decides_from_observation", False))


#: Hands a batched duplicate match plays at once (one vector env of this many games).
HANDS_PER_BATCH = 2048


def _play_in_batches(
    agent: Agent,
    opponent: Agent,
    deals: Sequence[Deal],
    env_kwargs: Mapping,
    result: PairResult,
    first_deal: int = 0,
) -> None:
    """``duplicate_match`` for agents that decide from the observation alone: every hand of every
    rotation is a game of one vector env, stepped together, each agent called once per step for
    all the games where it is to act. The deals are the AEC env's (``reset_deals``), so agents that
    do not sample play exactly the hands the one-at-a-time loop plays. ``deals`` are the match's
    deals from number ``first_deal`` on."""

    decks = np.array([[cards.card_id(name) for name in deal.deck] for deal in deals], dtype=np.int8)
    bankers = np.array([deal.banker for deal in deals], dtype=np.int64)
    seeds = np.array([deal.env_seed for deal in deals], dtype=np.int64)
    n_hands = len(deals) * cards.N_SEATS
    # Hand h is deal h // 4 with the agent in seat h % 4: the order of the one-at-a-time loop.
    for start in range(0, n_hands, HANDS_PER_BATCH):
        hands = np.arange(start, min(start + HANDS_PER_BATCH, n_hands))
        deal_of, agent_seat = hands // cards.N_SEATS, hands % cards.N_SEATS
        venv = MadiaoVectorEnv(hands.size, copy=False, **env_kwargs)
        step = venv.reset_deals(decks[deal_of], bankers[deal_of], seeds[deal_of])
        live = np.ones(hands.size, dtype=bool)
        scores = np.zeros(hands.size, dtype=np.float64)
        final_banker = np.zeros(hands.size, dtype=np.int64)
        actions = np.empty(hands.size, dtype=np.int64)
        while live.any():
            actions[:] = -1
            agents_turn = step.to_act == agent_seat
            for player, rows in ((agent, live & agents_turn), (opponent, live & ~agents_turn)):
                if rows.any():
                    actions[rows] = player.act_batch(step.observation[rows], step.action_mask[rows])
            final_banker[live] = venv.banker()[live]  # the game's banker before it is reset
            step = venv.step(actions)
            ended = live & (step.terminated | step.truncated)
            scores[ended] = step.final_payoffs[ended, agent_seat[ended]]
            live &= ~ended
        venv.close()
        result.deal_index.extend((first_deal + deal_of).tolist())
        result.score.extend(scores.tolist())
        result.banker.extend((final_banker == agent_seat).tolist())


@dataclass
class TournamentReport:
    """All pairings of a tournament, openskill ratings and the markdown report."""

    pairs: list[PairResult]
    ratings: dict[str, tuple[float, float, float]]
    n_deals: int

    def markdown(self) -> str:
        rows = []
        for pair in self.pairs:
            rows.append(
                [
                    pair.agent,
                    pair.opponent,
                    pair.n_hands,
                    str(pair.overall()),
                    str(pair.as_banker()),
                    str(pair.as_player()),
                ]
            )
        table = markdown_table(
            [
                "agent (1 seat)",
                "opponent (3 seats)",
                "hands",
                "stakes/hand [95% CI]",
                "as banker",
                "as player",
            ],
            rows,
        )
        rating_rows = [
            [name, f"{mu:.2f}", f"{sigma:.2f}", f"{ordinal:.2f}"]
            for name, (mu, sigma, ordinal) in sorted(self.ratings.items(), key=lambda kv: -kv[1][2])
        ]
        ratings = markdown_table(["agent", "mu", "sigma", "ordinal (mu-3σ)"], rating_rows)
        return (
            f"## Madiao duplicate tournament ({self.n_deals} deals x 4 seat rotations per pairing)\n\n"
            "Stakes per hand of the agent in one seat against the opponent in the other three; "
            "95% t intervals over deal blocks.\n\n"
            f"{table}\n\n### Ratings (openskill Plackett-Luce, one match per deal block)\n\n{ratings}\n"
        )


def run_tournament(
    agents: Mapping[str, Agent],
    *,
    n_deals: int,
    seed: int = 0,
    env_kwargs: Mapping | None = None,
    pairings: Sequence[tuple[str, str]] | None = None,
    on_hand: Callable[[EpisodeResult], None] | None = None,
    record_hands: int | None = None,
    progress: bool = False,
    env=None,
) -> TournamentReport:
    """Every ordered pairing (or the given ones) on the same duplicate deals, then ratings.
    ``env``: one env for every hand of an agent that reads it, like the search player (pairings
    of two agents that decide from their observation alone are played in batches under its
    options: ``duplicate_match``). ``on_hand`` receives the hands played, pairing by pairing
    (``record_hands``: the first that many of the tournament; the others are not recorded)."""
    if len(agents) < 2:
        raise ValueError("a tournament needs at least two agents")
    _check_record_hands(record_hands)
    names = list(agents)
    if pairings is None:
        pairings = list(itertools.permutations(names, 2))
    for first, second in pairings:
        for name in (first, second):
            if name not in agents:
                raise ValueError(f"pairing names unknown agent {name!r}; agents: {', '.join(names)}")
    deals = make_deals(n_deals, seed)
    pairs = []
    iterator = pairings
    if progress:
        # Imported here: keeps tqdm off this module's import path.
        from tqdm import tqdm

        iterator = tqdm(pairings, desc="pairings", unit="pair")
    remaining = record_hands  # hands still to record (None: all)
    for first, second in iterator:
        recording = on_hand is not None and remaining != 0
        pairs.append(
            duplicate_match(
                agents[first],
                agents[second],
                deals,
                env_kwargs=env_kwargs,
                agent_name=first,
                opponent_name=second,
                on_hand=on_hand if recording else None,
                record_hands=remaining,
                env=env,
            )
        )
        if recording and remaining is not None:  # a pairing records every hand it may, in order
            remaining = max(remaining - len(deals) * cards.N_SEATS, 0)
    matches = [(pair.agent, pair.opponent, float(score)) for pair in pairs for score in pair.block_scores()]
    ratings = openskill_ratings(matches, names)
    return TournamentReport(pairs, ratings, n_deals)


def write_report(report: TournamentReport, folder: Path, stem: str = "evaluation") -> list[Path]:
    """The markdown report and a ratings PNG in ``folder``; returns the written paths."""
    folder.mkdir(parents=True, exist_ok=True)
    markdown_path = folder / f"{stem}.md"
    markdown_path.write_text(report.markdown())
    return [markdown_path, plot_ratings(report.ratings, folder / f"{stem}_ratings.png")]
