"""The games through Gymnasium's own code: registered ids (``gymnasium.make``/``make_vec``), its env
checker, its wrappers and vector envs in both autoreset modes with the mask taken from ``info``,
and the batched ``LearnerVectorEnv``'s contract (spaces, infos, actions, refusals, seeding)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import madiao_env
import mao_env
from cardgame_core.aec import IllegalActionError
from madiao_env.options import MadiaoOptions
from madiao_mao.training.gymnasium_envs import LearnerVectorEnv

#: Each registered id with options that keep a test short (Mao: three seats, few steps).
GAMES = {
    "madiao": (madiao_env.GYMNASIUM_ID, {}),
    "mao": (mao_env.GYMNASIUM_ID, {"n_players": 3, "max_steps": 200}),
}


def legal_choices(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per row of int8 masks (0 for a row without any)."""
    return np.where(masks.astype(bool), rng.random(masks.shape), -1.0).argmax(axis=1)


# -- registration ---------------------------------------------------------------------------------
def test_make_and_make_vec_work_from_a_fresh_interpreter_without_a_register_call():
    script = """
import json, sys, warnings
warnings.simplefilter("error")
import gymnasium
single = gymnasium.make("madiao_env:madiao_mao/Madiao-v0", opponents="random", obs_type="history")
vector = gymnasium.make_vec("mao_env:madiao_mao/Mao-v0", num_envs=3, n_players=5, max_steps=100)
_, info = single.reset(seed=0)
vector.reset(seed=0)
print(json.dumps({
    "single": [single.spec.id, single.spec.kwargs, type(single.unwrapped).__name__,
               single.observation_space.shape[0], str(info["action_mask"].dtype)],
    "vector": [vector.spec.id, type(vector.unwrapped).__name__, vector.num_envs,
               vector.single_observation_space.shape[0], vector.metadata["autoreset_mode"].name],
    "heavy": sorted({m.split(".")[0] for m in sys.modules} & {"torch", "stable_baselines3", "sb3_contrib"}),
}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    single_id, kwargs, single_class, single_size, mask_dtype = result["single"]
    assert single_id == "madiao_mao/Madiao-v0" and kwargs == {"opponents": "random", "obs_type": "history"}
    assert single_class == "SingleAgentCardEnv" and mask_dtype == "int8"
    assert single_size == MadiaoOptions(obs_type="history").obs_size  # the option reached the game
    assert result["vector"][:3] == ["madiao_mao/Mao-v0", "LearnerVectorEnv", 3]
    assert result["vector"][4] == "SAME_STEP"
    assert result["heavy"] == []  # agents by name need neither torch nor stable-baselines3


def test_importing_a_game_package_registers_its_id_and_imports_nothing_of_training():
    script = (
        "import json, sys, gymnasium, madiao_env, mao_env\n"
        "print(json.dumps([sorted(k for k in gymnasium.registry if k.startswith('madiao_mao/')),"
        " sorted({m.split('.')[0] for m in sys.modules} & {'training', 'agents', 'torch'})]))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ids, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert ids == ["madiao_mao/Madiao-v0", "madiao_mao/Mao-v0"] and loaded == []


def test_options_reach_the_game_and_bad_ones_are_named():
    env = gymnasium.make(madiao_env.GYMNASIUM_ID, learner_seat=2, episode="match", stake=0.5)
    table = env.unwrapped.aec_env
    assert (env.unwrapped.learner_seat, table.episode, table.stake) == (2, "match", 0.5)
    vector = gymnasium.make_vec(mao_env.GYMNASIUM_ID, num_envs=2, n_players=6, rule_pool=(1, 2), max_steps=50)
    assert vector.unwrapped.vector_env.n_players == 6 and vector.unwrapped.vector_env.rule_pool == (1, 2)
    scripted = gymnasium.make(madiao_env.GYMNASIUM_ID, opponents="heuristic").unwrapped._opponent_agents[0]
    assert type(scripted).__name__ == "RoleAwareHeuristicAgent"
    with pytest.raises(ValueError, match="unknown madiao agent 'nobody'"):
        gymnasium.make(madiao_env.GYMNASIUM_ID, opponents="nobody")
    with pytest.raises(ValueError, match="obs_type"):
        gymnasium.make_vec(madiao_env.GYMNASIUM_ID, num_envs=2, obs_type="everything")
    with pytest.raises(ValueError, match="illegal_action='raise' is its only mode"):
        gymnasium.make_vec(madiao_env.GYMNASIUM_ID, num_envs=2, illegal_action="terminate")
    with pytest.raises(TypeError, match="one agent name, agent or callable"):
        gymnasium.make(madiao_env.GYMNASIUM_ID, opponents=["random", "greedy"])


# -- the single-agent env -----------------------------------------------------------------------
@pytest.mark.parametrize("game", sorted(GAMES))
def test_gymnasium_check_env_passes_through_make(game):
    env_id, options = GAMES[game]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker reports problems as warnings
        env = gymnasium.make(env_id, **options)
        check_env(env.unwrapped)  # render modes included: the spec lets it make them
    assert env.spec.id == env_id


@pytest.mark.parametrize("game", sorted(GAMES))
def test_the_mask_rides_in_info_through_record_episode_statistics(game):
    env_id, options = GAMES[game]
    env = gymnasium.wrappers.RecordEpisodeStatistics(gymnasium.make(env_id, **options))
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=3)
    finished = 0
    while finished < 3:
        mask = info["action_mask"]
        assert mask.dtype == np.int8 and mask.any()
        np.testing.assert_array_equal(env.get_wrapper_attr("action_masks")(), mask.astype(bool))
        _, _, terminated, truncated, info = env.step(int(legal_choices(mask[None], rng)[0]))
        assert not np.any(info.get("illegal_action", False))  # the raw env's infos carry it as False
        if terminated or truncated:
            finished += 1
            assert "episode" in info and not info["action_mask"].any()  # nothing is legal any more
            assert not env.get_wrapper_attr("action_masks")().any()
            _, info = env.reset()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("game", sorted(GAMES))
def test_sync_vector_env_plays_episodes_with_masks_from_info_in_both_autoreset_modes(game, mode):
    env_id, options = GAMES[game]
    envs = gymnasium.make_vec(
        env_id, num_envs=3, vectorization_mode="sync", vector_kwargs={"autoreset_mode": mode}, **options
    )
    rng = np.random.default_rng(1)
    _, info = envs.reset(seed=5)
    finished = 0
    for _ in range(2000):
        masks = info["action_mask"]
        # The method agrees with the info in every step, the autoreset steps included.
        np.testing.assert_array_equal(np.stack(envs.call("action_masks")), masks.astype(bool))
        _, _, terminated, truncated, info = envs.step(legal_choices(masks, rng))
        assert not np.any(info.get("illegal_action", False))  # the raw env's infos carry it as False
        ended = terminated | truncated
        finished += int(ended.sum())
        if mode == AutoresetMode.NEXT_STEP:
            # A finished episode's last step has no decision; the next step resets it.
            assert not info["action_mask"][ended].any()
        elif ended.any():
            assert info["action_mask"][ended].any(axis=1).all()  # the new episode's first decision
            assert not info["final_info"]["action_mask"][ended].any()
        if finished >= 4:
            break
    assert finished >= 4


@pytest.mark.slow
def test_async_vector_env_carries_the_mask_in_info():
    envs = gymnasium.make_vec(madiao_env.GYMNASIUM_ID, num_envs=2, vectorization_mode="async")
    try:
        rng = np.random.default_rng(2)
        _, info = envs.reset(seed=0)
        for _ in range(40):
            _, _, _, _, info = envs.step(legal_choices(info["action_mask"], rng))
            assert not np.any(info.get("illegal_action", False)) and info["action_mask"].dtype == np.int8
    finally:
        envs.close()


# -- the batched VectorEnv ----------------------------------------------------------------------
@pytest.mark.parametrize("game", sorted(GAMES))
def test_vector_env_spaces_and_step_contract(game):
    env_id, options = GAMES[game]
    envs = gymnasium.make_vec(env_id, num_envs=6, **options)
    single = gymnasium.make(env_id, **options)
    assert isinstance(envs, LearnerVectorEnv) and envs.spec.id == env_id
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    # One observation space (dtype and bounds) across the AEC env, the single env and the batch.
    assert envs.single_observation_space == single.observation_space
    assert envs.single_observation_space.dtype == (np.int8 if game == "madiao" else np.float32)
    assert envs.single_action_space == single.action_space
    assert envs.observation_space.shape == (6, *single.observation_space.shape)
    assert envs.action_space == gymnasium.spaces.MultiDiscrete([single.action_space.n] * 6)
    observations, info = envs.reset(seed=0)
    assert envs.observation_space.contains(observations)
    rng = np.random.default_rng(0)
    for _ in range(150):
        assert info["action_mask"].shape == (6, envs.single_action_space.n)
        assert info["action_mask"].dtype == np.int8 and info["_action_mask"].all()
        assert info["action_mask"].any(axis=1).all()  # every game waits for its learner
        np.testing.assert_array_equal(envs.action_masks(), info["action_mask"].astype(bool))
        observations, rewards, terminated, truncated, info = envs.step(
            legal_choices(info["action_mask"], rng)
        )
        assert envs.observation_space.contains(observations)
        assert rewards.dtype == np.float64 and rewards.shape == (6,)
        assert terminated.dtype == truncated.dtype == np.bool_ and not (terminated & truncated).any()
        ended = terminated | truncated
        if ended.any():
            np.testing.assert_array_equal(info["_final_obs"], ended)
            assert envs.single_observation_space.contains(info["final_obs"][np.flatnonzero(ended)[0]])
        else:
            assert "final_obs" not in info


def test_vector_env_pays_the_learner_its_own_seat_and_works_under_record_episode_statistics():
    # Madiao hands: an episode's learner rewards sum to the learner seat's payoff of the hand,
    # whichever seat made the last move (PettingZoo issue 1147), in every seat.
    envs = gymnasium.wrappers.vector.RecordEpisodeStatistics(
        gymnasium.make_vec(madiao_env.GYMNASIUM_ID, num_envs=8, learner_seat="rotate")
    )
    _, info = envs.reset(seed=4)
    rng = np.random.default_rng(4)
    running = np.zeros(8)
    seats = set()
    checked = 0
    while checked < 40:
        _, rewards, terminated, truncated, info = envs.step(legal_choices(info["action_mask"], rng))
        running += rewards
        for game in np.flatnonzero(terminated | truncated):
            seat = info["final_info"]["learner_seat"][game]
            payoff = info["final_info"]["final_payoffs"][game, seat]
            assert running[game] == pytest.approx(payoff)
            assert info["episode"]["r"][game] == pytest.approx(payoff) and info["_episode"][game]
            seats.add(int(seat))
            running[game] = 0.0
            checked += 1
    assert seats == {0, 1, 2, 3}


def test_vector_env_takes_numpy_list_and_torch_actions_alike():
    torch = pytest.importorskip("torch")
    runs = []
    for kind in ("numpy", "list", "torch"):
        envs = gymnasium.make_vec(madiao_env.GYMNASIUM_ID, num_envs=4)
        observations, info = envs.reset(seed=9)
        rng = np.random.default_rng(9)
        trace = [observations]
        for _ in range(30):
            actions = legal_choices(info["action_mask"], rng).astype(np.int32)
            given = {"numpy": actions, "list": actions.tolist(), "torch": torch.as_tensor(actions)}[kind]
            observations, rewards, _, _, info = envs.step(given)
            trace += [observations, rewards]
        runs.append(trace)
    for other in runs[1:]:
        for ours, theirs in zip(runs[0], other, strict=True):
            np.testing.assert_array_equal(ours, theirs)


def test_vector_env_refuses_bad_actions_by_name_and_changes_nothing():
    envs = gymnasium.make_vec(madiao_env.GYMNASIUM_ID, num_envs=3)
    twin = gymnasium.make_vec(madiao_env.GYMNASIUM_ID, num_envs=3)
    with pytest.raises(RuntimeError, match="call reset"):
        envs.step(np.zeros(3, dtype=np.int64))
    _, info = envs.reset(seed=1)
    _, twin_info = twin.reset(seed=1)
    legal = legal_choices(info["action_mask"], np.random.default_rng(0))
    illegal = legal.copy()
    illegal[1] = int(np.flatnonzero(info["action_mask"][1] == 0)[0])
    for bad, error, message in (
        (legal.astype(float), TypeError, "integer action ids"),
        (np.array([True, False, True]), TypeError, "integer action ids"),
        (legal[:2], ValueError, r"shape \(3,\)"),
        (np.where(np.arange(3) == 2, -1, legal), IllegalActionError, "game 2: action -1 is out of range"),
        (np.where(np.arange(3) == 0, 82, legal), IllegalActionError, "game 0: action 82 is out of range"),
        (illegal, IllegalActionError, rf"game 1: action {illegal[1]} \(.+\) is not legal for seat 0"),
    ):
        with pytest.raises(error, match=message):
            envs.step(bad)
    # Nothing changed: the env plays on exactly like its twin, which never saw a bad action.
    rng, twin_rng = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(20):
        ours, theirs = (
            envs.step(legal_choices(info["action_mask"], rng)),
            twin.step(legal_choices(twin_info["action_mask"], twin_rng)),
        )
        for a, b in zip(ours[:4], theirs[:4], strict=True):
            np.testing.assert_array_equal(a, b)
        info, twin_info = ours[4], theirs[4]
    with pytest.raises(ValueError, match="takes no options"):
        envs.reset(options={"reset_mask": np.ones(3, dtype=bool)})


def test_vector_env_seeded_resets_repeat_the_same_play():
    def play(envs, seed):
        _, info = envs.reset(seed=seed)
        rng = np.random.default_rng(seed)
        trace = [info["action_mask"]]
        for _ in range(40):
            observations, rewards, terminated, _, info = envs.step(legal_choices(info["action_mask"], rng))
            trace += [observations, rewards, terminated]
        return trace

    def make():
        return gymnasium.make_vec(
            mao_env.GYMNASIUM_ID, num_envs=4, n_players=3, max_steps=100, learner_seat="rotate"
        )

    envs = make()
    first, again, fresh = play(envs, 11), play(envs, 11), play(make(), 11)
    for a, b, c in zip(first, again, fresh, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    other = play(envs, 12)
    assert any(not np.array_equal(a, b) for a, b in zip(first, other, strict=True))


def test_vector_env_and_the_sb3_adapter_are_one_learner_view():
    # Same games, same opponent, same learner actions: the same observations, rewards and ends.
    from madiao_env.vector import MadiaoVectorEnv
    from madiao_mao.training.sb3.adapter import LearnerVecEnv

    def first_legal(observations, masks):
        return np.argmax(masks, axis=1)

    gym_env = LearnerVectorEnv(MadiaoVectorEnv(8, copy=False), first_legal, learner_seat="rotate")
    sb3_env = LearnerVecEnv(MadiaoVectorEnv(8), first_legal, learner_seat="rotate", seed=21)
    observations, info = gym_env.reset(seed=21)
    np.testing.assert_array_equal(observations, sb3_env.reset())
    rng = np.random.default_rng(21)
    ended = 0
    for _ in range(60):
        actions = legal_choices(info["action_mask"], rng)
        np.testing.assert_array_equal(info["action_mask"].astype(bool), sb3_env.action_masks())
        observations, rewards, terminated, truncated, info = gym_env.step(actions)
        sb3_observations, sb3_rewards, dones, sb3_infos = sb3_env.step(actions)
        np.testing.assert_array_equal(observations, sb3_observations)
        np.testing.assert_allclose(rewards, sb3_rewards)
        np.testing.assert_array_equal(terminated | truncated, dones)
        for game in np.flatnonzero(dones):
            np.testing.assert_array_equal(info["final_obs"][game], sb3_infos[game]["terminal_observation"])
            assert info["final_info"]["learner_seat"][game] == sb3_infos[game]["learner_seat"]
            ended += 1
    assert ended > 10
