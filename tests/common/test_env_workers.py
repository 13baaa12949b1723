"""The training games in shards stepped by worker processes (``env_workers``,
``madiao_mao.training.env_workers``): the sharded env is its shards side by side, its workers are
processes of their own that stop with it, a worker's failure is the trainer's error, and a
training run with workers plays the trainer's live policy and snapshots in every shard (in league
mode: records every shard's games in the trainer's league, whose standings the workers draw by), is
reproducible from its seed, and refuses the settings it cannot serve."""

from __future__ import annotations

import hashlib
import multiprocessing
import os

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

import gymnasium as gym
from stable_baselines3.common.vec_env import VecEnv

from madiao_mao.training.config import ConfigError, TrainConfig
from madiao_mao.training.env_workers import ShardedVecEnv, fork_available
from tests.common.test_training import _toy_training_config

pytestmark = pytest.mark.skipif(not fork_available(), reason="env workers fork")


class CountingVecEnv(VecEnv):
    """Games numbered from ``first_game``: an observation is (game, steps so far, last action),
    the reward the action times the game's number, a game ends every third step, and the legal
    actions turn with the steps."""

    def __init__(self, n_envs: int, first_game: int) -> None:
        super().__init__(n_envs, gym.spaces.Box(-1e9, 1e9, (3,), np.float32), gym.spaces.Discrete(4))
        self.games = np.arange(first_game, first_game + n_envs)
        self.steps = np.zeros(n_envs, dtype=np.int64)
        self.last = np.zeros(n_envs, dtype=np.int64)
        self.actions = None

    def _observations(self) -> np.ndarray:
        return np.stack([self.games, self.steps, self.last], axis=1).astype(np.float32)

    def reset(self):
        self.steps[:] = 0
        return self._observations()

    def step_async(self, actions):
        self.actions = np.asarray(actions)

    def step_wait(self):
        self.last = self.actions.astype(np.int64)
        self.steps += 1
        dones = self.steps % 3 == 0
        infos = [{"game": int(game), "pid": os.getpid()} for game in self.games]
        return self._observations(), (self.last * self.games).astype(np.float32), dones, infos

    def action_masks(self) -> np.ndarray:
        return (np.arange(4)[None, :] + self.steps[:, None]) % 2 == 0

    def close(self):
        pass

    def get_attr(self, attr_name, indices=None):
        return [None for _ in self._get_indices(indices)]

    def set_attr(self, attr_name, value, indices=None):
        pass

    def env_method(self, method_name, *args, indices=None, **kwargs):
        return []

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False for _ in self._get_indices(indices)]


def _counting_shards(sizes):
    starts = np.cumsum([0, *sizes[:-1]])

    def build_shard(index):
        return CountingVecEnv(sizes[index], int(starts[index])), {"pid": os.getpid, "double": lambda x: 2 * x}

    return build_shard


def test_the_sharded_env_has_as_many_games_in_every_shard():
    sharded = ShardedVecEnv(CountingVecEnv(3, 0), 4)
    assert sharded.num_envs == 12 and (sharded.n_shards, sharded.shard_games) == (4, 3)
    with pytest.raises(ValueError, match="n_shards must be at least 1"):
        ShardedVecEnv(CountingVecEnv(3, 0), 0)


def test_the_sharded_env_is_its_shards_side_by_side_each_in_a_process_of_its_own():
    sizes = [2, 2, 2]
    build_shard = _counting_shards(sizes)
    sharded = ShardedVecEnv(build_shard(0)[0], 3)
    with pytest.raises(RuntimeError, match="start the workers"):
        sharded.reset()
    sharded.start(build_shard)
    pids = sharded.worker_pids
    try:
        assert len(set(pids)) == 2 and os.getpid() not in pids
        assert sharded.call_workers("pid") == pids and sharded.call_workers("double", 21) == [42, 42]
        # The same games stepped in this process, shard by shard, with the same actions.
        alone = [build_shard(index)[0] for index in range(3)]
        observations = sharded.reset()
        np.testing.assert_array_equal(observations, np.concatenate([env.reset() for env in alone]))
        generator = np.random.default_rng(0)
        for _ in range(7):
            masks = sharded.action_masks()
            np.testing.assert_array_equal(masks, np.concatenate([env.action_masks() for env in alone]))
            actions = generator.integers(0, 4, size=sharded.num_envs)
            got = sharded.step(actions)
            bounds = np.cumsum([0, *sizes])
            want = [env.step(actions[a:b]) for env, a, b in zip(alone, bounds[:-1], bounds[1:], strict=True)]
            for part in range(3):
                np.testing.assert_array_equal(got[part], np.concatenate([w[part] for w in want]))
            assert [info["game"] for info in got[3]] == list(range(6))
            # The first shard's games are stepped here, the others' by their workers.
            assert [info["pid"] for info in got[3]] == [os.getpid()] * 2 + [pids[0]] * 2 + [pids[1]] * 2
        assert (
            sharded.env_method("action_masks", indices=[4])[0].tolist() == sharded.action_masks()[4].tolist()
        )
    finally:
        sharded.close()
    assert multiprocessing.active_children() == [], "close stops every worker"
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # gone (joined, so not even a zombie)


