"""Self-play wrapper and trainer: reward attribution per seat, masks, checkpoints and resume.

A toy batched game obeying the batched-env contract keeps an independent ledger of every reward
each seat received, so the tests can check that the learner is paid exactly its own seat's
rewards, terminal ones included when an opponent made the last move.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from cardgame_core.vector import VectorStep
from madiao_mao.agents.base import Agent, RandomAgent
from madiao_mao.training.config import TrainConfig
from madiao_mao.training.learner_games import TimedVectorEnv
from madiao_mao.training.opponents import OpponentPool, share_slots
from madiao_mao.training.sb3.adapter import LearnerVecEnv
from tests.common.helpers import TINY_RUN

N_PLAYERS = 4
N_ACTIONS = 3
GAME_LENGTH = 7  # moves per game: the last move is made by seat 2, so often not the learner's


class ToyVectorEnv:
    """Seats move in turn; every move pays 0.25 to the seat two places on (who did not move) and
    charges the mover; at the end the seats are paid by the parity of the actions taken."""

    n_players = N_PLAYERS
    n_actions = N_ACTIONS
    obs_dim = N_PLAYERS + GAME_LENGTH + 1

    def __init__(self, n_envs: int, seed: int | None = None, **_: object) -> None:
        self.n_envs = n_envs
        self.rng = np.random.default_rng(seed)
        self.move = np.zeros(n_envs, dtype=np.int64)
        self.first = np.zeros(n_envs, dtype=np.int64)
        self.action_sum = np.zeros(n_envs, dtype=np.int64)
        self.episode_ledger = np.zeros((n_envs, N_PLAYERS))
        #: Every finished episode: (game, total reward per seat).
        self.finished: list[tuple[int, np.ndarray]] = []

    def close(self) -> None:
        pass

    def _to_act(self) -> np.ndarray:
        return (self.first + self.move) % N_PLAYERS

    def observe(self, seats: np.ndarray) -> np.ndarray:
        obs = np.zeros((self.n_envs, self.obs_dim), dtype=np.float32)
        obs[np.arange(self.n_envs), seats] = 1.0
        obs[np.arange(self.n_envs), N_PLAYERS + np.minimum(self.move, GAME_LENGTH)] = 1.0
        return obs

    def _mask(self) -> np.ndarray:
        mask = np.ones((self.n_envs, N_ACTIONS), dtype=bool)
        mask[self.move % 2 == 0, 2] = False  # action 2 is illegal on even moves
        return mask

    def _step(self, rewards, terminated) -> VectorStep:
        final_payoffs = np.zeros((self.n_envs, N_PLAYERS), dtype=np.float32)
        final_obs = np.zeros((self.n_envs, N_PLAYERS, self.obs_dim), dtype=np.float32)
        for seat in range(N_PLAYERS):
            final_obs[:, seat] = self.observe(np.full(self.n_envs, seat))
        for game in np.flatnonzero(terminated):
            final_payoffs[game] = self.episode_ledger[game]
            self.finished.append((int(game), self.episode_ledger[game].copy()))
            self.episode_ledger[game] = 0
            self.move[game] = 0
            self.action_sum[game] = 0
            self.first[game] = self.rng.integers(N_PLAYERS)
        return VectorStep(
            self.observe(self._to_act()),
            self._mask(),
            self._to_act(),
            rewards.astype(np.float32),
            terminated,
            np.zeros(self.n_envs, dtype=bool),
            final_payoffs,
            final_obs,
        )

    def reset(self, seed: int | None = None) -> VectorStep:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.move[:] = 0
        self.action_sum[:] = 0
        self.first[:] = self.rng.integers(N_PLAYERS, size=self.n_envs)
        self.episode_ledger[:] = 0
        return self._step(np.zeros((self.n_envs, N_PLAYERS)), np.zeros(self.n_envs, dtype=bool))

    def step(self, actions: np.ndarray) -> VectorStep:
        rewards = np.zeros((self.n_envs, N_PLAYERS))
        mask = self._mask()
        for game, action in enumerate(actions):
            if action == -1:
                continue
            assert mask[game, action], f"game {game}: action {action} is illegal"
            mover = (self.first[game] + self.move[game]) % N_PLAYERS
            rewards[game, (mover + 2) % N_PLAYERS] += 0.25
            rewards[game, mover] -= 0.25
            self.action_sum[game] += action
            self.move[game] += 1
        terminated = self.move >= GAME_LENGTH
        for game in np.flatnonzero(terminated):
            winner = int(self.action_sum[game] % N_PLAYERS)
            rewards[game] += -1.0
            rewards[game, winner] += 4.0
        self.episode_ledger += rewards
        return self._step(rewards, terminated)


class FirstLegalAgent(Agent):
    name = "first-legal"

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])


def test_learner_gets_its_own_seat_rewards_including_terminal_ones():
    # The trainer's setup: the SB3 adapter over a batched game, opponents from the weighted pool.
    vector_env = ToyVectorEnv(8, seed=3)
    pool = OpponentPool([RandomAgent(seed=1), FirstLegalAgent()], n_slots=4)
    env = LearnerVecEnv(TimedVectorEnv(vector_env), pool.slots, learner_seat="rotate", seed=4)
    rng = np.random.default_rng(0)
    obs = env.reset()
    running = np.zeros(8)
    terminal_by_opponent = 0
    seats_seen = set()
    episodes = 0
    for _ in range(200):
        masks = env.action_masks()
        assert masks.any(axis=1).all()
        # The observation handed to the learner is its own seat's (toy obs one-hot = seat to act).
        assert (obs[:, :N_PLAYERS].argmax(axis=1) == env.learner_seat).all()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        seats_before = env.learner_seat.copy()
        moves_before = vector_env.move.copy()
        first_before = vector_env.first.copy()
        obs, rewards, dones, infos = env.step(actions)
        running += rewards
        for game in np.flatnonzero(dones):
            seat = seats_before[game]
            seats_seen.add(int(seat))
            total = running[game]
            running[game] = 0
            episodes += 1
            # The learner's whole-episode reward is exactly its own seat's ledger total.
            ledger = [t for g, t in vector_env.finished if g == game][-1]
            assert total == pytest.approx(ledger[seat])
            assert infos[game]["episode"]["r"] == pytest.approx(total)
            assert infos[game]["terminal_observation"][:N_PLAYERS].argmax() == seat
            if (first_before[game] + moves_before[game]) % N_PLAYERS != seat:
                raise AssertionError("the learner was not to act when its step was taken")
            if (first_before[game] + GAME_LENGTH - 1) % N_PLAYERS != seat:
                terminal_by_opponent += 1  # an opponent made the last move of this game
    assert episodes > 50
    assert seats_seen == {0, 1, 2, 3}  # the learner rotates through every seat
    assert terminal_by_opponent > 10  # the case of PettingZoo issue 1147 was exercised
    assert pool.decisions > 0 and pool.seconds > 0


class CountingRandomAgent(RandomAgent):
    """A random player that counts its batched calls."""

    def __init__(self, seed: int, name: str) -> None:
        super().__init__(seed=seed, name=name)
        self.calls = 0

    def act_batch(self, observations, masks):
        self.calls += 1
        return super().act_batch(observations, masks)


def _pool_play(one_call_per_agent: bool, monkeypatch) -> tuple[list[bytes], int, int]:
    """200 learner steps against a pool whose slots share two agents (and, after step 100, a
    snapshot); the bytes of every step and the agents' calls and opponent rounds."""
    from madiao_mao.training import learner_games

    if not one_call_per_agent:
        monkeypatch.setattr(
            learner_games.LearnerGames, "_same_agent_groups", lambda self, indices: [[i] for i in indices]
        )
    rounds = []
    original = learner_games.LearnerGames._opponents_act
    monkeypatch.setattr(
        learner_games.LearnerGames,
        "_opponents_act",
        lambda self, step, games: rounds.append(1) or original(self, step, games),
    )
    agents = [CountingRandomAgent(1, "a"), CountingRandomAgent(2, "b")]
    pool = OpponentPool(agents, weights={"scripted": 0.5, "snapshot": 0.25, "current": 0.25}, n_slots=12)
    pool.set_current(CountingRandomAgent(3, "live"))
    env = LearnerVecEnv(ToyVectorEnv(16, seed=3), pool.slots, learner_seat="rotate", seed=4)
    rng = np.random.default_rng(0)
    played = [env.reset().tobytes()]
    for step in range(200):
        if step == 100:
            pool.add_snapshot(CountingRandomAgent(4, "snap"))
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in env.action_masks()])
        obs, rewards, dones, _ = env.step(actions)
        played.append(obs.tobytes() + rewards.tobytes() + dones.tobytes())
    calls = sum(agent.calls for agent in [*agents, pool.current, *pool.snapshots])
    return played, calls, len(rounds)


