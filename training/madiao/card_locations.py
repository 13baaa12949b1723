"""Fitting the card-location model (``madiao_mao.agents.madiao.card_locations``) on self-play hands.

``python -m madiao_mao.training.madiao.card_locations fit --players heuristic model --decisions
200000 --epochs 6 --seed 0 --out PATH.npz`` plays hands on the batched env with each named agent
in every seat (an equal share of the decisions each), keeps at every decision in play the seat's
history observation and where every card it has not seen was dealt (another seat's hand, by
relative seat, or the stock), fits an MLP by the cross-entropy of those locations (Adam, 10% of the
hands held out), and prints the held-out log-loss per unseen card next to the capacity prior's
(each card in each place in proportion to the unseen cards the place holds: what uniform deals
give before the plays are read). A seeded fit is reproducible on one machine.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
import tyro

from madiao_env import cards
from madiao_env.layout import SUMMARY_SLICES
from madiao_env.vector import MadiaoVectorEnv
from madiao_mao.agents.madiao.card_locations import (
    N_LOCATIONS,
    STOCK_LOCATION,
    CardLocationModel,
    capacity_prior,
)
from madiao_mao.agents.registry import make_agent
from madiao_mao.training.cli_args import check_at_least, parse_subcommands, run_reporting_user_errors

#: Marks a card the seat has seen (own, upcard, played face up): no target.
SEEN = -1
CARD_BITS = np.left_shift(np.uint64(1), np.arange(cards.N_CARDS, dtype=np.uint64))


@dataclass
class LocationData:
    """Decisions of self-play hands: history observations ``[M, HISTORY_SIZE]`` (int8), the
    location of every card (``[M, 40]``: 0-2 the relative seats 1-3, 3 the stock, ``SEEN``), and the
    hand each decision belongs to (for a split by hand)."""

    observations: np.ndarray
    locations: np.ndarray
    hands: np.ndarray


def collect(players: str, n_decisions: int, seed: int, n_envs: int = 256) -> LocationData:
    """``n_decisions`` decisions in play (two or more legal moves) of ``players`` in every seat."""
    player = make_agent(players, "madiao", seed=seed)
    # The players read the summary observation; the model reads the history of the same games
    # (two envs stepped with the same actions from the same seeds deal and play the same hands).
    table = MadiaoVectorEnv(n_envs, seed=seed, copy=False)
    history = MadiaoVectorEnv(n_envs, seed=seed, copy=False, obs_type="history")
    step, seen_by_history = table.reset(seed=seed), history.reset(seed=seed)
    played_by = np.full((n_envs, cards.N_CARDS), -1, dtype=np.int64)
    face_up = np.zeros((n_envs, cards.N_CARDS), dtype=bool)
    hand_ids = np.arange(n_envs)
    next_hand = n_envs
    observations, locations, hands = [], [], []
    games = np.arange(n_envs)
    kept = 0
    while kept < n_decisions:
        if not np.array_equal(step.to_act, seen_by_history.to_act):
            raise RuntimeError("the two envs' games diverged")
        seat = step.to_act
        in_play = step.action_mask[:, : cards.ACTION_REDEAL].any(axis=1) & (step.action_mask.sum(axis=1) > 1)
        rows = np.flatnonzero(in_play)
        if rows.size:
            observations.append(seen_by_history.observation[rows].copy())
            locations.append(
                _locations(table.hands()[rows], played_by[rows], face_up[rows], seat[rows], step, rows)
            )
            hands.append(hand_ids[rows].copy())
            kept += rows.size
        actions = player.act_batch(step.observation, step.action_mask)
        card = actions % cards.N_CARDS
        playing = actions < cards.ACTION_REDEAL
        played_by[games[playing], card[playing]] = seat[playing]
        face_up[games[playing], card[playing]] = actions[playing] < cards.ACTION_SLOUGH
        step, seen_by_history = table.step(actions), history.step(actions)
        ended = np.flatnonzero(step.terminated | step.truncated)
        played_by[ended], face_up[ended] = -1, False
        hand_ids[ended] = next_hand + np.arange(ended.size)
        next_hand += ended.size
    return LocationData(
        np.concatenate(observations)[:n_decisions],
        np.concatenate(locations)[:n_decisions],
        np.concatenate(hands)[:n_decisions],
    )


def _locations(hands, played_by, face_up, seat, step, rows) -> np.ndarray:
    """Each card's location relative to ``seat`` for the given games (``SEEN`` where it is known)."""
    holds = (hands[:, :, None] & CARD_BITS) != 0  # [n, 4, 40]
    holder = np.where(holds.any(axis=1), holds.argmax(axis=1), played_by)  # -1: in the stock
    relative = (holder - seat[:, None]) % cards.N_SEATS
    locations = np.where(holder < 0, STOCK_LOCATION, relative - 1)
    upcard = step.observation[rows][:, SUMMARY_SLICES["OBS_UPCARD"]].astype(bool)
    seen = (holder == seat[:, None]) | face_up | upcard
    return np.where(seen, SEEN, locations).astype(np.int8)