def test_each_worker_is_told_the_trainers_sync_value_before_a_reset_or_step_when_it_changed():
    def build_shard(index):
        told = []

        def sync(value):
            told.append(value)

        return CountingVecEnv(2, 2 * index), {"sync": sync, "told": lambda: list(told)}

    sharded = ShardedVecEnv(build_shard(0)[0], 3)
    value = {"now": ("a", 0)}
    sharded.sync = lambda: value["now"]
    sharded.start(build_shard)
    try:
        sharded.reset()
        actions = np.zeros(sharded.num_envs, dtype=np.int64)
        sharded.step(actions)  # unchanged: nothing sent
        value["now"] = ("a", 1)
        sharded.step(actions)
        sharded.step(actions)
        value["now"] = ("b", 1)
        sharded.reset()
        assert sharded.call_workers("told") == [[("a", 0), ("a", 1), ("b", 1)]] * 2
    finally:
        sharded.close()


def test_a_worker_that_fails_is_the_trainers_error_and_no_worker_is_left():
    sizes = [2, 2, 2]
    build_counting = _counting_shards(sizes)

    def build_shard(index):
        if index == 2:
            raise KeyError("no such opponent: 'nobody'")
        return build_counting(index)

    sharded = ShardedVecEnv(build_counting(0)[0], 3)
    with pytest.raises(RuntimeError, match=r"(?s)shard 2:.*KeyError.*no such opponent"):
        sharded.start(build_shard)
    assert multiprocessing.active_children() == []
    sharded = ShardedVecEnv(build_counting(0)[0], 3)
    sharded.start(build_counting)
    try:
        sharded.reset()
        with pytest.raises(RuntimeError, match=r"(?s)shard 1:.*KeyError: 'unknown'"):
            sharded.call_workers("unknown")
        sharded.step(np.zeros(6, dtype=np.int64))  # the workers still serve
    finally:
        sharded.close()


def _policy_digest(policy) -> str:
    digest = hashlib.sha256()
    for parameter in policy.parameters():
        digest.update(parameter.detach().cpu().numpy().tobytes())
    return digest.hexdigest()


def _workers_answer_a_view(monkeypatch, worker_view) -> dict:
    """Every worker answers the call "view" with ``worker_view(its pool)``; returns a dict that
    holds the trainer's sharded env (``"venv"``) and run (``"run"``) once the workers start."""
    from madiao_mao.training.sb3 import train as sb3_train

    real_start = sb3_train.start_env_workers
    trainer = {}

    def start_with_a_view(venv, run, model, opponents):
        real_build = sb3_train.build_opponents
        pools = []

        def build_opponents(run):
            pools.append(real_build(run))
            return pools[-1]

        monkeypatch.setattr(sb3_train, "build_opponents", build_opponents)
        real_venv_start = venv.start

        def start(build_shard):
            def with_view(index):
                shard_venv, calls = build_shard(index)
                pool = pools[-1]
                return shard_venv, {**calls, "view": lambda: worker_view(pool)}

            real_venv_start(with_view)

        venv.start = start
        trainer["venv"], trainer["run"] = venv, run
        real_start(venv, run, model, opponents)

    monkeypatch.setattr(sb3_train, "start_env_workers", start_with_a_view)
    return trainer


