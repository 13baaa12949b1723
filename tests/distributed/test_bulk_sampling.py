"""The env runner's bulk sampler (``CardGameEnvRunner._sample_bulk``, ``bulk_episodes``) against
RLlib's generic sampling loop, kept in the runner as the reference (``bulk_sampling = False``):
for a fixed seed both return the same episodes, field for field, over calls that cut games at
every point, and every action in them was legal. A runner in this process, no cluster."""

from __future__ import annotations

import numpy as np
import pytest

from madiao_mao.training.config import TrainConfig
from tests.distributed.conftest import require_distributed_extra

require_distributed_extra()
pytestmark = pytest.mark.distributed

N_GAMES = 16
#: Sampling calls of every kind of size: whole rounds of the games, a few steps, one step, and
#: sizes that are no multiple of the games (so calls end mid-round and right after game ends).
CALL_SIZES = (N_GAMES * 5, N_GAMES * 3, 37, N_GAMES * 7, 1, N_GAMES, 5, N_GAMES * 20, 200, N_GAMES * 9)


def make_runner(game: str, opponents: str, *, bulk: bool):
    from madiao_mao.training.rllib.config import ppo_config
    from madiao_mao.training.rllib.runner import CardGameEnvRunner

    config = TrainConfig(
        game=game,
        n_envs=N_GAMES,
        n_steps=8,
        total_timesteps=10**6,
        opponents=opponents,
        imitate="none",
        torch_threads=1,
        progress_bar=False,
        verbose=False,
    )
    algo_config = ppo_config(
        config, num_env_runners=0, envs_per_runner=N_GAMES, env_config={"train_config": config.to_json()}
    )
    runner = CardGameEnvRunner(config=algo_config, worker_index=0)
    runner.bulk_sampling = bulk
    return runner


def sample_calls(runner, sizes=CALL_SIZES, *, explore: bool = True) -> tuple[list[list], list[bool]]:
    """The episodes of each call, and per call whether a game waited for its reset after it (it
    ended at the call's last step)."""
    import torch

    torch.manual_seed(0)
    calls, waiting = [], []
    for size in sizes:
        calls.append(runner.sample(num_timesteps=size, explore=explore))
        if runner._carry is not None:
            waiting.append(bool(runner._carry.waiting.any()))
    return calls, waiting


def fields(episode) -> dict:
    """Everything a learner connector can read from an episode (its id aside: ids are random)."""
    return {
        "t_started": episode.t_started,
        "t": episode.t,
        "terminated": episode.is_terminated,
        "truncated": episode.is_truncated,
        "lookback": [episode.observations.lookback, episode.actions.lookback, episode.rewards.lookback],
        "extra_lookback": {k: v.lookback for k, v in episode.extra_model_outputs.items()},
        "observations": episode.observations.data,
        "actions": episode.actions.data,
        "rewards": episode.rewards.data,
        "extra": {k: v.data for k, v in episode.extra_model_outputs.items()},
        "n_infos": len(episode.infos.data),
    }


def assert_same(bulk_value, generic_value, where: str) -> None:
    import tree

    tree.assert_same_structure(bulk_value, generic_value)
    for mine, theirs in zip(tree.flatten(bulk_value), tree.flatten(generic_value), strict=True):
        mine, theirs = np.asarray(mine), np.asarray(theirs)
        assert mine.dtype == theirs.dtype, f"{where}: dtype {mine.dtype} != {theirs.dtype}"
        np.testing.assert_array_equal(mine, theirs, err_msg=where)


@pytest.mark.parametrize(
    ("game", "opponents", "explore"),
    [("madiao", "pool", True), ("madiao", "league", True), ("mao", "pool", True), ("madiao", "pool", False)],
)
def test_bulk_sampler_returns_rllibs_episodes_for_a_fixed_seed(rllib, game, opponents, explore):
    """Exploring (sampled actions) or not (greedy actions)."""
    from ray.rllib.core.columns import Columns

    bulk = make_runner(game, opponents, bulk=True)
    generic = make_runner(game, opponents, bulk=False)
    try:
        mine, waiting = sample_calls(bulk, explore=explore)
        theirs, _ = sample_calls(generic, explore=explore)
        bulk_metrics, generic_metrics = bulk.get_metrics(), generic.get_metrics()
        bulk_finished, generic_finished = bulk.pop_finished(), generic.pop_finished()
    finally:
        bulk.stop()
        generic.stop()

    same_id: dict[str, str] = {}
    kinds = {"done": 0, "continued with lookback": 0, "first chunk of a game": 0}
    for call, (my_call, their_call) in enumerate(zip(mine, theirs, strict=True)):
        assert len(my_call) == len(their_call), f"call {call}"
        for index, (my_episode, their_episode) in enumerate(zip(my_call, their_call, strict=True)):
            where = f"call {call}, episode {index}"
            # Chunks of one game share an id in both samplers (and only they do).
            assert same_id.setdefault(my_episode.id_, their_episode.id_) == their_episode.id_, where
            my_fields, their_fields = fields(my_episode), fields(their_episode)
            for name in my_fields:
                assert_same(my_fields[name], their_fields[name], f"{where}: {name}")
            kinds["done"] += my_episode.is_done
            kinds["continued with lookback"] += my_episode.actions.lookback == 1
            kinds["first chunk of a game"] += my_episode.t_started == 0
            # No illegal action: each taken action is legal in the observation it answered.
            masks = my_episode.get_observations()["action_mask"][: len(my_episode)]
            actions = my_episode.get_actions()
            assert masks[np.arange(len(actions)), actions].all(), where
            assert np.isfinite(my_episode.get_extra_model_outputs(Columns.ACTION_LOGP)).all(), where
    assert len(set(same_id.values())) == len(same_id)
    # The calls covered every kind of cut (else this test would prove less than it says).
    assert all(kinds.values()), kinds
    if game == "madiao":  # a Mao round outlasts these calls
        assert any(waiting), "no call ended right after a game's end"
    for key in ("num_env_steps_sampled", "num_episodes", "episode_return_mean", "episode_len_mean"):
        if key in generic_metrics:
            assert bulk_metrics[key].peek() == generic_metrics[key].peek(), key
    assert bulk_finished == generic_finished


def test_episodes_mode_goes_through_rllibs_loop_and_bulk_sampling_resumes_after(rllib):
    """``sample(num_episodes=...)`` (whole episodes, which the bulk sampler does not do) takes
    RLlib's loop; the next timesteps call starts the games afresh and samples in bulk."""
    runner = make_runner("madiao", "pool", bulk=True)
    try:
        runner.sample(num_timesteps=50)
        episodes = runner.sample(num_episodes=3)
        assert len(episodes) >= 3 and all(e.is_done and e.t_started == 0 for e in episodes)
        assert runner._carry is None
        after = runner.sample(num_timesteps=N_GAMES * 2)
        assert runner._carry is not None
        assert sum(len(e) for e in after) >= N_GAMES * 2
        # Afresh: every chunk starts its game (none continues one of before).
        assert all(e.t_started == 0 for e in after)
    finally:
        runner.stop()
