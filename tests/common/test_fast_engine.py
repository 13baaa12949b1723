"""The fast engine (``madiao-mao train --engine fast``): its PPO pieces equal SB3's on the same
network, and a run keeps the run folder contract (checkpoints, resume, snapshots, a saved model
that loads as an agent), is reproducible from its seed, and refuses bad invocations on one line."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

sb3_contrib = pytest.importorskip("sb3_contrib")

import torch  # noqa: E402
from sb3_contrib import MaskablePPO  # noqa: E402

from madiao_mao.training.fast import ppo  # noqa: E402
from madiao_mao.training.fast import train as fast_train  # noqa: E402
from madiao_mao.training.sb3 import train as sb3_train  # noqa: E402
from tests.common.test_cli_config import _one_line_error  # noqa: E402
from tests.common.test_device import needs_gpu, toy_config_on  # noqa: E402
from tests.common.test_training import ToyVectorEnv, _toy_training_config  # noqa: E402


def _toy_model(seed: int = 0):
    from madiao_mao.agents.base import RandomAgent
    from madiao_mao.training.sb3.adapter import LearnerVecEnv

    venv = LearnerVecEnv(ToyVectorEnv(8, seed=seed), RandomAgent(seed=seed), seed=seed)
    return MaskablePPO(
        "MlpPolicy", venv, n_steps=8, batch_size=16, policy_kwargs={"net_arch": [16]}, seed=seed
    )


def _random_batch(model, n_rows: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    obs_dim, n_actions = model.observation_space.shape[0], model.action_space.n
    observations = torch.randn(n_rows, obs_dim, generator=generator)
    masks = torch.rand(n_rows, n_actions, generator=generator) < 0.5
    masks[torch.arange(n_rows), torch.randint(n_actions, (n_rows,), generator=generator)] = True
    return observations, masks


def test_log_probabilities_values_and_entropy_are_sb3s_on_the_same_network():
    model = _toy_model()
    observations, masks = _random_batch(model, 64, seed=1)
    with torch.no_grad():
        logits, values = ppo.logits_and_values(model.policy, observations)
        log_probabilities = ppo.masked_log_probabilities(logits, masks)
        actions = ppo.sample_actions(log_probabilities, torch.Generator().manual_seed(2))
        sb3_values, sb3_log_prob, sb3_entropy = model.policy.evaluate_actions(
            observations, actions, action_masks=masks.numpy()
        )
    assert masks[torch.arange(64), actions].all(), "a sampled action is always legal"
    torch.testing.assert_close(values, sb3_values.flatten())
    torch.testing.assert_close(log_probabilities.gather(1, actions[:, None]).squeeze(1), sb3_log_prob)
    torch.testing.assert_close(ppo.entropy_of(log_probabilities, masks), sb3_entropy)


def test_entropy_reads_no_illegal_log_probability_and_has_a_finite_gradient():
    # Illegal actions contribute nothing: their log-probabilities may be any value, -inf included
    # (exp(-inf) * -inf is nan, and a nan times a zero gradient would poison the update).
    log_probabilities = torch.log(torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]]))
    masks = torch.tensor([[True, True, False, False], [True, True, True, True]])
    for illegal in (-float("inf"), ppo.MASKED_LOGIT, 123.0):
        given = log_probabilities.masked_fill(~masks, illegal).requires_grad_(True)
        entropy = ppo.entropy_of(given, masks)
        torch.testing.assert_close(entropy, torch.log(torch.tensor([2.0, 4.0])))
        entropy.sum().backward()
        assert torch.isfinite(given.grad).all()
        assert not given.grad[~masks].any()


def test_sampled_actions_follow_the_policys_probabilities():
    log_probabilities = torch.log(torch.tensor([[0.7, 0.2, 0.1, 0.0]])).repeat(20_000, 1)
    actions = ppo.sample_actions(log_probabilities, torch.Generator().manual_seed(0))
    frequencies = torch.bincount(actions, minlength=4).double() / actions.numel()
    torch.testing.assert_close(
        frequencies, torch.tensor([0.7, 0.2, 0.1, 0.0], dtype=torch.float64), atol=0.015, rtol=0
    )


def test_advantages_and_returns_are_sb3s_rollout_buffers():
    from gymnasium import spaces
    from stable_baselines3.common.buffers import RolloutBuffer

    n_steps, n_envs, gamma, gae_lambda = 6, 5, 0.9, 0.8
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=(n_steps, n_envs)).astype(np.float32)
    values = rng.normal(size=(n_steps, n_envs)).astype(np.float32)
    starts = (rng.random((n_steps, n_envs)) < 0.3).astype(np.float32)
    last_values = rng.normal(size=n_envs).astype(np.float32)
    last_dones = (rng.random(n_envs) < 0.5).astype(np.float32)
    buffer = RolloutBuffer(
        n_steps,
        spaces.Box(-1, 1, (1,)),
        spaces.Discrete(2),
        gae_lambda=gae_lambda,
        gamma=gamma,
        n_envs=n_envs,
    )
    for step in range(n_steps):
        buffer.add(
            np.zeros((n_envs, 1)),
            np.zeros((n_envs, 1)),
            rewards[step],
            starts[step],
            torch.as_tensor(values[step]),
            torch.zeros(n_envs),
        )
    buffer.compute_returns_and_advantage(torch.as_tensor(last_values), last_dones)
    storage = ppo.RolloutStorage(n_steps, n_envs, 1, 2, torch.device("cpu"))
    storage.rewards[:] = torch.as_tensor(rewards)
    storage.values[:] = torch.as_tensor(values)
    storage.episode_starts[:] = torch.as_tensor(starts)
    storage.compute_advantages(torch.as_tensor(last_values), torch.as_tensor(last_dones), gamma, gae_lambda)
    np.testing.assert_allclose(storage.advantages.numpy(), buffer.advantages, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(storage.returns.numpy(), buffer.returns, rtol=1e-5, atol=1e-6)


def test_the_observations_the_policy_reads_are_the_storage_the_env_writes_into_on_the_cpu():
    storage = ppo.RolloutStorage(2, 3, 4, 5, torch.device("cpu"))
    observations, _ = storage.stage(1, np.full((3, 4), 2.5), np.eye(3, 5, dtype=np.int8))
    assert observations.data_ptr() == storage.observations[1].data_ptr()
    assert float(storage.observations[1].sum()) == 30.0 and int(storage.masks[1].sum()) == 3
    assert float(storage.observations[0].sum()) == 0.0  # the other step's slot is untouched


def _update_settings(
    *,
    n_epochs: int,
    batch_size: int,
    ent_coef: float,
    max_grad_norm: float = 0.5,
    learning_rate: float = 1e-3,
) -> ppo.UpdateSettings:
    return ppo.UpdateSettings(
        n_epochs=n_epochs,
        batch_size=batch_size,
        clip_range=0.2,
        ent_coef=ent_coef,
        vf_coef=0.5,
        max_grad_norm=max_grad_norm,
        learning_rate=learning_rate,
    )


def test_an_update_lowers_the_loss_of_a_rollout_and_moves_the_weights():
    model = _toy_model()
    storage = ppo.RolloutStorage(
        4, 8, model.observation_space.shape[0], model.action_space.n, torch.device("cpu")
    )
    observations, masks = _random_batch(model, 32, seed=3)
    storage.observations[:] = observations.reshape(4, 8, -1)
    storage.masks[:] = masks.reshape(4, 8, -1)
    with torch.no_grad():
        logits, values = ppo.logits_and_values(model.policy, observations)
        log_probabilities = ppo.masked_log_probabilities(logits, masks)
        actions = ppo.sample_actions(log_probabilities, torch.Generator().manual_seed(4))
    storage.actions[:] = actions.reshape(4, 8)
    storage.log_probabilities[:] = log_probabilities.gather(1, actions[:, None]).reshape(4, 8)
    storage.values[:] = values.reshape(4, 8)
    storage.advantages[:] = torch.randn(4, 8, generator=torch.Generator().manual_seed(5))
    storage.returns[:] = storage.advantages + storage.values
    before = [p.detach().clone() for p in model.policy.parameters()]
    settings = _update_settings(n_epochs=8, batch_size=32, ent_coef=0.0)
    first = ppo.ppo_update(model.policy, storage, settings, torch.Generator().manual_seed(6))
    second = ppo.ppo_update(model.policy, storage, settings, torch.Generator().manual_seed(6))
    assert second["value_loss"] < first["value_loss"]
    assert any(not torch.equal(b, p) for b, p in zip(before, model.policy.parameters(), strict=True))
    assert first["n_minibatches"] == 8 and model.policy.optimizer.param_groups[0]["lr"] == 1e-3


def _filled_storage(model, seed: int) -> ppo.RolloutStorage:
    storage = ppo.RolloutStorage(
        4, 8, model.observation_space.shape[0], model.action_space.n, torch.device("cpu")
    )
    observations, masks = _random_batch(model, 32, seed=seed)
    storage.observations[:] = observations.reshape(4, 8, -1)
    storage.masks[:] = masks.reshape(4, 8, -1)
    generator = torch.Generator().manual_seed(seed + 1)
    storage.actions[:] = torch.multinomial(masks.float(), 1, generator=generator).reshape(4, 8)
    storage.log_probabilities[:] = -torch.rand(4, 8, generator=generator)
    storage.values[:] = torch.randn(4, 8, generator=generator)
    storage.advantages[:] = torch.randn(4, 8, generator=generator)
    storage.returns[:] = storage.advantages + storage.values
    return storage


@pytest.mark.parametrize("shared", [True, False])
def test_features_extracted_once_per_update_train_the_weights_that_extracting_per_minibatch_does(
    shared, monkeypatch
):
    settings = _update_settings(n_epochs=3, batch_size=8, ent_coef=0.01)
    model = _toy_model()
    weights = []
    for once in (True, False):
        torch.manual_seed(0)
        policy = type(model.policy)(
            model.observation_space,
            model.action_space,
            lambda _: 1e-3,
            net_arch=[16],
            share_features_extractor=shared,
        )
        assert policy.share_features_extractor is shared
        assert ppo.fixed_features(policy, torch.zeros(2, model.observation_space.shape[0])) is not None
        # Autograd in both arms: the written-out backward needs features extracted once, and
        # its rounding is compared with autograd's by the tests below.
        monkeypatch.setattr(ppo.HandBackward, "of", classmethod(lambda cls, policy, features: None))
        if not once:
            monkeypatch.setattr(ppo, "fixed_features", lambda policy, observations: None)
        ppo.ppo_update(policy, _filled_storage(model, seed=9), settings, torch.Generator().manual_seed(3))
        weights.append(policy.state_dict())
        monkeypatch.undo()
    assert all(torch.equal(weights[0][key], weights[1][key]) for key in weights[0])
    assert not all(torch.equal(weights[0][key], model.policy.state_dict()[key]) for key in weights[0])


def _gradients_and_statistics(policy, storage, settings, *, hand: bool, monkeypatch):
    """The parameters' gradients after a one-minibatch update at learning rate 0 (the gradient
    of the loss, unclipped), and the update's statistics, by the written-out backward or autograd."""
    if not hand:
        monkeypatch.setattr(ppo.HandBackward, "of", classmethod(lambda cls, policy, features: None))
    statistics = ppo.ppo_update(policy, storage, settings, torch.Generator().manual_seed(3))
    monkeypatch.undo()
    return [parameter.grad.clone() for parameter in policy.parameters()], statistics


