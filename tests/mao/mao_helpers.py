"""Shared helpers for the Mao tests: build envs, play sub-actions by text, mirror the reference."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mao_env import cards, core
from mao_env import rules as rule_library
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
        hands=[[int(x) for x in hands[0, seat]] for seat in range(cards.MAX_PLAYERS)],
        stack=[int(x) for x in decks[0, core.STACK, : s[core.S_STACK_SIZE]]],
        pile=[int(x) for x in decks[0, core.PILE, : s[core.S_PILE_SIZE]]],
        rng=int(rng[0]),
        rules=[
            (int(r), int(a))
            for r, a in zip(rules[0, core.ACTIVE], rules[0, core.AUTHOR], strict=True)
            if r >= 0
        ],
        queue=[int(r) for r in rules[0, core.QUEUE] if r >= 0],
        options={
            "n_decks": env.n_decks,
            "thank_you": env.seven_phrase == "thank you",
            "talking": env.talking,
            "seven_turn_ends": env.seven_turn_ends,
            "max_sub_actions": env.max_sub_actions,
            "n_rounds": env.num_rounds,
            "rule_choice": env.rule_choice,
            "cambridge": env.rounds == "cambridge",
            "calls": env.options.calls,
            "forgotten_mao_cards": env.options.forgotten_mao_cards,
        },
    )
    game.current, game.direction, game.named_suit = (
        int(s[core.S_CURRENT]),
        int(s[core.S_DIRECTION]),
        int(s[core.S_NAMED_SUIT]),
    )
    game.pending_seven, game.played, game.drew = (
        int(s[core.S_PENDING_SEVEN]),
        int(s[core.S_PLAYED]),
        bool(s[core.S_DREW]),
    )
    game.took_seven, game.first_suit = int(s[core.S_TOOK_SEVEN]), int(s[core.S_FIRST_SUIT])
    game.said = {p for p in range(cards.N_PHRASES) if (int(s[core.S_SAID]) >> p) & 1}
    game.sub_actions, game.round, game.queue_next = (
        int(s[core.S_SUB_ACTIONS]),
        int(s[core.S_ROUND]),
        int(s[core.S_QUEUE_NEXT]),
    )
    game.phase = ("start", "speak", "choose", "call", "over")[int(s[core.S_PHASE])]
    game.next_seat = int(s[core.S_NEXT_SEAT])
    game.starved, game.stuck_turns = bool(s[core.S_STARVED]), int(s[core.S_STUCK_TURNS])
    game.refused = [
        {r for r in range(rule_library.N_RULES) if (int(s[core.S_REFUSED_0 + seat]) >> r) & 1}
        for seat in range(cards.MAX_PLAYERS)
    ]
    if game.phase == "call":  # the call window: the truth of the turn under judgement
        game.mover, game.valid = int(s[core.S_MOVER]), bool(s[core.S_VALID])
        game.called = {r for r in range(cards.N_CALL_REASONS) if (int(s[core.S_CALLED]) >> r) & 1}
        game.correct = {r for r in range(cards.N_CALL_REASONS) if (int(s[core.S_CORRECT]) >> r) & 1}
        game.owed = [int(x) for x in s[core.S_OWED_0 : core.S_OWED_0 + env.n_players]]
        game.offences = window_faults_of(s)
    return game


def window_faults_of(s) -> dict[int, list[tuple[str, int, int, int]]]:
    """The reference's ``offences`` of a call window, from a core ``scalars`` row."""
    faults: dict[int, list[tuple[str, int, int, int]]] = {}
    for reason in range(cards.N_CALL_REASONS):
        n_cards, rule = int(s[core.S_FAULT_CARDS_0 + reason]), int(s[core.S_FAULT_RULE_0 + reason])
        if not n_cards:
            continue
        if reason == cards.CALL_REASON_BAD_CARD:
            faults[reason] = [("bad card", -1, n_cards, rule)]
        elif reason == cards.CALL_REASON_TALKING:
            talking = int(s[core.S_TALKING])
            faults[reason] = [("talking", p, 1, -1) for p in range(cards.N_PHRASES) if (talking >> p) & 1]
        elif reason == cards.CALL_REASON_MAO:
            faults[reason] = [("mao", cards.MAO, n_cards, -1)]
        else:
            faults[reason] = [("failure to say", reason, n_cards, rule)]
    return faults


CALL_NAMES = {
    core.CALL_BAD_CARD: "bad card",
    core.CALL_FAILURE_TO_SAY: "failure to say",
    core.CALL_TALKING: "talking",
    core.CALL_MAO: "mao",
    core.CALL_BAD_CALL: "bad call",
}


