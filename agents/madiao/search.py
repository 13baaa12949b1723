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

Inference over the hidden cards. The other seats' moves say something about their hands, which
the uniform sampler ignores; three options use them (all default off):

- ``inference=heuristic|model|PATH``: the player draws ``pool`` times as many consistent deals,
  replays each and scores how likely the other seats' face-up plays and sloughs (the sampled card
  of each face-down slough) are under a model of their play, and resamples ``samples`` deals in
  proportion to that likelihood raised to ``temper`` (sequential importance resampling with the
  move model as likelihood, policy-based inference as in Rebstock et al. 2019). The move model is
  a learned policy's action probabilities, or the heuristic's move with probability
  ``1 - HEURISTIC_NOISE`` (uniform over the legal moves otherwise).
- ``sweeps=K`` (with inference): the resampled population then takes ``K`` Metropolis steps, each
  swapping two unseen cards of every deal and keeping the swap by the tempered likelihood ratio.
- ``sampler=learned|PATH``: deals are drawn from a learned card-location model instead of
  uniformly (``madiao_mao.agents.madiao.card_locations``; learned sampling as Solinas et al. 2019
  for Skat).

A learned leaf value (``value=PATH``, default ``playout``): the critic of a run trained with a
privileged critic (its ``checkpoint.zip``; ``madiao_mao.training.sb3.privileged``), a value of the
full deal learned in self-play, replaces the end of every play-out. The play-out stops at the
seat's next decision and the critic, reading the seat's observation and the imagined deal's hands
from its seat, values the rest of the hand (PIMC with a learned perfect-information value).

A guarded search (``guard=Z``, with ``policy`` a model or the heuristic): the play-out policy's
own move is the default, and another candidate replaces it only when its mean payoff over the
same sampled deals beats the default's by more than ``Z`` standard errors of the paired
difference: a rollout improvement of the policy (Tesauro and Galperin 1996; Bertsekas's rollout
algorithm) that leaves the policy's move alone where the play-outs cannot tell the moves apart.
``screen=K`` plays every candidate out in the first ``K`` deals only, and the rest of the deals
only for the candidates ahead of the default there. The ``model-search`` agent is this search on
the shipped policy.

Deals are drawn and replayed a batch at a time on the batched env (``imagine_batch``; the AEC
replay ``imagine`` is the reference it is tested against). Every decision's effective sample size
``(sum w)^2 / sum w^2`` of the weighed deals is kept (``last_decision``, ``inference_summary()``).
Whatever the options, a deal must explain the redeal offers: the seats that passed one are
exactly those holding five or more of a suit (public information). What each option is worth:
docs/results.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cardgame_core.aec import IllegalActionError
from madiao_env import cards, core, madiao_v0
from madiao_env.env import deck_orders
from madiao_env.layout import OBS_SIZES
from madiao_env.options import OBS_TYPES
from madiao_env.rollout import random_playouts
from madiao_env.state import GameView, MadiaoState
from madiao_env.vector import MadiaoVectorEnv
from madiao_mao.agents.base import Agent, legal_actions
from madiao_mao.agents.madiao.card_locations import (
    PRETRAINED_CARD_LOCATIONS,
    STOCK_LOCATION,
    CardLocationModel,
    sample_places,
)
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
    """One deal consistent with ``knowledge`` (:func:`sample_deals`), by card name: initial hands
    by seat, the stock (upcard first), and for each other seat the cards it sloughed face down, in
    the order it did."""
    hands, stock, face_down = sample_deals(knowledge, 1, rng)
    return _named_deal(knowledge, hands[0], stock[0], face_down[0])


def _named_deal(
    knowledge: PublicHand, hands: np.ndarray, stock: np.ndarray, face_down: np.ndarray
) -> tuple[list[list[str]], list[str], dict[int, list[str]]]:
    """One row of :func:`sample_deals` by card name, as :func:`sample_deal` gives it."""
    sloughs: dict[int, list[str]] = {s: [] for s in range(cards.N_SEATS) if s != knowledge.seat}
    hidden_seats = [seat for seat, name, _ in knowledge.moves if name is None]
    for seat, card in zip(hidden_seats, face_down.tolist(), strict=True):
        sloughs[seat].append(cards.CARD_NAMES[card])
    named_hands = [[cards.CARD_NAMES[c] for c in hands[seat]] for seat in range(cards.N_SEATS)]
    return named_hands, [cards.CARD_NAMES[c] for c in stock], sloughs


