"""A learned caller for Mao's players' calls: when to call a fault of the turn under judgement.

At ``calls="players"`` tables every other seat may call a fault of the turn just ended; a wrong
call ("Bad call") gives the caller the cards it meant to give. The Bayesian player calls the
fault its posterior finds most likely when that belief is at least ``call_threshold`` (0.8;
``madiao_mao.agents.mao.players.RuleBeliefAgent``). That posterior is not calibrated: it keeps a
uniform prior over the library, an ``eps`` for events it cannot explain, and is capped; a belief
of 0.9 built from two calls is not as safe as one built from twenty.

:class:`LearnedCallerAgent` plays as the Bayesian player and keeps its posterior, but decides its
calls with a model: for every call reason the window offers and the posterior does not rule out,
:func:`call_candidates` reads a few numbers from the seat's own view and posterior
(``CALL_FEATURES``: the posterior's belief in the fault, what kind of fault it is, whether the
base rules and the rules the seat knows make it one, how unsure the posterior still is and how
much it has seen), and a :class:`CallerModel` turns them into P(the call is correct). It calls the
reason most likely correct when that chance is at least the model's ``threshold``. Why one
threshold: a bad call costs the caller exactly the cards a correct one gives the mover (one card,
three for the two "Mao" reasons), so with ``w`` the value of a card given to another seat against
one taken, calling pays when ``P * w >= 1 - P``, i.e. ``P >= 1 / (1 + w)`` for every reason.

Nothing here reads the env: the features come from the seat's observation and the posterior that
observation built, so they cannot depend on the secret rules. The weights are a small JSON file
(``agents/pretrained/mao_caller.json``) that loads with numpy alone;
``python -m madiao_mao.training.mao.caller fit`` makes one (``docs/results.md`` has the command).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from madiao_mao.agents.data_files import note_read
from madiao_mao.agents.mao.beliefs import SeatView, hypotheses_from_sets, turn_faults
from madiao_mao.agents.mao.players import BayesianRuleAgent, RulePosterior
from mao_env import cards

#: The caller shipped with the package (``docs/results.md``: how it was fitted, how it calls).
PRETRAINED_CALLER = Path(__file__).resolve().parent.parent / "pretrained" / "mao_caller.json"

#: The kinds of call reason a feature tells apart (the phrase behind a "failure to say" is left
#: out on purpose: which phrases secret rules ask for differs between training and held-out rules).
REASON_GROUPS = ("bad card", "failure to say", "hand size", "talking", "mao in vain")
_HAND_SIZE_REASONS = (cards.LAST_CARD, cards.MAO)  # "Last card" and "Mao" forgotten: hand sizes


def reason_group(reason: int) -> int:
    """The index in ``REASON_GROUPS`` of a call reason."""
    if reason == cards.CALL_REASON_BAD_CARD:
        return 0
    if reason == cards.CALL_REASON_TALKING:
        return 3
    if reason == cards.CALL_REASON_MAO:
        return 4
    return 2 if reason in _HAND_SIZE_REASONS else 1


#: The features of one (call window, reason), in order.
CALL_FEATURES: tuple[str, ...] = (
    "belief_logit",  # log-odds of the posterior's belief that the turn deserves the call (clipped)
    "belief_certain",  # 1 if the posterior is sure of it (every rule set it holds says so)
    "known_fault",  # 1 if the base rules and the rules the seat knows make it a fault
    *(f"group_{name.replace(' ', '_')}" for name in REASON_GROUPS),
    "unknown_rules",  # active rules the seat does not know
    "certainty",  # the weight of the most likely rule set
    "log_support",  # log of the number of rule sets the posterior holds
    "log_events_since_new_rule",  # log(1 + public events since an unknown rule became active)
)
_LOGIT_CLIP = 1e-4


class CallCandidates(NamedTuple):
    """The calls a seat may make in a call window and what it knows of each."""

    reasons: np.ndarray
    """``[k]``: the call reasons the mask offers that the posterior does not rule out."""
    belief: np.ndarray
    """``[k]``: the posterior's belief that the turn deserves each (the Bayesian player's number)."""
    features: np.ndarray
    """``[k, len(CALL_FEATURES)]`` float64."""


def call_candidates(
    view: SeatView,
    mask: np.ndarray,
    posterior: RulePosterior,
    *,
    talking: bool = True,
    thank_you: bool = False,
) -> CallCandidates:
    """In a call window: the :class:`CallCandidates`. Reads only the seat's view, its mask and
    its posterior (which its own observations built)."""
    hypotheses, weights = posterior.hypotheses, posterior.weights
    belief = weights @ turn_faults(hypotheses, view, talking=talking, thank_you=thank_you)
    offered = np.asarray(mask)[cards.CALL_0 : cards.NO_CALL] > 0
    reasons = np.flatnonzero(offered & (belief > 0.0))
    features = np.zeros((reasons.size, len(CALL_FEATURES)), dtype=np.float64)
    if not reasons.size:
        return CallCandidates(reasons, belief[reasons], features)
    known_rules = hypotheses_from_sets([set(view.known)])
    known = turn_faults(known_rules, view, talking=talking, thank_you=thank_you)[0]
    p = np.clip(belief[reasons], _LOGIT_CLIP, 1.0 - _LOGIT_CLIP)
    column = {name: index for index, name in enumerate(CALL_FEATURES)}
    features[:, column["belief_logit"]] = np.log(p / (1.0 - p))
    features[:, column["belief_certain"]] = belief[reasons] >= 1.0 - 1e-9
    features[:, column["known_fault"]] = known[reasons]
    groups = np.array([reason_group(int(r)) for r in reasons])
    features[np.arange(reasons.size), column["group_bad_card"] + groups] = 1.0
    features[:, column["unknown_rules"]] = max(posterior.n_unknown, 0)
    features[:, column["certainty"]] = float(weights.max())
    features[:, column["log_support"]] = math.log(weights.size)
    features[:, column["log_events_since_new_rule"]] = math.log1p(posterior.events_since_new_rule)
    return CallCandidates(reasons, belief[reasons], features)


@dataclass(frozen=True)
class CallerModel:
    """A logistic regression over standardised ``CALL_FEATURES``: P(correct) =
    sigmoid(bias + weights . (features - mean) / scale); a call is made at ``threshold`` or above.
    ``provenance``: how it was made (the command, the data, the validation figures)."""

    weights: np.ndarray
    bias: float
    mean: np.ndarray
    scale: np.ndarray
    threshold: float
    provenance: dict[str, Any]

    def __post_init__(self) -> None:
        width = len(CALL_FEATURES)
        for name in ("weights", "mean", "scale"):
            value = np.asarray(getattr(self, name), dtype=np.float64)
            if value.shape != (width,) or not np.isfinite(value).all():
                raise ValueError(f"caller model: {name} must be {width} finite numbers, got {value.shape}")
            object.__setattr__(self, name, value)
        if not (self.scale > 0).all():
            raise ValueError("caller model: every scale must be > 0")
        if not math.isfinite(self.bias):
            raise ValueError(f"caller model: bias must be finite, got {self.bias!r}")
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"caller model: threshold must be in (0, 1], got {self.threshold!r}")

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """P(correct) of each row of ``features`` (``[k, len(CALL_FEATURES)]``)."""
        z = self.bias + ((np.asarray(features, dtype=np.float64) - self.mean) / self.scale) @ self.weights
        return 1.0 / (1.0 + np.exp(-z))

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(CALL_FEATURES),
            "weights": self.weights.tolist(),
            "bias": self.bias,
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "threshold": self.threshold,
            "provenance": self.provenance,
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> CallerModel:
        """A model saved by :meth:`save`; ``ValueError`` naming the problem for a file that is not
        one (or was made for other features)."""
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ValueError(f"no caller model at {path}") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"{path} is not a caller model ({error})") from None
        note_read(path)
        if not isinstance(data, dict) or data.get("features") != list(CALL_FEATURES):
            raise ValueError(f"{path} is not a caller model for these features ({', '.join(CALL_FEATURES)})")
        try:
            return cls(
                weights=np.asarray(data["weights"], dtype=np.float64),
                bias=float(data["bias"]),
                mean=np.asarray(data["mean"], dtype=np.float64),
                scale=np.asarray(data["scale"], dtype=np.float64),
                threshold=float(data["threshold"]),
                provenance=dict(data.get("provenance", {})),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path} is not a valid caller model ({error})") from None


class LearnedCallerAgent(BayesianRuleAgent):
    """Plays as the Bayesian player (same posterior, same play and speech) but decides its calls
    with a :class:`CallerModel` (default: the shipped one): the offered reason most likely correct,
    if that chance is at least the model's threshold; else ``NO_CALL``. ``model``: a model or the
    path of one. The other keyword arguments are :class:`BayesianRuleAgent`'s."""

    name = "caller"

    def __init__(self, seed: int | None = None, *, model: CallerModel | str | Path | None = None, **kwargs):
        super().__init__(seed, **kwargs)
        if not isinstance(model, CallerModel):
            model = CallerModel.load(PRETRAINED_CALLER if model is None else model)
        self.model = model

    def decide_from(
        self, posterior: RulePosterior, view: SeatView, mask: np.ndarray, legal: np.ndarray
    ) -> int:
        if not mask[cards.NO_CALL]:
            return super().decide_from(posterior, view, mask, legal)
        candidates = call_candidates(view, mask, posterior, talking=self.talking, thank_you=self.thank_you)
        if not candidates.reasons.size:
            return cards.NO_CALL
        chance = self.model.probabilities(candidates.features)
        best = int(np.argmax(chance))
        if chance[best] >= self.model.threshold:
            return cards.CALL_0 + int(candidates.reasons[best])
        return cards.NO_CALL
