"""Train with what the table hides, play with what the seat sees (issue 33): the privileged critic
reads the hidden cards and the actor does not, oracle guiding fades out on schedule, both engines
train with it, and the model saved for play reads the seat's observation alone and decides the
same however the hidden cards lie."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")
pytest.importorskip("madiao_env.madiao_v0")

import torch
from gymnasium import spaces
from sb3_contrib import MaskablePPO

from madiao_mao.training.config import ConfigError, TrainConfig
from madiao_mao.training.sb3.privileged import (
    PrivilegedCriticPolicy,
    PrivilegedInputs,
    actor_only,
    oracle_factor,
)
from tests.common.helpers import TINY_RUN

SEAT_DIM, PRIVILEGED_DIM, N_ACTIONS = 12, 7, 5


def _policy(oracle_guiding_steps: int = 0, critic_reads_privileged: bool = True) -> PrivilegedCriticPolicy:
    torch.manual_seed(0)
    return PrivilegedCriticPolicy(
        spaces.Box(-np.inf, np.inf, (SEAT_DIM + PRIVILEGED_DIM,), np.float32),
        spaces.Discrete(N_ACTIONS),
        lambda _: 1e-3,
        net_arch=[16, 16],
        features_extractor_class=PrivilegedInputs,
        features_extractor_kwargs={
            "table_obs_dim": SEAT_DIM,
            "privileged_dim": PRIVILEGED_DIM,
            "oracle_guiding_steps": oracle_guiding_steps,
            "critic_reads_privileged": critic_reads_privileged,
        },
    )


def _logits_and_values(policy, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    from madiao_mao.training.fast.ppo import logits_and_values

    with torch.no_grad():
        return logits_and_values(policy, observations)


def _rows_with_other_hidden_cards(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    rows = torch.randn(32, SEAT_DIM + PRIVILEGED_DIM, generator=generator)
    other = rows.clone()
    other[:, SEAT_DIM:] = torch.randn(32, PRIVILEGED_DIM, generator=generator)
    return rows, other


def test_oracle_factor_fades_linearly_from_one_to_zero_then_stays_zero():
    assert oracle_factor(0, 1000) == 1.0
    assert oracle_factor(250, 1000) == pytest.approx(0.75)
    assert oracle_factor(500, 1000) == pytest.approx(0.5)
    assert oracle_factor(1000, 1000) == 0.0
    assert oracle_factor(5000, 1000) == 0.0
    assert oracle_factor(0, 0) == 0.0, "no oracle: the actor never reads the hidden cards"


def test_the_actor_reads_no_hidden_cards_and_the_critic_does():
    policy = _policy()
    rows, other = _rows_with_other_hidden_cards()
    logits, values = _logits_and_values(policy, rows)
    other_logits, other_values = _logits_and_values(policy, other)
    torch.testing.assert_close(logits, other_logits, rtol=0, atol=0)
    assert not torch.allclose(values, other_values), "the critic must read the privileged columns"
    # An agent hands the actor the seat's observation alone: the same logits.
    seat_logits = policy.action_net(
        policy.mlp_extractor.forward_actor(policy.pi_features_extractor(rows[:, :SEAT_DIM]))
    )
    torch.testing.assert_close(seat_logits.detach(), logits, rtol=0, atol=0)
    assert policy.table_obs_dim == SEAT_DIM


def test_oracle_guiding_feeds_the_actor_the_hidden_cards_until_the_fade_ends():
    policy = _policy(oracle_guiding_steps=1000)
    rows, other = _rows_with_other_hidden_cards()
    assert policy.set_oracle_factor_at(0) == 1.0
    assert not torch.allclose(_logits_and_values(policy, rows)[0], _logits_and_values(policy, other)[0])
    assert policy.set_oracle_factor_at(500) == pytest.approx(0.5)
    assert not torch.allclose(_logits_and_values(policy, rows)[0], _logits_and_values(policy, other)[0])
    assert policy.set_oracle_factor_at(1000) == 0.0
    torch.testing.assert_close(
        _logits_and_values(policy, rows)[0], _logits_and_values(policy, other)[0], rtol=0, atol=0
    )


def test_oracle_guiding_without_the_privileged_critic_keeps_the_critic_on_the_seats_view(tmp_path):
    """Oracle guiding alone (Suphx, and the ablation's "oracle guiding" row): the actor reads the
    hidden cards while the fade lasts, the critic never does."""
    policy = _policy(oracle_guiding_steps=1000, critic_reads_privileged=False)
    rows, other = _rows_with_other_hidden_cards()
    for steps in (0, 500, 1000):
        policy.set_oracle_factor_at(steps)
        values = _logits_and_values(policy, rows)[1]
        torch.testing.assert_close(values, _logits_and_values(policy, other)[1], rtol=0, atol=0)
    policy.set_oracle_factor_at(0)
    assert not torch.allclose(_logits_and_values(policy, rows)[0], _logits_and_values(policy, other)[0])
    config = TrainConfig(oracle_guiding_steps=10)
    assert config.trains_on_hidden_state and not config.privileged_critic
    assert not TrainConfig().trains_on_hidden_state
    with pytest.raises(ConfigError, match="oracle_guiding_steps works with the MLP policy"):
        TrainConfig(game="mao", features="rules", oracle_guiding_steps=10)
    saved = tmp_path / "model.zip"
    saved.write_bytes(b"")
    for option, value in (("oracle_guiding_steps", 10), ("privileged_critic", True)):
        with pytest.raises(ConfigError, match=f"{option} trains a fresh network"):
            TrainConfig(**{option: value}, init_model=str(saved))


def test_a_checkpoint_saved_before_the_critic_option_keeps_its_privileged_critic():
    """Checkpoints saved before ``critic_reads_privileged`` existed have no such key in their
    features kwargs: their critic must still read the hidden cards, as it was trained to."""
    torch.manual_seed(0)
    policy = PrivilegedCriticPolicy(
        spaces.Box(-np.inf, np.inf, (SEAT_DIM + PRIVILEGED_DIM,), np.float32),
        spaces.Discrete(N_ACTIONS),
        lambda _: 1e-3,
        net_arch=[16, 16],
        features_extractor_class=PrivilegedInputs,
        features_extractor_kwargs={"table_obs_dim": SEAT_DIM, "privileged_dim": PRIVILEGED_DIM},
    )
    assert policy.vf_features_extractor.reads_privileged
    assert not policy.pi_features_extractor.reads_privileged
    rows, other = _rows_with_other_hidden_cards()
    assert not torch.allclose(_logits_and_values(policy, rows)[1], _logits_and_values(policy, other)[1])


def test_config_refuses_what_a_privileged_critic_cannot_do():
    with pytest.raises(ConfigError, match="at most total_timesteps"):
        TrainConfig(total_timesteps=100, oracle_guiding_steps=200)
    with pytest.raises(ConfigError, match="at most total_timesteps"):
        TrainConfig(privileged_critic=True, total_timesteps=100, oracle_guiding_steps=200)
    with pytest.raises(ConfigError, match='and with "belief", not with features="rules"'):
        TrainConfig(game="mao", features="rules", privileged_critic=True)
    assert TrainConfig(game="mao", features="flat", privileged_critic=True).privileged_critic
    assert TrainConfig(game="mao", privileged_critic=True).features == "belief"
    default = TrainConfig()
    assert default.privileged_critic is False and default.oracle_guiding_steps == 0


def test_the_learner_view_appends_its_seats_privileged_vector_of_the_same_step():
    from madiao_env.vector import MadiaoVectorEnv
    from madiao_mao.agents.base import RandomAgent
    from madiao_mao.training.sb3.adapter import LearnerVecEnv
    from madiao_mao.training.sb3.privileged import PrivilegedObservations

    vector_env = MadiaoVectorEnv(6, seed=3, obs_type="summary")
    inner = LearnerVecEnv(vector_env, RandomAgent(seed=3), seed=3)
    venv = PrivilegedObservations(inner, vector_env)
    seat_dim = inner.observation_space.shape[0]
    assert venv.observation_space.shape == (seat_dim + vector_env.privileged_dim,)
    assert venv.table_obs_dim == seat_dim
    observations = venv.reset()
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(60):
        np.testing.assert_array_equal(observations[:, :seat_dim], inner.current.observation)
        np.testing.assert_array_equal(
            observations[:, seat_dim:], vector_env.privileged_observation(inner.learner_seat)
        )
        masks = venv.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in masks])
        before = observations[:, seat_dim:].copy()
        observations, _, dones, infos = venv.step(actions)
        for game in np.flatnonzero(dones):
            terminal = infos[game]["terminal_observation"]
            assert terminal.shape == (seat_dim + vector_env.privileged_dim,)
            np.testing.assert_array_equal(terminal[seat_dim:], before[game])
            ended += 1
    assert ended, "no game ended: the terminal observation was not checked"


def _tiny_madiao(tmp_path, **overrides) -> TrainConfig:
    options = {
        **TINY_RUN,
        "total_timesteps": 256,
        "runs_dir": str(tmp_path),
        "torch_threads": 1,
        "privileged_critic": True,
    }
    return TrainConfig(**{**options, **overrides})


def _seat_obs_dim() -> int:
    """The length of the seat's observation at the Madiao training default."""
    from madiao_env import madiao_v0

    env = madiao_v0.raw_env(obs_type=TrainConfig(game="madiao").obs_type)
    env.reset(seed=0)
    return int(env.observation_space(env.possible_agents[0])["observation"].shape[0])


@pytest.mark.parametrize("engine", ["sb3", "fast"])
@pytest.mark.parametrize("privileged_critic", [True, False], ids=["privileged-critic", "oracle-alone"])
def test_a_privileged_critic_run_trains_and_saves_an_actor_that_reads_its_seat_alone(
    tmp_path, engine, privileged_critic
):
    from madiao_mao.agents.learned import policy_agent
    from madiao_mao.training.fast import train as fast_train
    from madiao_mao.training.sb3 import train as sb3_train
    from tests.common.test_hidden_information import decisions, pairs

    trainer = fast_train if engine == "fast" else sb3_train
    config = _tiny_madiao(tmp_path, oracle_guiding_steps=128, privileged_critic=privileged_critic)
    run_dir = trainer.train(config, quiet=True)
    seat_dim = _seat_obs_dim()
    checkpoint = MaskablePPO.load(str(run_dir / "checkpoint.zip"), device="cpu")
    assert isinstance(checkpoint.policy, PrivilegedCriticPolicy), "resume needs the critic"
    assert checkpoint.policy.vf_features_extractor.reads_privileged is privileged_critic
    assert checkpoint.observation_space.shape[0] > seat_dim
    final = MaskablePPO.load(str(run_dir / "final_model.zip"), device="cpu")
    assert not isinstance(final.policy, PrivilegedCriticPolicy)
    assert final.observation_space.shape == (seat_dim,)
    # The actor for play chooses what the trained actor chooses from the seat's observation.
    rows = torch.rand(16, seat_dim)
    trained = checkpoint.policy
    with torch.no_grad():
        expected = trained.action_net(
            trained.mlp_extractor.forward_actor(trained.pi_features_extractor(rows))
        )
        got = final.policy.action_net(
            final.policy.mlp_extractor.forward_actor(final.policy.pi_features_extractor(rows))
        )
    torch.testing.assert_close(got, expected)
    path = run_dir / "final_model.zip"
    for pair in pairs("madiao"):
        first = decisions(f"model:{path}", "madiao", pair.first, pair.observer)
        second = decisions(f"model:{path}", "madiao", pair.second, pair.observer)
        assert first == second, f"the saved actor decides from hidden cards at {pair.name}"
    # A snapshot (the whole model) plays as an opponent from the seat's observation too.
    snapshots = sorted((run_dir / "snapshots").glob("*.zip"))
    assert snapshots
    assert policy_agent(snapshots[0]).table_obs_dim == seat_dim
    # And the run resumes from its checkpoint, with its critic.
    trainer.train(resume=run_dir, total_timesteps=384, quiet=True)
    state = json.loads((run_dir / "state.json").read_text())
    assert state["num_timesteps"] >= 384


def test_a_seeded_privileged_run_with_oracle_guiding_repeats_its_weights(tmp_path):
    from madiao_mao.training.fast import train as fast_train

    weights = []
    for folder in ("one", "two"):
        config = _tiny_madiao(
            tmp_path / folder, total_timesteps=256, oracle_guiding_steps=256, snapshot_every=10**6
        )
        run_dir = fast_train.train(config, quiet=True)
        weights.append(MaskablePPO.load(str(run_dir / "checkpoint.zip"), device="cpu").policy.state_dict())
    assert weights[0].keys() == weights[1].keys()
    for name in weights[0]:
        torch.testing.assert_close(weights[0][name], weights[1][name], rtol=0, atol=0)


def test_mao_trains_a_privileged_critic_with_flat_features(tmp_path):
    from madiao_mao.training.sb3 import train as sb3_train

    config = _tiny_madiao(
        tmp_path,
        game="mao",
        features="flat",
        imitate="none",
        game_settings={"rule_pool": "none"},
        oracle_guiding_steps=128,
        snapshot_every=10**6,
    )
    run_dir = sb3_train.train(config, quiet=True)
    checkpoint = MaskablePPO.load(str(run_dir / "checkpoint.zip"), device="cpu")
    final = MaskablePPO.load(str(run_dir / "final_model.zip"), device="cpu")
    seat_dim = checkpoint.policy.table_obs_dim
    assert checkpoint.observation_space.shape[0] > seat_dim
    assert final.observation_space.shape == (seat_dim,)


@pytest.mark.parametrize("engine", ["sb3", "fast"])
def test_maos_belief_policy_trains_a_privileged_critic_and_plays_as_the_belief_policy(tmp_path, engine):
    from madiao_mao.agents.learned import policy_agent
    from madiao_mao.agents.mao.belief_inputs import BELIEF_WIDTH
    from madiao_mao.agents.mao.features import MaoBeliefPolicy
    from madiao_mao.training.fast import train as fast_train
    from madiao_mao.training.mao.privileged import PrivilegedBeliefPolicy
    from madiao_mao.training.sb3 import train as sb3_train
    from tests.common.test_hidden_information import decisions, pairs

    config = _tiny_madiao(
        tmp_path, game="mao", imitation_decisions=64, imitation_epochs=1, total_timesteps=256
    )
    assert config.features == "belief"
    run_dir = (fast_train if engine == "fast" else sb3_train).train(config, quiet=True)
    checkpoint = MaskablePPO.load(str(run_dir / "checkpoint.zip"), device="cpu")
    trained = checkpoint.policy
    assert isinstance(trained, PrivilegedBeliefPolicy), "resume needs the critic"
    seat_dim = trained.table_obs_dim
    privileged_dim = checkpoint.observation_space.shape[0] - seat_dim
    assert privileged_dim > 0
    final = MaskablePPO.load(str(run_dir / "final_model.zip"), device="cpu")
    assert type(final.policy) is MaoBeliefPolicy
    assert final.observation_space.shape == (seat_dim,)
    # The saved actor is the trained one: same logits from the seat's part, whose last columns
    # (the belief inputs) reach the action head in both.
    generator = torch.Generator().manual_seed(3)
    rows = torch.rand(16, seat_dim, generator=generator)
    hidden = torch.rand(16, privileged_dim, generator=generator)
    with torch.no_grad():
        expected = trained.action_net(
            trained.mlp_extractor.forward_actor(trained.pi_features_extractor(torch.cat((rows, hidden), 1)))
        )
        got = final.policy.action_net(
            final.policy.mlp_extractor.forward_actor(final.policy.pi_features_extractor(rows))
        )
        values = [trained.predict_values(torch.cat((rows, other), 1)) for other in (hidden, 1 - hidden)]
    torch.testing.assert_close(got, expected)
    assert not torch.equal(values[0], values[1]), "the critic reads the secret rules and hands"
    # Agents play it from the table's observation and compute the belief inputs themselves, the
    # whole training model (a snapshot) included, and no hidden card sways the saved actor.
    snapshots = sorted((run_dir / "snapshots").glob("*.zip"))
    assert snapshots
    for path in (run_dir / "final_model.zip", snapshots[0]):
        assert policy_agent(path).table_obs_dim == seat_dim - BELIEF_WIDTH
    path = run_dir / "final_model.zip"
    for pair in pairs("mao")[:4]:
        first = decisions(f"model:{path}", "mao", pair.first, pair.observer)
        second = decisions(f"model:{path}", "mao", pair.second, pair.observer)
        assert first == second, f"the saved actor decides from hidden cards at {pair.name}"


def test_an_actor_still_guided_by_the_oracle_is_not_saved_for_play(tmp_path):
    from madiao_mao.training.sb3 import train as sb3_train
    from madiao_mao.training.sb3.model import export_policy

    run_dir = sb3_train.train(
        _tiny_madiao(tmp_path, total_timesteps=128, oracle_guiding_steps=128), quiet=True
    )
    model = MaskablePPO.load(str(run_dir / "checkpoint.zip"), device="cpu")
    model.policy.pi_features_extractor.oracle_guiding_steps = 10_000  # as if the fade were longer
    with pytest.raises(ValueError, match="oracle guiding fades out at learner step 10000"):
        actor_only(model)
    exported = export_policy(run_dir / "checkpoint.zip", tmp_path / "exported.zip")
    assert MaskablePPO.load(str(exported), device="cpu").observation_space.shape == (_seat_obs_dim(),)


def test_models_trained_before_keep_loading_and_reading_their_whole_observation():
    from madiao_env.layout import OBS_SIZES
    from madiao_mao.agents.learned import pretrained_agent

    agent = pretrained_agent("madiao")
    assert agent.table_obs_dim == agent.obs_dim == OBS_SIZES["summary"]


def test_maos_belief_policy_trains_with_oracle_guiding_alone(tmp_path):
    """Oracle guiding without the privileged critic on Mao's belief policy: the checkpoint's
    critic reads zeros where the secret rules and hands are, and the saved actor is the belief
    policy."""
    from madiao_mao.agents.mao.features import MaoBeliefPolicy
    from madiao_mao.training.fast import train as fast_train
    from madiao_mao.training.mao.privileged import PrivilegedBeliefPolicy

    config = _tiny_madiao(
        tmp_path,
        game="mao",
        privileged_critic=False,
        oracle_guiding_steps=128,
        imitation_decisions=64,
        imitation_epochs=1,
        total_timesteps=256,
    )
    run_dir = fast_train.train(config, quiet=True)
    trained = MaskablePPO.load(str(run_dir / "checkpoint.zip"), device="cpu").policy
    assert isinstance(trained, PrivilegedBeliefPolicy)
    seat_dim = trained.table_obs_dim
    generator = torch.Generator().manual_seed(5)
    rows = torch.rand(16, seat_dim, generator=generator)
    hidden = torch.rand(16, trained.trailing_width(), generator=generator)
    with torch.no_grad():
        values = [trained.predict_values(torch.cat((rows, other), 1)) for other in (hidden, 1 - hidden)]
    torch.testing.assert_close(values[0], values[1], rtol=0, atol=0)
    final = MaskablePPO.load(str(run_dir / "final_model.zip"), device="cpu")
    assert type(final.policy) is MaoBeliefPolicy and final.observation_space.shape == (seat_dim,)
