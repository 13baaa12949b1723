"""The batched belief path (``BeliefTracker.inputs`` over many rows: observations parsed for all rows
at once, ``parse_events``, the cached ``plays_validity``, the posterior updates and the belief
inputs' judgements in one kernel call each, ``posterior_batch``) gives bit for bit the belief inputs and
posteriors of the readable one-row path (``parse_observation``, ``parse_event``,
``plays_validity_reference``) over many decisions of real games: training and held-out rules,
several rules at once, the Mao Master's and the players' calls."""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter

import numpy as np
import pytest

from madiao_mao.agents.mao import belief_inputs as belief_inputs_module
from madiao_mao.agents.mao import beliefs, posterior_batch
from madiao_mao.agents.mao import players as players_module
from madiao_mao.agents.mao.belief_inputs import BELIEF_SLICES, BeliefTracker
from madiao_mao.agents.mao.belief_speed import decision_rates, one_row_path, record
from madiao_mao.agents.mao.players import RuleBeliefAgent, RulePosterior
from mao_env import cards, layout
from mao_env import rules as library

ALL_RULES = tuple(range(library.N_RULES))
SUIT_PHRASES = sum(1 << (cards.SUIT_PHRASE_0 + suit) for suit in range(4))


def decision_kind(mask: np.ndarray) -> str:
    """The decision kinds ``belief_inputs`` tells apart."""
    if mask[cards.CHOOSE_RULE_0 :].any():
        return "choose"
    if mask[cards.NO_CALL]:
        return "call"
    if mask[cards.DRAW]:
        return "start"
    return "speak"


def replay(batches, options: dict) -> list[tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]]:
    """Each batch's belief inputs, and its rows' posterior weights and hypotheses after them."""
    tracker = BeliefTracker(options)
    out = []
    for observations, masks, keys, actions, forget in batches:
        posteriors = tracker.seat_posteriors(masks.shape[0], keys)
        inputs = tracker.inputs(observations, masks, posteriors)
        out.append(
            (inputs, [p.weights.copy() for p in posteriors], [p.hypotheses.copy() for p in posteriors])
        )
        tracker.note_actions(posteriors, actions)
        tracker.forget(forget)
    return out


TABLES = [
    # (rule pool, rules drawn per game, table options, games, steps, least decisions of each kind)
    pytest.param(library.TRAINING_RULES, 1, {}, 16, 100, 300, id="training-rules"),
    pytest.param(library.HELD_OUT_RULES, 1, {}, 16, 100, 300, id="held-out-rules"),
    pytest.param(library.TRAINING_RULES, 1, {"calls": "players"}, 16, 100, 300, id="players-calls"),
    # Several rounds: round wins, rule choices, rules other seats add, the re-deal.
    pytest.param(library.TRAINING_RULES, 1, {"num_rounds": 2}, 8, 250, 300, id="several-rounds"),
    pytest.param(
        library.HELD_OUT_RULES, 1, {"num_rounds": 2, "rounds": "cambridge"}, 8, 250, 300, id="cambridge"
    ),
    # The table variants the posterior kernel reads: the calls' reasons hidden (only how many
    # calls), no talking calls with "thank you" after a seven chain, a seven chain ending the turn.
    pytest.param(library.TRAINING_RULES, 1, {"reasons": "hidden"}, 16, 100, 300, id="hidden-reasons"),
    pytest.param(
        library.TRAINING_RULES,
        1,
        {"talking": False, "seven_phrase": "thank you"},
        16,
        100,
        300,
        id="no-talking",
    ),
    pytest.param(library.HELD_OUT_RULES, 1, {"seven_turn_ends": True}, 16, 100, 300, id="seven-turn-ends"),
    # Two unknown rules: about a thousand hypotheses, so fewer decisions.
    pytest.param(ALL_RULES, 2, {}, 6, 50, 100, id="two-rules-at-once"),
]


