"""Madiao in OpenSpiel: outcome-sampling MCCFR, then its policy against the project's heuristic.

Needs the ``openspiel`` extra. Run from the repository root::

    python examples/openspiel_madiao.py                          # 200 iterations, 40 hands
    python examples/openspiel_madiao.py --iterations 5 --hands 4  # a few seconds

``import madiao_env.openspiel_game`` registers the game: ``pyspiel.load_game("madiao")`` is one
hand of Madiao with every deal drawn by chance nodes. OpenSpiel's outcome-sampling MCCFR learns
from sampled hands. The evaluation seats the MCCFR average policy at each seat in turn against
three of the project's heuristic players (OpenSpiel bots made from
``madiao_mao.agents.registry.make_agent("heuristic")``), and the uniform random policy on the same seats
and seeds for comparison; it prints the mean return of the tested seat, in stakes.

Tabular MCCFR meets almost every Madiao information state once at any budget a laptop allows
(a hand's deal alone makes it new), so its average policy is still the uniform one where play
goes and the two lines come out alike: this shows the plumbing (the game, an algorithm, the
project's agents as bots), not a strong player; a Madiao player needs an abstraction or a
network over the information-state tensor.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyspiel
from open_spiel.python import policy as spiel_policy
from open_spiel.python.algorithms import outcome_sampling_mccfr
from open_spiel.python.bots.policy import PolicyBot

import madiao_env.openspiel_game  # noqa: F401 (registers "madiao")
from cardgame_core.openspiel import AgentBot
from madiao_mao.agents.registry import make_agent


def evaluate(game: pyspiel.Game, tested: spiel_policy.Policy, hands: int, seed: int) -> float:
    """Mean return of ``tested`` over ``hands`` hands, its seat going round the table, the other
    three seats played by the heuristic."""
    heuristic = make_agent("heuristic", "madiao")
    rng = np.random.default_rng(seed)
    total = 0.0
    for hand in range(hands):
        seat = hand % game.num_players()
        bots = [AgentBot(heuristic, player) for player in range(game.num_players())]
        bots[seat] = PolicyBot(seat, rng, tested)
        total += pyspiel.evaluate_bots(game.new_initial_state(), bots, seed + hand)[seat]
    return total / hands


def run(iterations: int = 200, hands: int = 40, seed: int = 0) -> dict[str, float]:
    """Train MCCFR for ``iterations`` iterations, then evaluate it and the uniform random policy."""
    game = pyspiel.load_game("madiao")
    np.random.seed(seed)  # OpenSpiel's MCCFR samples from numpy's global generator
    solver = outcome_sampling_mccfr.OutcomeSamplingSolver(game)
    start = time.perf_counter()
    for _ in range(iterations):
        solver.iteration()
    print(f"{iterations} MCCFR iterations in {time.perf_counter() - start:.1f} s")
    results = {
        "mccfr": evaluate(game, solver.average_policy(), hands, seed),
        "random": evaluate(game, spiel_policy.UniformRandomPolicy(game), hands, seed),
    }
    for name, mean in results.items():
        print(f"{name:>6} policy vs 3 heuristic players: {mean:+.3f} stakes per hand over {hands} hands")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=200, help="MCCFR iterations (default 200)")
    parser.add_argument("--hands", type=int, default=40, help="hands per evaluated policy (default 40)")
    parser.add_argument("--seed", type=int, default=0, help="seed of training and evaluation (default 0)")
    arguments = parser.parse_args()
    if arguments.iterations < 0 or arguments.hands < 1:
        parser.error("--iterations must be >= 0 and --hands >= 1")
    run(arguments.iterations, arguments.hands, arguments.seed)


if __name__ == "__main__":
    main()