@pytest.mark.parametrize(
    ("activation", "shared", "net_arch"),
    [
        (torch.nn.Tanh, True, [16]),
        (torch.nn.Tanh, False, [16]),
        (torch.nn.ReLU, True, {"pi": [16, 8], "vf": [12]}),
        (torch.nn.Tanh, False, {"pi": [], "vf": [16, 16]}),
    ],
)
def test_the_written_out_backward_gives_autograds_gradients_and_statistics(
    activation, shared, net_arch, monkeypatch
):
    model = _toy_model()
    storage = _filled_storage(model, seed=11)
    settings = _update_settings(
        n_epochs=1, batch_size=32, ent_coef=0.05, max_grad_norm=1e9, learning_rate=0.0
    )
    policy = type(model.policy)(
        model.observation_space,
        model.action_space,
        lambda _: 0.0,
        net_arch=net_arch,
        activation_fn=activation,
        share_features_extractor=shared,
    )
    features = ppo.fixed_features(policy, storage.observations.reshape(32, -1))
    assert ppo.HandBackward.of(policy, features) is not None
    # Some ratios beyond the clip range, some within it, advantages of both signs.
    ratio = torch.exp(
        ppo.masked_log_probabilities(
            ppo.logits_and_values(policy, storage.observations.reshape(32, -1))[0].detach(),
            storage.masks.reshape(32, -1),
        )
        .gather(1, storage.actions.reshape(32, 1))
        .squeeze(1)
        - storage.log_probabilities.reshape(32)
    )
    assert (ratio > 1.2).any() and ((ratio > 0.8) & (ratio < 1.2)).any()
    assert (storage.advantages > 0).any() and (storage.advantages < 0).any()
    by_hand, hand_statistics = _gradients_and_statistics(
        policy, storage, settings, hand=True, monkeypatch=monkeypatch
    )
    by_autograd, statistics = _gradients_and_statistics(
        policy, storage, settings, hand=False, monkeypatch=monkeypatch
    )
    for hand_gradient, autograd_gradient in zip(by_hand, by_autograd, strict=True):
        assert autograd_gradient.abs().sum() > 0
        torch.testing.assert_close(hand_gradient, autograd_gradient, rtol=1e-4, atol=1e-6)
    assert hand_statistics.keys() == statistics.keys()
    for key, value in statistics.items():
        assert hand_statistics[key] == pytest.approx(value, rel=1e-5, abs=1e-7), key


