"""How well the search player's inference places the hidden cards (``search:inference=...``).

``python -m madiao_mao.training.madiao.inference_quality --search samples=16,inference=model
--players model --hands 200 --seed 0`` plays seeded hands with ``players`` in every seat; at
every decision in play it compares two models of where each card the seat to act has not seen
lies (another seat's hand, or the stock):

- the uniform sampler: ``samples x pool`` deals consistent with what the seat has seen, equally
  likely (the search without inference);
- the search's inference (:meth:`MadiaoSearchAgent.posterior`): deals weighted by how likely the
  other seats' moves are under the move model, or the population after its Metropolis sweeps.

Each is scored by the log-loss of the true location of every unseen card (natural log, after
mixing 1% of a uniform guess over the four locations into each, so that a location no sampled
deal used costs ``log(400)`` rather than infinity), paired by decision, with a 95% interval over
hands; the effective sample size of the weights; and the calibration of the inferred
probabilities (bins of predicted probability against how often the card was there).
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
import tyro

from madiao_env import cards
from madiao_mao.agents.madiao.search import (
    IN_STOCK,
    MadiaoSearchAgent,
    parse_search_options,
    public_hand,
    unseen_cards,
)
from madiao_mao.agents.registry import make_agent
from madiao_mao.training.cli_args import check_at_least, parse_dataclass, run_reporting_user_errors
from madiao_mao.training.madiao.matches import make_env
from madiao_mao.training.stats import MeanCI, markdown_table, mean_ci

#: Share of a uniform guess over the locations mixed into each model's probabilities.
UNIFORM_MIX = 0.01
LOCATIONS = cards.N_SEATS + 1  # four hands and the stock
CALIBRATION_BINS = np.array([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0 + 1e-9])


def location_probabilities(dealt_to: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``P(card c dealt to location l)`` (``[40, 5]``) from deals' ``dealt_to`` rows (``[K, 40]``)
    and their weights (summing to one), mixed with ``UNIFORM_MIX`` of a uniform guess."""
    onehot = np.zeros((dealt_to.shape[0], cards.N_CARDS, LOCATIONS))
    np.put_along_axis(onehot, dealt_to[:, :, None].astype(np.int64), 1.0, axis=2)
    probabilities = np.einsum("k,kcl->cl", weights, onehot)
    return (1.0 - UNIFORM_MIX) * probabilities + UNIFORM_MIX / LOCATIONS


@dataclass
class InferenceQuality:
    """What ``measure`` gathered, decision by decision."""

    hand: list[int] = field(default_factory=list)
    uniform_loss: list[float] = field(default_factory=list)
    inferred_loss: list[float] = field(default_factory=list)
    effective_samples: list[float] = field(default_factory=list)
    deals_weighed: list[int] = field(default_factory=list)
    predicted: list[float] = field(default_factory=list)
    """The inferred probability of every location of every unseen card, for calibration."""
    happened: list[bool] = field(default_factory=list)

    def _by_hand(self, values: np.ndarray) -> MeanCI:
        hands = np.asarray(self.hand)
        return mean_ci([values[hands == h].mean() for h in np.unique(hands)])

    def uniform(self) -> MeanCI:
        return self._by_hand(np.asarray(self.uniform_loss))

    def inferred(self) -> MeanCI:
        return self._by_hand(np.asarray(self.inferred_loss))

    def gain(self) -> MeanCI:
        """Uniform minus inferred log-loss per unseen card (positive: the inference places better)."""
        return self._by_hand(np.asarray(self.uniform_loss) - np.asarray(self.inferred_loss))

    def calibration(self) -> list[tuple[str, int, float, float]]:
        """(bin, count, mean predicted probability, observed frequency) per probability bin."""
        predicted, happened = np.asarray(self.predicted), np.asarray(self.happened, dtype=np.float64)
        rows = []
        for low, high in itertools.pairwise(CALIBRATION_BINS):
            inside = (predicted >= low) & (predicted < high)
            if inside.any():
                label = f"{low:.1f}-{min(high, 1.0):.1f}"
                rows.append(
                    (
                        label,
                        int(inside.sum()),
                        float(predicted[inside].mean()),
                        float(happened[inside].mean()),
                    )
                )
        return rows


def measure(search: str, players: str, *, hands: int, seed: int) -> InferenceQuality:
    """Play ``hands`` seeded hands with ``players`` in every seat and score the search's inference
    (``search``: its options, e.g. ``samples=16,inference=model,pool=4,sweeps=4``) at every
    decision in play with two or more legal moves, against as many uniform consistent deals as it
    weighs (see the module doc)."""
    budget = parse_search_options(search)
    if budget.inference == "none" and budget.sampler == "uniform":
        raise ValueError("the search options name no inference and no learned sampler: nothing to compare")
    env = make_env()
    agent = MadiaoSearchAgent(env, budget=budget, seed=seed)
    lineup = [make_agent(players, "madiao", seed=seed + seat, env=env) for seat in range(cards.N_SEATS)]
    quality = InferenceQuality()
    for hand in range(hands):
        env.reset(seed=seed * 100_003 + hand)
        for name in env.agent_iter():
            seen, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            seat = env.possible_agents.index(name)
            table = env.unwrapped.table()
            if table["phase"] == "play" and seen["action_mask"].sum() > 1:
                _score_decision(agent, table, quality, hand)
            env.step(lineup[seat].act(seen["observation"], seen["action_mask"]))
    env.close()
    return quality