@pytest.mark.parametrize(("rule_pool", "draws", "table", "games", "steps", "least"), TABLES)
def test_the_batched_belief_path_is_the_one_row_path(rule_pool, draws, table, games, steps, least):
    batches, options = record(games, steps, seed=11, rule_pool=rule_pool, draws=draws, **table)
    batched = replay(batches, options)
    with one_row_path():
        one_row = replay(batches, options)
    kinds = Counter()
    for (_observations, masks, *_rest), (inputs, weights, hypotheses), reference in zip(
        batches, batched, one_row, strict=True
    ):
        ref_inputs, ref_weights, ref_hypotheses = reference
        np.testing.assert_array_equal(inputs, ref_inputs)
        for mine, theirs in zip(weights, ref_weights, strict=True):
            np.testing.assert_array_equal(mine, theirs)
        for mine, theirs in zip(hypotheses, ref_hypotheses, strict=True):
            np.testing.assert_array_equal(mine, theirs)
        kinds.update(decision_kind(mask) for mask in masks if mask.any())
    assert kinds["start"] >= least and kinds["speak"] >= least, kinds
    if table.get("calls") == "players":
        assert kinds["call"] >= least, kinds
    if table.get("num_rounds", 1) > 1:
        assert kinds["choose"] >= 5, kinds
    # The posteriors learned something: not every belief is the uniform prior.
    assert any(np.ptp(w) > 0 for _inputs, weights, _h in batched for w in weights if w.size > 1)


@pytest.mark.parametrize(
    "table",
    [{"num_rounds": 2, "reasons": "hidden"}, {"num_rounds": 2, "calls": "players"}],
    ids=["hidden-reasons", "players-calls"],
)
def test_the_bayesian_players_batch_plays_as_the_one_row_path(table):
    """``BayesianRuleAgent.act_batch`` (every row's posterior updated in one call) takes the
    actions it takes with the one-row functions, over whole recorded games."""
    batched, _options = record(12, 200, seed=5, rule_pool=ALL_RULES, **table)
    with one_row_path():
        one_row, _options = record(12, 200, seed=5, rule_pool=ALL_RULES, **table)
    for mine, theirs in zip(batched, one_row, strict=True):
        for a, b in zip(mine, theirs, strict=True):
            np.testing.assert_array_equal(a, b)


def random_events(rng: np.random.Generator, posterior: RulePosterior, n: int) -> list[beliefs.PublicEvent]:
    """Turn events with every field the posterior reads drawn at random, rare cases included
    ("Last card" said, up to two calls more than the faults, chains, forced draws, named suits).
    Most events' calls are the faults of one rule set of the support (judged by ``judge_turn``),
    so that some rule sets explain them and others do not."""
    kinds = (layout.KIND_PLAY, layout.KIND_BAD_CARD, layout.KIND_DRAW)
    top, suit = posterior.context
    events = []
    for _ in range(n):
        kind = int(rng.choice(kinds))
        card = -1 if kind == layout.KIND_DRAW else int(rng.integers(cards.N_CARD_TYPES))
        phrases = int(rng.integers(1 << cards.N_PHRASES)) & int(rng.integers(1 << cards.N_PHRASES))
        event = beliefs.PublicEvent(
            seat=int(rng.integers(1, 4)), kind=kind, card=card,
            phrases=phrases | (int(rng.random() < 0.3) << cards.LAST_CARD),
            call_bits=int(rng.integers(1 << (cards.N_PHRASES + 3))), bad_call_bits=0,
            n_calls=int(rng.integers(6)), penalty_cards=0, chain_cards=int(rng.choice([0, 0, 1, 2])),
            forced_draw=int(rng.choice([0, 0, 1, 2, 3])), won=False,
            named_suit=int(rng.choice([-1, -1, 0, 1, 2, 3])),
        )  # fmt: skip
        if rng.random() < 0.7:  # the calls one rule set of the support would draw
            truth = posterior.hypotheses[rng.integers(posterior.hypotheses.shape[0])][None]
            first_suit = event.named_suit if event.named_suit >= 0 else beliefs.first_suit_said(phrases, card)
            judgement = beliefs.judge_turn(
                truth, top=max(top, 0), suit_to_follow=max(suit, 0), pending_seven=0, played=card,
                drew=card < 0, took_seven=event.chain_cards, first_suit=first_suit, hand_after=None,
                valid=np.array([kind == layout.KIND_PLAY]) if card >= 0 else None,
                thank_you=posterior.thank_you,
            )  # fmt: skip
            missing = int(judgement.missing(event.phrases)[0] @ (1 << np.arange(cards.N_PHRASES)))
            talking = int(judgement.talking(event.phrases)[0].sum()) if posterior.talking else 0
            bad = int(kind == layout.KIND_BAD_CARD)
            event = dataclasses.replace(
                event,
                call_bits=missing | (bad << layout.CALL_BIT_BAD_CARD),
                n_calls=bin(missing).count("1") + talking + bad + int(rng.integers(3)),
            )
        events.append(event)
        top, suit = posterior.context_after(event, top, suit)
    return events