def held_out_decisions(data: LocationData, seed: int) -> np.ndarray:
    """Which decisions (``[M]`` bool) belong to the tenth of the hands a seeded fit holds out."""
    hand_ids = np.unique(data.hands)
    chosen = np.random.default_rng(seed).choice(hand_ids, max(1, hand_ids.size // 10), replace=False)
    return np.isin(data.hands, chosen)


def capacity_prior_loss(locations: np.ndarray) -> float:
    """Log-loss per unseen card of placing each in proportion to the unseen cards each place holds."""
    unseen = locations != SEEN
    counts = np.stack([(locations == place).sum(axis=1) for place in range(N_LOCATIONS)], axis=1)
    share = counts / unseen.sum(axis=1, keepdims=True)
    chosen = np.take_along_axis(share, np.where(unseen, locations, 0).astype(np.int64), axis=1)
    return float(-np.log(chosen[unseen]).mean())


def fit(
    data: LocationData,
    *,
    epochs: int,
    seed: int,
    hidden: int = 256,
    batch: int = 1024,
    lr: float = 3e-4,
    weight_decay: float = 1e-5,
) -> tuple[CardLocationModel, dict[str, float]]:
    """An MLP fitted to ``data`` (90% of its hands), and the held-out log-losses per unseen card:
    the model's and the capacity prior's."""
    import torch  # imported here: torch is the "train" extra

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    held_out = held_out_decisions(data, seed)
    train = np.flatnonzero(~held_out)
    size = data.observations.shape[1]
    network = torch.nn.Sequential(
        torch.nn.Linear(size, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, cards.N_CARDS * N_LOCATIONS),
    )
    # The last layer starts at zero: the untrained model is the capacity prior.
    torch.nn.init.zeros_(network[-1].weight)
    torch.nn.init.zeros_(network[-1].bias)
    optimizer = torch.optim.Adam(network.parameters(), lr=lr, weight_decay=weight_decay)

    def loss_of(rows: np.ndarray) -> torch.Tensor:
        observations = data.observations[rows]
        logits = network(torch.as_tensor(observations, dtype=torch.float32))
        logits = logits + torch.as_tensor(np.log(capacity_prior(observations)), dtype=torch.float32).reshape(
            len(rows), -1
        )
        targets = torch.as_tensor(data.locations[rows], dtype=torch.int64)
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, N_LOCATIONS), targets.reshape(-1), ignore_index=SEEN
        )

    test = np.flatnonzero(held_out)

    def snapshot() -> CardLocationModel:
        return CardLocationModel(
            [
                (module.weight.detach().numpy().T.copy(), module.bias.detach().numpy().copy())
                for module in network
                if isinstance(module, torch.nn.Linear)
            ]
        )

    # The epoch with the lowest held-out loss is kept (hands are few next to the decisions, and
    # later epochs fit the training hands' particulars).
    model, best = snapshot(), held_out_loss(snapshot(), data, test)
    for _ in range(epochs):
        order = rng.permutation(train.size)
        for start in range(0, train.size, batch):
            optimizer.zero_grad()
            loss = loss_of(train[order[start : start + batch]])
            loss.backward()
            optimizer.step()
        candidate = snapshot()
        if (loss_now := held_out_loss(candidate, data, test)) < best:
            model, best = candidate, loss_now
    return model, {
        "held_out_decisions": int(test.size),
        "model_log_loss": best,
        "capacity_prior_log_loss": capacity_prior_loss(data.locations[test]),
    }


def held_out_loss(model: CardLocationModel, data: LocationData, rows: np.ndarray) -> float:
    """The model's log-loss per unseen card on ``rows`` of ``data``."""
    losses = []
    for start in range(0, rows.size, 4096):
        chunk = rows[start : start + 4096]
        probabilities = model.probabilities(data.observations[chunk])
        targets = data.locations[chunk].astype(np.int64)
        unseen = targets != SEEN
        chosen = np.take_along_axis(probabilities, np.where(unseen, targets, 0)[:, :, None], axis=2)[:, :, 0]
        losses.append(-np.log(np.maximum(chosen[unseen], 1e-12)))
    return float(np.concatenate(losses).mean())


@dataclass
class FitOptions:
    """Fit a card-location model on self-play hands."""

    out: Annotated[str, tyro.conf.arg(metavar="PATH.npz")]
    """Where to save the model (.npz)."""
    players: Annotated[tuple[str, ...], tyro.conf.arg(metavar="AGENT [AGENT ...]")] = ("heuristic", "model")
    """Agents that play the hands."""
    decisions: int = 200_000
    """Decisions kept in all."""
    epochs: int = 6
    """Passes over the training decisions."""
    seed: int = 0
    """Seed of the hands and the fit."""

    def check(self) -> None:
        if not self.players:
            raise ValueError("--players: expected at least one agent")
        check_at_least("--decisions", self.decisions, 1)
        check_at_least("--epochs", self.epochs, 1)
        check_at_least("--seed", self.seed, 0)
        out = Path(self.out)
        if out.suffix != ".npz":
            raise ValueError(f"--out must name a .npz file, got {self.out}")
        if not out.parent.is_dir():
            raise ValueError(f"--out: the folder {out.parent} does not exist")


def main(argv: list[str] | None = None) -> int:
    """``python -m madiao_mao.training.madiao.card_locations fit --players P [P ...] --decisions N
    --epochs E --seed S --out PATH.npz``: fit and save a card-location model (module doc)."""

    prog = "python -m madiao_mao.training.madiao.card_locations"

    def body() -> int:
        options = parse_subcommands({"fit": FitOptions}, sys.argv[1:] if argv is None else argv, prog=prog)
        options.check()
        share = options.decisions // len(options.players)
        parts = [collect(players, share, options.seed + k) for k, players in enumerate(options.players)]
        offset = 0
        for part in parts:  # hands of different players never share an id
            part.hands = part.hands + offset
            offset = int(part.hands.max()) + 1
        data = LocationData(
            *(np.concatenate([getattr(p, name) for p in parts]) for name in LocationData.__annotations__)
        )
        model, report = fit(data, epochs=options.epochs, seed=options.seed)
        out = Path(options.out)
        model.save(out)
        print(f"saved {out}: " + ", ".join(f"{key} {value:.4g}" for key, value in report.items()))
        return 0

    return run_reporting_user_errors(prog, body)


if __name__ == "__main__":
    sys.exit(main())
