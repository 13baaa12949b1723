"""A resumed run deals new games: each training call of a run seeds its deals and draws anew
(``Run.call_seed``), for both engines that share the SB3 engine's steps; a resume once replayed
the first call's deals with the run's own seed."""

from __future__ import annotations

import pytest

pytest.importorskip("sb3_contrib")

from madiao_mao.training.fast import train as fast_train
from madiao_mao.training.sb3 import train as sb3_train
from tests.common.test_training import ToyVectorEnv, _toy_training_config


@pytest.mark.parametrize("engine", [sb3_train, fast_train], ids=["sb3", "fast"])
def test_each_training_call_of_a_run_deals_with_its_own_seed(engine, tmp_path, monkeypatch):
    dealt_with: list[int | None] = []

    class RecordingToyEnv(ToyVectorEnv):
        def reset(self, seed=None):
            dealt_with.append(seed)
            return super().reset(seed=seed)

    config = _toy_training_config(sb3_train, tmp_path, monkeypatch, imitate="none", total_timesteps=128)
    monkeypatch.setattr(sb3_train, "make_vector_env", lambda config, n, seed: RecordingToyEnv(n, seed=seed))
    run_dir = engine.train(config)
    engine.train(resume=run_dir, total_timesteps=256, quiet=True)
    engine.train(resume=run_dir, total_timesteps=384, quiet=True)
    seeds = [seed for seed in dealt_with if seed is not None]
    assert seeds[0] == config.seed, "a new run deals with its own seed (seeded runs are unchanged)"
    assert len(seeds) == 3 and len(set(seeds)) == 3, seeds