def random_calls_events(
    rng: np.random.Generator, posterior: RulePosterior, n: int
) -> list[beliefs.PublicEvent]:
    """:func:`random_events` for the players' calls: most events carry calls that one rule set of
    the support agrees with (some of its faults called, some of what it finds no fault called
    wrongly, its verdict on the card shown by a standing or a bad "bad card" call, its forced
    draw), judged as ``RulePosterior._calls_consistent`` judges (a pending seven chain included);
    the rest carry calls and bad calls at random. A few calls and points of order come between."""
    kinds = (layout.KIND_PLAY, layout.KIND_BAD_CARD, layout.KIND_DRAW)
    every_call = (1 << cards.N_CALL_REASONS) - 1
    top, suit = posterior.context
    events = []
    for _ in range(n):
        if rng.random() < 0.1:  # weighed with the turn they judged, not on their own
            kind = int(rng.choice([layout.KIND_CALL, layout.KIND_POINT_OF_ORDER]))
            event = beliefs.PublicEvent(
                seat=int(rng.integers(1, 4)), kind=kind, card=-1, phrases=0,
                call_bits=int(rng.integers(every_call + 1)), bad_call_bits=0, n_calls=1,
                penalty_cards=1, chain_cards=0, forced_draw=0, won=bool(rng.random() < 0.5), named_suit=-1,
            )  # fmt: skip
            events.append(event)
            continue
        kind = int(rng.choice(kinds))
        card = -1 if kind == layout.KIND_DRAW else int(rng.integers(cards.N_CARD_TYPES))
        phrases = int(rng.integers(1 << cards.N_PHRASES)) & int(rng.integers(1 << cards.N_PHRASES))
        phrases |= int(rng.random() < 0.3) << cards.LAST_CARD
        chain = int(rng.choice([0, 0, 1, 2]))
        named_suit = int(rng.choice([-1, -1, 0, 1, 2, 3]))
        call_bits = int(rng.integers(every_call + 1)) & int(rng.integers(every_call + 1))
        bad_call_bits = int(rng.integers(every_call + 1)) & int(rng.integers(every_call + 1))
        forced_draw = int(rng.choice([0, 0, 1, 2, 3]))
        if rng.random() < 0.7 and (card < 0 or top >= 0):  # calls one rule set of the support agrees with
            truth, other = posterior.hypotheses[rng.integers(posterior.hypotheses.shape[0], size=2)]
            asker = truth if rng.random() < 0.6 else other
            # Often a card that a speech rule of a rule set of the support (the asker: the truth or
            # another) asks a phrase for, and the phrases it asks said: rule sets without the rule
            # find them talking.
            speaking = np.flatnonzero(beliefs.SAY_TRIGGER[asker > 0.5, :, top].any(axis=0))
            if card >= 0 and speaking.size and rng.random() < 0.7:
                card = int(rng.choice(speaking))
            pending = int(chain > 0 and card >= 0 and beliefs.RANK[card] != cards.SEVEN)
            first_suit = named_suit if named_suit >= 0 else beliefs.first_suit_said(phrases, card)
            judgement = beliefs.judge_turn(  # row 0 the truth, row 1 the asker
                np.stack([truth, asker]), top=max(top, 0), suit_to_follow=max(suit, 0), pending_seven=pending,
                played=card, drew=card < 0 and not (posterior.seven_turn_ends and chain > 0),
                took_seven=chain, first_suit=first_suit, hand_after=None, thank_you=posterior.thank_you,
            )  # fmt: skip
            if rng.random() < 0.7:  # what the asker finds no talking, the suit named and "Last card" kept
                asked = int(
                    judgement.required_bits[1] | judgement.excused_bits[1] | judgement.allowed_bits[1]
                )
                kept = SUIT_PHRASES | (1 << cards.LAST_CARD)
                if rng.random() < 0.3:
                    asked &= int(rng.integers(1 << cards.N_PHRASES))
                phrases = asked | (phrases & kept)
            missing = int(judgement.missing(phrases)[0] @ (1 << np.arange(cards.N_PHRASES)))
            talking = bool(judgement.talking(phrases)[0].any()) and posterior.talking
            faults = missing | (int(talking) << cards.CALL_REASON_TALKING)
            call_bits = faults & int(rng.integers(every_call + 1))
            bad_call_bits = ~faults & every_call & int(rng.integers(every_call + 1))
            bad_call_bits &= ~(1 << cards.CALL_REASON_BAD_CARD)
            if posterior.talking and not talking and rng.random() < 0.5:
                bad_call_bits |= 1 << cards.CALL_REASON_TALKING
            if card >= 0:
                valid = bool(judgement.valid[0])
                kind = layout.KIND_PLAY if valid or rng.random() < 0.3 else layout.KIND_BAD_CARD
                call_bits |= int(kind == layout.KIND_BAD_CARD) << cards.CALL_REASON_BAD_CARD
                bad_call_bits |= int(valid and rng.random() < 0.5) << cards.CALL_REASON_BAD_CARD
                forced_draw = int(beliefs.forced_cards(truth[None], card)[0])
        event = beliefs.PublicEvent(
            seat=int(rng.integers(1, 4)), kind=kind, card=card, phrases=phrases, call_bits=call_bits,
            bad_call_bits=bad_call_bits, n_calls=bin(call_bits | bad_call_bits).count("1"), penalty_cards=0,
            chain_cards=chain, forced_draw=forced_draw, won=False, named_suit=named_suit,
        )  # fmt: skip
        events.append(event)
        top, suit = posterior.context_after(event, top, suit)
    return events


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"reasons": "hidden"},
        {"talking": False, "thank_you": True},
        {"seven_turn_ends": True, "eps": 0.2},
        {"calls": "players"},
        {"calls": "players", "reasons": "hidden"},
        {"calls": "players", "talking": False, "thank_you": True},
        {"calls": "players", "seven_turn_ends": True, "eps": 0.2},
    ],
    ids=[
        "calls",
        "hidden-reasons",
        "no-talking",
        "seven-turn-ends",
        "players-calls",
        "players-calls-hidden-reasons",
        "players-calls-no-talking",
        "players-calls-seven-turn-ends",
    ],
)
def test_the_posterior_kernel_weighs_every_event_as_the_reference(options):
    """Random events on random supports (of 1 to 300 rule sets), far from any real game, so every
    branch of the judge is reached: the kernel's weights are the reference's, bit for bit."""
    rng = np.random.default_rng(7)
    rows, references = [], []
    for _ in range(40):
        n_hypotheses = int(rng.choice([1, 3, 9, 40, 130, 300]))
        posterior = RulePosterior(**options)
        posterior.hypotheses = (rng.random((n_hypotheses, library.N_RULES)) < 0.1).astype(np.float32)
        posterior.weights = rng.random(n_hypotheses) + 0.01
        posterior.weights /= posterior.weights.sum()
        posterior.context = (int(rng.integers(-1, cards.N_CARD_TYPES)), int(rng.integers(4)))
        reference = copy.deepcopy(posterior)
        events = (random_calls_events if posterior.players_call else random_events)(
            rng, posterior, int(rng.integers(0, 8))
        )
        reference.weigh_events(events, set(), 0)
        rows.append((posterior, events))
        references.append(reference)
    posterior_batch.weigh_all(rows)
    changed = 0
    for (posterior, _events), reference in zip(rows, references, strict=True):
        np.testing.assert_array_equal(posterior.weights, reference.weights)
        assert posterior.events_since_new_rule == reference.events_since_new_rule
        changed += np.ptp(reference.weights / reference.weights.max()) > 0.5
    assert changed >= 10  # the events told hypotheses apart