def test_slots_that_hold_one_agent_are_asked_in_one_call_with_the_same_play(monkeypatch):
    grouped, grouped_calls, rounds = _pool_play(True, monkeypatch)
    monkeypatch.undo()
    per_slot, per_slot_calls, _ = _pool_play(False, monkeypatch)
    assert grouped == per_slot
    # At most one call per agent in a round (two scripted agents, the live one, a snapshot), where
    # a call per slot makes several.
    assert grouped_calls <= 4 * rounds < per_slot_calls


def _toy_policy_agent(seed: int, *, deterministic: bool = False):
    """A LearnedPolicyAgent of a small MaskablePPO model of the toy game (weights by ``seed``)."""
    import torch
    from sb3_contrib import MaskablePPO

    from madiao_mao.agents.learned import LearnedPolicyAgent

    venv = LearnerVecEnv(ToyVectorEnv(4, seed=seed), RandomAgent(seed=seed), seed=seed)
    model = MaskablePPO("MlpPolicy", venv, n_steps=8, policy_kwargs={"net_arch": [16]}, seed=seed)
    with torch.no_grad():  # logits far apart, so that each row's input decides its action
        model.policy.action_net.weight.mul_(100.0)
    return LearnedPolicyAgent(model=model, deterministic=deterministic, seed=seed + 100, name=f"p{seed}")


