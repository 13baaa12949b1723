"""``python -m madiao_mao.agents.mao.belief_speed [--games G] [--steps S] [--rounds N] [--decisions]
[--calls C] [--reasons R]``: Mao's
belief inputs per second, the batched path (``BeliefTracker.inputs`` as shipped) against the one-row
functions (``parse_observation``, ``parse_event``, ``plays_validity_reference``) put in their
place, on the same recorded decisions, in one process, rounds interleaved.

The decisions are recorded once: ``G`` games of the training rule pool (one rule per game, the
training default), Bayesian players at every seat, ``S`` steps. Each round replays them all
through a fresh tracker (inputs, the actions noted, ended games forgotten), as the learner's
wrapper does. The two paths' inputs are checked equal first.

``--decisions``: the scripted players' decisions instead. Bayesian players at every seat of ``G``
games for ``S`` steps (the warm start's teacher: the table, the posteriors and the decisions),
timed with a batch decided by ``RuleBeliefAgent.decide_rows`` and with ``decide`` row by row,
everything else batched in both, rounds in turn on the same deals; the actions are checked equal.

``--calls`` and ``--reasons``: the table's options of those names (who calls the faults, what the
table hears of a call), for either measurement; default the training table's.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from madiao_mao.agents.base import legal_actions
from madiao_mao.agents.mao import belief_inputs as belief_module
from madiao_mao.agents.mao import beliefs, posterior_batch
from madiao_mao.agents.mao import players as players_module
from madiao_mao.agents.mao.belief_inputs import BeliefTracker
from madiao_mao.agents.mao.beliefs import SeatView
from madiao_mao.agents.mao.players import BayesianRuleAgent, RulePosterior, posterior_options
from mao_env import rules as library
from mao_env.vector import MaoVectorEnv


def _inputs_each(
    views: list[SeatView], masks: np.ndarray, posteriors: list[RulePosterior], **table: bool
) -> np.ndarray:
    rows = [
        belief_module.belief_inputs(view, mask, posterior.hypotheses, posterior.weights, **table)
        for view, mask, posterior in zip(views, masks, posteriors, strict=True)
    ]
    return np.array(rows, dtype=np.float32).reshape(len(views), belief_module.BELIEF_WIDTH)


def _observe_each(posteriors: list[RulePosterior], views: list[SeatView]) -> None:
    for posterior, view in zip(posteriors, views, strict=True):
        posterior.observe(view)


def _decide_each(
    agent: players_module.RuleBeliefAgent,
    views: list[SeatView],
    masks: np.ndarray,
    beliefs_of_rows: list[tuple[np.ndarray, np.ndarray]],
) -> np.ndarray:
    return np.array(
        [
            agent.decide(view, mask, legal_actions(mask), *belief)
            for view, mask, belief in zip(views, masks, beliefs_of_rows, strict=True)
        ],
        dtype=np.int64,
    )


@contextlib.contextmanager
def one_row_path() -> Iterator[None]:
    """The readable one-row functions in place of the batched ones, wherever they are called."""
    patches = [
        (beliefs, "plays_validity", beliefs.plays_validity_reference),
        (players_module, "plays_validity", beliefs.plays_validity_reference),
        (players_module, "parse_events", lambda rows: [beliefs.parse_event(row) for row in rows]),
        (belief_module, "observe_all", _observe_each),
        (posterior_batch, "observe_all", _observe_each),
        (belief_module, "belief_inputs_rows", _inputs_each),
        (players_module.RuleBeliefAgent, "decide_rows", _decide_each),
        (
            belief_module,
            "parse_observations",
            lambda observations, rows: [beliefs.parse_observation(observations[row]) for row in rows],
        ),
    ]
    saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
    try:
        for module, name, replacement in patches:
            setattr(module, name, replacement)
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


def record(
    n_games: int,
    steps: int,
    seed: int = 3,
    rule_pool: tuple[int, ...] = library.TRAINING_RULES,
    draws: int = 1,
    **table: Any,
) -> tuple[list[tuple[np.ndarray, ...]], dict[str, Any]]:
    """Batches of (observations, masks, row keys, actions, keys of ended games) of Bayesian players
    at every seat of ``n_games`` tables (``draws`` rules from ``rule_pool`` per game, ``table``
    the env's options), and the table's posterior options (what a ``BeliefTracker`` of it takes)."""
    env = MaoVectorEnv(n_games, seed=seed, rule_pool=rule_pool, pool_draws=draws, **table)
    options = posterior_options(env.options)
    agent_options = {
        key: options[key] for key in ("rounds", "seven_turn_ends", "reasons", "calls", "talking")
    }
    agent = BayesianRuleAgent(
        seed=seed, seven_phrase=table.get("seven_phrase", "penalty card"), **agent_options
    )
    step = env.reset(seed=seed)
    seats = env.n_players
    batches = []
    for _ in range(steps):
        keys = np.arange(n_games) * seats + step.to_act
        observations = np.array(step.observation, dtype=np.float32)
        masks = np.array(step.action_mask, dtype=bool)
        actions = agent.act_batch(observations, masks, rows=keys)
        step = env.step(actions)
        ended = np.flatnonzero(step.terminated | step.truncated)
        forget = (ended[:, None] * seats + np.arange(seats)[None, :]).ravel()
        agent.reset_rows(forget)
        batches.append((observations, masks, keys, actions, forget))
    return batches, options


def replay(batches: list[tuple[np.ndarray, ...]], options: dict[str, Any]) -> tuple[int, list[np.ndarray]]:
    """(decisions, each batch's inputs) through a fresh tracker of the table's posterior options."""
    tracker = BeliefTracker(options)
    decisions, out = 0, []
    for observations, masks, keys, actions, forget in batches:
        posteriors = tracker.seat_posteriors(masks.shape[0], keys)
        out.append(tracker.inputs(observations, masks, posteriors))
        tracker.note_actions(posteriors, actions)
        tracker.forget(forget)
        decisions += int(masks.any(axis=1).sum())
    return decisions, out


def decision_rates(
    games: int, steps: int, rounds: int, seed: int = 11, **table: Any
) -> dict[str, list[float]]:
    """Decisions per CPU-second of Bayesian players at every seat (module doc, ``--decisions``),
    per arm ("row-by-row", "batched") and round; round ``r`` deals with ``seed + r`` in both;
    ``table``: the env's options."""
    record(min(games, 16), 10, seed=seed, **table)  # compiles the kernels outside the timing
    rates: dict[str, list[float]] = {"row-by-row": [], "batched": []}
    for number in range(rounds):
        actions = {}
        arms = list(rates) if number % 2 == 0 else list(reversed(rates))
        for name in arms:
            patch = _row_by_row_decisions() if name == "row-by-row" else contextlib.nullcontext()
            with patch:
                start = time.process_time()
                batches, _options = record(games, steps, seed=seed + number, **table)
                seconds = time.process_time() - start
            rates[name].append(sum(int(masks.any(axis=1).sum()) for _o, masks, *_ in batches) / seconds)
            actions[name] = [batch[3] for batch in batches]
        for mine, theirs in zip(actions["batched"], actions["row-by-row"], strict=True):
            np.testing.assert_array_equal(mine, theirs)
    return rates


@contextlib.contextmanager
def _row_by_row_decisions() -> Iterator[None]:
    batched = players_module.RuleBeliefAgent.decide_rows
    players_module.RuleBeliefAgent.decide_rows = _decide_each
    try:
        yield
    finally:
        players_module.RuleBeliefAgent.decide_rows = batched


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=64)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--decisions", action="store_true", help="the scripted players' decisions instead")
    parser.add_argument("--calls", choices=players_module.CALL_MODES, default="master")
    parser.add_argument("--reasons", choices=players_module.REASON_MODES, default="calls")
    args = parser.parse_args(argv)
    table = {"calls": args.calls, "reasons": args.reasons}
    if args.decisions:
        rates = decision_rates(args.games, args.steps, args.rounds, **table)
        for name, values in rates.items():
            print(f"{name:10} {', '.join(f'{v:,.0f}' for v in values)} decisions per CPU-second")
        ratio = np.median(rates["batched"]) / np.median(rates["row-by-row"])
        print(f"batched / row-by-row (medians): {ratio:.2f}x")
        return
    batches, options = record(args.games, args.steps, **table)
    _, batched = replay(batches, options)
    with one_row_path():
        _, one_row = replay(batches, options)
    for mine, theirs in zip(batched, one_row, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    rates: dict[str, list[float]] = {"one-row": [], "batched": []}
    for _ in range(args.rounds):
        for name in rates:
            with one_row_path() if name == "one-row" else contextlib.nullcontext():
                start = time.perf_counter()
                decisions, _ = replay(batches, options)
                rates[name].append(decisions / (time.perf_counter() - start))
    for name, values in rates.items():
        print(f"{name:8} {', '.join(f'{v:,.0f}' for v in values)} belief inputs/s")
    ratio = np.median(rates["batched"]) / np.median(rates["one-row"])
    print(f"batched / one-row (medians): {ratio:.2f}x over {decisions:,} decisions")


if __name__ == "__main__":
    main()