def test_a_supports_bit_sets_are_made_once_kept_while_it_lives_and_never_for_an_array_that_may_change():
    """``posterior_batch._bit_sets`` keeps the bit sets of read-only supports (a posterior's, which
    an update replaces): the same as made afresh, every call, and gone with the support."""
    import gc

    rng = np.random.default_rng(11)

    def fresh(arrays):
        return np.concatenate([posterior_batch.rule_bits(rule_sets, axis=1) for rule_sets in arrays])

    posteriors = []
    for n_hypotheses in (1, 7, 40):
        posterior = RulePosterior()
        posterior.hypotheses = (rng.random((n_hypotheses, library.N_RULES)) < 0.2).astype(np.float32)
        posterior.weights = np.full(n_hypotheses, 1.0 / n_hypotheses)
        posteriors.append(posterior)
    writeable = (rng.random((5, library.N_RULES)) < 0.2).astype(np.float32)
    for _ in range(2):
        arrays = [posterior.hypotheses for posterior in posteriors] + [writeable]
        bits, row_start = posterior_batch._bit_sets(arrays)
        np.testing.assert_array_equal(bits, fresh(arrays))
        np.testing.assert_array_equal(row_start, [0, 1, 8, 48, 53])
        writeable[:] = 1.0 - writeable  # an array that may change is never kept
    kept = {id(posterior.hypotheses) for posterior in posteriors}
    assert kept <= set(posterior_batch._BITS_OF) and id(writeable) not in posterior_batch._BITS_OF
    # A posterior's support cannot be changed in place; an update replaces it.
    with pytest.raises(ValueError, match="read-only"):
        posteriors[0].hypotheses[0, 0] = 1.0
    posteriors[1]._add_known({3})
    np.testing.assert_array_equal(
        posterior_batch._bit_sets([posteriors[1].hypotheses])[0], fresh([posteriors[1].hypotheses])
    )
    assert all(bits & (1 << 3) for bits in posterior_batch._bit_sets([posteriors[1].hypotheses])[0])
    del posteriors, posterior, arrays
    gc.collect()
    assert not kept & set(posterior_batch._BITS_OF), "the bit sets leave with their support"


