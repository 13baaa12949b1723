"""Shared helpers for the Mao tests: build envs, play sub-actions by text, mirror the reference."""

from __future__ import annotations

import numpy as np

from mao_env import cards as C
from mao_env import core as K
from mao_env.env import raw_env
from mao_env.reference import RefGame


def make(n_players: int = 4, **kwargs) -> raw_env:
    return raw_env(n_players, **kwargs)


def play(env: raw_env, *texts: str) -> None:
    """Step the raw env with actions given as text ("play 9D", "say last-card", "end")."""
    for text in texts:
        env.step(env.action_from_text(text))


def ref_from_env(env: raw_env) -> RefGame:
    """The reference twin of the env's current game."""
    hands, _, decks, s, rules, _, _, rng = env._state
    s = s[0]
    game = RefGame(
        n_players=env.n_players,
        hands=[[int(x) for x in hands[0, seat]] for seat in range(C.MAX_PLAYERS)],
        stack=[int(x) for x in decks[0, K.STACK, : s[K.S_STACK_SIZE]]],
        pile=[int(x) for x in decks[0, K.PILE, : s[K.S_PILE_SIZE]]],
        rng=int(rng[0]),
        rules=[
            (int(r), int(a)) for r, a in zip(rules[0, K.ACTIVE], rules[0, K.AUTHOR], strict=True) if r >= 0
        ],
        queue=[int(r) for r in rules[0, K.QUEUE] if r >= 0],
        options={
            "n_decks": env.n_decks,
            "thank_you": env.seven_phrase == "thank you",
            "talking": env.talking,
            "seven_turn_ends": env.seven_turn_ends,
            "max_sub_actions": env.max_sub_actions,
            "n_rounds": env.num_rounds,
            "rule_choice": env.rule_choice,
            "cambridge": env.rounds == "cambridge",
        },
    )
    game.current, game.direction, game.named_suit = (
        int(s[K.S_CURRENT]),
        int(s[K.S_DIRECTION]),
        int(s[K.S_NAMED_SUIT]),
    )
    game.pending_seven, game.played, game.drew = (
        int(s[K.S_PENDING_SEVEN]),
        int(s[K.S_PLAYED]),
        bool(s[K.S_DREW]),
    )
    game.took_seven, game.first_suit = int(s[K.S_TOOK_SEVEN]), int(s[K.S_FIRST_SUIT])
    game.said = {p for p in range(C.N_PHRASES) if (int(s[K.S_SAID]) >> p) & 1}
    game.sub_actions, game.round, game.queue_next = (
        int(s[K.S_SUB_ACTIONS]),
        int(s[K.S_ROUND]),
        int(s[K.S_QUEUE_NEXT]),
    )
    game.phase = ("start", "speak", "choose", "over")[int(s[K.S_PHASE])]
    game.next_seat = int(s[K.S_NEXT_SEAT])
    return game


CALL_NAMES = {
    K.CALL_BAD_CARD: "bad card",
    K.CALL_FAILURE_TO_SAY: "failure to say",
    K.CALL_TALKING: "talking",
    K.CALL_MAO: "mao",
}


def assert_same(env: raw_env, ref: RefGame) -> None:
    """The env's game equals the reference game in every rule-relevant field."""
    twin = ref_from_env(env)
    for name in ("hands", "stack", "pile", "rng", "rules", "current", "direction", "named_suit", "pending_seven",
                 "played", "drew", "took_seven", "said", "first_suit", "sub_actions", "round", "phase"):  # fmt: skip
        assert getattr(twin, name) == getattr(ref, name), (
            f"{name}: core {getattr(twin, name)} != reference {getattr(ref, name)}"
        )
    s = env._state[3][0]
    calls = [
        (CALL_NAMES[int(c[0])], int(c[1]), int(c[2]), int(c[3])) for c in env._state[6][0, : s[K.S_N_CALLS]]
    ]
    assert calls == ref.calls
    assert [int(x) for x in s[K.S_LAST_CARDS_0 : K.S_LAST_CARDS_0 + env.n_players]] == ref.last_cards
    assert int(s[K.S_ROUND_WON]) == ref.round_won


def total_cards(env: raw_env) -> int:
    hands, _, _, s = env._state[:4]
    return int(hands[0].sum()) + int(s[0, K.S_STACK_SIZE]) + int(s[0, K.S_PILE_SIZE])


def random_legal(rng: np.random.Generator, mask: np.ndarray) -> int:
    return int(rng.choice(np.flatnonzero(mask)))