def test_policies_asked_jointly_choose_what_each_would_choose_alone():
    pytest.importorskip("sb3_contrib")
    from madiao_mao.agents.learned import LearnedPolicyAgent

    rng = np.random.default_rng(5)
    sizes = (7, 1, 30)
    observations = [rng.random((n, ToyVectorEnv.obs_dim)).astype(np.float32) for n in sizes]
    masks = [rng.random((n, N_ACTIONS)) < 0.5 for n in sizes]
    for mask in masks:
        mask[np.arange(len(mask)), rng.integers(N_ACTIONS, size=len(mask))] = True
    masks[0][3] = False  # a row with nothing to do: -1, as alone
    deterministic = (False, True, False)
    alone = [
        _toy_policy_agent(seed, deterministic=d) for seed, d in zip((1, 2, 3), deterministic, strict=True)
    ]
    together = [
        _toy_policy_agent(seed, deterministic=d) for seed, d in zip((1, 2, 3), deterministic, strict=True)
    ]
    assert len({agent.joint_key() for agent in together}) == 1
    for _ in range(3):  # the sampling agents' random streams stay in step call after call
        expected = [agent.act_batch(o, m) for agent, o, m in zip(alone, observations, masks, strict=True)]
        jointly = LearnedPolicyAgent.act_jointly(together, observations, masks)
        for got, want in zip(jointly, expected, strict=True):
            np.testing.assert_array_equal(got, want)
    assert jointly[0][3] == -1 and (jointly[0] != -1).sum() == 6


def test_an_agent_that_decides_in_its_own_way_is_not_asked_jointly():
    pytest.importorskip("sb3_contrib")
    import torch

    from madiao_mao.agents.learned import LearnedPolicyAgent

    class OwnWay(LearnedPolicyAgent):
        def _logits(self, observations):
            return np.zeros((len(observations), N_ACTIONS))

    plain = _toy_policy_agent(1)
    assert plain.joint_key() is not None
    assert OwnWay(model=plain.model).joint_key() is None
    learning = _toy_policy_agent(2)
    learning.model.policy.pi_features_extractor.scale = torch.nn.Parameter(torch.ones(1))
    assert learning.joint_key() is None
    with pytest.raises(ValueError, match="joint_key"):
        LearnedPolicyAgent.act_jointly(
            [plain, learning], [np.zeros((1, 12))] * 2, [np.ones((1, 3), bool)] * 2
        )


class KeyedJointAgent(Agent):
    """An agent with a joint call that also takes the game-seat key of each row: it must be asked
    with its keys, so never jointly (the joint call has none)."""

    name = "keyed-joint"

    def __init__(self) -> None:
        self.keyed_calls = 0

    def joint_key(self):
        return ("one key for all",)

    @classmethod
    def act_jointly(cls, agents, observations, masks):
        raise AssertionError("asked jointly, without its row keys")

    def act_batch(self, observations, masks, rows=None):
        assert rows is not None
        self.keyed_calls += 1
        return np.array([int(np.flatnonzero(mask)[0]) for mask in masks], dtype=np.int64)

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])

    def reset_rows(self, rows) -> None:
        pass


