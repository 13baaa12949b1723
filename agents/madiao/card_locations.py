"""A learned card-location model: where the cards a seat has not seen were dealt.

``CardLocationModel`` maps a seat's history observation (``obs_type="history"``: its dealt hand,
the upcard, every play of the hand by relative seat, the redeal passes) to, for every card, the
probability that it was dealt to each of the three other seats (relative seats 1-3) or lies in
the stock: ``P(card c at location l | what the seat has seen)``. It is the capacity prior (each
unseen card in each place in proportion to the unseen cards the place holds: the stock 7, another
seat 8 less the cards it played face up; all public) corrected by a small MLP whose logits are
added to the prior's log (so an untrained network is the prior, and the fit learns only what the
plays say beyond the counts). It is fitted by the masked cross-entropy of the true locations of
the unseen cards in self-play hands
(``madiao_mao.training.madiao.card_locations``); its log-loss and calibration against the uniform
sampler are in docs/results.md. The weights are a numpy ``.npz``: playing needs no torch.

The search player draws deals from it (``search:sampler=learned``): :func:`sample_orders` places
each unseen card in turn by the model's probabilities among the places that still have room, so
every deal has the right number of cards in each hand and the stock (the order is random, and the
probabilities are the model's marginals, so the draw is a proposal that respects capacities, not
the model's exact joint).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from madiao_env import cards
from madiao_env.layout import HIST_SLOT_SIZE, HISTORY_SLICES
from madiao_env.options import MadiaoOptions
from madiao_mao.agents.data_files import note_read

#: Locations of a card the seat has not seen: the other seats (relative 1, 2, 3), then the stock.
N_LOCATIONS = cards.N_SEATS
STOCK_LOCATION = cards.N_SEATS - 1
HISTORY_SIZE = MadiaoOptions(obs_type="history").obs_size
#: The card-location model shipped with the package (trained by the command in docs/results.md).
PRETRAINED_CARD_LOCATIONS = Path(__file__).resolve().parents[1] / "pretrained" / "madiao_card_locations.npz"


class CardLocationModel:
    """``P(card at location | history observation)`` from an MLP's weights (see the module doc)."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]]) -> None:
        if not layers or layers[0][0].shape[0] != HISTORY_SIZE:
            raise ValueError(f"a card-location model reads history observations of length {HISTORY_SIZE}")
        if layers[-1][0].shape[1] != cards.N_CARDS * N_LOCATIONS:
            raise ValueError(f"a card-location model outputs {cards.N_CARDS} x {N_LOCATIONS} logits")
        self.layers = [(np.asarray(w, dtype=np.float32), np.asarray(b, dtype=np.float32)) for w, b in layers]

    @classmethod
    def load(cls, path: str | Path) -> CardLocationModel:
        """A model saved by :meth:`save` (a clear error for a missing or foreign file)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no card-location model at {path}")
        note_read(path)
        with np.load(path) as saved:
            count = sum(1 for key in saved.files if key.startswith("weight_"))
            if count == 0:
                raise ValueError(f"{path} is not a card-location model (no weight_0 array)")
            return cls([(saved[f"weight_{k}"], saved[f"bias_{k}"]) for k in range(count)])

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        arrays = {}
        for k, (weight, bias) in enumerate(self.layers):
            arrays[f"weight_{k}"], arrays[f"bias_{k}"] = weight, bias
        np.savez_compressed(path, **arrays)
        return path

    def probabilities(self, observations: np.ndarray) -> np.ndarray:
        """``[N, 40, 4]``: each card's probability of each location, from history observations
        ``[N, HISTORY_SIZE]`` (rows sum to one over the locations; seen cards are meaningless)."""
        hidden = np.asarray(observations, dtype=np.float32)
        if hidden.ndim != 2 or hidden.shape[1] != HISTORY_SIZE:
            raise ValueError(f"expected history observations [N, {HISTORY_SIZE}], got shape {hidden.shape}")
        prior = capacity_prior(observations)
        for weight, bias in self.layers[:-1]:
            hidden = np.maximum(hidden @ weight + bias, 0.0)
        weight, bias = self.layers[-1]
        logits = (hidden @ weight + bias).reshape(-1, cards.N_CARDS, N_LOCATIONS).astype(np.float64)
        logits += np.log(prior)
        logits -= logits.max(axis=2, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=2, keepdims=True)


def capacity_prior(observations: np.ndarray) -> np.ndarray:
    """``[N, 40, 4]``: each place's share of the unseen cards it holds, the same for every card,
    read from history observations (the stock holds 7; relative seat ``r`` 8 less the cards it
    played face up)."""
    observations = np.asarray(observations)
    plays = observations[:, HISTORY_SLICES["HIST_PLAYS"]].reshape(observations.shape[0], -1, HIST_SLOT_SIZE)
    seat, face_down = plays[:, :, : cards.N_SEATS], plays[:, :, -1]
    face_up_plays = (seat * (1 - face_down)[:, :, None]).sum(axis=1)  # [N, 4] by relative seat
    room = np.concatenate(
        [cards.HAND_SIZE - face_up_plays[:, 1:], np.full((observations.shape[0], 1), cards.STOCK_SIZE - 1)],
        axis=1,
    ).astype(np.float64)
    share = room / room.sum(axis=1, keepdims=True)
    return np.repeat(np.maximum(share, 1e-6)[:, None, :], cards.N_CARDS, axis=1)


def sample_places(
    probabilities: np.ndarray, room: np.ndarray, n: int, rng: np.random.Generator
) -> np.ndarray:
    """``n`` placements of the unseen cards (``[n, unseen]`` location indices): card ``j`` (in a
    random order, the same for all ``n``) goes to location ``l`` with probability proportional to
    ``probabilities[j, l]`` among the locations that still have room (``room[l]`` cards each)."""
    unseen = probabilities.shape[0]
    if room.sum() != unseen:
        raise ValueError(f"the locations hold {int(room.sum())} cards, but {unseen} are to be placed")
    places = np.empty((n, unseen), dtype=np.int64)
    left = np.tile(np.asarray(room, dtype=np.int64), (n, 1))
    rows = np.arange(n)
    for card in rng.permutation(unseen):
        # A small floor keeps every location with room possible whatever the model says.
        weights = (probabilities[card] + 1e-6) * (left > 0)
        cumulative = np.cumsum(weights, axis=1)
        draws = rng.random(n) * cumulative[:, -1]
        chosen = (cumulative < draws[:, None]).sum(axis=1)
        places[:, card] = chosen
        left[rows, chosen] -= 1
    return places
