"""Scripted Mao players: base rules only, an oracle of the secret rules, and Bayesian rule inference.

All three decide the same way, from a *belief* over which library rules are active (a list of
rule-set hypotheses with weights, see ``madiao_mao.agents.mao.beliefs``):

- at the start of a turn, play the held card most likely to be good (ties at random) if that
  chance is at least ``play_threshold``, else draw (with a seven chain pending, drawing takes it);
- then say each phrase more likely required than "talking" (a Jack's player first names the
  suit it holds most of), "Mao" last when a flawless winning turn is likely, and end the turn;
- as a round winner choosing a rule, propose the offered rule it most suspects is already in force
  without being sure of it, ties at random (:func:`rules_to_propose`): a refusal is free news of
  a secret rule, and an accepted proposal adds a rule like any other;
- in a call window (``calls="players"``), call the fault of the turn under judgement most likely
  committed if that chance is at least ``call_threshold``, one call per decision, and pass
  (``NO_CALL``) when no fault is that likely.

The belief is what differs:

- :class:`BaseRulesAgent` believes no secret rule is active (it knows only the base rules);
- :class:`OracleAgent` reads every active rule from the env it sits in (``active_rules()``, Mao
  Master knowledge: the upper bound), so it never draws a call;
- :class:`BayesianRuleAgent` keeps a posterior over rule sets (:class:`RulePosterior`), updated
  from the public events in its own observation: for every new event it checks each hypothesis
  against the judge's verdict (good play or "bad card", the "failure to say 'P'" calls, the number
  of "talking" calls, cards a rule made the next seat take). It knows how many rules are active
  (observed), which ones it authored, which ones the Mao Master refused when it proposed them (in
  force: every rule set without one is impossible), and when another seat introduced one; nothing
  else. With
  players' calls an uncalled fault is no evidence: only the calls made are (a correct call says
  the fault happened, a bad call that it did not), and it calls when its posterior that a fault
  happened is at least ``call_threshold``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from madiao_mao.agents.base import Agent, batch_arrays, legal_actions
from madiao_mao.agents.mao.beliefs import (
    HAND_SIZE_PHRASES,
    N_RULES,
    PHASE_CHOOSE,
    RANK,
    SUIT,
    PublicEvent,
    SeatView,
    bits_to_row,
    first_suit_said,
    forced_cards,
    hypotheses_from_sets,
    judge_turn,
    mao_due,
    own_turn_judgement,
    parse_events,
    parse_observation,
    parse_observations,
    play_validity,
    plays_validity,
    turn_faults,
)
from mao_env import cards, layout

SEVEN_PHRASES = ("penalty card", "thank you")
#: The scripted players' default ``call_threshold``: the least belief in a fault for calling it.
DEFAULT_CALL_THRESHOLD = 0.8
ROUND_STYLES = ("plain", "cambridge")
REASON_MODES = ("calls", "hidden", "revealed")
CALL_MODES = ("master", "players")
#: A posterior drops the rule sets whose weight falls below the largest one's times this.
PRUNE_BELOW = 1e-12
if N_RULES > 64:
    raise ImportError(f"a rule set must fit a 64-bit key: the library has {N_RULES} rules")
#: Where each rule's bit goes in a rule set's sort key (``RulePosterior._set_support``).
_KEY_SHIFTS = np.uint64(63) - np.arange(N_RULES, dtype=np.uint64)


def _with_rules(rule_sets: np.ndarray, columns: int | list[int]) -> np.ndarray:
    """A copy of ``rule_sets`` with the rules ``columns`` in every set."""
    rule_sets = rule_sets.copy()
    rule_sets[:, columns] = 1.0
    return rule_sets


def table_variants(env, *, posterior: bool = False) -> dict[str, Any]:
    """The public variant options of the Mao table ``env`` that change what the base rules require
    (for the agents' constructors); ``posterior`` adds those the Bayesian player's bookkeeping needs."""
    table = getattr(env, "unwrapped", env)
    variants: dict[str, Any] = {"talking": table.talking, "seven_phrase": table.seven_phrase}
    if posterior:
        variants.update(
            rounds=table.rounds,
            seven_turn_ends=table.seven_turn_ends,
            reasons=table.reasons,
            calls=table.options.calls,
        )
    return variants


def _observation_vector(observation: Any) -> np.ndarray:
    if isinstance(observation, dict):
        observation = observation["observation"]
    return np.asarray(observation, dtype=np.float32)


def _check_probability(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def rules_to_propose(mask: np.ndarray, in_force: np.ndarray) -> np.ndarray:
    """The rule actions a round winner would propose, given the belief that each library rule is
    in force (``in_force [R]``): of the rules the mask offers, those it most suspects are in force
    without being sure of them. A refusal is free news (the Mao Master names a secret rule to the
    proposer alone), an acceptance adds a rule like any other; with no suspicion at all (the
    base-rules player, or a belief without evidence) every offered rule, and a belief sure of
    every rule (the oracle) the ones it knows are not in force."""
    offered = np.flatnonzero(np.asarray(mask)[cards.CHOOSE_RULE_0 : cards.CHOOSE_RULE_0 + N_RULES])
    chance = np.asarray(in_force, dtype=np.float64)[offered]
    unsure = chance < 1.0 - 1e-9
    if unsure.any():  # a rule it is sure of would only be refused
        offered, chance = offered[unsure], chance[unsure]
    return cards.CHOOSE_RULE_0 + offered[chance >= chance.max() - 1e-9]


def propose_rule(mask: np.ndarray, in_force: np.ndarray, rng: np.random.Generator) -> int:
    """One of :func:`rules_to_propose`, at random."""
    return int(rng.choice(rules_to_propose(mask, in_force)))


def play_chances(view: SeatView, held: np.ndarray, hypotheses: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """At the start of a turn: the belief that playing each card of ``held`` is a good play."""
    validity = plays_validity(hypotheses, held, view.top, view.suit_to_follow, view.pending_seven)
    return weights @ validity


@dataclass(frozen=True)
class SpeechChances:
    """After playing or drawing: the belief that each phrase is required (``required [P]``), that
    saying it would be talking (``talking [P]``, zeros at a table without talking calls), and that
    "Mao" is due given what was said so far (``mao``)."""

    required: np.ndarray
    talking: np.ndarray
    mao: float


def speech_chances(
    view: SeatView, hypotheses: np.ndarray, weights: np.ndarray, *, talking: bool, thank_you: bool
) -> SpeechChances:
    """The :class:`SpeechChances` of the seat's own turn so far (everything is in its view)."""
    judgement = own_turn_judgement(hypotheses, view, first_suit_said(view.said, view.played), thank_you)
    p_required = weights @ judgement.required
    if talking:
        p_talking = weights @ (~judgement.required & ~judgement.excused & ~judgement.allowed)
    else:
        p_talking = np.zeros(cards.N_PHRASES)
    p_mao = float(weights @ mao_due(judgement, view.said, view.hand_total, talking))
    return SpeechChances(p_required, p_talking, p_mao)


def fault_chances(
    view: SeatView, hypotheses: np.ndarray, weights: np.ndarray, *, talking: bool, thank_you: bool
) -> np.ndarray:
    """In a call window: the belief that the turn under judgement deserves each call reason."""
    return weights @ turn_faults(hypotheses, view, talking=talking, thank_you=thank_you)


class RuleBeliefAgent(Agent):
    """A Mao player acting on a belief over the active secret rules (subclasses supply it).

    ``talking`` and ``seven_phrase`` are the table's public variants (``mao_v0`` options of the
    same names): whether unrequired phrases are penalised and what the seven chain's victim says.
    ``call_threshold``: in a call window, the least belief that a fault happened for calling it.
    """

    name = "rule-belief"

    def __init__(
        self,
        seed: int | None = None,
        *,
        play_threshold: float = 0.5,
        mao_threshold: float = 0.5,
        call_threshold: float = DEFAULT_CALL_THRESHOLD,
        talking: bool = True,
        seven_phrase: str = "penalty card",
        name: str | None = None,
    ) -> None:
        if seven_phrase not in SEVEN_PHRASES:
            raise ValueError(f"seven_phrase must be one of {SEVEN_PHRASES}, got {seven_phrase!r}")
        if not isinstance(talking, (bool, np.bool_)):
            raise TypeError(f"talking must be a bool, got {type(talking).__name__} {talking!r}")
        self.play_threshold = _check_probability("play_threshold", play_threshold)
        self.mao_threshold = _check_probability("mao_threshold", mao_threshold)
        self.call_threshold = _check_probability("call_threshold", call_threshold)
        self.talking = bool(talking)
        self.thank_you = seven_phrase == "thank you"
        self.rng = np.random.default_rng(seed)
        if name is not None:
            self.name = name

    # -- the belief --------------------------------------------------------------------------
    def belief(self, view: SeatView, action_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hypotheses ``[N, R]`` 0/1, weights ``[N]`` summing to 1) for this decision."""
        raise NotImplementedError

    # -- acting ------------------------------------------------------------------------------
    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        mask = np.asarray(action_mask)
        legal = legal_actions(mask)
        view = parse_observation(_observation_vector(observation))
        hypotheses, weights = self.belief(view, mask)
        return self.decide(view, mask, legal, hypotheses, weights)

    def decide(
        self,
        view: SeatView,
        mask: np.ndarray,
        legal: np.ndarray,
        hypotheses: np.ndarray,
        weights: np.ndarray,
    ) -> int:
        """The action for this decision given a belief (always a legal id)."""
        if mask[cards.CHOOSE_RULE_0 :].any():
            return propose_rule(mask, weights @ hypotheses, self.rng)
        if mask[cards.NO_CALL]:
            return self._call(view, mask, hypotheses, weights)
        if mask[cards.DRAW]:
            return self._start_of_turn(view, mask, hypotheses, weights)
        return self._speak(view, mask, legal, hypotheses, weights)

    def decide_rows(
        self, views: list[SeatView], masks: np.ndarray, beliefs: list[tuple[np.ndarray, np.ndarray]]
    ) -> np.ndarray:
        """:meth:`decide` of each row (``views[i]``, ``masks[i]`` with a move, ``beliefs[i]`` its
        (hypotheses, weights)), in row order, so the actions and the generator's draws are those
        of :meth:`decide` row by row (the test suite checks it). The chances of every row at the
        start of a turn, of every row speaking and of every row in a call window come from one
        kernel call each (:mod:`~madiao_mao.agents.mao.posterior_batch`): the same 0/1 verdicts,
        weighed by the same product as :func:`play_chances`, :func:`speech_chances` and
        :func:`fault_chances`."""
        # Imported here: posterior_batch builds on this module (RulePosterior).
        from madiao_mao.agents.mao.posterior_batch import (
            fault_chances_rows,
            play_chances_rows,
            speech_chances_rows,
        )

        starting, speaking, calling = [], [], []
        for index, (view, mask) in enumerate(zip(views, masks, strict=True)):
            if mask[cards.CHOOSE_RULE_0 :].any():
                continue
            if mask[cards.NO_CALL]:
                calling.append(index)
            elif mask[cards.DRAW]:
                held = np.flatnonzero(mask[: cards.N_CARD_TYPES])
                if held.size:
                    starting.append((index, held))
            elif self._jack_suit_action(view, mask) is None:
                speaking.append(index)
        decided: dict[int, Any] = {}
        if starting:
            chances = play_chances_rows([(views[i], held, *beliefs[i]) for i, held in starting])
            for (index, held), chance in zip(starting, chances, strict=True):
                decided[index] = (held, chance)
        if speaking:
            rows = [(views[i], *beliefs[i]) for i in speaking]
            speech = speech_chances_rows(rows, self.thank_you, self.talking)
            decided.update(zip(speaking, speech, strict=True))
        call_chances: dict[int, np.ndarray] = {}
        if calling:
            rows = [(views[i], *beliefs[i]) for i in calling]
            faults = fault_chances_rows(rows, self.thank_you, self.talking)
            call_chances.update(zip(calling, faults, strict=True))
        actions = np.empty(len(views), dtype=np.int64)
        for index, (view, mask) in enumerate(zip(views, masks, strict=True)):
            known = decided.get(index)
            if isinstance(known, SpeechChances):
                actions[index] = self._say(view, mask, legal_actions(mask), known)
            elif index in call_chances:
                actions[index] = self._call_or_pass(mask, call_chances[index])
            elif known is not None:
                actions[index] = self._card_or_draw(*known)
            else:
                actions[index] = self.decide(view, mask, legal_actions(mask), *beliefs[index])
        return actions

    def _start_of_turn(
        self, view: SeatView, mask: np.ndarray, hypotheses: np.ndarray, weights: np.ndarray
    ) -> int:
        held = np.flatnonzero(mask[: cards.N_CARD_TYPES])
        if not held.size:
            return cards.DRAW
        return self._card_or_draw(held, play_chances(view, held, hypotheses, weights))

    def _card_or_draw(self, held: np.ndarray, chance: np.ndarray) -> int:
        """Given the chance that each held card is a good play: the likeliest (ties at random)
        if likely enough, else draw."""
        best = chance.max()
        if best < self.play_threshold or best <= 0.0:
            return cards.DRAW
        candidates = [int(card) for card, p in zip(held, chance, strict=True) if p >= best - 1e-9]
        return int(self.rng.choice(candidates))

    def _call(self, view: SeatView, mask: np.ndarray, hypotheses: np.ndarray, weights: np.ndarray) -> int:
        """In a call window: the call most likely right, if likely enough; else no (more) call."""
        chance = fault_chances(view, hypotheses, weights, talking=self.talking, thank_you=self.thank_you)
        return self._call_or_pass(mask, chance)

    def _call_or_pass(self, mask: np.ndarray, chance: np.ndarray) -> int:
        """Given the chance that each call reason is deserved: the likeliest offered call, if
        likely enough; else no (more) call."""
        offered = mask[cards.CALL_0 : cards.NO_CALL] > 0
        chance = np.where(offered, chance, -1.0)
        best = int(np.argmax(chance))
        if chance[best] > 0.0 and chance[best] >= self.call_threshold:
            return cards.CALL_0 + best
        return cards.NO_CALL

    def _jack_suit(self, view: SeatView) -> int:
        """The suit to name with a Jack: the one held most (the Jack itself is already played)."""
        counts = np.bincount(SUIT, weights=view.hand, minlength=4)
        return int(np.argmax(counts))

    def _speak(
        self,
        view: SeatView,
        mask: np.ndarray,
        legal: np.ndarray,
        hypotheses: np.ndarray,
        weights: np.ndarray,
    ) -> int:
        suit_action = self._jack_suit_action(view, mask)
        if suit_action is not None:
            return suit_action
        speech = speech_chances(view, hypotheses, weights, talking=self.talking, thank_you=self.thank_you)
        return self._say(view, mask, legal, speech)

    def _jack_suit_action(self, view: SeatView, mask: np.ndarray) -> int | None:
        """After playing a Jack with no suit named yet: naming the suit it holds most of (never a
        fault: allowed if the Jack was good, excused if bad); None where that is not the move."""
        jack = view.played >= 0 and RANK[view.played] == cards.JACK
        if jack and first_suit_said(view.said, view.played) < 0:
            suit_action = cards.SAY_0 + cards.SUIT_PHRASE_0 + self._jack_suit(view)
            if mask[suit_action]:
                return suit_action
        return None

    def _say(self, view: SeatView, mask: np.ndarray, legal: np.ndarray, speech: SpeechChances) -> int:
        """Speaking, given the speech chances: each phrase likelier required than talking, then
        "Mao" if likely due, then the end of the turn."""
        said = view.said
        p_required, p_talking = speech.required, speech.talking
        for phrase in np.argsort(-p_required, kind="stable"):
            phrase = int(phrase)
            if phrase == cards.MAO or (said >> phrase) & 1 or not mask[cards.SAY_0 + phrase]:
                continue
            if p_required[phrase] > 0 and p_required[phrase] > p_talking[phrase]:
                return cards.SAY_0 + phrase
        mao_unsaid = not (said >> cards.MAO) & 1 and mask[cards.SAY_0 + cards.MAO]
        if mao_unsaid and speech.mao > 0 and speech.mao >= self.mao_threshold:
            return cards.SAY_0 + cards.MAO
        if mask[cards.END_TURN]:
            return cards.END_TURN
        return int(legal[0])


class BaseRulesAgent(RuleBeliefAgent):
    """Knows the base rules only: every secret rule is ignored (a belief of no active rule)."""

    name = "base"
    _NO_RULES = np.zeros((1, N_RULES), dtype=np.float32)
    _CERTAIN = np.ones(1)

    def belief(self, view: SeatView, action_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._NO_RULES, self._CERTAIN

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``act`` of every row with a move (-1 elsewhere): the views parsed for all rows at once,
        then the decisions in row order, which draw from the generator as ``act`` row by row."""
        observations, masks = batch_arrays(observations, masks)
        actions = np.full(masks.shape[0], -1, dtype=np.int64)
        acting = np.flatnonzero(masks.any(axis=1))
        views = parse_observations(np.asarray(observations, dtype=np.float32), acting)
        if acting.size:
            acting_masks = masks[acting]
            beliefs = [self.belief(view, mask) for view, mask in zip(views, acting_masks, strict=True)]
            actions[acting] = self.decide_rows(views, acting_masks, beliefs)
        return actions


class OracleAgent(RuleBeliefAgent):
    """Knows every active secret rule (read from ``env.unwrapped.active_rules()`` at each decision,
    Mao Master knowledge): the upper bound of rule discovery. The table's variants are read from
    the env too."""

    name = "oracle"

    def __init__(self, env, seed: int | None = None, **kwargs: Any) -> None:
        table = getattr(env, "unwrapped", env)
        if not hasattr(table, "active_rules"):
            raise TypeError(f"the oracle needs a Mao env (with active_rules()), got {type(env).__name__}")
        kwargs.setdefault("talking", table.talking)
        kwargs.setdefault("seven_phrase", table.seven_phrase)
        super().__init__(seed, **kwargs)
        self.env = table

    def belief(self, view: SeatView, action_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        active = [rule for rule, _author in self.env.active_rules()]
        return hypotheses_from_sets([active]), np.ones(1)


class RulePosterior:
    """A posterior over which library rules are active, from one seat's observations.

    Support: rule sets holding the rules the seat knows (its own, and those refused to it) plus as
    many unknown rules as the observation says are active (``active rules - known``). When another
    seat introduces a rule every hypothesis branches into one child per inactive library rule (a
    uniform prior); a proposal of the seat that the Mao Master refuses says the rule is in force:
    every hypothesis without it is dropped (likelihood 0), and it becomes known;
    every public event then multiplies each hypothesis by 1 if it explains the judge's verdict
    and by ``eps`` if not (``eps`` > 0 keeps the posterior alive through the few events whose
    context the seat could not follow). The support is capped at ``max_hypotheses`` (the
    lightest are dropped; with more than three unknown rules introduced at once, ties are cut).

    What a seat cannot follow between its own turns is left out of the likelihood: whether "Last
    card" or "Mao" was due (other hands' sizes), and the verdict on a card played on a top card it
    never saw (right after a plain round's re-deal, until the next good play).
    """

    def __init__(
        self,
        *,
        eps: float = 0.01,
        max_hypotheses: int = 20_000,
        rounds: str = "plain",
        seven_turn_ends: bool = False,
        reasons: str = "calls",
        talking: bool = True,
        thank_you: bool = False,
        calls: str = "master",
    ) -> None:
        if not 0.0 < eps < 1.0:
            raise ValueError(f"eps must be in (0, 1), got {eps!r}")
        if (
            isinstance(max_hypotheses, bool)
            or not isinstance(max_hypotheses, int)
            or max_hypotheses < N_RULES
        ):
            raise ValueError(f"max_hypotheses must be an integer >= {N_RULES}, got {max_hypotheses!r}")
        if rounds not in ROUND_STYLES:
            raise ValueError(f"rounds must be one of {ROUND_STYLES}, got {rounds!r}")
        if reasons not in REASON_MODES:
            raise ValueError(f"reasons must be one of {REASON_MODES}, got {reasons!r}")
        if calls not in CALL_MODES:
            raise ValueError(f"calls must be one of {CALL_MODES}, got {calls!r}")
        self.eps = float(eps)
        self.max_hypotheses = max_hypotheses
        self.plain_rounds = rounds == "plain"
        self.seven_turn_ends = bool(seven_turn_ends)
        self.hidden_reasons = reasons == "hidden"
        self.talking = bool(talking)
        self.thank_you = bool(thank_you)
        self.players_call = calls == "players"
        self.reset()

    def reset(self) -> None:
        self.hypotheses = np.zeros((1, N_RULES), dtype=np.float32)
        self.weights = np.ones(1)
        self.known: set[int] = set()
        # SeatView.event_keys of the last observation's event window (None: nothing seen yet).
        self.previous_keys: list[bytes] | None = None
        self.context = (-1, -1)  # (top card, suit to follow) before the next unseen event
        self.rounds = -1
        self.expect_event = False  # the last own action ended a turn or chose a rule
        self.proposed = False  # the last own action proposed a rule
        self.events_seen = 0
        self.events_since_new_rule = 0  # public events since a rule it does not know became active

    @property
    def hypotheses(self) -> np.ndarray:
        """The support's rule sets, 0/1 float32 ``[N, N_RULES]``. Read-only: an update replaces
        the array (the array given is made read-only), so that the batched kernels can keep each
        array's rule bit sets (``madiao_mao.agents.mao.posterior_batch._bit_sets``)."""
        return self._hypotheses

    @hypotheses.setter
    def hypotheses(self, rule_sets: np.ndarray) -> None:
        rule_sets.flags.writeable = False
        self._hypotheses = rule_sets

    # -- summaries ---------------------------------------------------------------------------
    @property
    def n_unknown(self) -> int:
        # The rule sets hold 0s and 1s: the rules of one are its nonzero entries.
        return int(np.count_nonzero(self.hypotheses[0])) - len(self.known)

    def marginals(self) -> np.ndarray:
        """Posterior probability that each library rule is active (``[R]``)."""
        return self.weights @ self.hypotheses

    # -- updating ----------------------------------------------------------------------------
    def observe(self, view: SeatView) -> None:
        """Take in everything new in one observation of the seat (call at every decision)."""
        events, newly_authored, still_to_branch = self.take_in(view)
        newly_authored = self.weigh_events(events, newly_authored, still_to_branch)
        self.close_observation(view, newly_authored)

    def take_in(self, view: SeatView) -> tuple[list[PublicEvent], set[int], int]:
        """The first step of :meth:`observe`: the new events found and parsed, the rules learned
        before them taken in. Returns (events, rules authored not yet added, rules other seats
        introduced that are still to branch on), what :meth:`weigh_events` takes."""
        new_rows, choosing_again = self.new_event_rows(view)
        return self.take_in_events(view, parse_events(new_rows), choosing_again)

    def new_event_rows(self, view: SeatView) -> tuple[list[np.ndarray], bool]:
        """The raw rows of the events new in ``view``, oldest first (a game or round seen afresh
        resets the posterior first), and whether the seat is choosing a rule again."""
        fresh = self.previous_keys is None or view.rounds < self.rounds
        choosing_again = not fresh and view.phase == PHASE_CHOOSE
        if fresh:
            self.reset()
            return list(reversed(view.event_rows)), choosing_again
        # A proposal that is refused makes no event: the seat proposes again at once.
        expect_event = self.expect_event and not (choosing_again and self.proposed)
        return self._new_rows(view, expect_event=expect_event), choosing_again

    def take_in_events(
        self, view: SeatView, events: list[PublicEvent], choosing_again: bool
    ) -> tuple[list[PublicEvent], set[int], int]:
        """:meth:`take_in` given the new events parsed (what :meth:`new_event_rows` found)."""
        self.events_seen += len(events)
        newly_known = set(view.known) - self.known
        if choosing_again:
            # Within a rule choice the seat learns rules only from refusals (the winning turn before
            # its first proposal teaches it none): each is in force.
            for rule in sorted(newly_known):
                self._learn_in_force(rule)
            newly_known = set()
        newly_authored = newly_known  # anywhere else, a rule it now knows is one it added
        deficit = view.n_active - len(view.known) - self.n_unknown
        introduced_by_others = sum(1 for e in events if e.kind == layout.KIND_RULE_ADDED and e.seat != 0)
        for _ in range(max(0, deficit - introduced_by_others)):
            self._branch()
        still_to_branch = min(max(deficit, 0), introduced_by_others)
        if newly_authored and not any(e.kind == layout.KIND_RULE_ADDED and e.seat == 0 for e in events):
            self._add_known(newly_authored)
            newly_authored = set()
        return events, newly_authored, still_to_branch

    def weigh_events(
        self, events: list[PublicEvent], newly_authored: set[int], still_to_branch: int
    ) -> set[int]:
        """The second step of :meth:`observe`: each event in turn weighs the support (rules added
        on the way are taken in where they happened). Returns the rules authored still to add."""
        top, suit = self.context
        for event in events:
            if event.kind == layout.KIND_RULE_ADDED:
                if event.seat == 0 and newly_authored:
                    self._add_known(newly_authored)
                    newly_authored = set()
                elif event.seat != 0 and still_to_branch > 0:
                    self._branch()
                    still_to_branch -= 1
                continue
            self.events_since_new_rule += 1
            top, suit = self._judge_event(event, top, suit)
        return newly_authored

    def close_observation(self, view: SeatView, newly_authored: set[int], *, prune: bool = True) -> None:
        """The last step of :meth:`observe`: rules authored taken in, the view remembered, the
        support pruned (``prune=False``: left to the caller, which prunes many posteriors in one
        call, ``madiao_mao.agents.mao.posterior_batch.prune_all``)."""
        if newly_authored:
            self._add_known(newly_authored)
        plain_redeal = view.phase == PHASE_CHOOSE and self.plain_rounds
        self.context = (-1, -1) if plain_redeal else (view.top, view.suit_to_follow)
        self.previous_keys = view.event_keys
        self.rounds = view.rounds
        if prune:
            self._prune()

    def note_action(self, action: int) -> None:
        """Tell the posterior which action the seat took (ending a turn creates an event)."""
        # Every action from END_TURN on makes an event before the seat's next decision (a turn
        # event, a call, a point of order, a new rule), except passing in a call window and a
        # proposal the Mao Master refuses (:meth:`observe` tells: the seat proposes again).
        self.expect_event = action >= cards.END_TURN and action != cards.NO_CALL
        self.proposed = action >= cards.CHOOSE_RULE_0

    def _new_rows(self, view: SeatView, *, expect_event: bool) -> list[np.ndarray]:
        """The events since the last observation, oldest first: the smallest shift that lines the
        new window up with the previous one (at least one with ``expect_event``), rows compared
        by their keys (``SeatView.event_keys``)."""
        rows, keys, previous = view.event_rows, view.event_keys, self.previous_keys
        for shift in range(1 if expect_event else 0, len(rows) + 1):
            overlap = min(len(rows) - shift, len(previous))
            if keys[shift : shift + overlap] == previous[:overlap]:
                return list(reversed(rows[:shift]))
        return list(reversed(rows))

    def _branch(self) -> None:
        """A rule nobody told us about became active: every hypothesis gets one more rule."""
        hypotheses, weights = self.hypotheses, self.weights
        limit = max(1, self.max_hypotheses // N_RULES)
        if hypotheses.shape[0] > limit:
            keep = np.argsort(-weights, kind="stable")[:limit]
            hypotheses, weights = hypotheses[keep], weights[keep] / weights[keep].sum()
        self.events_since_new_rule = 0
        free = hypotheses < 0.5
        parents, rules = np.nonzero(free)
        if parents.size == 0:
            return  # every library rule is already active
        children = hypotheses[parents].copy()
        children[np.arange(parents.size), rules] = 1.0
        self._set_support(children, weights[parents] / free.sum(axis=1)[parents])

    def _set_support(self, hypotheses: np.ndarray, weights: np.ndarray) -> None:
        """The support becomes ``hypotheses`` (rows may repeat: their weights add up), distinct
        rows in the lexicographic order of their 0/1 rules (rule 0 first)."""
        # Each row as one integer, rule 0 its highest bit, so that integers sort as the rows do
        # (the order ``np.unique(np.packbits(rows, axis=1), axis=0)`` gave, at a quarter of its cost).
        keys = ((hypotheses > 0.5).astype(np.uint64) << _KEY_SHIFTS).sum(axis=1, dtype=np.uint64)
        unique, inverse = np.unique(keys, return_inverse=True)
        self.hypotheses = ((unique[:, None] >> _KEY_SHIFTS) & np.uint64(1)).astype(np.float32)
        self.weights = np.bincount(inverse.ravel(), weights=weights)
        self.weights = self.weights / self.weights.sum()

    def _learn_in_force(self, rule: int) -> None:
        """The Mao Master refused the seat's proposal of ``rule``: it is in force, one of the rules
        the seat did not know. Every rule set without it has likelihood 0; should none hold it
        (the support was capped), each set swaps one of its unknown rules for it."""
        holds = self.hypotheses[:, rule] > 0.5
        if holds.any():
            self.hypotheses, self.weights = self.hypotheses[holds], self.weights[holds]
            self.weights = self.weights / self.weights.sum()
        else:
            unknown = self.hypotheses > 0.5
            unknown[:, sorted(self.known)] = False
            parents, swapped = np.nonzero(unknown)
            if parents.size:
                children = self.hypotheses[parents].copy()
                children[np.arange(parents.size), swapped] = 0.0
                children[:, rule] = 1.0
                self._set_support(children, self.weights[parents] / unknown.sum(axis=1)[parents])
            else:  # no unknown rule in the support: the rule is one more
                self.hypotheses = _with_rules(self.hypotheses, rule)
        self.known.add(rule)

    def _add_known(self, rules: set[int]) -> None:
        """The seat authored ``rules``: they were free when chosen, now they are active."""
        columns = sorted(rules)
        possible = self.hypotheses[:, columns].sum(axis=1) < 0.5
        if possible.any():
            self.hypotheses, self.weights = self.hypotheses[possible], self.weights[possible]
        self.hypotheses = _with_rules(self.hypotheses, columns)
        self.weights = self.weights / self.weights.sum()
        self.known |= rules

    def _prune(self) -> None:
        keep = self.weights >= self.weights.max() * PRUNE_BELOW
        if keep.sum() > self.max_hypotheses:
            keep = np.zeros_like(keep)
            keep[np.argsort(-self.weights, kind="stable")[: self.max_hypotheses]] = True
        if not keep.all():
            self.hypotheses, self.weights = self.hypotheses[keep], self.weights[keep]
        self.weights = self.weights / self.weights.sum()

    def _judge_event(self, event: PublicEvent, top: int, suit: int) -> tuple[int, int]:
        """Weigh every hypothesis by how well it explains one public event; returns the context
        (top card, suit to follow) after the event."""
        hypotheses = self.hypotheses
        consistent = None
        if event.kind in (layout.KIND_CALL, layout.KIND_POINT_OF_ORDER):
            return top, suit  # weighed with the event of the turn they judged, which follows them
        if self.players_call:
            consistent = self._calls_consistent(event, top, suit)
        elif event.kind in (layout.KIND_PLAY, layout.KIND_BAD_CARD) and top >= 0 and event.card >= 0:
            card = event.card
            good = event.kind == layout.KIND_PLAY
            consistent = np.ones(hypotheses.shape[0], dtype=bool)
            # A seven chain was pending if chain cards were taken; a non-seven judged bad then may
            # have failed the chain itself (base rules), so its verdict says nothing of secret rules.
            chain_bad = not good and event.chain_cards > 0 and RANK[card] != cards.SEVEN
            if not chain_bad:
                consistent &= play_validity(hypotheses, card, top, suit, 0) == good
            first_suit = event.named_suit if event.named_suit >= 0 else first_suit_said(event.phrases, card)
            judgement = judge_turn(
                hypotheses,
                top=top,
                suit_to_follow=suit,
                pending_seven=0,
                played=card,
                drew=False,
                took_seven=event.chain_cards,
                first_suit=first_suit,
                hand_after=None,
                valid=np.full(hypotheses.shape[0], good),
                thank_you=self.thank_you,
            )
            consistent &= self._speech_consistent(judgement, event, bad_card=not good)
            if good:
                # Whole numbers of cards, exact in float32: == answers as np.isclose did, faster.
                consistent &= forced_cards(hypotheses, card) == event.forced_draw
        elif event.kind == layout.KIND_DRAW:
            judgement = judge_turn(
                hypotheses,
                top=max(top, 0),
                suit_to_follow=max(suit, 0),
                pending_seven=0,
                played=-1,
                drew=not (self.seven_turn_ends and event.chain_cards > 0),
                took_seven=event.chain_cards,
                first_suit=-1,
                hand_after=None,
                thank_you=self.thank_you,
            )
            consistent = self._speech_consistent(judgement, event, bad_card=False)
        if consistent is not None:
            self.weights = self.weights * np.where(consistent, 1.0, self.eps)
            self.weights = self.weights / self.weights.sum()
        return self.context_after(event, top, suit)

    def context_after(self, event: PublicEvent, top: int, suit: int) -> tuple[int, int]:
        """The (top card, suit to follow) after ``event``, given those before it."""
        if event.kind == layout.KIND_PLAY and event.card >= 0:
            top = event.card
            suit = event.named_suit if event.named_suit >= 0 else int(SUIT[event.card])
        if event.won and self.plain_rounds:
            top, suit = -1, -1
        return top, suit

    def _calls_consistent(self, event: PublicEvent, top: int, suit: int) -> np.ndarray | None:
        """Players' calls: which hypotheses agree with the calls made on a turn. A correct call
        says its fault happened, a bad call that it did not; a fault nobody called says nothing.
        (Whether "Last card" or "Mao" was due depends on a hand size the seat did not follow.)"""
        hypotheses = self.hypotheses
        if event.kind in (layout.KIND_PLAY, layout.KIND_BAD_CARD) and top >= 0 and event.card >= 0:
            card = event.card
            # Chain cards taken after a non-seven: the chain was pending when it was played.
            pending = 1 if event.chain_cards > 0 and RANK[card] != cards.SEVEN else 0
            first_suit = event.named_suit if event.named_suit >= 0 else first_suit_said(event.phrases, card)
            judgement = judge_turn(
                hypotheses, top=top, suit_to_follow=suit, pending_seven=pending, played=card,
                drew=False, took_seven=event.chain_cards, first_suit=first_suit, hand_after=None,
                thank_you=self.thank_you,
            )  # fmt: skip
            consistent = np.ones(hypotheses.shape[0], dtype=bool)
            if event.kind == layout.KIND_BAD_CARD:
                consistent &= ~judgement.valid
            elif (event.bad_call_bits >> cards.CALL_REASON_BAD_CARD) & 1:
                consistent &= judgement.valid
            if event.kind == layout.KIND_PLAY:
                # Whole numbers of cards, exact in float32: == answers as np.isclose did, faster.
                consistent &= forced_cards(hypotheses, card) == event.forced_draw
        elif event.kind == layout.KIND_DRAW:
            judgement = judge_turn(
                hypotheses, top=max(top, 0), suit_to_follow=max(suit, 0), pending_seven=0, played=-1,
                drew=not (self.seven_turn_ends and event.chain_cards > 0), took_seven=event.chain_cards,
                first_suit=-1, hand_after=None, thank_you=self.thank_you,
            )  # fmt: skip
            consistent = np.ones(hypotheses.shape[0], dtype=bool)
        else:
            return None
        said = event.phrases
        missing = judgement.missing(said)
        for phrase in range(cards.N_PHRASES):
            if (1 << phrase) & HAND_SIZE_PHRASES:
                continue
            if (event.call_bits >> phrase) & 1:
                consistent &= missing[:, phrase]
            elif (event.bad_call_bits >> phrase) & 1:
                consistent &= ~missing[:, phrase]
        if self.talking:
            talking = judgement.talking(said)
            talking[:, cards.LAST_CARD] = False  # "Last card" may have been due: not followed
            if (event.call_bits >> cards.CALL_REASON_TALKING) & 1 and not (said >> cards.LAST_CARD) & 1:
                consistent &= talking.any(axis=1)
            elif (event.bad_call_bits >> cards.CALL_REASON_TALKING) & 1:
                consistent &= ~talking.any(axis=1)
        return consistent

    def _speech_consistent(self, judgement, event: PublicEvent, *, bad_card: bool) -> np.ndarray:
        said = event.phrases
        missing = judgement.missing(said)
        missing[:, cards.LAST_CARD] = False
        talking = judgement.talking(said) if self.talking else np.zeros_like(missing)
        talking[:, cards.LAST_CARD] = False
        slack = 1 if (said >> cards.LAST_CARD) & 1 else 0  # "Last card" said: due or talking
        if self.hidden_reasons:
            predicted = missing.sum(axis=1) + talking.sum(axis=1) + int(bad_card)
            extra = event.n_calls - predicted  # the seat's "Last card"/"Mao" calls are unknown
            return (extra >= 0) & (extra <= 2)
        observed_failures = bits_to_row(event.failure_bits & ~HAND_SIZE_PHRASES)
        consistent = (missing == observed_failures[None, :]).all(axis=1)
        failures = bin(event.failure_bits).count("1")
        observed_talking = event.n_calls - int(event.bad_card_called) - failures - int(event.mao_in_vain)
        predicted_talking = talking.sum(axis=1)
        return (
            consistent
            & (observed_talking >= predicted_talking)
            & (observed_talking <= predicted_talking + slack)
        )


def posterior_options(options: Any) -> dict[str, Any]:
    """The :class:`RulePosterior` options that follow a table's public variants, read from its
    ``MaoOptions`` (an AEC env's or a vector env's ``options``)."""
    return {
        "rounds": options.rounds,
        "seven_turn_ends": options.seven_turn_ends,
        "reasons": options.reasons,
        "calls": options.calls,
        "talking": options.talking,
        "thank_you": options.seven_phrase == "thank you",
    }


class KeyedPosteriors:
    """One :class:`RulePosterior` per game seat: ``default`` for a player that follows one seat of
    one game (``act``), and one per key for callers that hand rows of many games at once (a key
    names a game seat: the batch row by default, ``rows`` when the caller gives them)."""

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.default = RulePosterior(**options)
        self._by_key: dict[int, RulePosterior] = {}

    def reset(self) -> None:
        """Start afresh: the default posterior and every keyed one."""
        self.default.reset()
        self._by_key.clear()

    def forget(self, keys: np.ndarray) -> None:
        """Drop the posteriors of ``keys`` (their games ended)."""
        for key in np.asarray(keys, dtype=np.int64).ravel():
            self._by_key.pop(int(key), None)

    def held_keys(self) -> set[int]:
        """The keys that have a posterior now."""
        return set(self._by_key)

    def __getitem__(self, key: int) -> RulePosterior:
        """The posterior of ``key`` (a fresh one for a key not held)."""
        posterior = self._by_key.get(key)
        if posterior is None:
            posterior = self._by_key[key] = RulePosterior(**self.options)
        return posterior

    @staticmethod
    def keys(n_rows: int, rows: np.ndarray | None) -> np.ndarray:
        """The key of each of ``n_rows`` rows: ``rows`` checked (one distinct integer per row), or
        the row indices."""
        if rows is None:
            return np.arange(n_rows, dtype=np.int64)
        keys = np.asarray(rows)
        if keys.shape != (n_rows,) or not np.issubdtype(keys.dtype, np.integer):
            raise ValueError(f"rows must hold one integer key per observation ({n_rows}), got {keys!r:.80}")
        if np.unique(keys).size != keys.size:
            raise ValueError(f"rows must not repeat a key within a call, got {keys!r:.80}")
        return keys.astype(np.int64)


class BayesianRuleAgent(RuleBeliefAgent):
    """Infers the secret rules from the calls it observes (:class:`RulePosterior`) and plays the
    card and phrases most likely allowed. Uses only its own observations and the public library.

    ``act`` follows one seat of one game (call :meth:`reset` between games; a drop in the rounds
    counter also starts afresh). ``act_batch`` keeps one posterior per row key
    (:class:`KeyedPosteriors`): by default the batch row, so row ``i`` must always be the same seat
    of the same game; a caller that hands different games to different rows at every call (the
    trainer's opponent table, ``madiao_mao.training.sb3.adapter.LearnerVecEnv``) passes ``rows``, one key per
    observation naming the game seat it belongs to. :meth:`reset_rows` forgets keys whose games
    ended.
    """

    name = "bayes"

    def __init__(
        self,
        seed: int | None = None,
        *,
        eps: float = 0.01,
        max_hypotheses: int = 20_000,
        rounds: str = "plain",
        seven_turn_ends: bool = False,
        reasons: str = "calls",
        calls: str = "master",
        **kwargs: Any,
    ) -> None:
        super().__init__(seed, **kwargs)
        self.posteriors = KeyedPosteriors(
            eps=eps,
            max_hypotheses=max_hypotheses,
            rounds=rounds,
            seven_turn_ends=seven_turn_ends,
            reasons=reasons,
            calls=calls,
            talking=self.talking,
            thank_you=self.thank_you,
        )

    @property
    def posterior(self) -> RulePosterior:
        """The posterior ``act`` follows (one seat of one game)."""
        return self.posteriors.default

    def reset(self) -> None:
        self.posteriors.reset()

    def reset_rows(self, rows: np.ndarray) -> None:
        self.posteriors.forget(rows)

    def belief(self, view: SeatView, action_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.posterior.hypotheses, self.posterior.weights

    def _act_with(self, posterior: RulePosterior, observation: np.ndarray, action_mask: np.ndarray) -> int:
        mask = np.asarray(action_mask)
        legal = legal_actions(mask)
        view = parse_observation(_observation_vector(observation))
        posterior.observe(view)
        action = self.decide_from(posterior, view, mask, legal)
        posterior.note_action(action)
        return action

    def decide_from(
        self, posterior: RulePosterior, view: SeatView, mask: np.ndarray, legal: np.ndarray
    ) -> int:
        """The action for this decision given the seat's posterior, which has taken in ``view``
        (a subclass that reads more of the posterior than its support overrides this)."""
        return self.decide(view, mask, legal, posterior.hypotheses, posterior.weights)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self._act_with(self.posterior, observation, action_mask)

    def act_batch(
        self, observations: np.ndarray, masks: np.ndarray, rows: np.ndarray | None = None
    ) -> np.ndarray:
        """One action per row (-1 where the mask is empty); ``rows``: the posterior key of each
        row (default: the row's index). Keys must be distinct within a call."""
        observations = np.asarray(observations)
        masks = np.asarray(masks)
        keys = KeyedPosteriors.keys(masks.shape[0], rows)
        actions = np.full(masks.shape[0], -1, dtype=np.int64)
        # Imported here: posterior_batch builds on this module (RulePosterior).
        from madiao_mao.agents.mao.posterior_batch import observe_all

        acting = np.flatnonzero(masks.any(axis=1))
        views = parse_observations(np.asarray(observations, dtype=np.float32), acting)
        posteriors = [self.posteriors[int(keys[row])] for row in acting]
        # Every row's posterior takes in its view first (one kernel call for all): a posterior
        # reads only its own row, and the decisions below draw from the generator in row order.
        observe_all(posteriors, views)
        if type(self).decide_from is BayesianRuleAgent.decide_from and acting.size:
            # Each row's decision reads only its own posterior: all rows' chances at once.
            chosen = self.decide_rows(views, masks[acting], [(p.hypotheses, p.weights) for p in posteriors])
        else:  # a subclass that reads more of the posterior decides row by row
            chosen = [
                self.decide_from(posterior, view, masks[row], legal_actions(masks[row]))
                for row, view, posterior in zip(acting, views, posteriors, strict=True)
            ]
        for row, posterior, action in zip(acting, posteriors, chosen, strict=True):
            actions[row] = action
            posterior.note_action(int(action))
        return actions