@pytest.mark.parametrize("activation", [torch.nn.Tanh, torch.nn.ReLU])
def test_the_actor_without_module_calls_gives_the_modules_logits_bit_for_bit(activation):
    from stable_baselines3.common.torch_layers import MlpExtractor

    from madiao_mao.agents.learned import LearnedPolicyAgent, threads_for_batch
    from madiao_mao.agents.torch_mlp import actor_layers, critic_layers, mlp_outputs

    model = _toy_model()
    policy = type(model.policy)(
        model.observation_space,
        model.action_space,
        lambda _: 0.0,
        net_arch=[64, 32],
        activation_fn=activation,
    )
    agent = LearnedPolicyAgent(model=model)
    agent.model.policy = policy
    for n_rows in (1, 7, 300):  # one row, a league opponent's few, more than SMALL_BATCH
        features = torch.randn(
            n_rows, model.observation_space.shape[0], generator=torch.Generator().manual_seed(n_rows)
        )
        # On the agent's torch threads for this batch: MKL's products may round otherwise on
        # another thread count (seen on an AMD EPYC for 7 rows).
        with torch.no_grad(), threads_for_batch(n_rows):
            by_modules = policy.action_net(policy.mlp_extractor.forward_actor(features))
            values = policy.value_net(policy.mlp_extractor.forward_critic(features))
            by_layers = mlp_outputs(actor_layers(policy), features)[-1]
            values_by_layers = mlp_outputs(critic_layers(policy), features)[-1]
        assert torch.equal(by_layers, by_modules) and torch.equal(values_by_layers, values)
        np.testing.assert_array_equal(agent._actor_logits(features), by_modules.numpy().astype(np.float64))

    class OwnActor(MlpExtractor):  # an extractor that runs its nets its own way is not read as layers
        def forward_actor(self, features):
            return super().forward_actor(features) * 2.0

    own = type(model.policy)(model.observation_space, model.action_space, lambda _: 0.0, net_arch=[8])
    own.mlp_extractor.__class__ = OwnActor
    assert actor_layers(own) is None and critic_layers(own) is None
    agent.model.policy = own
    features = torch.randn(5, model.observation_space.shape[0])
    with torch.no_grad():
        expected = own.action_net(own.mlp_extractor.forward_actor(features))
    np.testing.assert_array_equal(agent._actor_logits(features), expected.numpy().astype(np.float64))
    unbiased = type(model.policy)(model.observation_space, model.action_space, lambda _: 0.0, net_arch=[8])
    unbiased.action_net = torch.nn.Linear(8, model.action_space.n, bias=False)
    assert actor_layers(unbiased) is None and critic_layers(unbiased) is not None