def sample_deals(
    knowledge: PublicHand, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` deals consistent with ``knowledge``, each drawn as :func:`sample_deal` draws one (the
    cards the seat has not seen shuffled uniformly into the other hands and the stock), as arrays:
    card ids by seat ``[n, 4, 8]``, the stock ``[n, 8]`` (upcard first), and the card of each
    face-down slough another seat made, in the order of ``knowledge.moves`` (``[n, sloughs]``)."""
    return deals_from_orders(knowledge, uniform_orders(knowledge, n, rng))


def uniform_orders(knowledge: PublicHand, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` uniformly shuffled orders of the cards the seat has not seen (:func:`deals_from_orders`)."""
    return rng.permuted(np.tile(unseen_cards(knowledge), (n, 1)), axis=1)


def unseen_cards(knowledge: PublicHand) -> np.ndarray:
    """The card ids the seat has not seen (not its own, not the upcard, not played face up), in id
    order: what a sampled deal places."""
    seen = {cards.card_id(name) for name in knowledge.own_initial_hand} | {cards.card_id(knowledge.upcard)}
    seen |= {cards.card_id(name) for seat, name, _ in knowledge.moves if name is not None}
    return np.array([card for card in range(cards.N_CARDS) if card not in seen], dtype=np.int64)


def _face_up_by_seat(knowledge: PublicHand) -> dict[int, list[int]]:
    """The card ids each other seat played face up, in play order (what its hand surely held)."""
    face_up_by_seat: dict[int, list[int]] = {s: [] for s in range(cards.N_SEATS) if s != knowledge.seat}
    for seat, name, face_up in knowledge.moves:
        if seat != knowledge.seat and face_up:
            face_up_by_seat[seat].append(cards.card_id(name))
    return face_up_by_seat


def deals_from_orders(
    knowledge: PublicHand, shuffled: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The deals (as :func:`sample_deals` returns them) that orders of the cards the seat has not
    seen make (``[n, unseen]``, each row a permutation of them): the first cards of a row go to
    the lowest other seat (its face-down sloughs first, in the order made), and so on round the
    table, the last to the stock under the upcard. Swapping two cards of an order moves them
    between those places: the search's Markov chain over deals."""
    n = shuffled.shape[0]
    face_up_by_seat = _face_up_by_seat(knowledge)
    hands = np.empty((n, cards.N_SEATS, cards.HAND_SIZE), dtype=np.int64)
    first_slough_column: dict[int, int] = {}
    position = 0
    for seat in range(cards.N_SEATS):
        if seat == knowledge.seat:
            hands[:, seat] = [cards.card_id(name) for name in knowledge.own_initial_hand]
            continue
        shown = face_up_by_seat[seat]
        need = cards.HAND_SIZE - len(shown)
        hands[:, seat, : len(shown)] = shown
        hands[:, seat, len(shown) :] = shuffled[:, position : position + need]
        first_slough_column[seat] = position
        position += need
    if shuffled.shape[1] - position != cards.STOCK_SIZE - 1:
        raise ValueError(
            f"inconsistent public information: the stock would have {shuffled.shape[1] - position + 1} cards"
        )
    stock = np.concatenate([np.full((n, 1), cards.card_id(knowledge.upcard)), shuffled[:, position:]], axis=1)
    columns, made = [], dict.fromkeys(range(cards.N_SEATS), 0)
    for seat, name, _face_up in knowledge.moves:
        if name is None:
            columns.append(first_slough_column[seat] + made[seat])
            made[seat] += 1
    return hands, stock, shuffled[:, columns]


#: Determinizations per decision when no budget is given (measured: docs/results.md, search budgets).
DEFAULT_SAMPLES = 16
#: Slough candidates searched (the least useful cards) besides every face-up play.
DEFAULT_SLOUGHS = 3
#: ``ImaginedDeal.dealt_to`` of a card in the stock.
IN_STOCK = cards.N_SEATS
#: Batches of deals drawn per decision at most (most are used late in a hand, when few deals fit).
MAX_BATCHES = 20
#: With inference, deals drawn and weighed per deal kept.
DEFAULT_POOL = 4
#: The heuristic as a model of another seat's play: its own move with probability 1 - this, else a
#: uniform legal move (a deterministic player would make every deal it did not explain impossible).
HEURISTIC_NOISE = 0.1
SEARCH_OPTIONS = (
    "samples", "sloughs", "policy", "inference", "pool", "sweeps", "temper", "sampler", "value",
    "guard", "screen",
)  # fmt: skip
#: ``value``'s default: every play-out runs to the end of the hand.
PLAYOUT_VALUE = "playout"
INTEGER_OPTIONS = ("samples", "sloughs", "pool")
#: Options that may be zero.
COUNT_OPTIONS = ("sweeps", "screen")


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
    inference: str = "none"
    """Whose play explains the other seats' moves: "none" (every consistent deal equally likely),
    "heuristic", "model" (the shipped policy) or a saved MaskablePPO model's path; the sampled
    deals are then resampled by how likely that player makes the moves the seat saw."""
    pool: int = DEFAULT_POOL
    """With inference: deals drawn and weighed per deal kept (``samples x pool`` replayed)."""
    sweeps: int = 0
    """With inference: Metropolis steps the resampled population of deals then takes (each swaps
    two unseen cards of every deal and keeps the swap by the likelihood ratio; a batch replay of
    ``samples x pool`` deals each)."""
    sampler: str = "uniform"
    """How deals are drawn: "uniform" (every deal consistent with what the seat saw alike), or
    "learned" (the shipped card-location model) or a card-location model's ``.npz`` path: each
    unseen card placed by the model's probabilities given the seat's history
    (``madiao_mao.agents.madiao.card_locations``)."""
    temper: float = 1.0
    """With inference: the power the likelihood is raised to (0 < temper <= 1): below 1 the
    weights are flatter, so that a pool that holds no deal close to the truth does not bet
    everything on the few least wrong."""
    value: str = PLAYOUT_VALUE
    """What a play-out is worth: "playout" (its payoff, the hand played to its end), or the path of
    a checkpoint trained with a privileged critic (a run's ``checkpoint.zip``): a learned value of
    the full deal. Then each play-out stops at the seat's next decision (the other seats' moves
    up to it made by ``policy``), and the critic, which reads the seat's observation and every
    hand of the imagined deal, values the rest of the hand (:class:`LeafValue`)."""
    guard: float | None = None
    """None: the search plays the candidate with the best mean payoff. A number ``Z >= 0``: the
    play-out policy's own move is the default (a candidate even when the slough limit would leave
    it out), and another candidate replaces it only when its mean payoff over the same deals beats
    the default's by more than ``Z`` standard errors of the paired difference: a rollout
    improvement of the policy that keeps the policy's move unless the play-outs show better."""
    screen: int = 0
    """With ``guard``: 0 plays every candidate out in all ``samples`` deals; ``K > 0`` plays every
    candidate out in the first ``K`` deals, and only those whose mean there beats the default's
    (and the default) in the rest."""

    def __post_init__(self) -> None:
        for name in INTEGER_OPTIONS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"search option {name} must be a positive integer, got {value!r}")
        for name in COUNT_OPTIONS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"search option {name} must be an integer >= 0, got {value!r}")
        for name in ("policy", "inference", "sampler", "value"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"search option {name} must be a name or a model path, got {value!r}")
        temper = self.temper
        if isinstance(temper, bool) or not isinstance(temper, (int, float)) or not 0 < temper <= 1:
            raise ValueError(f"search option temper must be a number in (0, 1], got {temper!r}")
        if self.value != PLAYOUT_VALUE and self.policy == "random":
            raise ValueError(
                "search option value needs a play-out policy that plays move by move up to the seat's "
                "next decision (heuristic, model or a model's path), not policy=random"
            )
        if self.inference == "random":
            raise ValueError(
                "search option inference=random would weigh every deal alike: write inference=none"
            )
        guard = self.guard
        if guard is not None:
            if isinstance(guard, bool) or not isinstance(guard, (int, float)) or not 0 <= guard < np.inf:
                raise ValueError(f"search option guard must be a number >= 0, got {guard!r}")
            if self.policy == "random":
                raise ValueError(
                    "search option guard keeps the play-out policy's own move: it needs a policy that "
                    "has one (heuristic, model or a model's path), not policy=random"
                )
            if self.inference != "none":
                raise ValueError(
                    "search option guard compares candidates over equally weighted deals: it does not "
                    "combine with inference"
                )
        if self.screen and guard is None:
            raise ValueError("search option screen needs guard (it screens against the policy's move)")
        if self.screen >= self.samples:
            raise ValueError(
                f"search option screen must be below samples ({self.samples}), got {self.screen}"
            )

    def label(self) -> str:
        """The options as written in an agent spec (``samples=8,sloughs=3,policy=heuristic``, then
        ``inference=...,pool=...`` when the search infers)."""
        text = f"samples={self.samples},sloughs={self.sloughs},policy={self.policy}"
        if self.sampler != "uniform":
            text += f",sampler={self.sampler}"
        if self.inference != "none":
            text += (
                f",inference={self.inference},pool={self.pool},sweeps={self.sweeps},temper={self.temper:g}"
            )
        if self.value != PLAYOUT_VALUE:
            text += f",value={self.value}"
        if self.guard is not None:
            text += f",guard={self.guard:g}"
            if self.screen:
                text += f",screen={self.screen}"
        return text


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
        if key in INTEGER_OPTIONS + COUNT_OPTIONS:
            try:
                values[key] = int(value)
            except ValueError:
                kind = "a positive integer" if key in INTEGER_OPTIONS else "an integer >= 0"
                raise ValueError(f"search option {key} must be {kind}, got {value!r}") from None
        elif key == "temper":
            try:
                values[key] = float(value)
            except ValueError:
                raise ValueError(f"search option temper must be a number in (0, 1], got {value!r}") from None
        elif key == "guard":
            try:
                values[key] = float(value)
            except ValueError:
                raise ValueError(f"search option guard must be a number >= 0, got {value!r}") from None
        else:
            values[key] = value
    return SearchBudget(**values)