def test_agents_that_take_row_keys_are_asked_with_them_not_jointly():
    agents = [KeyedJointAgent(), KeyedJointAgent()]
    pool = OpponentPool(agents, n_slots=2)
    env = LearnerVecEnv(ToyVectorEnv(16, seed=3), pool.slots, learner_seat="rotate", seed=4)
    env.reset()
    for _ in range(20):
        env.step(np.array([int(np.flatnonzero(m)[0]) for m in env.action_masks()]))
    assert all(agent.keyed_calls > 0 for agent in agents)


def _learned_pool_play(joint: bool, monkeypatch) -> tuple[list[bytes], int, OpponentPool]:
    """120 learner steps against a league-like pool of policy snapshots, the live policy and a
    scripted agent; the bytes of every step, the joint calls made and the pool."""
    from madiao_mao.agents.learned import LearnedPolicyAgent
    from madiao_mao.training import learner_games

    joint_calls = []
    if joint:
        original = LearnedPolicyAgent.act_jointly.__func__
        monkeypatch.setattr(
            LearnedPolicyAgent,
            "act_jointly",
            classmethod(lambda cls, *args: joint_calls.append(1) or original(cls, *args)),
        )
    else:
        monkeypatch.setattr(
            learner_games.LearnerGames, "_joint_groups", lambda self, groups: [[group] for group in groups]
        )
    pool = OpponentPool(
        [CountingRandomAgent(1, "a"), _toy_policy_agent(11)],
        weights={"scripted": 0.4, "snapshot": 0.4, "current": 0.2},
        n_slots=10,
    )
    pool.set_current(_toy_policy_agent(12))
    pool.add_snapshot(_toy_policy_agent(13))
    env = LearnerVecEnv(ToyVectorEnv(32, seed=3), pool.slots, learner_seat="rotate", seed=4)
    rng = np.random.default_rng(0)
    played = [env.reset().tobytes()]
    later_snapshot = _toy_policy_agent(14)
    started = time.perf_counter()
    for step in range(120):
        if step == 60:
            pool.add_snapshot(later_snapshot)
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in env.action_masks()])
        obs, rewards, dones, _ = env.step(actions)
        played.append(obs.tobytes() + rewards.tobytes() + dones.tobytes())
    # The opponents' seconds are parts of the play's, charged once each.
    assert pool.seconds < time.perf_counter() - started
    return played, len(joint_calls), pool


def test_a_pools_policies_asked_in_one_joint_call_play_as_when_asked_one_by_one(monkeypatch):
    pytest.importorskip("sb3_contrib")
    jointly, joint_calls, joint_pool = _learned_pool_play(True, monkeypatch)
    monkeypatch.undo()
    one_by_one, _, pool = _learned_pool_play(False, monkeypatch)
    assert jointly == one_by_one
    assert joint_calls > 100
    # Every decision is still counted, and the joint calls' time is charged to the slots.
    assert joint_pool.decisions == pool.decisions > 0
    assert sum(slot.decisions for slot in joint_pool.slots) == joint_pool.decisions
    assert joint_pool.seconds == pytest.approx(sum(slot.seconds for slot in joint_pool.slots))
    assert all(slot.seconds > 0 for slot in joint_pool.slots if slot.decisions)


def test_rewards_before_the_learners_first_decision_after_reset_are_kept():
    vector_env = ToyVectorEnv(8, seed=3)
    pool = OpponentPool([FirstLegalAgent()], n_slots=1)
    env = LearnerVecEnv(vector_env, pool.slots, learner_seat="rotate", seed=4)
    env.reset()
    running = np.zeros(8)
    done_once = np.zeros(8, dtype=bool)
    while not done_once.all():
        seats = env.learner_seat.copy()
        _, rewards, dones, _ = env.step(np.array([int(np.flatnonzero(m)[0]) for m in env.action_masks()]))
        running += rewards
        for game in np.flatnonzero(dones & ~done_once):
            done_once[game] = True
            first_ledger = next(t for g, t in vector_env.finished if g == game)
            assert running[game] == pytest.approx(first_ledger[seats[game]])


def test_opponent_pool_shares_slots_by_weight_and_keeps_the_newest_snapshots():
    scripted = [FirstLegalAgent(), RandomAgent(seed=0, name="rnd")]
    pool = OpponentPool(
        scripted, weights={"scripted": 0.5, "snapshot": 0.3, "current": 0.2}, max_snapshots=2, n_slots=10
    )
    kinds = [slot.kind for slot in pool.slots]
    assert kinds.count("scripted") == 5 and kinds.count("snapshot") == 3 and kinds.count("current") == 2
    assert set(pool.names()) == {"first-legal", "rnd"}  # nothing learned yet: baselines fill in
    pool.set_current(RandomAgent(seed=1, name="live"))
    assert pool.names().count("live") == 5  # current slots and the empty snapshot slots
    for number in range(3):
        pool.add_snapshot(RandomAgent(seed=number, name=f"snap{number}"))
    assert sorted(set(pool.names()) - {"first-legal", "rnd", "live"}) == ["snap1", "snap2"]
    with pytest.raises(ValueError, match="unknown opponent kind"):
        OpponentPool(scripted, weights={"friend": 1.0})
    with pytest.raises(ValueError, match="must be a number >= 0"):
        OpponentPool(scripted, weights={"scripted": -1.0})
    assert share_slots({"scripted": 1.0, "current": 0.01}, 3) == {"scripted": 2, "current": 1}


