"""A Madiao search player: determinized Monte Carlo (PIMC) over the cards it cannot see.

At each decision the player samples complete deals consistent with everything its seat has seen
(its own cards and face-down sloughs, every card played face up and by whom, the upcard, how many
cards each other seat sloughed face down and still holds), replays the hand's public moves on a
private copy of the game, tries each candidate move and plays the hand out, and picks the move
with the best mean payoff for its seat over the samples.

Only public information and the seat's own cards are read from the live env (``table()`` is the
full truth, so the face-down cards of other seats are masked out before sampling). A sampled
deal that would have ended the hand before play (a meld or the four lowest in a hidden hand)
contradicts what happened and is rejected.

The budget (``SearchBudget``, written ``search:samples=32,sloughs=3,policy=PATH`` as an agent
spec, or ``--search-budget`` on the command line) is a count, so a seeded search is reproducible:
``samples`` deals per decision, every candidate (each face-up play, at most ``sloughs``
face-down sloughs) played out once in each. All ``samples x candidates`` play-outs of a decision
run together in one batched env (``madiao_env.vector``), every seat played by the play-out
``policy``: the role-aware heuristic (default), uniform random moves (the Numba rollout kernel of
``madiao_env.rollout``), or a learned MaskablePPO policy, which then evaluates one batch per move
of all the play-outs at once. Decisions per second and strength per budget: docs/results.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cardgame_core.aec import IllegalActionError
from madiao_env import cards
from madiao_mao.agents.base import Agent, legal_actions
from madiao_mao.agents.madiao.heuristic import PlayBook, RoleAwareHeuristicAgent
from madiao_mao.agents.madiao.obs_layout import view_from_observation


@dataclass(frozen=True)
class PublicHand:
    """What one seat knows of the hand in progress (the input of the sampler)."""

    seat: int
    banker: int
    first: int
    upcard: str
    own_initial_hand: tuple[str, ...]
    moves: tuple[tuple[int, str | None, bool], ...]
    """(seat, card name or None when another seat sloughed face down, face up) in play order."""


def public_hand(table: dict, seat: int) -> PublicHand:
    """The seat's knowledge from the env's full table: other seats' face-down cards are hidden.

    ``table["history"]`` lists every card of the current deal in play order, current trick included.
    """
    moves = []
    played_by_me = []
    for move_seat, name, face_up, _trick in table["history"]:
        if move_seat == seat:
            played_by_me.append(name)
        moves.append((int(move_seat), name if (face_up or move_seat == seat) else None, bool(face_up)))
    own_initial = tuple(table["hands"][seat]) + tuple(played_by_me)
    return PublicHand(
        seat=seat,
        banker=int(table["banker"]),
        first=int(table["first"]),
        upcard=table["stock"][0],
        own_initial_hand=own_initial,
        moves=tuple(moves),
    )


def sample_deal(knowledge: PublicHand, rng: np.random.Generator) -> tuple[list[list[str]], list[str], dict]:
    """One deal consistent with ``knowledge``: initial hands by seat, the stock (upcard first), and
    for each other seat the order in which its sampled face-down cards were sloughed."""
    known = set(knowledge.own_initial_hand) | {knowledge.upcard}
    face_up_by_seat: dict[int, list[str]] = {s: [] for s in range(cards.N_SEATS)}
    hidden_count = {s: 0 for s in range(cards.N_SEATS)}
    for seat, name, face_up in knowledge.moves:
        if seat == knowledge.seat:
            continue
        if face_up:
            face_up_by_seat[seat].append(name)
            known.add(name)
        else:
            hidden_count[seat] += 1
    unknown = [name for name in cards.CARD_NAMES if name not in known]
    rng.shuffle(unknown)
    hands: list[list[str]] = [[] for _ in range(cards.N_SEATS)]
    sloughs: dict[int, list[str]] = {}
    position = 0
    for seat in range(cards.N_SEATS):
        if seat == knowledge.seat:
            hands[seat] = list(knowledge.own_initial_hand)
            continue
        need = cards.HAND_SIZE - len(face_up_by_seat[seat])
        drawn = unknown[position : position + need]
        position += need
        hands[seat] = face_up_by_seat[seat] + drawn
        sloughs[seat] = drawn[: hidden_count[seat]]
    stock = [knowledge.upcard, *unknown[position:]]
    if len(stock) != cards.STOCK_SIZE:
        raise ValueError(f"inconsistent public information: the stock would have {len(stock)} cards")
    return hands, stock, sloughs


#: Determinizations per decision when no budget is given (measured: docs/results.md, search budgets).
DEFAULT_SAMPLES = 16
#: Slough candidates searched (the least useful cards) besides every face-up play.
DEFAULT_SLOUGHS = 3
SEARCH_OPTIONS = ("samples", "sloughs", "policy")


@dataclass(frozen=True)
class SearchBudget:
    """What one search decision may spend: ``samples`` determinizations, each candidate move played
    out once in each (so ``samples x candidates`` play-outs), and how the play-outs are played.

    The budget is a count, not a time, so that a search is reproducible from its seed whatever the
    machine's load; the decisions per second each budget runs at are measured in docs/results.md.
    """

    samples: int = DEFAULT_SAMPLES
    """Deals sampled per decision (consistent with what the seat has seen)."""
    sloughs: int = DEFAULT_SLOUGHS
    """At most this many face-down sloughs are searched (the heuristic's least useful cards)."""
    policy: str = "heuristic"
    """Who plays every seat in the play-outs: "heuristic" (the role-aware scripted player),
    "random" (uniform legal moves, in the Numba rollout kernel), "model" (the shipped policy) or
    the path of a saved MaskablePPO model."""

    def __post_init__(self) -> None:
        for name in ("samples", "sloughs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"search option {name} must be a positive integer, got {value!r}")
        if not isinstance(self.policy, str) or not self.policy:
            raise ValueError(f"search option policy must be a name or a model path, got {self.policy!r}")

    def label(self) -> str:
        """The options as written in an agent spec (``samples=8,sloughs=3,policy=heuristic``)."""
        return f"samples={self.samples},sloughs={self.sloughs},policy={self.policy}"


def parse_search_options(text: str) -> SearchBudget:
    """A budget from ``key=value`` pairs separated by commas (``samples=32,policy=PATH``); an
    empty text is the default budget. A bad pair is a ValueError naming it."""
    values: dict[str, object] = {}
    for pair in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = pair.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise ValueError(
                f"search option {pair!r} must be written key=value ({', '.join(SEARCH_OPTIONS)})"
            )
        if key not in SEARCH_OPTIONS:
            raise ValueError(f"unknown search option {key!r}; options are {', '.join(SEARCH_OPTIONS)}")
        if key in values:
            raise ValueError(f"search option {key!r} is given twice")
        if key in ("samples", "sloughs"):
            try:
                values[key] = int(value)
            except ValueError:
                raise ValueError(f"search option {key} must be a positive integer, got {value!r}") from None
        else:
            values[key] = value
    return SearchBudget(**values)


def _playout_policy(policy: str) -> Agent | None:
    """The agent of a play-out policy name or model path (None: uniform random, in Numba)."""
    if policy == "random":
        return None
    if policy == "heuristic":
        return RoleAwareHeuristicAgent()
    from madiao_mao.agents.learned import LearnedPolicyAgent, pretrained_agent

    if policy == "model":
        return pretrained_agent("madiao")
    from pathlib import Path

    if not Path(policy).is_file():
        raise FileNotFoundError(f"search option policy: no saved model at {policy}")
    return LearnedPolicyAgent(policy, name="playout")


class _PlayoutTable:
    """The batched env of one decision's play-outs: a game per (sample, candidate), all stepped
    together, so that a learned play-out policy evaluates one batch per move."""

    def __init__(self, n_games: int, env_kwargs: dict) -> None:
        from madiao_env.vector import MadiaoVectorEnv

        self.env = MadiaoVectorEnv(n_games, seed=0, copy=False, **env_kwargs)
        self.env.reset()

    def load(self, snapshots: list[dict], copies: int) -> None:
        """Game ``k * copies + c`` set to snapshot ``k``, the seat to act observed."""
        for index, snapshot in enumerate(snapshots):
            for game in range(index * copies, (index + 1) * copies):
                self.env.set_game_state(game, snapshot)


class MadiaoSearchAgent(Agent):
    """Determinized Monte Carlo (PIMC) player (see module doc); ``env`` is the env it sits in.

    ``budget`` (a ``SearchBudget``; default ``SearchBudget()``) sets the samples per decision, the
    slough candidates and the play-out policy. ``n_samples``/``max_sloughs`` are the older names of
    ``budget.samples``/``budget.sloughs``.
    """

    def __init__(
        self,
        env,
        *,
        budget: SearchBudget | None = None,
        n_samples: int | None = None,
        max_sloughs: int | None = None,
        seed: int | None = None,
        name: str = "search",
    ) -> None:
        budget = budget or SearchBudget()
        overrides = {
            key: value
            for key, value in (("samples", n_samples), ("sloughs", max_sloughs))
            if value is not None
        }
        if overrides:
            budget = SearchBudget(**{**budget.__dict__, **overrides})
        self.env = env
        self.budget = budget
        self.n_samples = budget.samples
        self.max_sloughs = budget.sloughs
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.heuristic = RoleAwareHeuristicAgent()
        self.playout_policy = _playout_policy(budget.policy)
        self._sim = None
        self._tables: dict[int, _PlayoutTable] = {}

    def seed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def _sim_options(self) -> dict:
        return {
            k: v
            for k, v in getattr(self.env.unwrapped, "env_kwargs", {}).items()
            if k not in ("episode", "render_mode")
        }

    def _simulator(self):
        if self._sim is None:
            from madiao_env import madiao_v0

            # The play-out table loads the simulator's snapshots: the same options, observation
            # variant included.
            options = {**self._sim_options(), "obs_type": self._playout_obs_type()}
            self._sim = madiao_v0.raw_env(episode="hand", **options)
        return self._sim

    def _playout_obs_type(self) -> str:
        """The observation variant the play-out policy reads, whatever the live env's is: the
        heuristic decodes the summary; a model reads the variant it was trained on."""
        from madiao_env.options import MadiaoOptions

        obs_dim = getattr(self.playout_policy, "obs_dim", None)
        for obs_type in ("summary", "history"):
            if obs_dim is None or MadiaoOptions(obs_type=obs_type).obs_size == obs_dim:
                return obs_type
        raise ValueError(
            f"search option policy: the model reads observations of length {obs_dim}, which no "
            "Madiao observation variant has"
        )

    def _table(self, n_games: int) -> _PlayoutTable:
        if n_games not in self._tables:
            options = {**self._sim_options(), "episode": "hand", "obs_type": self._playout_obs_type()}
            self._tables[n_games] = _PlayoutTable(n_games, options)
        return self._tables[n_games]

    def candidates(self, observation: np.ndarray, action_mask: np.ndarray) -> list[int]:
        legal = [int(a) for a in legal_actions(action_mask)]
        if len(legal) == 1:
            return legal
        plays = [a for a in legal if a < cards.ACTION_SLOUGH or a >= cards.ACTION_REDEAL]
        sloughs = [a for a in legal if cards.ACTION_SLOUGH <= a < cards.ACTION_REDEAL]
        if len(sloughs) > self.max_sloughs:
            book = PlayBook(view_from_observation(observation), action_mask)
            sloughs.sort(key=lambda a: book.usefulness(a - cards.ACTION_SLOUGH))
            sloughs = sloughs[: self.max_sloughs]
        return plays + sloughs

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        candidates = self.candidates(observation, action_mask)
        if len(candidates) == 1:
            return candidates[0]
        table = self.env.unwrapped.table()
        seat = table["to_act"]
        if table["phase"] != "play":
            # Redeal decisions come before any card is seen: the heuristic's judgement is used.
            return self.heuristic.act(observation, action_mask)
        knowledge = public_hand(table, seat)
        sim = self._simulator()
        snapshots = []
        attempts = 0
        while len(snapshots) < self.n_samples and attempts < 20 * self.n_samples:
            attempts += 1
            snapshot = self._determinize(sim, knowledge)
            if snapshot is not None:
                snapshots.append(snapshot)
        if not snapshots:
            return self.heuristic.act(observation, action_mask)
        payoffs = self._play_outs(snapshots, candidates, seat)
        return candidates[int(np.argmax(payoffs.mean(axis=0)))]

    def _play_outs(self, snapshots: list[dict], candidates: list[int], seat: int) -> np.ndarray:
        """The seat's payoff ``[samples, candidates]`` of every candidate played out in every sample."""
        from madiao_env.rollout import random_playouts

        n_candidates = len(candidates)
        table = self._table(len(snapshots) * n_candidates)
        table.load(snapshots, n_candidates)
        env = table.env
        step = env.step(np.tile(np.asarray(candidates, dtype=np.int64), len(snapshots)))
        totals = np.zeros(env.n_envs)
        done = np.zeros(env.n_envs, dtype=bool)
        while True:
            totals += np.where(done, 0.0, step.rewards[:, seat])
            done |= step.terminated | step.truncated
            if done.all():
                break
            playing = np.flatnonzero(~done)
            if self.playout_policy is None:
                for game in playing.tolist():
                    seed = int(self.rng.integers(2**62))
                    totals[game] += random_playouts(env.get_game_state(game), 1, seed)[0, seat]
                break
            actions = np.full(env.n_envs, -1, dtype=np.int64)
            actions[playing] = self.playout_policy.act_batch(
                step.observation[playing], step.action_mask[playing]
            )
            step = env.step(actions)
        return totals.reshape(len(snapshots), n_candidates)

    def _determinize(self, sim, knowledge: PublicHand):
        """Set ``sim`` to a sampled deal replayed up to now; its snapshot, or None if rejected."""
        hands, stock, sloughs = sample_deal(knowledge, self.rng)
        options = {"hands": hands, "stock": stock, "banker": knowledge.banker, "first": knowledge.first}
        sim.reset(seed=int(self.rng.integers(2**31 - 1)), options=options)
        table = sim.table()
        # A meld or the four lowest in a sampled hand ends the deal before play (and deals anew):
        # not what happened, so the sample is rejected.
        if table["phase"] == "over" or any(
            sorted(table["hands"][seat]) != sorted(hands[seat]) for seat in range(cards.N_SEATS)
        ):
            return None
        # Every redeal offer was passed (the hand was played): redeals come before any card.
        while sim.table()["phase"] == "redeal":
            sim.step(cards.ACTION_PASS)
        pending = {seat: list(cards_) for seat, cards_ in sloughs.items()}
        for seat, name, face_up in knowledge.moves:
            # The seat to act is read from agent_selection: table() builds the whole table in
            # Python, which made it the largest cost of a decision.
            if sim.agent_selection != sim.possible_agents[seat]:
                return None
            if name is None:
                name = pending[seat].pop(0)
            action = cards.card_id(name) + (cards.ACTION_PLAY if face_up else cards.ACTION_SLOUGH)
            try:
                sim.step(action)
            except IllegalActionError:
                return None  # the sampled cards cannot explain a move that was made
        if not sim.agents or sim.agent_selection != sim.possible_agents[knowledge.seat]:
            return None
        return sim.get_state()
