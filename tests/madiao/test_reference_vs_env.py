"""The PettingZoo env against the plain-Python reference on thousands of random hands.

Both get the same deal (a random deck dealt through the cut, or hands set exactly, some of them
planted with a meld, the four lowest or a long suit) and the same random legal actions. At every
step the acting seat and the legal set must agree; at the end the play history, tricks won,
settlement lines (as multisets) and rewards must agree. The reference is re-synchronised from
``env.unwrapped.table()`` only where the env deals a new random deal (redeal, four lowest, or a
meld at the deal), since the reference cannot know the env's random generator.

Deals the env makes on its own are not visible while it makes them: if such a deal itself held
the four lowest (about 0.3 % of deals) the env pays it and deals again before the table can be
read. Those payments are accepted only when a re-sync happened and only for the two
declaration rules; every other line must match exactly.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from madiao_env import cards, madiao_v0
from madiao_env.reference import (
    FOUR_LOWEST,
    HUNDRED_MYRIAD,
    MELD_FOUR_TOPS,
    PHASE_NEEDS_DEAL,
    PHASE_OVER,
    Payment,
    ReferenceGame,
    four_lowest_holder,
    meld_winner,
    payoffs_of,
)

NAMES = cards.CARD_NAMES
AGENTS = [f"player_{seat}" for seat in range(4)]
TOP_HEAVY = [cards.card_id(n) for n in ("10000T", "1000T", "100T", "0C", "9S", "9M", "HC", "8S")]


def random_deck(rng: np.random.Generator) -> list[str]:
    return [NAMES[card] for card in rng.permutation(cards.N_CARDS)]


def random_hands_deal(rng: np.random.Generator) -> dict:
    """A deal set exactly; often biased towards the rare rules (melds, four lowest, honours)."""
    order = list(rng.permutation(cards.N_CARDS))
    kind = rng.integers(6)
    seat = int(rng.integers(4))
    planted: list[int] = []
    if kind == 0:  # the four lowest in one hand
        planted = sorted(FOUR_LOWEST)
    elif kind == 1:  # the four tops (a 4-stakes meld), sometimes with the Hundred Myriad
        planted = sorted(MELD_FOUR_TOPS | ({HUNDRED_MYRIAD} if rng.integers(2) else set()))
    elif kind == 2:  # honours material for one seat
        planted = TOP_HEAVY[: int(rng.integers(3, 8))]
    elif kind == 3:  # a long suit: redeal eligibility
        suit = int(rng.integers(4))
        members = [c for c in range(cards.N_CARDS) if cards.CARD_SUIT[c] == suit]
        planted = list(rng.choice(members, size=int(rng.integers(5, 9)), replace=False))
    rest = [card for card in order if card not in planted]
    hands = [[] for _ in range(4)]
    hands[seat] = list(planted)
    for target in range(4):
        while len(hands[target]) < 8:
            hands[target].append(rest.pop())
    return {
        "hands": [[NAMES[c] for c in hand] for hand in hands],
        "stock": [NAMES[c] for c in rest],
        "banker": int(rng.integers(4)),
        "first": int(rng.integers(4)),
    }


def choose(rng: np.random.Generator, legal: set[int]) -> int:
    """A random legal action, leaning towards face-up plays so that captures are common."""
    ordered = sorted(legal)
    face_up = [a for a in ordered if a < cards.ACTION_SLOUGH]
    if face_up and rng.random() < 0.6:
        return int(face_up[rng.integers(len(face_up))])
    return int(ordered[rng.integers(len(ordered))])


def by_rule_and_pair(lines) -> Counter:
    """Stakes summed per (rule, payer, payee): the env lists one line per rule and pair (two
    boss-card tricks are one line of 2), the reference one line per occurrence."""
    totals: Counter = Counter()
    for line in lines:
        totals[(line.rule, line.payer, line.payee)] += line.stakes
    return totals


def env_settlement(env) -> Counter:
    """The env's lines in stakes (the env reports them times the ``stake`` option)."""
    settlement = env.unwrapped.last_settlement
    unit = env.unwrapped.stake
    return by_rule_and_pair(
        Payment(line["rule"], line["payer"], line["payee"], float(line["stakes"]) / unit)
        for line in (settlement["lines"] if settlement is not None else [])
    )


def resync(ref: ReferenceGame, env, final: bool = False) -> bool:
    """Feed the env's newly dealt random deal to the reference (and check it needed no action).

    Returns True when the banker is not the one the reference expects: only an unseen deal in
    between (four lowest: banker drawn again; a meld: its holder is the next banker) explains
    that, and the caller then requires that deal's payment in the settlement.
    """
    table = env.unwrapped.table()
    if ref.phase == PHASE_OVER:  # a meld at the deal: the env deals the next hand at once
        ref.new_hand()
    hands = [[cards.card_id(n) for n in names] for names in table["hands"]]
    # The deal the env shows mid-episode must be one that stops for a decision: no meld, no four
    # lowest. At the end of an episode it may be a deal whose meld ended the hand at once.
    assert final or meld_winner([set(h) for h in hands], table["first"]) is None, table
    assert four_lowest_holder([set(h) for h in hands]) is None, table
    banker_redrawn = ref.needs_deal_reason != "four_lowest" and table["banker"] != ref.banker
    if banker_redrawn:
        ref.needs_deal_reason = "four_lowest"  # any banker: the env paid a deal we never saw
    ref.set_deal(hands, table["stock"], table["banker"], table["first"])
    return banker_redrawn