def _toy_training_config(train_module, tmp_path, monkeypatch, **overrides):
    """A tiny training run on the toy game (the trainer's env factory is replaced by it)."""
    monkeypatch.setattr(train_module, "make_vector_env", lambda config, n, seed: ToyVectorEnv(n, seed=seed))
    options = {
        "game": "mao",
        "features": "flat",  # the toy game's observations are not Mao's
        "game_settings": {"rule_pool": "none"},
        **TINY_RUN,
        "scripted_opponents": ("random",),
        "runs_dir": str(tmp_path),
    }
    if overrides.get("game", "mao") != "mao":
        del options["game_settings"]  # Mao's own settings: another game has none of them
    return TrainConfig(**{**options, **overrides})


def test_training_checkpoint_and_resume(tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    from madiao_mao.training.sb3 import train as train_module

    config = _toy_training_config(train_module, tmp_path, monkeypatch, imitate="none", total_timesteps=256)
    run_dir = train_module.train(config)
    state = json.loads((run_dir / "state.json").read_text())
    assert state["num_timesteps"] == 256
    assert (run_dir / "checkpoint.zip").is_file() and (run_dir / "final_model.zip").is_file()
    assert state["snapshots"], "a snapshot was added to the pool"
    assert not list(run_dir.glob(".*.tmp*")), "no temporary files left behind"
    assert any(p.name.startswith("events.out.tfevents") for p in run_dir.iterdir())
    tags = (run_dir / "progress.csv").read_text().splitlines()[0].split(",")
    assert "charts/SPS" in tags and "charts/env_time_fraction" in tags
    # An interrupted run: resume it with a larger budget; it continues from the checkpoint.
    from sb3_contrib import MaskablePPO

    before = MaskablePPO.load(str(run_dir / "checkpoint.zip"))
    assert train_module.train(resume=run_dir, total_timesteps=384, quiet=True) == run_dir
    state = json.loads((run_dir / "state.json").read_text())
    assert state["num_timesteps"] == 384
    assert state["resumes"] == [256]
    after = MaskablePPO.load(str(run_dir / "checkpoint.zip"))
    assert after.num_timesteps == 384 and before.num_timesteps == 256
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["n_envs"] == 8 and saved["total_timesteps"] == 384  # the run keeps its own config


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: TrainConfig(game="chess"), "game must be one of"),
        (lambda: TrainConfig(n_envs=0), "n_envs must be a positive integer"),
        (lambda: TrainConfig.from_json({"colour": "red"}), "unknown config fields: colour"),
        (lambda: TrainConfig(game="mao", features="cards"), 'features="cards" needs game="madiao"'),
        (lambda: TrainConfig(lr_schedule="cosine"), "lr_schedule must be one of"),
        (lambda: TrainConfig(features="rules"), 'features="rules" needs game="mao"'),
    ],
    ids=["game", "n_envs", "unknown_field", "cards_on_mao", "lr_schedule", "rules_on_madiao"],
)
def test_config_rejects_bad_values(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_config_fields_left_unset_take_their_games_defaults():
    assert TrainConfig(game="mao").obs_type == "history"
    assert TrainConfig().obs_type == "record"
    # Fields left at None take their game's defaults; explicit values are kept.
    assert TrainConfig().features == "cards" and TrainConfig(game="mao").features == "belief"
    assert TrainConfig(game="mao").scripted_opponents == ("base",)
    assert (TrainConfig().gamma, TrainConfig(game="mao").gamma) == (1.0, 0.99)
    assert TrainConfig(total_timesteps=5).total_timesteps == 5
    assert TrainConfig.from_json(TrainConfig().to_json()) == TrainConfig()


def test_mao_training_games_start_with_one_rule_never_a_held_out_one():
    from madiao_mao.training.mao.evaluation import DISCOVERABLE_RULES, HELD_OUT_RULES, TRAINING_RULES
    from madiao_mao.training.sb3.train import make_vector_env
    from mao_env import rules as rule_library

    assert set(HELD_OUT_RULES) | set(TRAINING_RULES) == set(range(rule_library.N_RULES))
    assert not set(HELD_OUT_RULES) & set(TRAINING_RULES)
    assert set(HELD_OUT_RULES) <= set(DISCOVERABLE_RULES)  # held-out rules can be violated
    config = TrainConfig(game="mao")
    assert config.game_settings.rule_pool == "train"
    venv = make_vector_env(config, 64, seed=0)
    venv.reset()
    drawn = [venv.game_rules(game) for game in range(64)]
    assert all(len(rules) == 1 and rules[0][1] == -1 for rules in drawn)
    assert {rules[0][0] for rules in drawn} <= set(TRAINING_RULES)
    assert len({rules[0][0] for rules in drawn}) > 10
    bare = make_vector_env(TrainConfig(game="mao", game_settings={"rule_pool": "none"}), 4, seed=0)
    bare.reset()
    assert all(bare.game_rules(game) == [] for game in range(4))
    with pytest.raises(ValueError, match="rule_pool must be one of train, all, none"):
        TrainConfig(game="mao", game_settings={"rule_pool": "some"})


def test_linear_learning_rate_decays_by_rollout_and_stays_positive():
    from madiao_mao.training.sb3.model import learning_rate_schedule

    # 20,000 steps run three rollouts of 8,192 (24,576 steps): SB3's progress after each rollout
    # is 2/3, 1/3 and 0, and each update runs at the rate of its rollout's start.
    config = TrainConfig(learning_rate=1e-3, total_timesteps=20_000, n_envs=256, n_steps=32)
    schedule = learning_rate_schedule(config)
    assert [schedule(p) for p in (1.0, 2 / 3, 1 / 3, 0.0)] == pytest.approx([1e-3, 1e-3, 2e-3 / 3, 1e-3 / 3])
    assert schedule(-0.01) == pytest.approx(1e-3 / 3)  # never below the last update's rate
    assert learning_rate_schedule(TrainConfig(learning_rate=1e-3, lr_schedule="constant")) == 1e-3


def _toy_learner_env(n_envs: int = 8, seed: int = 0) -> LearnerVecEnv:
    return LearnerVecEnv(ToyVectorEnv(n_envs, seed=seed), RandomAgent(seed=seed), seed=seed)


def test_teacher_decisions_carry_the_returns_that_followed_them():
    from madiao_mao.training.sb3.imitation import collect_teacher_decisions

    venv = _toy_learner_env()
    data = collect_teacher_decisions(venv, FirstLegalAgent(), 400, gamma=1.0)
    n_envs = venv.num_envs
    assert data.actions.size == 400 and data.observations.shape == (400, venv.observation_space.shape[0])
    assert all(data.masks[i, a] for i, a in enumerate(data.actions)), "the teacher's moves are legal"
    assert (data.actions == data.masks.argmax(axis=1)).all(), "the recorded action is the teacher's"
    # Undiscounted, the return of a game's first decision is that game's whole return, which the
    # wrapper reports itself (Monitor statistics) when the game ends.
    first_of_game = np.zeros(data.actions.size, dtype=bool)
    first_of_game[:n_envs] = True
    rows = data.observations.reshape(-1, n_envs, venv.observation_space.shape[0])
    move_index = rows[:, :, N_PLAYERS:].argmax(axis=2).reshape(-1)
    assert data.has_return[:n_envs].all()
    assert not data.has_return[-n_envs:].all(), "the last decisions' games are unfinished"
    starts = data.returns[first_of_game & data.has_return]
    assert np.isin(np.round(starts, 5), np.round(data.episode_returns, 5)).all()
    assert data.episode_returns.size > n_envs and move_index.max() < GAME_LENGTH
    with pytest.raises(ValueError, match="n_decisions must be positive"):
        collect_teacher_decisions(venv, FirstLegalAgent(), 0, gamma=1.0)


def test_policy_fitted_to_a_teacher_plays_its_moves():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from madiao_mao.training.sb3.imitation import collect_teacher_decisions, fit_policy

    class LastLegalAgent(Agent):
        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[-1])

    venv = _toy_learner_env()
    data = collect_teacher_decisions(venv, LastLegalAgent(), 512, gamma=1.0)
    model = MaskablePPO("MlpPolicy", venv, policy_kwargs={"net_arch": [32]}, seed=0, device="cpu")
    history = fit_policy(model.policy, data, epochs=8, batch_size=64, learning_rate=3e-3, vf_coef=0.5, seed=0)
    assert history[-1]["policy_loss"] < history[0]["policy_loss"]
    observation = venv.reset()
    for _ in range(20):
        masks = venv.action_masks()
        chosen, _ = model.predict(observation, action_masks=masks, deterministic=True)
        expected = np.array([np.flatnonzero(row)[-1] for row in masks])
        assert (chosen == expected).all()
        observation, *_ = venv.step(chosen)