def test_a_run_with_workers_plays_the_trainers_live_policy_and_snapshots_in_every_shard(
    tmp_path, monkeypatch
):
    from madiao_mao.training.fast import train as fast_train
    from madiao_mao.training.sb3 import callback as callback_module
    from madiao_mao.training.sb3 import train as sb3_train

    # Each worker answers what its own pool holds: the digest of the weights its live policy
    # plays and the names of its opponents.
    def worker_view(pool):
        return _policy_digest(pool.current.model.policy), pool.names()

    _workers_answer_a_view(monkeypatch, worker_view)
    seen = []
    real_rollout_start = callback_module.TrainingCallback._on_rollout_start

    def on_rollout_start(self):
        real_rollout_start(self)
        trainer = (_policy_digest(self.model.policy), self.pool.names())
        seen.append((trainer, self.pool.shards.call_workers("view")))

    monkeypatch.setattr(callback_module.TrainingCallback, "_on_rollout_start", on_rollout_start)
    config = _toy_training_config(
        sb3_train, tmp_path, monkeypatch, imitate="none", total_timesteps=512, snapshot_every=128,
        env_workers=2, opponent_weights={"scripted": 0.4, "snapshot": 0.3, "current": 0.3},
    )  # fmt: skip
    fast_train.train(config)
    assert len(seen) == 4
    for trainer, workers in seen:
        assert workers == [trainer], "the worker plays the weights and opponents the trainer has"
    digests = [trainer[0] for trainer, _ in seen]
    assert len(set(digests)) == 4, "every update reached the worker"
    assert any("snapshot" in name for name in seen[-1][0][1]), "snapshots joined the workers' pools"
    assert multiprocessing.active_children() == []


def test_a_league_run_with_workers_records_every_shards_games_and_draws_by_the_trainers_standings(
    tmp_path, monkeypatch
):
    from madiao_mao.training.env_workers import ShardedOpponents
    from madiao_mao.training.fast import train as fast_train
    from madiao_mao.training.league import League
    from madiao_mao.training.sb3 import callback as callback_module
    from madiao_mao.training.sb3 import train as sb3_train
    from tests.common.test_league import _league_config

    # Each worker answers its copy's standings and what its slots hold.
    trainer = _workers_answer_a_view(
        monkeypatch, lambda pool: (pool.league.standings(), list(pool.slot_member))
    )
    # Each snapshot's stale games: the trainer's set right after the workers answered.
    stale_answers = []
    real_add_snapshot = ShardedOpponents.add_snapshot

    def add_snapshot(self, agent, *, path=None, step=None):
        real_call = self.shards.call_workers
        answers = []

        def call_workers(name, *args):
            answers.extend(real_call(name, *args))
            return answers

        self.shards.call_workers = call_workers
        try:
            real_add_snapshot(self, agent, path=path, step=step)
        finally:
            del self.shards.call_workers
        stale_answers.append((answers, set(self.pool.stale_games)))

    monkeypatch.setattr(ShardedOpponents, "add_snapshot", add_snapshot)
    finished = {"trainer": 0, "workers": 0, "stale": 0}
    seen = []
    real_on_step = callback_module.TrainingCallback._on_step

    def on_step(self):
        games = self.pool.shards.shard_games
        for game, done in enumerate(self.locals["dones"]):
            if done and "opponent_index" in self.locals["infos"][game]:
                finished["trainer" if game < games else "workers"] += 1
                finished["stale"] += game in self.pool.stale_games
        return real_on_step(self)

    real_rollout_end = callback_module.TrainingCallback._on_rollout_end

    def on_rollout_end(self):
        # After the rollout's last step (the snapshot of a rollout is taken as the next starts).
        venv = trainer["venv"]
        seen.append((venv._synced, list(self.pool.slot_member), venv.call_workers("view")))
        real_rollout_end(self)

    # Games recorded, counted as they are (a snapshot that leaves the league takes its own away).
    recorded = {"games": 0}
    real_record = League.record

    def record(self, name, returns):
        returns = list(returns)
        recorded["games"] += len(returns)
        real_record(self, name, returns)

    monkeypatch.setattr(League, "record", record)
    monkeypatch.setattr(callback_module.TrainingCallback, "_on_step", on_step)
    monkeypatch.setattr(callback_module.TrainingCallback, "_on_rollout_end", on_rollout_end)
    # A snapshot every rollout, one kept: each new one takes the slot its predecessor played in.
    config = _league_config(
        sb3_train, tmp_path, monkeypatch, env_workers=2, n_envs=32, n_steps=16, total_timesteps=2048,
        snapshot_every=512, max_snapshots=1,
    )  # fmt: skip
    fast_train.train(config)

    assert finished["workers"] > 0 and finished["trainer"] > 0
    assert recorded["games"] == finished["trainer"] + finished["workers"] - finished["stale"], (
        "the trainer's league records every shard's finished games but those that met two opponents"
    )
    assert len(seen) == 4
    for synced, slot_members, [(standings, worker_slots)] in seen:
        assert standings == synced, "the worker draws by the standings the trainer sent last"
        assert worker_slots == slot_members, "the worker's slots hold the trainer's members"
    assert sum(row[1] for row in seen[-1][0]) > 0, "the standings sent carry the games recorded"
    games = config.n_envs // 2
    assert any(stale for [stale], _ in stale_answers), "a snapshot's slot was being played in a worker"
    for [stale], trainer_stale in stale_answers:
        assert {games + game for game in stale} <= trainer_stale, "the workers' stale games are the trainer's"
    assert multiprocessing.active_children() == []