def test_a_network_the_written_out_backward_does_not_know_is_trained_by_autograd():
    model = _toy_model()
    observations = torch.zeros(2, model.observation_space.shape[0])

    def policy(**kwargs):
        return type(model.policy)(
            model.observation_space, model.action_space, lambda _: 1e-3, net_arch=[8], **kwargs
        )

    assert ppo.HandBackward.of(policy(), ppo.fixed_features(policy(), observations)) is not None
    assert ppo.HandBackward.of(policy(), None) is None  # features that learn
    unknown_activation = policy(activation_fn=torch.nn.ELU)
    with_extra_parameter = policy()
    with_extra_parameter.temperature = torch.nn.Parameter(torch.ones(1))
    for unknown in (unknown_activation, with_extra_parameter):
        assert ppo.HandBackward.of(unknown, ppo.fixed_features(unknown, observations)) is None
    storage = _filled_storage(model, seed=2)
    before = [p.detach().clone() for p in unknown_activation.parameters()]
    ppo.ppo_update(
        unknown_activation,
        storage,
        _update_settings(n_epochs=1, batch_size=32, ent_coef=0.01),
        torch.Generator().manual_seed(0),
    )
    assert all(not torch.equal(b, p) for b, p in zip(before, unknown_activation.parameters(), strict=True))


