"""``evaluate --engine ray``: duplicate deal blocks sharded over Ray tasks on the second node give
the single-process tournament's results exactly."""

from __future__ import annotations

import pytest

from tests.distributed.conftest import require_distributed_extra

require_distributed_extra()
pytestmark = pytest.mark.distributed


def test_sharded_tournament_equals_local(cluster):
    from madiao_mao.agents.registry import make_agent
    from madiao_mao.training.madiao.distributed_evaluation import run_tournament_ray
    from madiao_mao.training.madiao.evaluation import run_tournament

    names = ("heuristic", "greedy", "model")
    local = run_tournament(
        {n: make_agent(n, "madiao", seed=i) for i, n in enumerate(names)}, n_deals=7, seed=5
    )
    sharded = run_tournament_ray(
        {n: (n, i) for i, n in enumerate(names)}, n_deals=7, seed=5, shards_per_pairing=3
    )
    assert [(p.agent, p.opponent) for p in sharded.pairs] == [(p.agent, p.opponent) for p in local.pairs]
    for ours, theirs in zip(sharded.pairs, local.pairs, strict=True):
        assert ours.deal_index == theirs.deal_index
        assert ours.score == theirs.score
        assert ours.banker == theirs.banker
    assert sharded.markdown() == local.markdown()


def test_evaluate_cli_engine_ray(cluster, capsys):
    from madiao_mao.cli.main import main

    assert main(["evaluate", "--engine", "ray", "--agents", "heuristic", "greedy", "--deals", "3"]) == 0
    out = capsys.readouterr().out
    assert "Madiao duplicate tournament (3 deals" in out
    assert main(["evaluate", "--engine", "ray", "--game", "mao", "--agents", "base", "random"]) == 2
