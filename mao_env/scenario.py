"""Hand-set tables for Mao: the ``reset(options={...})`` scenario of the AEC env.

:func:`parse_scenario` checks every key and turns names into ids without touching anything, so
that a ``reset`` that raises leaves the env as it was; :func:`place_scenario` then writes the
checked scenario over a freshly dealt game. The keys are documented in the ``mao_env.env``
docstring ("Scenario API").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mao_env import cards
from mao_env import state as snapshots
from mao_env.options import MaoOptions, check_int, parse_fixed_rules, parse_rules

SCENARIO_KEYS = (
    "hands",
    "pile",
    "stack",
    "rules",
    "fixed_rules",
    "current",
    "direction",
    "pending_seven",
    "named_suit",
)


def _card_list(what: str, names: Any) -> list[int]:
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise TypeError(f"{what} must be a list of card names, got {names!r}")
    return [cards.card_id(name) for name in names]


def parse_scenario(options: Any, game_options: MaoOptions) -> dict[str, Any]:
    """Check every reset option and return them as ids, ready to place; touches nothing."""
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__} {options!r}")
    n_players, n_decks = game_options.n_players, game_options.n_decks
    # pettingzoo.test.api_test probes ``reset(options={"options": 1})``: that one key is ignored.
    unknown = set(options) - set(SCENARIO_KEYS) - {"options"}
    if unknown:
        raise ValueError(f"unknown reset option(s) {sorted(unknown)}; known: {', '.join(SCENARIO_KEYS)}")
    parsed: dict[str, Any] = {}
    if any(key in options for key in ("hands", "pile", "stack")):
        remaining = np.full(cards.N_CARD_TYPES, n_decks, dtype=np.int64)
        remaining[cards.JOKER] = 2 * n_decks
        given_hands = options.get("hands", {})
        if not isinstance(given_hands, dict):
            raise TypeError(f"hands must be a dict {{seat: [card names]}}, got {given_hands!r}")
        hand_lists: dict[int, list[int]] = {}
        for seat, names in given_hands.items():
            seat = check_int("hands seat", seat, 0, n_players - 1)
            hand_lists[seat] = _card_list(f"hands[{seat}]", names)
        pile = _card_list("pile", options["pile"]) if "pile" in options else None
        stack = _card_list("stack", options["stack"]) if "stack" in options else None
        if pile is not None and not pile:
            raise ValueError("the pile needs at least one card")
        for card in [c for h in hand_lists.values() for c in h] + (pile or []) + (stack or []):
            remaining[card] -= 1
            if remaining[card] < 0:
                raise ValueError(
                    f"the scenario uses more copies of {cards.CARD_NAMES[card]} than {n_decks} deck(s) hold"
                )
        if pile is None and not remaining.any():
            raise ValueError("the scenario places every card: no card is left for the pile")
        parsed.update(hands=hand_lists, pile=pile, stack=stack, remaining=remaining)
    if "rules" in options:
        parsed["rules"] = parse_rules(options["rules"], n_players)
    if "fixed_rules" in options:
        parsed["fixed_rules"] = parse_fixed_rules(options["fixed_rules"], game_options.rule_choice)
    if "current" in options:
        parsed["current"] = check_int("current", options["current"], 0, n_players - 1)
    if "direction" in options:
        direction = options["direction"]
        if (
            isinstance(direction, (bool, np.bool_))
            or not isinstance(direction, (int, np.integer))
            or (direction not in (1, -1))
        ):
            raise ValueError(f"direction must be 1 or -1, got {direction!r}")
        parsed["direction"] = int(direction)
    if "pending_seven" in options:
        # More than every card in play could never be taken: the bound keeps the count sane.
        parsed["pending_seven"] = check_int(
            "pending_seven", options["pending_seven"], 0, n_decks * cards.CARDS_PER_DECK
        )
    if "named_suit" in options:
        suit = options["named_suit"]
        if not isinstance(suit, str) or suit not in cards.SUIT_NAMES:
            raise ValueError(f"named_suit must be one of {cards.SUIT_NAMES}, got {suit!r}")
        parsed["named_suit"] = cards.SUIT_NAMES.index(suit)
    return parsed


def place_scenario(
    state: snapshots.MaoState, scenario: dict[str, Any], n_players: int, rng: np.random.Generator
) -> None:
    """Write a scenario checked by :func:`parse_scenario` over the freshly dealt game 0 of
    ``state``; ``rng`` (the env's reset stream) shuffles the cards the scenario does not place."""
    hands, hand_bits = state.hands, state.hand_bits
    game = snapshots.GameView(state)
    if "hands" in scenario:
        hand_lists = dict(scenario["hands"])
        pile, stack, remaining = scenario["pile"], scenario["stack"], scenario["remaining"]
        pool = [c for c in range(cards.N_CARD_TYPES) for _ in range(int(remaining[c]))]
        rng.shuffle(pool)
        if pile is None:
            pile = [pool.pop()]
        for seat in range(n_players):
            if seat not in hand_lists:
                hand_lists[seat] = [pool.pop() for _ in range(min(cards.HAND_SIZE, len(pool)))]
        if stack is None:
            stack = pool
        elif pool:
            pile = pool + pile  # cards placed nowhere go under the pile (reshuffled in later)
        hands[0] = 0
        hand_bits[0] = 0
        for seat, cards_of_seat in hand_lists.items():
            for card in cards_of_seat:
                hands[0, seat, card] += 1
                hand_bits[0, seat] |= np.uint64(1 << card)
        game.place_cards(pile, stack)
    for slot, (rule, author) in enumerate(scenario.get("rules", ())):
        game.place_rule(slot, rule, author)
    for index, rule in enumerate(scenario.get("fixed_rules", ())):
        game.queue_rule(index, rule)
    for key, field in (
        ("current", "current_seat"),
        ("direction", "direction"),
        ("pending_seven", "pending_seven"),
        ("named_suit", "named_suit"),
    ):
        if key in scenario:
            setattr(game, field, scenario[key])
    # The game's own random stream (``rng`` of the state) is untouched by scenarios.