def test_the_batched_prune_is_the_reference_prune(monkeypatch):
    """``prune_all`` against ``RulePosterior._prune`` on random supports: the kernel normalises the
    rows that keep every hypothesis, the reference prunes the others (weights below the largest
    times 1e-12, or more hypotheses than the limit); every weight and hypothesis bit for bit, and
    both paths taken."""
    rng = np.random.default_rng(3)
    posteriors, references = [], []
    for index in range(60):
        n_hypotheses = int(rng.choice([1, 2, 7, 8, 9, 40, 129, 300]))
        posterior = RulePosterior(max_hypotheses=int(rng.choice([library.N_RULES, 20_000])))
        posterior.hypotheses = (rng.random((n_hypotheses, library.N_RULES)) < 0.1).astype(np.float32)
        weights = rng.random(n_hypotheses) * 10.0 ** rng.integers(-6, 1, n_hypotheses)
        if index % 3 == 0:  # some weights far below the largest: the reference drops them
            weights[rng.random(n_hypotheses) < 0.3] *= 1e-14
        posterior.weights = weights
        posteriors.append(posterior)
        references.append(copy.deepcopy(posterior))
    sizes = [posterior.weights.size for posterior in posteriors]
    kernel = posterior_batch._normalise_unpruned
    normalised_rows = []

    def counting_kernel(weights, row_start, limits, normalised):
        kernel(weights, row_start, limits, normalised)
        normalised_rows.append(int(normalised.sum()))

    monkeypatch.setattr(posterior_batch, "_normalise_unpruned", counting_kernel)
    posterior_batch.prune_all(posteriors)
    for reference in references:
        reference._prune()
    for posterior, reference in zip(posteriors, references, strict=True):
        np.testing.assert_array_equal(posterior.weights, reference.weights)
        np.testing.assert_array_equal(posterior.hypotheses, reference.hypotheses)
    shrunk = sum(reference.weights.size < size for reference, size in zip(references, sizes, strict=True))
    assert shrunk >= 10 and 10 <= normalised_rows[0] <= len(posteriors) - 10, (shrunk, normalised_rows)


