"""Rule kinds are defined once (``mao_env.rules``) and the Mao Master's judgement exists once
(``mao_env.reference``): the kernel names the kinds, and the Bayesian player's judge over many
hypotheses is the reference's judge, hypothesis by hypothesis."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from madiao_mao.agents.mao import beliefs as mao_beliefs
from mao_env import cards, core, reference
from mao_env import rules as rule_library
from tests.mao.mao_helpers import make, random_legal, ref_from_env


def test_the_kernel_reads_rule_rows_by_named_column_and_kind():
    source = inspect.getsource(core)
    assert not re.findall(r"library\[rule, \d\]", source)
    assert not re.findall(r"\b(?:kind|effect) == \d", source)
    for name in ("VALIDITY", "DYNAMICS", "SPEECH", "FORBID_ON", "RANK_ORDER", "SKIP", "SAY_ON_DRAW"):
        assert f"rule_library.{name}" in source


def test_every_rule_kind_has_a_description():
    kinds = {
        rule_library.VALIDITY: ("FORBID_ON", "ONLY_AFTER", "WILD", "ALTERNATE_COLOUR", "RANK_ORDER"),
        rule_library.DYNAMICS: ("SKIP", "REVERSE", "DRAW", "AGAIN"),
        rule_library.SPEECH: ("SAY_ON_PLAY", "SAY_ON_DRAW", "SAY_ON_TOP"),
    }
    for family, names in kinds.items():
        in_library = {int(k) for k in rule_library.RULE_TABLE[rule_library.RULE_TABLE[:, 0] == family, 1]}
        assert in_library == {getattr(rule_library, name) for name in names}
    texts = [rule_library.describe_rule(rule) for rule in range(rule_library.N_RULES)]
    assert len(set(texts)) == rule_library.N_RULES


def test_the_bayesian_judge_is_the_reference_judge(monkeypatch):
    calls = []
    shared = reference.judge_phrases

    def spy(**kwargs):
        calls.append(kwargs)
        return shared(**kwargs)

    monkeypatch.setattr(mao_beliefs, "judge_phrases", spy)
    mao_beliefs.turn_probes.cache_clear()  # the verdicts are cached per turn: ask the judge afresh
    hypotheses = mao_beliefs.hypotheses_from_sets([[], [rule_library.N_RULES - 1], [0, 5]])
    mao_beliefs.judge_turn(
        hypotheses, top=0, suit_to_follow=0, pending_seven=0, played=1, drew=False, took_seven=0,
        first_suit=-1, hand_after=2,
    )  # fmt: skip
    assert calls, "judge_turn must call the shared judge"


def _rule_sets(rng: np.random.Generator, true_rules: list[int]) -> list[list[int]]:
    sets = [true_rules, []]
    for _ in range(10):
        size = int(rng.integers(1, 5))
        sets.append(sorted(int(r) for r in rng.choice(rule_library.N_RULES, size=size, replace=False)))
    return sets


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_judge_turn_agrees_with_the_reference_for_every_hypothesis(seed):
    """On random games, at every sub-action of a turn in progress, each hypothesis row of
    ``judge_turn`` equals the reference's requirements with that hypothesis as the rule set."""
    rng = np.random.default_rng(seed)
    env = make(
        4,
        mask="rules" if seed == 2 else "physical",
        seven_phrase="thank you" if seed == 1 else "penalty card",
    )
    true_rules = sorted(int(r) for r in rng.choice(rule_library.N_RULES, size=6, replace=False))
    env.reset(seed=seed, options={"rules": true_rules})
    rule_sets = _rule_sets(rng, true_rules)
    hypotheses = mao_beliefs.hypotheses_from_sets(rule_sets)
    checked = 0
    for _ in range(600):
        scalars = env._state.scalars[0]
        if scalars[core.S_PHASE] == core.PH_SPEAK:
            ref = ref_from_env(env)
            hand_after = sum(ref.hands[ref.current])
            said = int(scalars[core.S_SAID])
            named = ref.named_suit
            judgement = mao_beliefs.judge_turn(
                hypotheses,
                top=ref.pile[-1],
                suit_to_follow=named if named >= 0 else int(cards.CARD_SUIT[ref.pile[-1]]),
                pending_seven=ref.pending_seven,
                played=ref.played,
                drew=ref.drew,
                took_seven=ref.took_seven,
                first_suit=ref.first_suit,
                hand_after=hand_after,
                thank_you=env.seven_phrase == "thank you",
            )
            due = mao_beliefs.mao_due(judgement, said, hand_after, env.talking)
            for row, rule_set in enumerate(rule_sets):
                ref.rules = [(rule, -1) for rule in rule_set]
                valid, _, required, excused, allowed = ref.requirements()
                assert judgement.valid[row] == valid
                assert set(np.flatnonzero(judgement.required[row])) == set(required) - {cards.MAO}
                assert set(np.flatnonzero(judgement.excused[row])) == excused
                assert set(np.flatnonzero(judgement.allowed[row])) == allowed
                assert due[row] == (cards.MAO in required)
            checked += 1
        env.step(random_legal(rng, env._mask))
        if env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            env.reset(seed=int(rng.integers(1 << 30)), options={"rules": true_rules})
    assert checked > 50