def _final_policy_digest(tmp_path, monkeypatch, name: str, **overrides) -> str:
    from madiao_mao.agents.learned import policy_agent
    from madiao_mao.training.fast import train as fast_train
    from madiao_mao.training.sb3 import train as sb3_train

    config = _toy_training_config(
        sb3_train, tmp_path / name, monkeypatch, imitate="none", total_timesteps=256, **overrides
    )
    run_dir = fast_train.train(config)
    return _policy_digest(policy_agent(run_dir / "final_model.zip").model.policy)


A_LEAGUE = {"opponents": "league", "league_anchors": ("random",), "snapshot_every": 128}


@pytest.mark.parametrize("opponents", [{"opponents": "pool"}, A_LEAGUE])
def test_a_run_with_workers_is_reproducible_from_its_seed(tmp_path, monkeypatch, opponents):
    first = _final_policy_digest(tmp_path, monkeypatch, "a", env_workers=2, **opponents)
    assert _final_policy_digest(tmp_path, monkeypatch, "b", env_workers=2, **opponents) == first
    assert _final_policy_digest(tmp_path, monkeypatch, "c", env_workers=1, **opponents) != first, (
        "shards deal other games"
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"env_workers": 3}, r"env_workers \(3\) must divide n_envs \(8\)"),
        ({"env_workers": 0}, "env_workers must be a positive integer"),
    ],
)
def test_settings_that_workers_cannot_serve_are_refused_by_name(overrides, message):
    with pytest.raises(ConfigError, match=message) as caught:
        TrainConfig(game="mao", n_envs=8, **overrides)
    assert caught.value.field == "env_workers"


@pytest.mark.parametrize("engine", ["fast", "sb3"])
def test_both_engines_and_the_warm_start_train_on_workers_and_stop_them(tmp_path, monkeypatch, engine):
    import json

    from madiao_mao.training.fast import train as fast_train
    from madiao_mao.training.sb3 import train as sb3_train

    config = _toy_training_config(
        sb3_train, tmp_path, monkeypatch, imitate="random", imitation_decisions=64, env_workers=4
    )
    run_dir = (fast_train if engine == "fast" else sb3_train).train(config)
    state = json.loads((run_dir / "state.json").read_text())
    assert state["engine"] == engine and state["num_timesteps"] == config.total_timesteps
    assert state["imitation"]["decisions"] >= 64, "the teacher played the sharded games"
    assert multiprocessing.active_children() == []


def test_the_train_command_refuses_workers_that_do_not_divide_the_games_on_one_line(capsys):
    from tests.common.test_cli_config import _one_line_error

    error = _one_line_error(["train", "--env-workers", "3", "--n-envs", "256"], capsys)
    assert error == (
        "madiao-mao train: error: --env-workers: env_workers (3) must divide n_envs (256): every shard "
        "has as many games"
    )


def test_the_workers_copy_of_the_live_policy_is_on_the_cpu_in_shared_memory_and_gets_the_weights(
    tmp_path, monkeypatch
):
    import torch

    from madiao_mao.training.env_workers import copy_weights, shared_cpu_copy
    from madiao_mao.training.sb3 import train as sb3_train

    config = _toy_training_config(sb3_train, tmp_path, monkeypatch, imitate="none")
    run = sb3_train.open_run(config, None, total_timesteps=None, torch_threads=None, quiet=True)
    _vector_env, venv = sb3_train.build_env(run, sb3_train.build_opponents(run))
    model = sb3_train.new_model(run, venv)
    shared = shared_cpu_copy(model)
    parameters = list(shared.policy.parameters())
    assert parameters and all(p.device.type == "cpu" and p.is_shared() for p in parameters)
    assert shared.policy.optimizer is None and model.policy.optimizer is not None, "no copy of the optimizer"
    assert _policy_digest(shared.policy) == _policy_digest(model.policy)
    with torch.no_grad():
        for parameter in model.policy.parameters():
            parameter.add_(1.0)
    assert _policy_digest(shared.policy) != _policy_digest(model.policy), "a copy, not the trainer's tensors"
    copy_weights(model, shared)
    assert _policy_digest(shared.policy) == _policy_digest(model.policy)
    assert [p.data_ptr() for p in shared.policy.parameters()] == [p.data_ptr() for p in parameters], (
        "in place"
    )
    venv.close()