def test_a_features_extractor_that_learns_is_run_for_every_minibatch():
    policy = torch.nn.Module()
    policy.share_features_extractor = True
    policy.features_extractor = torch.nn.Linear(3, 2)
    policy.extract_features = policy.features_extractor
    assert ppo.fixed_features(policy, torch.zeros(4, 3)) is None
    policy.features_extractor.requires_grad_(False)
    assert ppo.fixed_features(policy, torch.ones(4, 3)).shape == (4, 2)


def test_a_fast_run_keeps_the_run_folder_contract_and_resumes(tmp_path, monkeypatch):
    config = _toy_training_config(sb3_train, tmp_path, monkeypatch, imitate="none", total_timesteps=256)
    run_dir = fast_train.train(config)
    state = json.loads((run_dir / "state.json").read_text())
    assert state["engine"] == "fast" and fast_train.is_fast_run(run_dir)
    assert state["num_timesteps"] == 256 and state["snapshots"] and state["final_speed"]["sps"] > 0
    tags = (run_dir / "progress.csv").read_text().splitlines()[0].split(",")
    assert {"charts/SPS", "losses/value_loss", "losses/entropy_loss", "charts/total_timesteps"} <= set(tags)
    # The saved model is a MaskablePPO zip: it loads, and plays as an agent.
    from madiao_mao.agents.learned import policy_agent

    agent = policy_agent(run_dir / "final_model.zip")
    observation = np.zeros(ToyVectorEnv.obs_dim, dtype=np.float32)
    assert agent.act(observation, np.array([0, 1, 0], dtype=np.int8)) == 1
    assert fast_train.train(resume=run_dir, total_timesteps=384, quiet=True) == run_dir
    state = json.loads((run_dir / "state.json").read_text())
    assert state["num_timesteps"] == 384 and state["resumes"] == [256]
    assert MaskablePPO.load(str(run_dir / "checkpoint.zip")).num_timesteps == 384


def test_a_sb3_run_is_not_taken_for_a_fast_one(tmp_path, monkeypatch):
    config = _toy_training_config(sb3_train, tmp_path, monkeypatch, imitate="none", total_timesteps=128)
    assert not fast_train.is_fast_run(sb3_train.train(config))
    assert not fast_train.is_fast_run(tmp_path / "no such run")


def _final_weights(tmp_path, monkeypatch, seed: int) -> dict:
    config = _toy_training_config(
        sb3_train,
        tmp_path,
        monkeypatch,
        imitate="none",
        seed=seed,
        total_timesteps=512,
        snapshot_every=128,
        opponent_weights={"scripted": 0.2, "snapshot": 0.4, "current": 0.4},
    )
    run_dir = fast_train.train(config)
    return MaskablePPO.load(str(run_dir / "final_model.zip")).policy.state_dict()