def test_the_train_and_held_out_rule_split_lives_with_the_library():
    from madiao_mao.training.mao import evaluation as mao_evaluation

    held_out, training = set(rule_library.HELD_OUT_RULES), set(rule_library.TRAINING_RULES)
    assert held_out and not held_out & training
    assert held_out | training == set(range(rule_library.N_RULES))
    # Held-out rules can be violated (they draw calls), so a learner's discovery can be measured.
    assert held_out <= set(rule_library.DISCOVERABLE_RULES)
    assert all(rule_library.RULE_FAMILY[r] != rule_library.DYNAMICS for r in rule_library.DISCOVERABLE_RULES)
    # The evaluation module re-exports the same split (older imports keep working).
    assert mao_evaluation.HELD_OUT_RULES is rule_library.HELD_OUT_RULES
    assert mao_evaluation.TRAINING_RULES is rule_library.TRAINING_RULES


def test_dead_kernels_are_gone():
    for name in ("step_batch", "hand_sizes_total"):
        assert not hasattr(core, name)


def test_the_judge_only_ors_in_the_phrases_a_card_or_a_draw_asks_for():
    """What ``judge_turn`` relies on to judge many hypotheses with a few calls of the shared
    judge: every piece of the verdict is its value without card/draw phrases, plus those phrases
    masked by what a probe with every phrase lets through."""
    rng = np.random.default_rng(3)
    every = (1 << cards.N_PHRASES) - 1
    for _ in range(400):
        turn = {
            "played": int(rng.integers(-1, cards.N_CARD_TYPES)),
            "valid": bool(rng.integers(2)),
            "first_suit": int(rng.integers(-1, 4)),
            "took_seven": int(rng.integers(0, 3)),
            "pending_seven": int(rng.integers(0, 3)),
            "thank_you": bool(rng.integers(2)),
            "drew": bool(rng.integers(2)),
            "hand_after": [None, 0, 1, 2][int(rng.integers(4))],
        }
        card, draw = int(rng.integers(every + 1)), int(rng.integers(every + 1))
        judged = reference.judge_phrases(card_phrases=card, draw_phrases=draw, **turn)
        plain = reference.judge_phrases(card_phrases=0, draw_phrases=0, **turn)
        via_card = reference.judge_phrases(card_phrases=every, draw_phrases=0, **turn)
        via_draw = reference.judge_phrases(card_phrases=0, draw_phrases=every, **turn)
        for piece in range(3):
            assert judged[piece] == plain[piece] | (card & via_card[piece]) | (draw & via_draw[piece])