def play_one(env, ref: ReferenceGame, seed: int, options: dict, rng: np.random.Generator) -> int:
    """Play one episode on both; returns the number of re-syncs from the env's table."""
    env.reset(seed=seed, options=options)
    if "deck" in options:
        ref.deal_from_deck(options["deck"], options["banker"])
    else:
        ref.set_deal(options["hands"], options["stock"], options["banker"], options["first"])
    resyncs = 0
    steps = 0
    banker_redrawn = False
    while not all(env.terminations.values()):
        if ref.phase == PHASE_NEEDS_DEAL or ref.phase == PHASE_OVER:
            banker_redrawn |= resync(ref, env)
            resyncs += 1
            continue
        seat = AGENTS.index(env.agent_selection)
        context = (options, steps, env.unwrapped.table()["history"][-4:])
        assert seat == ref.to_act, context
        mask = env.observe(env.agent_selection)["action_mask"]
        legal = ref.legal_actions()
        assert set(np.flatnonzero(mask).tolist()) == legal, context
        action = choose(rng, legal)
        env.step(action)
        ref.step(action)
        steps += 1
    if ref.phase == PHASE_NEEDS_DEAL:  # the env's last random deal held a meld: the hand is over
        banker_redrawn |= resync(ref, env, final=True)
        resyncs += 1
    assert ref.phase == PHASE_OVER, (options, ref.phase)
    table = env.unwrapped.table()
    assert table["history"] == [
        (play.seat, NAMES[play.card], play.face_up, index)
        for index, trick in enumerate(ref.tricks)
        for play in trick
    ]
    assert table["tricks_won"] == ref.tricks_won()
    got = env_settlement(env)
    expected = by_rule_and_pair(ref.settlement())
    unseen = got - expected
    # Only payments of random deals the env made (and paid) before the table could be read.
    assert expected - got == Counter(), (options, expected - got)
    assert not unseen or (resyncs and all(rule in ("four_lowest", "meld") for rule, _, _ in unseen)), (
        options,
        unseen,
    )
    assert not banker_redrawn or unseen, (options, "the banker changed without an unseen payment")
    unseen_lines = [Payment(rule, payer, payee, stakes) for (rule, payer, payee), stakes in unseen.items()]
    payoffs = [a + b for a, b in zip(ref.payoffs(), payoffs_of(unseen_lines, ref.stake), strict=True)]
    rewards = [env._cumulative_rewards[agent] for agent in AGENTS]
    assert rewards == pytest.approx(payoffs), (options, rewards, payoffs)
    assert env.infos[AGENTS[0]]["payoffs"] == pytest.approx(payoffs)
    return resyncs


VARIANTS = [
    pytest.param({}, 4000, id="default"),
    pytest.param({"stake": 2.5}, 1500, id="stake"),
    pytest.param({"max_redeals": 1}, 1500, id="max_redeals"),
    pytest.param({"face_up_discard": True}, 3000, id="face_up_discard"),
]


@pytest.mark.parametrize(("variant", "n_hands"), VARIANTS)
def test_env_matches_reference_on_random_hands(variant: dict, n_hands: int) -> None:
    rng = np.random.default_rng(n_hands + len(variant))
    env = madiao_v0.raw_env(**variant)
    resyncs = 0
    for hand_index in range(n_hands):
        if hand_index % 2:
            options = random_hands_deal(rng)
        else:
            options = {"deck": random_deck(rng), "banker": int(rng.integers(4))}
        ref = ReferenceGame(**variant)
        resyncs += play_one(env, ref, seed=hand_index, options=options, rng=rng)
    assert resyncs > 0  # the redeal and four-lowest paths were exercised


def test_reference_resync_covers_meld_at_the_deal() -> None:
    """A meld at the deal ends that hand at once; the env deals the next hand in the episode."""
    rng = np.random.default_rng(5)
    env = madiao_v0.raw_env()
    seats = [
        "1S 2S 3S 4S 5S 6S 7S 8S",
        "1C 2C 3C 4C 5C 6C 7C 8C",
        "10000T 9M 9S 0C 20T 30T 40T 50T",
        "100T 1M 2M 3M 4M 5M 6M 9C",
    ]
    options = {
        "hands": [s.split() for s in seats],
        "stock": ["7M", "8M", "60T", "70T", "80T", "90T", "1000T", "HC"],
        "banker": 0,
        "first": 2,
    }
    for seed in range(20):
        ref = ReferenceGame()
        play_one(env, ref, seed=seed, options=options, rng=rng)
        assert Counter(ref.settlement())[Payment("meld", 0, 2, 4.0)] == 1