@pytest.mark.parametrize(
    "options",
    [{}, {"reasons": "hidden"}, {"talking": False, "thank_you": True}, {"seven_turn_ends": True},
     {"calls": "players"}, {"calls": "players", "talking": False, "thank_you": True}],
)  # fmt: skip
def test_a_remembered_event_is_judged_as_afresh(monkeypatch, options):
    """``_judged_event`` remembers each event's turn columns by what they depend on: every event,
    and every event with one of those fields or its context changed, asked after the others
    have filled the memory, gets the columns ``_event_turn``/``_calls_event_turn`` make afresh;
    posteriors of the other table options share the memory."""
    monkeypatch.setattr(posterior_batch, "_JUDGED_EVENTS", {})
    rng = np.random.default_rng(9)
    posterior = RulePosterior(**options)
    others = [RulePosterior(), RulePosterior(calls="players"), RulePosterior(reasons="hidden", talking=False)]
    posterior.hypotheses = (rng.random((20, library.N_RULES)) < 0.1).astype(np.float32)
    posterior.weights = np.full(20, 1 / 20)
    changes = {
        "card": lambda e: (e.card + 1) % cards.N_CARD_TYPES if e.card >= 0 else -1,
        "phrases": lambda e: e.phrases ^ (1 << int(rng.integers(cards.N_PHRASES))),
        "call_bits": lambda e: e.call_bits ^ (1 << int(rng.integers(cards.N_CALL_REASONS))),
        "bad_call_bits": lambda e: e.bad_call_bits ^ (1 << int(rng.integers(cards.N_CALL_REASONS))),
        "n_calls": lambda e: e.n_calls + 1,
        "chain_cards": lambda e: (e.chain_cards + 1) % 3,
        "forced_draw": lambda e: (e.forced_draw + 1) % 4,
        "named_suit": lambda e: (e.named_suit + 2) % 5 - 1,
        "kind": lambda e: layout.KIND_BAD_CARD if e.kind == layout.KIND_PLAY else layout.KIND_PLAY,
    }
    asked, differs = [], Counter()
    for _ in range(60):
        posterior.context = (int(rng.integers(-1, cards.N_CARD_TYPES)), int(rng.integers(4)))
        top, suit = posterior.context
        maker = random_calls_events if posterior.players_call else random_events
        for event in maker(rng, posterior, 4):
            if event.kind not in (layout.KIND_PLAY, layout.KIND_BAD_CARD, layout.KIND_DRAW):
                continue
            asked.append((posterior, event, top, suit))
            for name, change in changes.items():
                asked.append((posterior, dataclasses.replace(event, **{name: change(event)}), top, suit))
            asked.append((posterior, dataclasses.replace(event, seat=(event.seat + 1) % 4), top, suit))
            asked.append((posterior, event, (top + 1) % cards.N_CARD_TYPES, suit))
            asked.append((posterior, event, top, (suit + 1) % 4))
            asked += [(other, event, top, suit) for other in others]
    for posterior_asked, event, top, suit in reversed(asked):  # the variants fill the memory first
        posterior_batch._judged_event(posterior_asked, event, top, suit)
    for posterior_asked, event, top, suit in asked:
        event_turn = (
            posterior_batch._calls_event_turn if posterior_asked.players_call else posterior_batch._event_turn
        )
        afresh = event_turn(posterior_asked, 0, event, top, suit)
        assert posterior_batch._judged_event(posterior_asked, event, top, suit) == afresh
        differs[afresh is None] += 1
    assert differs[False] >= 500 and len(posterior_batch._JUDGED_EVENTS) >= 300, differs