@pytest.mark.parametrize("shared", [True, False])
def test_the_fit_reads_sb3s_values_log_probabilities_and_choices_from_one_pass(shared):
    # fit_policy takes the values and log-probabilities that evaluate_actions gives and the
    # choices that get_distribution gives, from one forward pass: the same numbers, bit for bit,
    # for a shared features extractor and for separate ones.
    pytest.importorskip("sb3_contrib")
    import torch
    from sb3_contrib import MaskablePPO

    from madiao_mao.training.sb3.imitation import _values_and_choices

    venv = _toy_learner_env()
    model = MaskablePPO(
        "MlpPolicy",
        venv,
        policy_kwargs={"net_arch": [16], "share_features_extractor": shared},
        seed=3,
        device="cpu",
    )
    generator = torch.Generator().manual_seed(4)
    observations = torch.randn(48, venv.observation_space.shape[0], generator=generator)
    masks = (torch.rand(48, venv.action_space.n, generator=generator) < 0.5).numpy()
    masks[np.arange(48), np.arange(48) % venv.action_space.n] = True
    actions = torch.as_tensor([np.flatnonzero(row)[-1] for row in masks])
    values, log_prob, probabilities = _values_and_choices(model.policy, observations, actions, masks)
    assert log_prob.requires_grad and not probabilities.requires_grad
    sb3_values, sb3_log_prob, _entropy = model.policy.evaluate_actions(
        observations, actions, action_masks=masks
    )
    with torch.no_grad():
        sb3_probabilities = model.policy.get_distribution(observations, action_masks=masks).distribution.probs
    assert torch.equal(values, sb3_values)
    assert torch.equal(log_prob, sb3_log_prob)
    assert torch.equal(probabilities, sb3_probabilities)
    assert (probabilities[torch.as_tensor(~masks)] == 0).all()


