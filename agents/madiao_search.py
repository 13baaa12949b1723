"""A Madiao search player: determinized Monte Carlo over the cards it cannot see.

At each decision the player samples complete deals consistent with everything its seat has seen
(its own cards and face-down sloughs, every card played face up and by whom, the upcard, how many
cards each other seat sloughed face down and still holds), replays the hand's public moves on a
private copy of the game, tries each candidate move and plays the hand out, and picks the move
with the best mean payoff for its seat over the samples.

Only public information and the seat's own cards are read from the live env (``table()`` is the
full truth, so the face-down cards of other seats are masked out before sampling). A sampled
deal that would have ended the hand before play (a meld or the four lowest in a hidden hand)
contradicts what happened and is rejected. Play-outs use the rollout kernel of
``madiao_env.rollout`` when it is available, else the role-aware heuristic for every seat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agents.base import Agent, legal_actions
from agents.madiao_heuristic import RoleAwareHeuristicAgent, _PlayBook
from agents.madiao_obs_layout import view_from_observation
from madiao_env import cards


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


class MadiaoSearchAgent(Agent):
    """Determinized Monte Carlo player (see module doc); ``env`` is the env it sits in.

    ``n_samples`` deals are sampled per decision; at most ``max_sloughs`` slough candidates (the
    least useful cards) are searched besides every face-up play.
    """

    def __init__(
        self,
        env,
        *,
        n_samples: int = 12,
        max_sloughs: int = 3,
        seed: int | None = None,
        name: str = "search",
    ) -> None:
        if n_samples < 1:
            raise ValueError(f"n_samples must be at least 1, got {n_samples}")
        self.env = env
        self.n_samples = n_samples
        self.max_sloughs = max_sloughs
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.rollout_policy = RoleAwareHeuristicAgent()
        self._sim = None

    def _simulator(self):
        if self._sim is None:
            from madiao_env import madiao_v0

            options = {
                k: v
                for k, v in getattr(self.env.unwrapped, "env_kwargs", {}).items()
                if k not in ("episode", "render_mode")
            }
            self._sim = madiao_v0.raw_env(episode="hand", **options)
        return self._sim

    def candidates(self, observation: np.ndarray, action_mask: np.ndarray) -> list[int]:
        legal = [int(a) for a in legal_actions(action_mask)]
        if len(legal) == 1:
            return legal
        plays = [a for a in legal if a < cards.ACTION_SLOUGH or a >= cards.ACTION_REDEAL]
        sloughs = [a for a in legal if cards.ACTION_SLOUGH <= a < cards.ACTION_REDEAL]
        if len(sloughs) > self.max_sloughs:
            book = _PlayBook(view_from_observation(observation), action_mask)
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
            return self.rollout_policy.act(observation, action_mask)
        knowledge = public_hand(table, seat)
        totals = np.zeros(len(candidates))
        counts = np.zeros(len(candidates))
        sim = self._simulator()
        attempts = 0
        while counts.min() < self.n_samples and attempts < 20 * self.n_samples:
            attempts += 1
            snapshot = self._determinize(sim, knowledge)
            if snapshot is None:
                continue
            for index, action in enumerate(candidates):
                sim.set_state(snapshot)
                totals[index] += self._play_out(sim, action, seat)
                counts[index] += 1
        if counts.min() == 0:
            return self.rollout_policy.act(observation, action_mask)
        return candidates[int(np.argmax(totals / counts))]

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
        pending = {seat: list(cards_) for seat, cards_ in sloughs.items()}
        for seat, name, face_up in knowledge.moves:
            while sim.table()["phase"] == "redeal":
                sim.step(cards.ACTION_PASS)
            if sim.table()["to_act"] != seat:
                return None
            if name is None:
                name = pending[seat].pop(0)
            action = cards.card_id(name) + (cards.ACTION_PLAY if face_up else cards.ACTION_SLOUGH)
            if not sim.observe(sim.agent_selection)["action_mask"][action]:
                return None
            sim.step(action)
        while sim.table()["phase"] == "redeal":
            sim.step(cards.ACTION_PASS)
        if sim.table()["to_act"] != knowledge.seat:
            return None
        return sim.get_state()

    def _play_out(self, sim, action: int, seat: int) -> float:
        agent_name = sim.possible_agents[seat]
        total = 0.0
        sim.step(action)
        total += sim.rewards[agent_name]
        while sim.agents and not all(sim.terminations[a] or sim.truncations[a] for a in sim.agents):
            acting = sim.agent_selection
            observation = sim.observe(acting)
            sim.step(self.rollout_policy.act(observation["observation"], observation["action_mask"]))
            total += sim.rewards[agent_name]
        return total