def _score_decision(agent: MadiaoSearchAgent, table: dict, quality: InferenceQuality, hand: int) -> None:
    seat = table["to_act"]
    knowledge = public_hand(table, seat)
    passed = agent.redeal_passed(table)
    posterior = agent.posterior(knowledge, passed)
    wanted = agent.n_samples * (1 if agent.move_model is None else agent.budget.pool)
    pool = agent.imagine_batch(knowledge, wanted, passed, uniform=True)
    if posterior is None or not pool:
        return
    deals, weights, effective = posterior
    truth = np.full(cards.N_CARDS, IN_STOCK, dtype=np.int64)
    for holder, hand_now in enumerate(table["hands"]):
        truth[[cards.card_id(name) for name in hand_now]] = holder
    for holder, name, _face_up, _trick in table["history"]:
        truth[cards.card_id(name)] = holder
    unseen = unseen_cards(knowledge)
    uniform_weights = np.full(len(pool), 1.0 / len(pool))
    uniform = location_probabilities(np.stack([deal.dealt_to for deal in pool]), uniform_weights)
    inferred = location_probabilities(np.stack([deal.dealt_to for deal in deals]), weights)
    quality.hand.append(hand)
    quality.uniform_loss.append(float(-np.log(uniform[unseen, truth[unseen]]).mean()))
    quality.inferred_loss.append(float(-np.log(inferred[unseen, truth[unseen]]).mean()))
    quality.effective_samples.append(effective)
    quality.deals_weighed.append(len(pool))
    others = [location for location in range(LOCATIONS) if location != seat]
    quality.predicted += inferred[np.ix_(unseen, others)].ravel().tolist()
    quality.happened += (truth[unseen, None] == np.array(others)).ravel().tolist()


def quality_markdown(quality: InferenceQuality, search: str, players: str) -> str:
    """The report: log-loss of both models, the gain, the effective sample size, calibration."""
    decisions, hands = len(quality.hand), len(set(quality.hand))
    summary = markdown_table(
        ["model of the unseen cards", "log-loss per unseen card", "decisions", "hands"],
        [
            ["uniform over consistent deals", str(quality.uniform()), decisions, hands],
            [f"`search:{search}`", str(quality.inferred()), decisions, hands],
            ["gain (uniform - inferred)", str(quality.gain()), decisions, hands],
        ],
    )
    effective = np.asarray(quality.effective_samples)
    calibration = markdown_table(
        ["inferred probability", "locations", "mean predicted", "observed frequency"],
        [[label, count, f"{mean:.3f}", f"{freq:.3f}"] for label, count, mean, freq in quality.calibration()],
    )
    weighed = np.mean(quality.deals_weighed)
    return (
        f"Players: `{players}` in every seat. Effective sample size of the likelihood weights: mean "
        f"{effective.mean():.1f}, median {np.median(effective):.1f} of {weighed:.0f} deals weighed per "
        f"decision.\n\n{summary}\n\nCalibration of the inferred probabilities:\n\n{calibration}\n"
    )


@dataclass
class InferenceQualityOptions:
    """How well the search's inference places the unseen cards (the module's doc)."""

    search: Annotated[str, tyro.conf.arg(metavar="OPTIONS")] = "inference=model"
    """The search player's options, with an inference (e.g. samples=16,inference=model,sweeps=4)."""
    players: Annotated[str, tyro.conf.arg(metavar="AGENT")] = "model"
    """The agent in every seat (an agent spec)."""
    hands: int = 100
    """Hands played."""
    seed: int = 0
    """Seed of the hands and the sampler."""

    def check(self) -> None:
        check_at_least("--hands", self.hands, 1)
        check_at_least("--seed", self.seed, 0)


def main(argv: list[str] | None = None) -> int:
    """``python -m madiao_mao.training.madiao.inference_quality --search OPTIONS --players P
    --hands N --seed S``: how well the search's inference places the unseen cards (module doc)."""

    prog = "python -m madiao_mao.training.madiao.inference_quality"

    def body() -> int:
        options = parse_dataclass(InferenceQualityOptions, sys.argv[1:] if argv is None else argv, prog=prog)
        options.check()
        quality = measure(options.search, options.players, hands=options.hands, seed=options.seed)
        print(quality_markdown(quality, options.search, options.players))
        return 0

    return run_reporting_user_errors(prog, body)


if __name__ == "__main__":
    sys.exit(main())