def test_training_starts_from_the_teacher_once(tmp_path, monkeypatch):
    pytest.importorskip("sb3_contrib")
    from madiao_mao.training.sb3 import train as train_module

    config = _toy_training_config(
        train_module, tmp_path, monkeypatch, imitate="random", imitation_decisions=64, imitation_epochs=1
    )
    run_dir = train_module.train(config)
    state = json.loads((run_dir / "state.json").read_text())
    assert state["imitation"]["decisions"] == 64 and 0.0 <= state["imitation"]["accuracy"] <= 1.0
    tags = (run_dir / "progress.csv").read_text().splitlines()[0].split(",")
    assert "imitation/accuracy" in tags
    # A resumed run goes on with PPO; it does not imitate again.
    monkeypatch.setattr(train_module, "warm_start", lambda *a, **k: pytest.fail("imitated twice"))
    train_module.train(resume=run_dir, total_timesteps=256, quiet=True)
    assert json.loads((run_dir / "state.json").read_text())["imitation"] == state["imitation"]
    # An opponent that remembers each game but cannot be told which row is which game is refused.
    _forgetful_bayes(monkeypatch)
    with pytest.raises(ValueError, match="scripted opponent 'bayes' keeps a memory per game but"):
        train_module.train(
            _toy_training_config(train_module, tmp_path / "bayes", monkeypatch, scripted_opponents=("bayes",))
        )
    monkeypatch.undo()
    with pytest.raises(ValueError, match="imitate must be 'none' or a mao agent"):
        TrainConfig(game="mao", imitate="grandmaster")
    assert TrainConfig().imitate == "none"
    assert TrainConfig(game="mao").imitate == "bayes"