def test_a_seeded_fast_run_gives_the_same_weights_and_another_seed_others(tmp_path, monkeypatch):
    first = _final_weights(tmp_path / "a", monkeypatch, seed=3)
    again = _final_weights(tmp_path / "b", monkeypatch, seed=3)
    other = _final_weights(tmp_path / "c", monkeypatch, seed=4)
    assert all(torch.equal(first[key], again[key]) for key in first)
    assert not all(torch.equal(first[key], other[key]) for key in first)


def _toy_train_argv(tmp_path) -> list[str]:
    argv = ["train", "--game", "mao", "--features", "flat", "--mao-rule-pool", "none"]
    argv += [
        "--imitate",
        "none",
        "--total-timesteps",
        "64",
        "--n-envs",
        "8",
        "--n-steps",
        "8",
        "--net-arch",
        "8",
    ]
    argv += [
        "--scripted-opponents",
        "random",
        "--eval-every",
        "0",
        "--runs-dir",
        str(tmp_path),
        "--no-progress",
        "--no-report",
    ]
    return argv


def _engine_calls(monkeypatch) -> list[str]:
    """Patch both engines' ``train`` to record which one ran (and run it); returns the record."""
    monkeypatch.setattr(sb3_train, "make_vector_env", lambda config, n, seed: ToyVectorEnv(n, seed=seed))
    calls: list[str] = []
    for name, module in (("fast", fast_train), ("sb3", sb3_train)):
        original = module.train

        def recorded(*args, _name=name, _original=original, **kwargs):
            if kwargs.get("learn_with") is None:  # the fast engine calls SB3's train with its loop
                calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, "train", recorded)
    return calls


def test_the_train_command_trains_with_the_fast_engine_by_default_and_resumes_with_it(tmp_path, monkeypatch):
    from madiao_mao.cli.main import main

    calls = _engine_calls(monkeypatch)
    assert main(_toy_train_argv(tmp_path)) == 0
    (run_dir,) = tmp_path.iterdir()
    assert main(["train", "--resume", str(run_dir), "--total-timesteps", "128", "--no-report"]) == 0
    state = json.loads((run_dir / "state.json").read_text())
    assert calls == ["fast", "fast"] and state["num_timesteps"] == 128 and state["engine"] == "fast"


def test_a_resumed_sb3_run_keeps_its_engine_unless_another_is_asked_for(tmp_path, monkeypatch):
    from madiao_mao.cli.main import main

    calls = _engine_calls(monkeypatch)
    assert main([*_toy_train_argv(tmp_path), "--engine", "sb3"]) == 0
    (run_dir,) = tmp_path.iterdir()
    state_path = run_dir / "state.json"
    assert json.loads(state_path.read_text())["engine"] == "sb3"
    assert main(["train", "--resume", str(run_dir), "--total-timesteps", "128", "--no-report"]) == 0
    # A run saved before the engine was recorded (no "engine") was trained by SB3.
    state = json.loads(state_path.read_text())
    del state["engine"]
    state_path.write_text(json.dumps(state))
    assert main(["train", "--resume", str(run_dir), "--total-timesteps", "192", "--no-report"]) == 0
    assert (
        main(
            ["train", "--resume", str(run_dir), "--engine", "fast", "--total-timesteps", "256", "--no-report"]
        )
        == 0
    )
    assert json.loads(state_path.read_text())["engine"] == "fast"
    assert main(["train", "--resume", str(run_dir), "--total-timesteps", "320", "--no-report"]) == 0
    assert calls == ["sb3", "sb3", "sb3", "fast", "fast"]
    assert json.loads(state_path.read_text())["num_timesteps"] == 320


