"""Madiao duplicate-deal tournaments sharded over Ray tasks (``madiao-mao evaluate --engine ray``).

The Ray helpers every game would share are in ``madiao_mao.training.distributed_evaluation``.

A tournament is pairings x deals, and each (pairing, deal) block of four seat rotations is
independent of the others: the blocks are cut into shards of consecutive deals, one Ray task per
(pairing, shard), each building its own agents and env from their names (``madiao_mao.agents.registry``
specs: nothing but strings and numbers crosses the network) and playing
``madiao_mao.training.madiao.evaluation.duplicate_match`` on its deals. The shards' hands are put back in
deal order, so the report (intervals over deal blocks, openskill ratings from the block scores) is
computed exactly as ``run_tournament`` computes it.

Identity with the local run: for agents whose moves depend only on what they see (greedy,
heuristic, ``model``/``model:PATH`` played greedily) every hand, and so the whole report, equals
the single-process run's for the same seed (``tests/distributed/test_distributed_evaluation.py``).
Agents that draw from a random generator (``random``, ``search``) keep one generator running
through a whole local tournament; a shard starts them afresh from the same seed, so their hands
are different draws from the same distribution (same deals, same expected results).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from madiao_mao.training.cli_args import check_model, check_output_folder
from madiao_mao.training.distributed_evaluation import require_ray, shard_bounds
from madiao_mao.training.madiao.commands import tournament_agents
from madiao_mao.training.madiao.evaluation import (
    PairResult,
    TournamentReport,
    agents_at_their_table,
    duplicate_match,
    make_deals,
    write_report,
)
from madiao_mao.training.stats import openskill_ratings

#: Agents whose play draws from a running random generator (see the module doc).
STOCHASTIC_AGENTS = ("random", "search", "model-search")


def play_shard(
    agents: Mapping[str, tuple[str, int | None]],
    pairing: tuple[str, str],
    n_deals: int,
    seed: int,
    first: int,
    last: int,
    env_kwargs: Mapping | None,
) -> PairResult:
    """Deals ``first..last-1`` of a tournament's ``make_deals(n_deals, seed)`` for one pairing
    (``agents``: name -> (registry spec, seed)); ``deal_index`` counts from the tournament's first
    deal."""

    # The pairing's table: a record one where a policy of the two reads it (the players that read
    # the summary decide the same at either, so a tournament's pairings may differ).
    table = agents_at_their_table({name: agents[name] for name in pairing}, env_kwargs=env_kwargs)
    env, built = table.env, table.agents
    deals = make_deals(n_deals, seed)[first:last]
    result = duplicate_match(
        built[pairing[0]],
        built[pairing[1]],
        deals,
        env_kwargs=None if env is not None else {**(env_kwargs or {}), "obs_type": table.obs_type},
        agent_name=pairing[0],
        opponent_name=pairing[1],
        env=env,
    )
    result.deal_index = [first + index for index in result.deal_index]
    if env is not None:
        env.close()
    return result


def run_tournament_ray(
    agents: Mapping[str, tuple[str, int | None]],
    *,
    n_deals: int,
    seed: int = 0,
    env_kwargs: Mapping | None = None,
    pairings: Sequence[tuple[str, str]] | None = None,
    shards_per_pairing: int | None = None,
) -> TournamentReport:
    """``run_tournament`` with every pairing's deals sharded over Ray tasks (module doc).

    ``agents``: name -> (``madiao_mao.agents.registry`` spec, seed), e.g. ``{"heuristic": ("heuristic", 0)}``.
    ``shards_per_pairing``: default, enough shards for two per CPU of the cluster. Ray must be
    connected (``ray.init``) by the caller."""

    ray = require_ray()
    if len(agents) < 2:
        raise ValueError("a tournament needs at least two agents")
    names = list(agents)
    if pairings is None:
        pairings = list(itertools.permutations(names, 2))
    for pairing in pairings:
        for name in pairing:
            if name not in agents:
                raise ValueError(f"pairing names unknown agent {name!r}; agents: {', '.join(names)}")
    make_deals(n_deals, seed)  # a bad n_deals is refused before any task starts
    if shards_per_pairing is None:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        shards_per_pairing = max(1, math.ceil(2 * cpus / len(pairings)))
    task = ray.remote(num_cpus=1)(play_shard)
    bounds = shard_bounds(n_deals, shards_per_pairing)
    futures = {
        tuple(pairing): [
            task.remote(dict(agents), tuple(pairing), n_deals, seed, first, last, dict(env_kwargs or {}))
            for first, last in bounds
        ]
        for pairing in pairings
    }
    pairs = []
    for pairing, refs in futures.items():
        merged = PairResult(pairing[0], pairing[1])
        for shard in ray.get(refs):
            merged.deal_index += shard.deal_index
            merged.score += shard.score
            merged.banker += shard.banker
        pairs.append(merged)
    matches = [(pair.agent, pair.opponent, float(score)) for pair in pairs for score in pair.block_scores()]
    return TournamentReport(pairs, openskill_ratings(matches, names), n_deals)


def evaluate_command(args: Any) -> int:
    """``madiao-mao evaluate --engine ray [--address HOST:PORT]``: the Madiao tournament of
    ``madiao-mao evaluate`` with its deal blocks sharded over a Ray cluster (``--address``; default a
    local Ray instance, stopped at the end)."""

    if args.record:
        raise ValueError("--record is not available with --engine ray (the hands are played on the cluster)")
    check_output_folder(args.out, "--out")
    names = tournament_agents(args)
    agents = {}
    for number, name in enumerate(names):
        spec = f"model:{args.model}" if name == "model" and args.model else name
        check_model(spec, "madiao")
        agents[name] = (spec, args.seed + number)
    ray = require_ray()
    owned = not ray.is_initialized()
    if owned:
        ray.init(address=args.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        report = run_tournament_ray(agents, n_deals=args.deals, seed=args.seed)
    finally:
        if owned:
            ray.shutdown()
    print(report.markdown())
    stochastic = [name for name in names if agents[name][0].split(":", 1)[0] in STOCHASTIC_AGENTS]
    if stochastic:
        print(
            f"note: {', '.join(stochastic)} draw(s) from a random generator started afresh per shard; "
            "their hands differ from a local run's (same deals and distribution)"
        )
    if args.out:
        paths = write_report(report, Path(args.out))
        print("wrote " + ", ".join(str(p) for p in paths))
    return 0