def test_hand_size_reward_pays_for_every_card_shed():
    from madiao_mao.agents.registry import make_agent
    from madiao_mao.training.mao.wrappers import HandSizeReward
    from mao_env import cards, core
    from mao_env.vector import MaoVectorEnv

    def learner_env():
        vector_env = MaoVectorEnv(16, obs_type="history", penalty_card_reward=-1.0)
        return LearnerVecEnv(vector_env, make_agent("base", "mao", seed=1), seed=3)

    hand = slice(core.OFF_HAND, core.OFF_HAND + cards.N_CARD_TYPES)
    plain, shaped = learner_env(), HandSizeReward(learner_env(), 0.25, hand)
    player = make_agent("random", "mao", seed=4)
    observation = plain.reset()
    assert np.array_equal(observation, shaped.reset())
    held_at_start = observation[:, hand].sum(axis=1)
    bonus = np.zeros(16)
    checked = 0
    for _ in range(400):
        actions = player.act_batch(observation, plain.action_masks())
        observation, plain_rewards, dones, infos = plain.step(actions)
        same_observation, shaped_rewards, shaped_dones, _ = shaped.step(actions)
        assert np.array_equal(observation, same_observation) and np.array_equal(dones, shaped_dones)
        bonus += shaped_rewards - plain_rewards
        for game in np.flatnonzero(dones):
            held_at_end = infos[game]["terminal_observation"][hand].sum()
            assert bonus[game] == pytest.approx(0.25 * (held_at_start[game] - held_at_end), abs=1e-4)
            bonus[game] = 0.0
            held_at_start[game] = observation[game, hand].sum()
            checked += 1
    assert checked > 5
    assert isinstance(shaped.action_masks(), np.ndarray)  # MaskablePPO reads the masks through it


def test_training_is_reproducible_with_its_own_policy_among_the_opponents(tmp_path, monkeypatch):
    """Snapshots and the live policy sample their moves as opponents; a seed fixes those too."""
    pytest.importorskip("sb3_contrib")
    import torch
    from sb3_contrib import MaskablePPO

    from madiao_mao.training.sb3 import train as train_module

    policies = []
    for attempt in range(2):
        config = _toy_training_config(
            train_module,
            tmp_path / str(attempt),
            monkeypatch,
            imitate="none",
            total_timesteps=512,
            snapshot_every=128,
            opponent_weights={"scripted": 0.2, "snapshot": 0.4, "current": 0.4},
        )
        run_dir = train_module.train(config)
        assert len(json.loads((run_dir / "state.json").read_text())["snapshots"]) >= 2
        policies.append(MaskablePPO.load(str(run_dir / "final_model.zip")).policy.state_dict())
    assert all(torch.equal(policies[0][key], policies[1][key]) for key in policies[0])


def _forgetful_bayes(monkeypatch):
    """Make ``bayes`` an agent that keeps a memory per game but takes no row keys, where the
    trainer's opponents are made (``madiao_mao.training.opponents.scripted_agents``)."""
    from madiao_mao.training import opponents
    from tests.common.toy_game import MemoryWithoutKeys

    original = opponents.make_agent

    def make_agent(name, game="madiao", *, seed=None, env=None):
        return MemoryWithoutKeys() if name == "bayes" else original(name, game, seed=seed, env=env)

    monkeypatch.setattr(opponents, "make_agent", make_agent)


@pytest.mark.parametrize("game", ["madiao", "mao"])
def test_the_training_games_hand_out_their_buffers_and_the_learner_view_is_unchanged(game):
    # The training env hands out its own buffers (no copy a step); the learner's view over it must
    # be what it is over an env that copies everything, even when every step it returned is kept
    # and read only at the end: nothing handed to the learner may alias a buffer the next step
    # overwrites.
    from madiao_mao.training.game_spec import game_spec

    config = TrainConfig(game=game, **TINY_RUN)
    spec = game_spec(config.game)

    def first_legal(observations, masks):
        return np.argmax(masks, axis=1)

    def play(vector_env) -> tuple[list[np.ndarray], int]:
        venv = LearnerVecEnv(vector_env, first_legal, learner_seat="rotate", seed=5)
        kept = [venv.reset(), venv.action_masks()]
        rng = np.random.default_rng(5)
        ended = 0
        for _ in range(150):
            masks = venv.action_masks()
            actions = np.array([rng.choice(np.flatnonzero(row)) for row in masks])
            observations, rewards, dones, infos = venv.step(actions)
            kept += [observations, rewards, dones, masks]
            for game_index in np.flatnonzero(dones):
                kept += [infos[game_index]["terminal_observation"], infos[game_index]["final_payoffs"]]
                ended += 1
        return kept, ended

    training_env = spec.make_vector_env(config, 8, 11)
    assert training_env.copy is False
    kept, ended = play(training_env)
    copying_env = spec.make_vector_env(config, 8, 11)
    copying_env.copy = True
    reference, _ = play(copying_env)
    assert ended > 0
    assert len(kept) == len(reference)
    for ours, theirs in zip(kept, reference, strict=True):
        np.testing.assert_array_equal(ours, theirs)