def merged_search_options(defaults: str, options: str) -> str:
    """The option text ``defaults`` with each option that ``options`` names given its value there
    (the result is for ``parse_search_options``, which checks it)."""

    def pairs(text: str) -> list[str]:
        return [pair.strip() for pair in text.split(",") if pair.strip()]

    named = {pair.partition("=")[0].strip() for pair in pairs(options)}
    return ",".join(
        [pair for pair in pairs(defaults) if pair.partition("=")[0].strip() not in named] + pairs(options)
    )


def _playout_policy(policy: str, option: str = "policy") -> Agent | None:
    """The agent of a play-out policy name or model path (None: uniform random, in Numba)."""
    if policy == "random":
        return None
    if policy == "heuristic":
        return RoleAwareHeuristicAgent()
    # Imported here: torch and SB3 load only when a learned policy is asked for.
    from madiao_mao.agents.learned import LearnedPolicyAgent, pretrained_agent

    if policy == "model":
        return pretrained_agent("madiao")
    if not Path(policy).is_file():
        raise FileNotFoundError(f"search option {option}: no saved model at {policy}")
    return LearnedPolicyAgent(policy, name=option)


class LeafValue:
    """A learned value of the full deal for the search's play-outs: the critic of a model trained
    with a privileged critic (``madiao_mao.training.sb3.privileged``), which reads the seat's
    observation and the deal's every hand (the batched env's ``privileged_observation``) and
    estimates the seat's payoff from there to the end of the hand under the trained policy's play.

    Only the search's imagined deals reach it (the critic of a model for play never sees a real
    table): the deals sampled from what the seat saw, as the play-outs play them.
    """

    def __init__(self, path: str) -> None:
        if not Path(path).is_file():
            raise FileNotFoundError(f"search option value: no saved model at {path}")
        # Imported here: torch and SB3 load only when a learned value is asked for.
        from madiao_mao.agents.learned import load_model

        model = load_model(path)
        critic = getattr(model.policy, "vf_features_extractor", None)
        if getattr(critic, "privileged_dim", None) is None or not critic.reads_privileged:
            raise ValueError(
                f"search option value: {path} has no privileged critic (give the checkpoint.zip of a "
                "run trained with --privileged-critic)"
            )
        self.policy = model.policy
        #: The length of the seat's observation it reads (the play-out table's variant follows it).
        self.obs_dim = int(critic.table_obs_dim)

    def values(self, observations: np.ndarray, privileged: np.ndarray) -> np.ndarray:
        """The seat's value of each row (float64 ``[N]``): its observation and the deal's
        privileged vector from its seat."""
        # Imported here: keeps torch off this module's import path.
        import torch

        from madiao_mao.agents.learned import threads_for_batch

        rows = np.concatenate((observations, privileged), axis=1).astype(np.float32)
        with threads_for_batch(rows.shape[0]), torch.no_grad():
            values = self.policy.predict_values(torch.as_tensor(rows, device=self.policy.device))
        return values.flatten().cpu().numpy().astype(np.float64)


def _leaf_value(value: str) -> LeafValue | None:
    return None if value == PLAYOUT_VALUE else LeafValue(value)