def assert_same(env: raw_env, ref: RefGame) -> None:
    """The env's game equals the reference game in every rule-relevant field."""
    twin = ref_from_env(env)
    for name in ("hands", "stack", "pile", "rng", "rules", "current", "direction", "named_suit",
                 "pending_seven", "played", "drew", "took_seven", "said", "first_suit", "sub_actions",
                 "round", "phase", "refused", "starved", "stuck_turns"):  # fmt: skip
        assert getattr(twin, name) == getattr(ref, name), (
            f"{name}: core {getattr(twin, name)} != reference {getattr(ref, name)}"
        )
    s = env._state[3][0]
    if ref.phase == "call":
        for name in ("mover", "called", "correct", "owed"):
            assert getattr(twin, name) == getattr(ref, name), name
        assert {r: sum(e[2] for e in v) for r, v in twin.offences.items()} == {
            r: sum(e[2] for e in v) for r, v in ref.offences.items()
        }
    calls = [
        (CALL_NAMES[int(c[core.K_CODE])], int(c[core.K_PHRASE]), int(c[core.K_CARDS]), int(c[core.K_RULE]),
         int(c[core.K_PLAYER]), int(c[core.K_CALLER]))
        for c in env._state.calls[0, : s[core.S_N_CALLS]]
    ]  # fmt: skip
    assert calls == ref.calls
    assert [
        int(x) for x in s[core.S_PENALTY_TAKEN_0 : core.S_PENALTY_TAKEN_0 + env.n_players]
    ] == ref.last_cards
    assert int(s[core.S_ROUND_WON]) == ref.round_won
    assert bool(s[core.S_ROUND_BLOCKED]) == ref.round_blocked


def total_cards(env: raw_env) -> int:
    """Cards in hands, stack and pile, plus the card on the table during a turn (played, not judged)."""
    hands, _, _, s = env._state[:4]
    in_play = 1 if s[0, core.S_PLAYED] >= 0 else 0
    return int(hands[0].sum()) + int(s[0, core.S_STACK_SIZE]) + int(s[0, core.S_PILE_SIZE]) + in_play


def random_legal(rng: np.random.Generator, mask: np.ndarray) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def play_randomly_to_the_end(env: raw_env, rng: np.random.Generator, max_iter: int) -> None:
    """Random legal actions through ``agent_iter`` (``None`` for a done agent) until the episode
    is over or ``max_iter`` agents were asked."""
    for agent in env.agent_iter(max_iter=max_iter):
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else random_legal(rng, env.observe(agent)["action_mask"]))


def random_play_states(env: raw_env, seed: int, options: dict | None = None) -> list[dict]:
    """``get_state()`` after the reset and after every random legal action until the game ends."""
    env.reset(seed=seed, options=options)
    rng = np.random.default_rng(seed)
    states = [env.get_state()]
    while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        env.step(random_legal(rng, env._mask))
        states.append(env.get_state())
    return states


def play_with_agents(
    env: raw_env,
    agents: list,
    *,
    max_steps: int,
    before_step: Callable[[int, int], None] | None = None,
    after_step: Callable[[int, int], None] | None = None,
) -> None:
    """Each seat's agent acts (its action must be mask-legal) until the game ends or ``max_steps``
    actions were taken; ``before_step(seat, action)`` and ``after_step(seat, action)`` run around
    every step."""
    for _ in range(max_steps):
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            return
        seat = env.current_seat
        action = agents[seat].act(observation["observation"], observation["action_mask"])
        assert observation["action_mask"][action] == 1, f"seat {seat} took masked action {action}"
        if before_step is not None:
            before_step(seat, action)
        env.step(action)
        if after_step is not None:
            after_step(seat, action)


def actions_to_the_end_of_turn(env: raw_env, agent: Any, max_actions: int) -> list[str]:
    """What ``agent`` does at the table, as text, until it ends its turn (``max_actions`` at most)."""
    texts = []
    for _ in range(max_actions):
        observation, *_ = env.last()
        action = agent.act(observation["observation"], observation["action_mask"])
        texts.append(env.describe_action(action))
        env.step(action)
        if action == cards.END_TURN:
            break
    return texts


def scenario(
    n_players: int = 4,
    *,
    hands: dict[int, list[str]],
    pile: list[str],
    stack: list[str] | None = None,
    rules: list | None = None,
    current: int = 0,
    direction: int = 1,
    pending_seven: int = 0,
    named_suit: str | None = None,
    **kwargs,
) -> raw_env:
    """A raw env set to a hand-written table (every seat's hand must be given)."""
    env = raw_env(n_players, **kwargs)
    options = {"hands": hands, "pile": pile, "current": current, "direction": direction}
    if stack is not None:
        options["stack"] = stack
    if rules is not None:
        options["rules"] = rules
    if pending_seven:
        options["pending_seven"] = pending_seven
    if named_suit is not None:
        options["named_suit"] = named_suit
    env.reset(seed=0, options=options)
    return env


def won_round_table(rules: list) -> raw_env:
    """A 4-seat table where seat 0 has just won the first of two rounds (9H on 5H, "Mao") and
    chooses a rule, with ``rules`` in force (none may forbid that play or ask a phrase of it)."""
    hands = {0: ["9H"], 1: ["2D", "3D", "4D", "5D"], 2: ["2H", "3H", "4H", "6H"], 3: ["2C", "3C", "4C", "6C"]}
    stack = ["KC", "QC", "KD", "QD", "10D", "10S"]
    env = scenario(4, hands=hands, pile=["5H"], stack=stack, rules=rules, num_rounds=2)
    play(env, "play 9H", "say mao", "end")
    assert env.current_seat == 0 and env.observe("player_0")["action_mask"][cards.CHOOSE_RULE_0 :].any()
    return env


def turn(env: raw_env, *texts: str) -> list[tuple[str, int]]:
    """Play one whole turn given as text (the last must be "end"); returns the Mao Master's calls
    as ``(call, cards)``."""
    assert texts[-1] == "end", "a turn ends with 'end'"
    play(env, *texts)
    return [(call["call"], call["cards"]) for call in env.last_calls]


def hand_size(env: raw_env, seat: int) -> int:
    return len(env.hand(seat))