def test_the_players_calls_rows_take_the_kernel_path(monkeypatch):
    """At a table of the players' calls (one round: no rule is added after the deal), every row's
    events are weighed by the kernel and every call window's faults judged by it: the reference
    steps, made to fail here, are never called, by the Bayesian players deciding nor by the
    belief inputs, and the kernel sees events of the players' calls."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("a players' calls row took the reference path")

    weighed = Counter()
    kernel = posterior_batch._weigh_all

    def counting_kernel(hypotheses, weights, row_start, row_eps, events, *tables):
        weighed.update(events[:, posterior_batch.EV_PLAYERS_CALL].tolist())
        kernel(hypotheses, weights, row_start, row_eps, events, *tables)

    monkeypatch.setattr(RulePosterior, "_calls_consistent", refuse)
    monkeypatch.setattr(RulePosterior, "_judge_event", refuse)
    monkeypatch.setattr(players_module, "fault_chances", refuse)
    monkeypatch.setattr(belief_inputs_module, "fault_chances", refuse)
    monkeypatch.setattr(posterior_batch, "_weigh_all", counting_kernel)
    batches, options = record(8, 100, seed=4, calls="players")
    assert weighed[1] >= 200 and weighed[0] == 0, weighed
    windows = [masks[:, cards.NO_CALL] > 0 for _observations, masks, *_rest in batches]
    inputs = [step[0] for step in replay(batches, options)]
    calls = np.concatenate([step[window] for step, window in zip(inputs, windows, strict=True)])
    assert calls.shape[0] >= 100 and calls[:, BELIEF_SLICES["call_fault"]].any()


def test_the_call_window_kernel_judges_faults_as_the_reference():
    """``turns_faults`` against ``beliefs.turn_faults`` on call windows of real games, varied at
    random (card, top card, suit, pending chain, phrases said, the mover's hand): the same
    booleans, and the same beliefs from them."""
    batches, _options = record(6, 80, seed=8, calls="players")
    windows = [
        view
        for observations, masks, *_rest in batches
        for view in beliefs.parse_observations(observations, np.flatnonzero(masks[:, cards.NO_CALL] > 0))
    ]
    assert len(windows) >= 30
    rng = np.random.default_rng(3)
    rows = []
    for view in windows[:200]:
        hand_sizes = view.hand_sizes.copy()
        hand_sizes[view.mover] = int(rng.choice([0, 0, 1, 2, 5]))
        played = int(rng.integers(-1, cards.N_CARD_TYPES))
        view = dataclasses.replace(
            view, played=played, drew=played < 0 or rng.random() < 0.2, suit_to_follow=int(rng.integers(4)),
            top=int(rng.integers(cards.N_CARD_TYPES)), pending_seven=int(rng.choice([0, 0, 1, 2])),
            took_seven=int(rng.choice([0, 0, 2])), hand_sizes=hand_sizes,
            said=int(rng.integers(1 << cards.N_PHRASES)) & int(rng.integers(1 << cards.N_PHRASES)),
        )  # fmt: skip
        n_hypotheses = int(rng.choice([1, 4, 30, 200]))
        rows.append((view, (rng.random((n_hypotheses, library.N_RULES)) < 0.1).astype(np.float32)))
    for talking, thank_you in [(True, False), (False, True)]:
        faults, row_start = posterior_batch.turns_faults(rows, thank_you, talking)
        seen = np.zeros(cards.N_CALL_REASONS, dtype=int)
        for n, (view, hypotheses) in enumerate(rows):
            mine = faults[row_start[n] : row_start[n + 1]]
            theirs = beliefs.turn_faults(hypotheses, view, talking=talking, thank_you=thank_you)
            np.testing.assert_array_equal(mine, theirs)
            weights = rng.random(hypotheses.shape[0])
            np.testing.assert_array_equal(weights @ mine, weights @ theirs)
            seen += theirs.any(axis=0)
        assert (seen[: cards.N_PHRASES] > 0).sum() >= 8 and (seen[cards.N_PHRASES :] > 0).all() == talking


def test_the_kernels_sum_as_numpy_sums():
    """The posterior kernel divides by numpy's sum of the weights, bit for bit, at every length
    (below 8 one by one, then 8 lanes, then halves above 128)."""
    rng = np.random.default_rng(5)
    for n in [*range(1, 300), 511, 1000, 4097, 20_000]:
        values = rng.random(n + 3) * 10.0 ** rng.integers(-12, 3, n + 3)
        assert posterior_batch.pairwise_sum(values, 3, n) == values[3:].sum(), n


def test_the_batched_parsers_and_validity_are_the_one_row_ones():
    batches, _options = record(8, 250, seed=3, rule_pool=ALL_RULES, draws=1, num_rounds=2)
    round_wins = 0
    for observations, masks, *_rest in batches:
        rows = np.flatnonzero(masks.any(axis=1))
        for row, view in zip(rows, beliefs.parse_observations(observations, rows), strict=True):
            reference = beliefs.parse_observation(observations[row])
            # The batched parser cuts every row's event keys from one byte string.
            assert view.event_keys == reference.event_keys
            for name in vars(reference):
                mine, theirs = getattr(view, name), getattr(reference, name)
                if name == "event_rows":
                    assert len(mine) == len(theirs)
                    for a, b in zip(mine, theirs, strict=True):
                        np.testing.assert_array_equal(a, b)
                    assert beliefs.parse_events(mine) == [beliefs.parse_event(r) for r in theirs]
                    round_wins += sum(event.won for event in beliefs.parse_events(mine))
                elif isinstance(theirs, np.ndarray):
                    np.testing.assert_array_equal(mine, theirs)
                    assert mine.dtype == theirs.dtype
                else:
                    assert mine == theirs and type(mine) is type(theirs), name
    assert round_wins > 0  # every field of an event is seen set
    rng = np.random.default_rng(0)
    hypotheses = (rng.random((400, library.N_RULES)) < 0.08).astype(np.float32)
    for _ in range(300):
        played = rng.choice(cards.N_CARD_TYPES, size=int(rng.integers(1, 9)), replace=False)
        context = (int(rng.integers(cards.N_CARD_TYPES)), int(rng.integers(4)), int(rng.integers(2)))
        np.testing.assert_array_equal(
            beliefs.plays_validity(hypotheses, played, *context),
            beliefs.plays_validity_reference(hypotheses, played, *context),
        )


def test_the_decision_benchmark_times_both_arms_on_the_same_deals_and_restores_the_batch():
    """``belief_speed --decisions``: both arms timed every round (their actions on the same deals
    checked equal inside), and ``decide_rows`` itself again afterwards."""
    batched = RuleBeliefAgent.decide_rows
    rates = decision_rates(8, 20, 2)
    assert {name: len(values) for name, values in rates.items()} == {"row-by-row": 2, "batched": 2}
    assert all(rate > 0 for values in rates.values() for rate in values)
    assert RuleBeliefAgent.decide_rows is batched


def test_event_keys_are_equal_exactly_when_the_event_rows_are():
    """``SeatView.event_keys``, by which a posterior lines a new event window up with the previous
    one: equal for equal rows (0.0 written as -0.0 included), different for rows that differ."""
    batches, _options = record(4, 80, seed=2)
    views = [
        view
        for observations, masks, *_rest in batches
        for view in beliefs.parse_observations(observations, np.flatnonzero(masks.any(axis=1)))
    ]
    rows = [row for view in views for row in view.event_rows]
    keys = [key for view in views for key in view.event_keys]
    rng = np.random.default_rng(1)
    outcomes = Counter()
    for first, second in rng.integers(len(rows), size=(4000, 2)):
        same = bool(np.array_equal(rows[first], rows[second]))
        assert (keys[first] == keys[second]) == same
        outcomes[same] += 1
    assert outcomes[True] >= 50 and outcomes[False] >= 50, outcomes
    for view in views[::25]:
        negative_zeros = [np.where(row == 0, np.float32(-0.0), row) for row in view.event_rows]
        assert dataclasses.replace(view, event_rows=negative_zeros).event_keys == view.event_keys