def test_a_resumed_run_takes_the_torch_threads_given_and_keeps_them(tmp_path, monkeypatch, capsys):
    from madiao_mao.cli.main import main

    _engine_calls(monkeypatch)
    threads: list[int] = []
    open_run = sb3_train.open_run

    def opened(*args, **kwargs):
        run = open_run(*args, **kwargs)
        threads.append(run.config.torch_threads)  # what the engine sets torch to
        return run

    monkeypatch.setattr(sb3_train, "open_run", opened)
    assert main([*_toy_train_argv(tmp_path), "--torch-threads", "2"]) == 0
    (run_dir,) = tmp_path.iterdir()
    config_path = run_dir / "config.json"
    assert main(["train", "--resume", str(run_dir), "--total-timesteps", "128", "--no-report"]) == 0
    assert json.loads(config_path.read_text())["torch_threads"] == 2
    resume = ["train", "--resume", str(run_dir), "--torch-threads", "1", "--no-report"]
    assert main([*resume, "--total-timesteps", "192"]) == 0
    assert json.loads(config_path.read_text())["torch_threads"] == 1
    assert main(["train", "--resume", str(run_dir), "--total-timesteps", "256", "--no-report"]) == 0
    assert threads == [2, 2, 1, 1]  # from the resume that gave them on
    # A bad value is refused before the run changes.
    saved = config_path.read_text()
    capsys.readouterr()
    error = _one_line_error(["train", "--resume", str(run_dir), "--torch-threads", "0"], capsys)
    assert "torch_threads must be a positive integer, got 0" in error
    assert config_path.read_text() == saved


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["train", "--engine", "fast", "--num-env-runners", "2"], "need --engine rllib"),
        (["train", "--engine", "turbo"], "--engine"),
        # The choices offered are the engines only: not None, which means the default.
        (["train", "--engine", "turbo"], "Expected one of ('fast', 'sb3', 'rllib')."),
        (["train", "--engine", "fast", "--resume", "MISSING"], "MISSING"),
    ],
)
def test_a_bad_fast_invocation_is_one_line_and_status_2(argv, named, tmp_path, capsys):
    argv = [str(tmp_path / "missing") if word == "MISSING" else word for word in argv]
    assert named.replace("MISSING", str(tmp_path / "missing")) in _one_line_error(argv, capsys)


def test_a_game_cut_short_is_paid_the_value_of_where_it_was_cut_and_an_ended_one_is_not():
    from types import SimpleNamespace

    model = _toy_model()
    loop = fast_train.FastLoop(model, model.env, SimpleNamespace(n_steps=2), seed=0)
    cut_at = np.linspace(-1, 1, ToyVectorEnv.obs_dim, dtype=np.float32)
    infos = [
        {"TimeLimit.truncated": True, "terminal_observation": cut_at},
        {"TimeLimit.truncated": False, "terminal_observation": -cut_at},
        {},
    ]
    rewards = loop._bootstrap_truncated(
        np.array([1.0, 2.0, 3.0], dtype=np.float32), np.array([True, True, False]), infos, gamma=0.5
    )
    with torch.no_grad():
        _, value = ppo.logits_and_values(model.policy, torch.as_tensor(cut_at[None]))
    np.testing.assert_allclose(rewards, [1.0 + 0.5 * float(value[0]), 2.0, 3.0], rtol=1e-6)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_a_fast_toy_run_trains_on_the_device_after_a_warm_start(tmp_path, monkeypatch, device):
    """The fast loop on ``device`` (on a GPU: pinned staging rows, actions drawn there), after the
    warm start, with the live policy and its snapshots as opponents, and a resume."""
    config = toy_config_on(device, tmp_path, monkeypatch)
    run_dir = fast_train.train(config)
    fast_train.train(resume=run_dir, total_timesteps=256, quiet=True)
    state = json.loads((run_dir / "state.json").read_text())
    assert (state["device"], state["num_timesteps"], state["engine"]) == (device, 256, "fast")
    assert "imitation" in state


def test_a_fast_run_draws_its_learning_curve_and_says_its_speed_at_the_end(tmp_path, monkeypatch, capsys):
    from tests.common.test_training_hardening import _fake_evaluation

    calls: list[int] = []
    monkeypatch.setattr(sb3_train, "evaluate_against_baselines", _fake_evaluation(calls))
    config = _toy_training_config(
        sb3_train, tmp_path, monkeypatch, imitate="none", total_timesteps=300, eval_every=128, verbose=True
    )
    run_dir = fast_train.train(config, quiet=True)
    history = json.loads((run_dir / "eval.json").read_text())
    assert [point["timesteps"] for point in history] == calls == [128, 256, 384]
    out = capsys.readouterr().out
    assert "rounded up to whole rollouts of 128" in out
    assert re.search(r"trained 384 learner steps in [\d.]+ s \([\d,]+ learner steps/s", out)
