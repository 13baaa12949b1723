"""A Mao policy's memory of the whole game: the Bayesian player's posterior, read as policy inputs.

A feed-forward policy over the observation sees the last ``n_events`` public events, about two to
four turns of each player; what it can infer about a secret rule is gone once the call that
revealed it leaves the window, and measured so: learned policies kept violating an unknown rule at
the same rate from its first ten turns to turns 50-100 (``docs/results.md``). The public record of
calls is exactly what :class:`~madiao_mao.agents.mao.players.RulePosterior` folds, event by event, into a
posterior over the public rule library. This module hands a policy that posterior, as the
quantities a player decides with, one table of named pieces (``BELIEF_PIECES``):

    play_good     [53]  start of a turn: the belief that playing each held card is a good play
    say_required  [16]  after playing or drawing: the belief that each phrase not yet said is required
    say_talking   [16]  ... that saying it would draw a "talking" call
    mao_due        [1]  ... that "Mao", not yet said, is due (a flawless winning turn so far)
    call_fault    [19]  a call window (players' calls): the belief that the turn deserves each call
    unknown_rules  [1]  how many active rules the seat does not know (the posterior's support)
    certainty      [1]  the weight of the most likely rule set

A piece that does not apply to the decision at hand is zero. The belief is the posterior of the
seat's own observations (what it saw, the public library, the rules it knows), so a policy
reading it knows nothing its seat may not know. The inputs are computed outside the network (an
exact Bayes filter over the public events, numpy): the policy is the MLP over the observation and
these inputs (``madiao_mao.agents.mao.features.MaoBeliefPolicy``), and the agent that plays it keeps one
posterior per game seat (``madiao_mao.agents.mao.policy.BeliefPolicyAgent``), like the Bayesian player.

The same functions turn any belief into these inputs (the base-rules player's "no secret rule",
the oracle's true rule set), and the scripted players decide from the same quantities
(``madiao_mao.agents.mao.players.play_chances``, ``speech_chances``, ``fault_chances``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from madiao_mao.agents.mao.beliefs import SeatView, parse_observations
from madiao_mao.agents.mao.players import (
    KeyedPosteriors,
    RulePosterior,
    SpeechChances,
    fault_chances,
    play_chances,
    speech_chances,
)
from madiao_mao.agents.mao.posterior_batch import (
    fault_chances_rows,
    observe_all,
    play_chances_rows,
    speech_chances_rows,
)
from mao_env import cards

#: The belief inputs, in order: (name, width).
BELIEF_PIECES: tuple[tuple[str, int], ...] = (
    ("play_good", cards.N_CARD_TYPES),
    ("say_required", cards.N_PHRASES),
    ("say_talking", cards.N_PHRASES),
    ("mao_due", 1),
    ("call_fault", cards.N_CALL_REASONS),
    ("unknown_rules", 1),
    ("certainty", 1),
)


def _slices(pieces: tuple[tuple[str, int], ...]) -> dict[str, slice]:
    slices, start = {}, 0
    for name, width in pieces:
        slices[name] = slice(start, start + width)
        start += width
    return slices


BELIEF_SLICES: dict[str, slice] = _slices(BELIEF_PIECES)
BELIEF_WIDTH: int = sum(width for _name, width in BELIEF_PIECES)


def belief_inputs(
    view: SeatView,
    mask: np.ndarray,
    hypotheses: np.ndarray,
    weights: np.ndarray,
    *,
    talking: bool = True,
    thank_you: bool = False,
) -> np.ndarray:
    """The belief inputs (float32 ``[BELIEF_WIDTH]``, module doc) of one decision of the seat whose
    view and mask these are, under the belief (rule-set ``hypotheses [N, R]``, ``weights [N]``).
    The decision kinds are told apart as the scripted players tell them (``RuleBeliefAgent.decide``):
    choosing a rule, a call window, the start of a turn, speaking."""
    mask = np.asarray(mask)
    inputs = np.zeros(BELIEF_WIDTH, dtype=np.float32)
    inputs[BELIEF_SLICES["unknown_rules"]] = max(int(np.rint(hypotheses[0].sum())) - len(view.known), 0)
    inputs[BELIEF_SLICES["certainty"]] = float(np.max(weights))
    if mask[cards.CHOOSE_RULE_0 :].any():
        return inputs
    if mask[cards.NO_CALL]:
        inputs[BELIEF_SLICES["call_fault"]] = fault_chances(
            view, hypotheses, weights, talking=talking, thank_you=thank_you
        )
    elif mask[cards.DRAW]:
        held = np.flatnonzero(mask[: cards.N_CARD_TYPES])
        play_good = np.zeros(cards.N_CARD_TYPES, dtype=np.float32)
        if held.size:
            play_good[held] = play_chances(view, held, hypotheses, weights)
        inputs[BELIEF_SLICES["play_good"]] = play_good
    else:
        speech = speech_chances(view, hypotheses, weights, talking=talking, thank_you=thank_you)
        _write_speech(inputs, view, speech)
    return inputs


def _write_speech(inputs: np.ndarray, view: SeatView, speech: SpeechChances) -> None:
    """The speaking seat's inputs: what saying each phrase NOW would do. A phrase already said is
    neither still required nor talking when said again (the judge reads the set of phrases said)."""
    unsaid = ((view.said >> np.arange(cards.N_PHRASES)) & 1) == 0
    inputs[BELIEF_SLICES["say_required"]] = speech.required * unsaid
    inputs[BELIEF_SLICES["say_talking"]] = speech.talking * unsaid
    inputs[BELIEF_SLICES["mao_due"]] = speech.mao * unsaid[cards.MAO]


def belief_inputs_rows(
    views: list[SeatView],
    masks: np.ndarray,
    posteriors: list[RulePosterior],
    *,
    talking: bool = True,
    thank_you: bool = False,
) -> np.ndarray:
    """:func:`belief_inputs` of many decisions (``[len(views), BELIEF_WIDTH]``), each row's
    ``views[i]``, ``masks[i]`` and posterior, with the judgements of every speaking seat's turn,
    every turn under judgement in a call window and every held card's verdict made in one kernel
    call each (:mod:`~madiao_mao.agents.mao.posterior_batch`); the same floats (the test suite
    checks it): each belief is the same numpy product of the weights with the same 0/1 matrix."""
    n_rows = len(views)
    out = np.zeros((n_rows, BELIEF_WIDTH), dtype=np.float32)
    if not n_rows:
        return out
    masks = np.asarray(masks).astype(bool, copy=False)
    # The pieces every row has, for all rows at once: exact whatever the grouping (a count of
    # whole rules, a maximum).
    n_rules = np.rint(np.stack([posterior.hypotheses[0] for posterior in posteriors]).sum(axis=1))
    n_known = np.array([len(view.known) for view in views])
    out[:, BELIEF_SLICES["unknown_rules"]] = np.maximum(n_rules.astype(np.int64) - n_known, 0)[:, None]
    weights_of = [posterior.weights for posterior in posteriors]
    support_starts = np.cumsum([0] + [weights.size for weights in weights_of[:-1]])
    largest = np.maximum.reduceat(np.concatenate(weights_of), support_starts)
    out[:, BELIEF_SLICES["certainty"]] = largest[:, None]
    # The decision kinds, told apart as the one-row function tells them.
    undecided = ~masks[:, cards.CHOOSE_RULE_0 :].any(axis=1)
    calls_window = undecided & masks[:, cards.NO_CALL]
    undecided &= ~calls_window
    turn_start = undecided & masks[:, cards.DRAW]
    speaking = np.flatnonzero(undecided & ~masks[:, cards.DRAW])
    calling = np.flatnonzero(calls_window)
    if calling.size:
        rows = [(views[i], posteriors[i].hypotheses, posteriors[i].weights) for i in calling.tolist()]
        out[calling, BELIEF_SLICES["call_fault"]] = np.stack(fault_chances_rows(rows, thank_you, talking))
    held_rows, held_cards = np.nonzero(masks[:, : cards.N_CARD_TYPES] & turn_start[:, None])
    if held_rows.size:
        starting, first_card = np.unique(held_rows, return_index=True)
        held_of = np.split(held_cards, first_card[1:])
        rows = [
            (views[i], held, posteriors[i].hypotheses, posteriors[i].weights)
            for i, held in zip(starting.tolist(), held_of, strict=True)
        ]
        play_good = np.concatenate(play_chances_rows(rows))
        out[held_rows, BELIEF_SLICES["play_good"].start + held_cards] = play_good
    if speaking.size:
        rows = [(views[i], posteriors[i].hypotheses, posteriors[i].weights) for i in speaking.tolist()]
        speech = speech_chances_rows(rows, thank_you, talking)
        said = np.array([views[i].said for i in speaking.tolist()], dtype=np.int64)
        unsaid = ((said[:, None] >> np.arange(cards.N_PHRASES)) & 1) == 0
        # What saying each phrase now would do: one already said is neither still required nor
        # talking when said again (``_write_speech``, the one-row function's).
        required = np.stack([chances.required for chances in speech])
        out[speaking, BELIEF_SLICES["say_required"]] = required * unsaid
        talking_if_said = np.stack([chances.talking for chances in speech])
        out[speaking, BELIEF_SLICES["say_talking"]] = talking_if_said * unsaid
        mao = np.array([chances.mao for chances in speech], dtype=np.float64)
        out[speaking, BELIEF_SLICES["mao_due"]] = (mao * unsaid[:, cards.MAO])[:, None]
    return out


class BeliefTracker:
    """Posteriors of many game seats (:class:`~madiao_mao.agents.mao.players.KeyedPosteriors`), turned into
    belief inputs decision by decision.

    For each decision: :meth:`inputs` takes the seat's observation into its posterior and returns
    the inputs; :meth:`note_actions` then tells the posterior what the seat did (the next
    observation's new events are found by it). :meth:`forget` drops ended games' seats.
    ``posterior`` holds the :class:`RulePosterior` options of the table's variants
    (``madiao_mao.agents.mao.players.posterior_options``); default: the default table's.
    """

    def __init__(self, posterior: dict[str, Any] | None = None) -> None:
        self.posteriors = KeyedPosteriors(**(posterior or {}))
        probe = self.posteriors.default
        self.talking, self.thank_you = probe.talking, probe.thank_you

    def reset(self) -> None:
        self.posteriors.reset()

    def forget(self, keys: np.ndarray) -> None:
        self.posteriors.forget(keys)

    def seat_posteriors(self, n_rows: int, keys: np.ndarray | None) -> list[RulePosterior]:
        """The posterior of each row's key (``keys`` checked by ``KeyedPosteriors.keys``; None:
        the row indices). ``posteriors.default`` is the one of a player following one seat."""
        return [self.posteriors[int(key)] for key in KeyedPosteriors.keys(n_rows, keys)]

    def inputs(
        self, observations: np.ndarray, masks: np.ndarray, posteriors: list[RulePosterior]
    ) -> np.ndarray:
        """``[M, BELIEF_WIDTH]``: each row's observation taken into its posterior, then its inputs
        (rows with an empty mask, whose seat is not to act, are left alone and get zeros)."""
        observations = np.asarray(observations, dtype=np.float32)
        masks = np.asarray(masks)
        out = np.zeros((masks.shape[0], BELIEF_WIDTH), dtype=np.float32)
        acting = np.flatnonzero(masks.any(axis=1))
        views = parse_observations(observations, acting)
        acting_posteriors = [posteriors[row] for row in acting]
        observe_all(acting_posteriors, views)
        out[acting] = belief_inputs_rows(
            views, masks[acting], acting_posteriors, talking=self.talking, thank_you=self.thank_you
        )
        return out

    def policy_observations(
        self, observations: np.ndarray, masks: np.ndarray, posteriors: list[RulePosterior]
    ) -> np.ndarray:
        """``[M, table + BELIEF_WIDTH]``: each row's table observation with its :meth:`inputs`
        appended (what a belief policy reads)."""
        inputs = self.inputs(observations, masks, posteriors)
        return np.concatenate([np.asarray(observations, dtype=np.float32), inputs], axis=1)

    @staticmethod
    def note_actions(posteriors: list[RulePosterior], actions: np.ndarray) -> None:
        """Tell each row's posterior the action its seat took (rows with action -1 did nothing)."""
        for posterior, action in zip(posteriors, np.asarray(actions).ravel(), strict=True):
            if action >= 0:
                posterior.note_action(int(action))