class MoveModel:
    """How likely another seat is to make a move, from that seat's observation: the likelihood
    of the deals the search imagines (see the module doc)."""

    def __init__(self, player: Agent) -> None:
        self.player = player
        #: The observation length the player reads (None: the summary, which the heuristic decodes).
        self.obs_dim = getattr(player, "obs_dim", None)

    def log_likelihood(self, observations: np.ndarray, masks: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """``log P(actions[i] | observations[i])`` for each row (``[N]``); every action legal."""
        masks = np.asarray(masks, dtype=bool)
        actions = np.asarray(actions, dtype=np.int64)
        rows = np.arange(actions.size)
        if not masks[rows, actions].all():
            raise ValueError("MoveModel.log_likelihood: an action is not legal under its mask")
        log_probs = getattr(self.player, "action_log_probs", None)
        if log_probs is not None:
            return log_probs(observations, masks)[rows, actions]
        chosen = self.player.act_batch(observations, masks)
        uniform = HEURISTIC_NOISE / masks.sum(axis=1)
        return np.log(np.where(chosen == actions, 1.0 - HEURISTIC_NOISE, 0.0) + uniform)


def _card_location_model(sampler: str) -> CardLocationModel | None:
    """The card-location model of a ``sampler`` option (None for "uniform")."""
    if sampler == "uniform":
        return None
    if sampler == "learned":
        return CardLocationModel.load(PRETRAINED_CARD_LOCATIONS)
    if not Path(sampler).is_file():
        raise FileNotFoundError(f"search option sampler: no card-location model at {sampler}")
    return CardLocationModel.load(sampler)


def move_model(inference: str) -> MoveModel | None:
    """The move model of an ``inference`` option (None for "none")."""
    if inference == "none":
        return None
    return MoveModel(_playout_policy(inference, option="inference"))


@dataclass(frozen=True)
class SearchDecision:
    """What one searched decision weighed (``MadiaoSearchAgent.last_decision``)."""

    candidates: tuple[int, ...]
    """The moves searched, in the order of ``values``."""
    values: np.ndarray
    """The seat's mean payoff of each candidate over the kept deals (weighted by how often kept)."""
    deals_weighed: int
    """Consistent deals drawn (``samples``, or ``samples x pool`` with inference)."""
    effective_samples: float
    """``(sum w)^2 / sum w^2`` of the weighed deals' weights: ``deals_weighed`` when all weigh the
    same, near 1 when one deal explains the other seats' moves far better than the rest."""
    distinct_deals: int
    """Different deals played out (resampling keeps a likely deal several times)."""
    default: int | None = None
    """With ``guard``: the play-out policy's own move, which the search kept unless ``chosen``
    differs."""
    chosen: int | None = None
    """With ``guard``: the move played (otherwise the candidate of the best value)."""

    @property
    def action(self) -> int:
        if self.chosen is not None:
            return self.chosen
        return self.candidates[int(np.argmax(self.values))]


def guarded_choice(payoffs: np.ndarray, default: int, guard: float) -> int:
    """The column of ``payoffs`` (``[deals, candidates]``, the seat's payoff of each candidate
    played out in each deal) to play: ``default``, unless another column's mean difference from it
    over the same deals exceeds ``guard`` standard errors of that difference (the largest such
    margin wins). A candidate ahead by the same amount in every deal has no standard error and
    passes any guard; with one deal there is no standard error either, and only ``guard=0`` may
    leave the default."""
    payoffs = np.asarray(payoffs, dtype=np.float64)
    if payoffs.ndim != 2 or payoffs.shape[0] == 0 or not 0 <= default < payoffs.shape[1]:
        raise ValueError("guarded_choice: payoffs must be [deals, candidates] and default one of its columns")
    difference = payoffs - payoffs[:, [default]]
    n_deals = difference.shape[0]
    margin = difference.mean(axis=0)
    if guard > 0:
        if n_deals < 2:
            return default
        margin -= guard * difference.std(axis=0, ddof=1) / np.sqrt(n_deals)
    margin[default] = 0.0
    best = int(np.argmax(margin))
    return best if margin[best] > 0 else default


def systematic_resample(weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices drawn in proportion to ``weights`` (systematic resampling: one uniform offset,
    ``n`` evenly spaced points on the cumulative weights, the lowest-variance standard scheme)."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 1 or weights.size == 0 or not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("systematic_resample: weights must be a non-empty 1-D array of finite values >= 0")
    total = weights.sum()
    if total <= 0:
        raise ValueError("systematic_resample: the weights sum to zero")
    points = (rng.random() + np.arange(n)) / n
    cumulative = np.cumsum(weights / total)
    cumulative[-1] = 1.0
    return np.searchsorted(cumulative, points, side="right")


def normalized_weights(log_weights: np.ndarray) -> np.ndarray:
    """Weights summing to one from log-weights (stable for very negative ones)."""
    log_weights = np.asarray(log_weights, dtype=np.float64)
    shifted = np.exp(log_weights - log_weights.max())
    return shifted / shifted.sum()


def effective_sample_size(weights: np.ndarray) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2``."""
    weights = np.asarray(weights, dtype=np.float64)
    return float(weights.sum() ** 2 / np.square(weights).sum())


class _PlayoutTable:
    """The batched env of one decision's play-outs: a game per (sample, candidate), all stepped
    together, so that a learned play-out policy evaluates one batch per move."""

    def __init__(self, n_games: int, env_kwargs: dict) -> None:

        self.env = MadiaoVectorEnv(n_games, seed=0, copy=False, **env_kwargs)
        self.env.reset()

    def load(self, snapshots: list[Callable[[], dict]], copies: int) -> None:
        """Game ``k * copies + c`` set to deal ``k``'s snapshot (``ImaginedDeal.snapshot``), the
        seat to act observed: a deal still in its replay batch is copied from there as it is, any
        other snapshot checked once; then copied within the table."""
        for index, snapshot in enumerate(snapshots):
            first = index * copies
            if isinstance(snapshot, _BatchGame):
                self.env.copy_game_from(snapshot.env, snapshot.game, first)
            else:
                self.env.set_game_state(first, snapshot())
            self.env.copy_game(first, range(first + 1, first + copies))


@dataclass(frozen=True)
class _BatchGame:
    """A deal's ``snapshot`` while it sits in its replay batch: called, game ``game``'s
    ``get_game_state()``; the play-out table copies the game from ``env`` directly."""

    env: MadiaoVectorEnv
    game: int

    def __call__(self) -> dict:
        return self.env.get_game_state(self.game)


def _dealt_to(hands: np.ndarray) -> np.ndarray:
    """``ImaginedDeal.dealt_to`` rows of deals given by hands (card ids ``[n, 4, 8]``)."""
    dealt_to = np.full((hands.shape[0], cards.N_CARDS), IN_STOCK, dtype=np.int8)
    for seat in range(cards.N_SEATS):
        np.put_along_axis(dealt_to, hands[:, seat], seat, axis=1)
    return dealt_to


@dataclass(frozen=True)
class _Replay:
    """A batch of deals replayed to the decision: per deal its order of the unseen cards, whether
    it explains what happened, the log-likelihood of the other seats' moves, where it dealt each
    card, and its snapshot (read from the batch's env; None after a Metropolis step)."""

    orders: np.ndarray | None
    valid: np.ndarray
    log_likelihood: np.ndarray
    dealt_to: np.ndarray
    snapshots: list | None

    def subset(self, rows: np.ndarray) -> _Replay:
        return _Replay(
            None if self.orders is None else self.orders[rows],
            self.valid[rows],
            self.log_likelihood[rows],
            self.dealt_to[rows],
            None if self.snapshots is None else [self.snapshots[k] for k in rows.tolist()],
        )

    @staticmethod
    def concatenate(replays: list[_Replay]) -> _Replay:
        orders = (
            None if any(r.orders is None for r in replays) else np.concatenate([r.orders for r in replays])
        )
        return _Replay(
            orders,
            np.concatenate([r.valid for r in replays]),
            np.concatenate([r.log_likelihood for r in replays]),
            np.concatenate([r.dealt_to for r in replays]),
            [snapshot for r in replays for snapshot in r.snapshots],
        )

    def deals(self) -> list[ImaginedDeal]:
        return [
            ImaginedDeal(self.snapshots[k], float(self.log_likelihood[k]), self.dealt_to[k])
            for k in np.flatnonzero(self.valid).tolist()
        ]


@dataclass(frozen=True)
class ImaginedDeal:
    """A deal replayed to the decision, and the log-likelihood of the other seats' moves on the way
    under the move model (0 without inference). ``snapshot()`` is the game at the decision; a deal
    of :meth:`MadiaoSearchAgent.imagine_batch` reads it from its batch, so only until the next
    batch of the same round."""

    snapshot: Callable[[], dict]
    log_likelihood: float
    dealt_to: np.ndarray
    """Where the deal put each card (``[40]`` by card id): seat 0-3, or ``IN_STOCK``."""


class MadiaoSearchAgent(Agent):
    """Determinized Monte Carlo (PIMC) player (see module doc); ``env`` is the env it sits in.

    ``budget`` (a ``SearchBudget``; default ``SearchBudget()``) sets the samples per decision, the
    slough candidates, the play-out policy and the inference. ``n_samples``/``max_sloughs`` are the
    older names of ``budget.samples``/``budget.sloughs``. After each searched decision
    ``last_decision`` is its :class:`SearchDecision` (None for a forced move or a redeal offer).
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
        self.move_model = move_model(budget.inference)
        self.card_locations = _card_location_model(budget.sampler)
        self.leaf_value = _leaf_value(budget.value)
        # Envs of another observation variant than the live one, by variant (_observation_of).
        self._observers: dict[str, object] = {}
        self.last_decision: SearchDecision | None = None
        # (deals weighed, effective sample size, distinct deals) of every searched decision.
        self._decisions: list[tuple[int, float, int]] = []
        self._sim = None
        self._tables: dict[tuple[str, int, int], _PlayoutTable] = {}

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
            # The play-out table loads the simulator's snapshots: the same options, observation
            # variant included.
            options = {**self._sim_options(), "obs_type": self._playout_obs_type()}
            self._sim = madiao_v0.raw_env(episode="hand", **options)
        return self._sim

    def _playout_obs_type(self) -> str:
        """The observation variant the play-out policy and the move model read, whatever the live
        env's is: the heuristic decodes the summary; a model reads the variant it was trained on."""
        readers = {
            "policy": getattr(self.playout_policy, "obs_dim", None),
            "inference": None if self.move_model is None else self.move_model.obs_dim,
            "value": None if self.leaf_value is None else self.leaf_value.obs_dim,
        }
        for obs_type in OBS_TYPES:
            size = OBS_SIZES[obs_type]
            if all(dim is None or dim == size for dim in readers.values()):
                return obs_type
        lengths = ", ".join(f"{option}: {dim or 'summary'}" for option, dim in readers.items())
        raise ValueError(
            "search options policy, inference and value: no Madiao observation variant has the length "
            f"each reads ({lengths})"
        )

    def _table(self, n_games: int, use: str = "play-outs", round_: int = 0) -> _PlayoutTable:
        """The batched env of ``n_games`` games for the play-outs, or for the ``round_``-th batch of
        imagined deals of a decision (each round its own, so that earlier rounds' deals stay)."""
        key = (use, n_games, round_)
        if key not in self._tables:
            options = {**self._sim_options(), "episode": "hand", "obs_type": self._playout_obs_type()}
            self._tables[key] = _PlayoutTable(n_games, options)
        return self._tables[key]

    def candidates(self, observation: np.ndarray, action_mask: np.ndarray) -> list[int]:
        legal = [int(a) for a in legal_actions(action_mask)]
        if len(legal) == 1:
            return legal
        plays = [a for a in legal if a < cards.ACTION_SLOUGH or a >= cards.ACTION_REDEAL]
        sloughs = [a for a in legal if cards.ACTION_SLOUGH <= a < cards.ACTION_REDEAL]
        if len(sloughs) > self.max_sloughs:
            book = PlayBook(view_from_observation(self._observation_of("summary", observation)), action_mask)
            sloughs.sort(key=lambda a: book.usefulness(a - cards.ACTION_SLOUGH))
            sloughs = sloughs[: self.max_sloughs]
        return plays + sloughs

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.last_decision = None
        candidates = self.candidates(observation, action_mask)
        if len(candidates) == 1:
            return candidates[0]
        table = self.env.unwrapped.table()
        seat = table["to_act"]
        default = None
        if self.budget.guard is not None:
            # The play-out policy's own move: the default, searched whatever the slough limit.
            default = int(
                self.playout_policy.act(
                    self._observation_of(self._playout_obs_type(), observation), action_mask
                )
            )
            if default not in candidates:
                candidates.append(default)
        if table["phase"] != "play":
            return self._unsearched_move(observation, action_mask, default)
        posterior = self.posterior(public_hand(table, seat), self.redeal_passed(table))
        if posterior is None:
            return self._unsearched_move(observation, action_mask, default)
        deals, weights, effective = posterior
        if default is not None:
            self.last_decision = self._guarded_decision(
                [deal.snapshot for deal in deals], candidates, default, seat
            )
            self._decisions.append((len(deals), effective, len(deals)))
            return self.last_decision.action
        if self.move_model is None:
            kept, kept_weights = list(range(len(deals))), weights
        else:
            picks = systematic_resample(weights, self.n_samples, self.rng)
            kept, counts = np.unique(picks, return_counts=True)
            kept, kept_weights = kept.tolist(), counts / counts.sum()
        values = kept_weights @ self._play_outs([deals[k].snapshot for k in kept], candidates, seat)
        self.last_decision = SearchDecision(
            candidates=tuple(candidates),
            values=values,
            deals_weighed=len(deals),
            effective_samples=effective,
            distinct_deals=len(kept),
        )
        self._decisions.append((len(deals), effective, len(kept)))
        return self.last_decision.action

    def _unsearched_move(self, observation: np.ndarray, action_mask: np.ndarray, default: int | None) -> int:
        """The move where nothing is searched: the policy's own (``default``) with a guard, else
        the heuristic's judgement (redeal decisions come before any card is seen)."""
        if default is not None:
            return default
        return self.heuristic.act(self._observation_of("summary", observation), action_mask)

    def _guarded_decision(
        self, snapshots: list[Callable[[], dict]], candidates: list[int], default: int, seat: int
    ) -> SearchDecision:
        """The guard's choice among the candidates, played out in the sampled deals: ``default``
        unless another beats it (``SearchBudget.guard``), the first ``screen`` deals played out
        for every candidate and the rest only for those ahead of the default there."""
        column = candidates.index(default)
        screen = self.budget.screen
        kept = np.arange(len(candidates))
        if screen and len(snapshots) > screen:
            first = self._play_outs(snapshots[:screen], candidates, seat)
            values = first.mean(axis=0)
            ahead = values > values[column]
            ahead[column] = True
            kept = np.flatnonzero(ahead)
            payoffs = first[:, kept]
            if kept.size > 1:
                rest = self._play_outs(snapshots[screen:], [candidates[k] for k in kept.tolist()], seat)
                payoffs = np.vstack([payoffs, rest])
            # A screened-out candidate keeps its mean over the screening deals.
            values[kept] = payoffs.mean(axis=0)
        else:
            payoffs = self._play_outs(snapshots, candidates, seat)
            values = payoffs.mean(axis=0)
        pick = guarded_choice(payoffs, int(np.flatnonzero(kept == column)[0]), self.budget.guard)
        return SearchDecision(
            candidates=tuple(candidates),
            values=values,
            deals_weighed=len(snapshots),
            effective_samples=float(len(snapshots)),
            distinct_deals=len(snapshots),
            default=default,
            chosen=candidates[int(kept[pick])],
        )

    def posterior(
        self, knowledge: PublicHand, redeal_passed: set[int] | None
    ) -> tuple[list[ImaginedDeal], np.ndarray, float] | None:
        """The deals the search believes in at this decision, their weights (summing to one) and
        the effective sample size of the weighed pool; None when no drawn deal explains the hand.

        Without inference: ``samples`` consistent deals, equal weights. With inference:
        ``samples x pool`` consistent deals weighted by the likelihood of the other seats' moves;
        with ``sweeps``, resampled by those weights into a population that then takes that many
        Metropolis steps (:meth:`_sweep`), equal weights after."""
        wanted = self.n_samples * (1 if self.move_model is None else self.budget.pool)
        pool = self._draw(knowledge, wanted, redeal_passed)
        if pool is None:
            return None
        deals = pool.deals()
        if self.move_model is None:
            return deals, np.full(len(deals), 1.0 / len(deals)), float(len(deals))
        weights = normalized_weights(self.budget.temper * pool.log_likelihood)
        effective = effective_sample_size(weights)
        if not self.budget.sweeps or pool.orders is None:
            return deals, weights, effective
        chain = pool.subset(systematic_resample(weights, len(deals), self.rng))
        for _ in range(self.budget.sweeps):
            chain = self._sweep(knowledge, chain, redeal_passed)
        final = self._replay(knowledge, chain.orders, redeal_passed, use="chain")
        return final.deals(), np.full(len(deals), 1.0 / len(deals)), effective

    def _draw(self, knowledge: PublicHand, wanted: int, redeal_passed: set[int] | None) -> _Replay | None:
        """``wanted`` consistent deals drawn by the sampler (their replay), fewer if 20 batches of
        ``wanted`` did not find them all (late in a hand most uniform deals contradict a void the
        other seats showed); None if none."""
        places = self._place_probabilities(knowledge)
        found: list[_Replay] = []
        count = 0
        for round_ in range(MAX_BATCHES):
            orders = self._draw_orders(knowledge, wanted, places)
            replay = self._replay(knowledge, orders, redeal_passed, round_=round_)
            found.append(replay.subset(np.flatnonzero(replay.valid)[: wanted - count]))
            count += len(found[-1].valid)
            if count == wanted:
                break
        return _Replay.concatenate(found) if count else None

    def _place_probabilities(self, knowledge: PublicHand) -> np.ndarray | None:
        """The card-location model's probabilities of each unseen card (``unseen_cards`` order) in
        each place of an order (the other seats in seat order, then the stock), read once per
        decision; None with the uniform sampler."""
        if self.card_locations is None:
            return None
        probabilities = self.card_locations.probabilities(self._observation_of("history")[None])[0]
        others = [seat for seat in range(cards.N_SEATS) if seat != knowledge.seat]
        columns = [(seat - knowledge.seat) % cards.N_SEATS - 1 for seat in others] + [STOCK_LOCATION]
        return probabilities[unseen_cards(knowledge)][:, columns]

    def _draw_orders(self, knowledge: PublicHand, n: int, places: np.ndarray | None) -> np.ndarray:
        """``n`` orders of the cards the seat has not seen (:func:`deals_from_orders`): uniform, or
        placed by ``places`` (:meth:`_place_probabilities`) among the room each place has."""
        if places is None:
            return uniform_orders(knowledge, n, self.rng)
        unseen = unseen_cards(knowledge)
        in_hands = [cards.HAND_SIZE - len(shown) for shown in _face_up_by_seat(knowledge).values()]
        room = np.array([*in_hands, unseen.size - sum(in_hands)])
        chosen = sample_places(places, room, n, self.rng)
        # Sorting by place (ties in random order) lays each place's cards out as its block of the
        # order, and the face-down sloughs of a seat are then a uniform choice among its cards.
        order = np.lexsort((self.rng.random(chosen.shape), chosen), axis=1)
        return unseen[order]

    def _observation_of(self, obs_type: str, live: np.ndarray | None = None) -> np.ndarray:
        """The observation of the seat to act in the ``obs_type`` variant, whatever the live env's
        variant (``live``, that seat's live observation, when it already is that variant): the game
        is the same, only the observation differs."""
        if live is not None and live.shape[-1] == OBS_SIZES[obs_type]:
            return live
        if obs_type not in self._observers:
            # The live env's episode too: a match's snapshot holds its hand number.
            options = {**self._sim_options(), "episode": self.env.unwrapped.episode, "obs_type": obs_type}
            self._observers[obs_type] = madiao_v0.raw_env(**options)
        observer = self._observers[obs_type]
        snapshot = self.env.unwrapped.get_state()
        observer.set_state({**snapshot, "config": observer.options.config_row()})
        return observer.observe(observer.agent_selection)["observation"]

    def log_weights(self, deals: list[ImaginedDeal]) -> np.ndarray:
        """Each deal's log-likelihood of the other seats' moves under the move model (zeros without
        inference, or before they moved)."""
        return np.array([deal.log_likelihood for deal in deals], dtype=np.float64)

    def _log_likelihoods(
        self, observations: np.ndarray, masks: np.ndarray, actions: np.ndarray, owners: np.ndarray, n: int
    ) -> np.ndarray:
        """The summed log-likelihood of the recorded moves of each of ``n`` deals (``owners``: the
        deal of each row), in one batch of the move model."""
        if self.move_model is None or actions.size == 0:
            return np.zeros(n)
        log_likelihood = self.move_model.log_likelihood(observations, masks, actions)
        return np.bincount(owners, weights=log_likelihood, minlength=n)

    def inference_summary(self) -> dict[str, float]:
        """Means over the searched decisions so far: deals weighed, effective sample size, and
        distinct deals played out (``decisions``: how many)."""
        if not self._decisions:
            return {"decisions": 0}
        weighed, effective, distinct = np.asarray(self._decisions, dtype=np.float64).mean(axis=0)
        return {
            "decisions": len(self._decisions),
            "deals_weighed": float(weighed),
            "effective_samples": float(effective),
            "distinct_deals": float(distinct),
        }

    def redeal_passed(self, table: dict) -> set[int] | None:
        """The seats that passed a redeal offer on this deal, or None when the redeal cap was
        reached (then nobody is asked, and the offers say nothing about the hands)."""
        cap = self._simulator().max_redeals
        if cap is not None and table["redeals"] >= cap:
            return None
        snapshot = self.env.unwrapped.get_state()
        return set(GameView(MadiaoState(*snapshot["arrays"])).redeal_passed())

    def _play_outs(self, snapshots: list[Callable[[], dict]], candidates: list[int], seat: int) -> np.ndarray:
        """The seat's payoff ``[samples, candidates]`` of every candidate played out in every
        sample (``snapshots``: the samples' ``ImaginedDeal.snapshot``)."""

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
            if self.leaf_value is not None:
                # The seat's next decision ends the play-out: the critic values the rest.
                leaves = np.flatnonzero(~done & (step.to_act == seat))
                if leaves.size:
                    privileged = env.privileged_observation(np.full(env.n_envs, seat))[leaves]
                    totals[leaves] += self.leaf_value.values(step.observation[leaves], privileged)
                    done[leaves] = True
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

    def imagine_batch(
        self,
        knowledge: PublicHand,
        n: int,
        redeal_passed: set[int] | None = None,
        *,
        round_: int = 0,
        uniform: bool = False,
    ) -> list[ImaginedDeal]:
        """Draw ``n`` deals (by the ``sampler`` option, or uniformly as :func:`sample_deals` when
        ``uniform``) and replay the hand's moves in all of them at
        once on a batched env: the deals that explain what happened (as :meth:`imagine` decides
        one by one, which this agrees with), each at the decision, with the log-likelihood of the
        other seats' moves when the search infers. A deal's snapshot is read from the batch's env
        (round ``round_``), so only until that round's next batch."""
        orders = self._draw_orders(knowledge, n, None if uniform else self._place_probabilities(knowledge))
        return self._replay(knowledge, orders, redeal_passed, round_=round_).deals()

    def _replay(
        self,
        knowledge: PublicHand,
        orders: np.ndarray,
        redeal_passed: set[int] | None,
        *,
        use: str = "imagined deals",
        round_: int = 0,
    ) -> _Replay:
        """Replay the hand in the deals of ``orders`` (:func:`deals_from_orders`) on a batched env
        (its own for each ``use`` and ``round_``, so that other batches' snapshots stay)."""
        hands, stock, face_down = deals_from_orders(knowledge, orders)
        n = orders.shape[0]
        seeds = self.rng.integers(2**31 - 1, size=n)
        if core.first_seat_from_cut(cards.card_id(knowledge.upcard), knowledge.banker) != knowledge.first:
            # A table dealt from a given first seat (the "first" reset option): dealt one by one.
            return self._replay_one_by_one(knowledge, hands, stock, face_down, redeal_passed)
        env = self._table(n, use, round_).env
        step = env.reset_deals(
            deck_orders(hands, stock, knowledge.first), np.full(n, knowledge.banker), seeds
        )
        dealt = np.bitwise_or.reduce(np.left_shift(np.uint64(1), hands.astype(np.uint64)), axis=2)
        # A meld or the four lowest ends the deal before play (or deals anew): not what happened.
        valid = (env.hands() == dealt).all(axis=1) & (step.to_act >= 0)
        asked = np.zeros(n, dtype=np.int64)
        while (offered := valid & step.action_mask[:, cards.ACTION_PASS]).any():
            asked[offered] |= np.left_shift(1, step.to_act[offered])
            step = env.step(np.where(offered, cards.ACTION_PASS, -1))
        if redeal_passed is not None:
            valid &= asked == sum(1 << seat for seat in redeal_passed)
        recording = self.move_model is not None
        games = np.arange(n)
        moves: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        next_face_down = 0
        for seat, name, face_up in knowledge.moves:
            valid &= step.to_act == seat
            if name is None:
                actions = face_down[:, next_face_down] + cards.ACTION_SLOUGH
                next_face_down += 1
            else:
                offset = cards.ACTION_PLAY if face_up else cards.ACTION_SLOUGH
                actions = np.full(n, cards.card_id(name) + offset)
            valid &= step.action_mask[games, actions]
            if recording and seat != knowledge.seat:
                rows = np.flatnonzero(valid)
                moves.append((step.observation[rows], step.action_mask[rows], actions[rows], rows))
            step = env.step(np.where(valid, actions, -1))
            valid &= ~(step.terminated | step.truncated)
        valid &= step.to_act == knowledge.seat
        log_likelihood = np.zeros(n)
        if moves:
            observations, masks, actions, owners = (
                np.concatenate(column) for column in zip(*moves, strict=True)
            )
            keep = valid[owners]
            log_likelihood = self._log_likelihoods(
                observations[keep], masks[keep].astype(bool), actions[keep], owners[keep], n
            )
        snapshots = [_BatchGame(env, game) for game in range(n)]
        return _Replay(orders, valid, log_likelihood, _dealt_to(hands), snapshots)

    def _replay_one_by_one(self, knowledge, hands, stock, face_down, redeal_passed) -> _Replay:
        n = hands.shape[0]
        valid, log_likelihood, snapshots = np.zeros(n, dtype=bool), np.zeros(n), [None] * n
        for k in range(n):
            deal = self.imagine(
                knowledge, *_named_deal(knowledge, hands[k], stock[k], face_down[k]), redeal_passed
            )
            if deal is not None:
                valid[k], log_likelihood[k], snapshots[k] = True, deal.log_likelihood, deal.snapshot
        return _Replay(None, valid, log_likelihood, _dealt_to(hands), snapshots)

    def _sweep(self, knowledge: PublicHand, chain: _Replay, redeal_passed: set[int] | None) -> _Replay:
        """One Metropolis step of every deal of ``chain``: swap two random cards of its order
        (a symmetric proposal) and keep the new deal with probability ``min(1, L_new / L_old)``,
        ``L`` the likelihood of the other seats' moves (a deal that contradicts them, never)."""
        n, unseen = chain.orders.shape
        games = np.arange(n)
        first, second = self.rng.integers(unseen, size=(2, n))
        proposal = chain.orders.copy()
        proposal[games, first], proposal[games, second] = (
            chain.orders[games, second],
            chain.orders[games, first],
        )
        tried = self._replay(knowledge, proposal, redeal_passed, use="proposals")
        ratio = self.budget.temper * (tried.log_likelihood - chain.log_likelihood)
        accept = tried.valid & (np.log(self.rng.random(n)) < ratio)
        return _Replay(
            np.where(accept[:, None], proposal, chain.orders),
            chain.valid,
            np.where(accept, tried.log_likelihood, chain.log_likelihood),
            np.where(accept[:, None], tried.dealt_to, chain.dealt_to),
            None,
        )

    def imagine(
        self,
        knowledge: PublicHand,
        hands: list[list[str]],
        stock: list[str],
        sloughs: dict[int, list[str]],
        redeal_passed: set[int] | None = None,
        *,
        sim=None,
    ) -> ImaginedDeal | None:
        """Replay the hand's moves in the deal ``(hands, stock, sloughs)`` (as :func:`sample_deal`
        gives them): its snapshot at the decision (and, with inference, the other seats'
        observations, masks and moves on the way), or None if the deal contradicts what happened.
        ``redeal_passed``: the seats that passed a redeal offer (None: not checked)."""
        sim = sim or self._simulator()
        options = {"hands": hands, "stock": stock, "banker": knowledge.banker, "first": knowledge.first}
        sim.reset(seed=int(self.rng.integers(2**31 - 1)), options=options)
        table = sim.table()
        # A meld or the four lowest in a sampled hand ends the deal before play (and deals anew):
        # not what happened, so the sample is rejected.
        if table["phase"] == "over" or any(
            sorted(table["hands"][seat]) != sorted(hands[seat]) for seat in range(cards.N_SEATS)
        ):
            return None
        # Every redeal offer was passed (the hand was played): redeals come before any card. The
        # seats asked are those holding five or more of a suit: they must be the ones that were.
        asked = set()
        while sim.table()["phase"] == "redeal":
            asked.add(sim.possible_agents.index(sim.agent_selection))
            sim.step(cards.ACTION_PASS)
        if redeal_passed is not None and asked != redeal_passed:
            return None
        pending = {seat: list(cards_) for seat, cards_ in sloughs.items()}
        recording = self.move_model is not None
        observations, masks, actions = [], [], []
        for seat, name, face_up in knowledge.moves:
            # The seat to act is read from agent_selection: table() builds the whole table in
            # Python, which made it the largest cost of a decision.
            if sim.agent_selection != sim.possible_agents[seat]:
                return None
            if name is None:
                name = pending[seat].pop(0)
            action = cards.card_id(name) + (cards.ACTION_PLAY if face_up else cards.ACTION_SLOUGH)
            if recording and seat != knowledge.seat:
                seen = sim.observe(sim.agent_selection)
                if not seen["action_mask"][action]:
                    return None
                observations.append(np.array(seen["observation"]))
                masks.append(np.array(seen["action_mask"], dtype=bool))
                actions.append(action)
            try:
                sim.step(action)
            except IllegalActionError:
                return None  # the sampled cards cannot explain a move that was made
        if not sim.agents or sim.agent_selection != sim.possible_agents[knowledge.seat]:
            return None
        log_likelihood = 0.0
        if actions:
            owners = np.zeros(len(actions), dtype=np.int64)
            log_likelihood = float(
                self._log_likelihoods(
                    np.stack(observations), np.stack(masks), np.asarray(actions), owners, 1
                )[0]
            )
        snapshot = sim.get_state()
        dealt_to = _dealt_to(np.array([[[cards.card_id(name) for name in hand] for hand in hands]]))[0]
        return ImaginedDeal(lambda: snapshot, log_likelihood, dealt_to)
