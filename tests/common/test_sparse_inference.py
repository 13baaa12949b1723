"""First layers over the non-zero inputs outside the update (``madiao_mao.agents.torch_mlp``'s
``NonzeroEntries`` and ``SparseFirstLayer``): the entries are every row's, the outputs are the
dense products' up to rounding and each row's the same in any batch, the weight's copy follows a
new weight, and they serve the league's snapshots (``sparse_inputs``) and the fast engine's
rollout (``RolloutForward``), never an agent that must decide as SB3's ``predict``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sb3_contrib")

import torch
from torch import nn

from madiao_mao.agents import torch_mlp
from madiao_mao.agents.learned import LearnedPolicyAgent
from madiao_mao.agents.torch_mlp import NonzeroEntries, SparseFirstLayer, actor_layers, mlp_outputs
from madiao_mao.training.fast import ppo
from tests.common.test_fast_engine import _toy_model
from tests.common.test_fast_sparse_features import _sparse_matrix
from tests.common.test_training import N_ACTIONS


def _dense_of(entries: NonzeroEntries, n_rows: int, n_columns: int) -> torch.Tensor:
    dense = torch.zeros(n_rows, n_columns)
    ends = torch.cat((entries.offsets[1:], torch.tensor([entries.columns.numel()])))
    for row in range(n_rows):
        start, end = int(entries.offsets[row]), int(ends[row])
        dense[row, entries.columns[start:end]] = entries.values[start:end]
    return dense


@settings(max_examples=40, deadline=None)
@given(
    n_rows=st.integers(1, 40),
    n_columns=st.integers(4, 60),
    density=st.floats(0.0, 0.4),
    seed=st.integers(0, 2**16),
)
def test_the_entries_are_every_rows_non_zero_ones_in_column_order_unless_too_many(
    n_rows, n_columns, density, seed
):
    matrix = _sparse_matrix(n_rows, n_columns, density, seed)
    entries = NonzeroEntries.of(matrix)
    if int((matrix != 0).sum()) > torch_mlp.SPARSE_SHARE * matrix.numel():
        assert entries is None
        return
    assert entries is not None and entries.offsets.shape == (n_rows,)
    assert torch.equal(_dense_of(entries, n_rows, n_columns), matrix)
    for row in range(n_rows):
        start = int(entries.offsets[row])
        count = int((matrix[row] != 0).sum())
        assert torch.equal(entries.columns[start : start + count], torch.nonzero(matrix[row]).flatten())


def test_inputs_that_are_not_a_cpu_float_matrix_with_rows_keep_the_dense_product():
    sparse = _sparse_matrix(8, 40, 0.05, seed=1)
    assert NonzeroEntries.of(sparse) is not None
    assert NonzeroEntries.of(sparse.double()) is None
    assert NonzeroEntries.of(sparse[None]) is None
    assert NonzeroEntries.of(sparse[:0]) is None
    # Columns of a wider matrix (not contiguous) are read as they are.
    wide = torch.zeros(8, 80)
    wide[:, ::2] = sparse
    entries = NonzeroEntries.of(wide[:, ::2])
    assert entries is not None and torch.equal(_dense_of(entries, 8, 40), sparse)


def _layer(n_inputs: int = 40, n_outputs: int = 16, seed: int = 0) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(n_inputs, n_outputs)


def test_the_layers_outputs_are_the_dense_products_and_each_rows_the_same_in_any_batch():
    layer = _layer()
    inputs = _sparse_matrix(30, 40, 0.1, seed=2)
    sparse = SparseFirstLayer(layer)
    with torch.no_grad():
        outputs = sparse(NonzeroEntries.of(inputs))
        torch.testing.assert_close(outputs, layer(inputs))
        for rows in (slice(0, 1), slice(3, 4), slice(5, 17), slice(29, 30)):
            assert torch.equal(sparse(NonzeroEntries.of(inputs[rows])), outputs[rows])


def test_the_weights_copy_follows_a_new_weight_and_is_renewed_by_refresh():
    layer = _layer()
    inputs = _sparse_matrix(12, 40, 0.1, seed=3)
    sparse = SparseFirstLayer(layer)
    with torch.no_grad():
        sparse(NonzeroEntries.of(inputs))
        # A weight stored anew (as the sparse update leaves it): the copy follows unasked.
        layer.weight.data = layer.weight.detach() * 2.0
        torch.testing.assert_close(sparse(NonzeroEntries.of(inputs)), layer(inputs))
        # A weight changed in place (as an optimizer step): renewed by refresh.
        layer.weight.mul_(-0.5)
        sparse.refresh()
        torch.testing.assert_close(sparse(NonzeroEntries.of(inputs)), layer(inputs))


def _sparse_toy_agent(sparse_inputs: bool, seed: int = 1) -> LearnedPolicyAgent:
    model = _toy_model(seed=0)
    with torch.no_grad():  # logits far apart, so that rounding does not change a greedy choice
        model.policy.action_net.weight.mul_(100.0)
    return LearnedPolicyAgent(model=model, deterministic=False, seed=seed, sparse_inputs=sparse_inputs)


def _sparse_observations(n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    observations = _sparse_matrix(n_rows, 12, 0.15, seed).numpy()
    masks = rng.random((n_rows, N_ACTIONS)) < 0.5
    masks[np.arange(n_rows), rng.integers(N_ACTIONS, size=n_rows)] = True
    return observations, masks


def test_a_sparse_agents_logits_are_the_dense_ones_up_to_rounding_and_it_is_used_only_when_asked():
    dense, sparse = _sparse_toy_agent(False), _sparse_toy_agent(True)
    observations, _ = _sparse_observations(40, seed=4)
    dense_logits = dense._logits(observations)
    sparse_logits = sparse._logits(observations)
    np.testing.assert_allclose(sparse_logits, dense_logits, rtol=1e-5, atol=1e-4)
    layers = actor_layers(dense.model.policy)
    with torch.no_grad():  # the default agent: the modules' products, bit for bit
        expected = mlp_outputs(layers, torch.as_tensor(observations))[-1].numpy().astype(np.float64)
    np.testing.assert_array_equal(dense_logits, expected)
    assert dense._actor_layers[2] is None and isinstance(sparse._actor_layers[2], SparseFirstLayer)


def test_sparse_agents_asked_jointly_choose_what_each_would_choose_alone():
    sizes = (7, 1, 30)
    batches = [_sparse_observations(n, seed=10 + n) for n in sizes]
    observations = [batch[0] for batch in batches]
    masks = [batch[1] for batch in batches]
    sparse = (True, False, True)
    alone = [_sparse_toy_agent(s, seed=seed) for seed, s in enumerate(sparse)]
    together = [_sparse_toy_agent(s, seed=seed) for seed, s in enumerate(sparse)]
    for _ in range(3):
        expected = [agent.act_batch(o, m) for agent, o, m in zip(alone, observations, masks, strict=True)]
        jointly = LearnedPolicyAgent.act_jointly(together, observations, masks)
        for got, want in zip(jointly, expected, strict=True):
            np.testing.assert_array_equal(got, want)


def test_the_leagues_snapshots_take_sparse_inputs_and_the_live_policy_does_not(tmp_path):
    from madiao_mao.training.opponents import snapshot_agent
    from madiao_mao.training.sb3.train import live_policy_agent

    model = _toy_model()
    path = tmp_path / "snapshot_000000064.zip"
    model.save(path)
    assert snapshot_agent(path, seed=0).sparse_inputs

    class Run:
        call_seed = 0

    assert not live_policy_agent(model, None, Run()).sparse_inputs


def _sparse_toy_forward() -> tuple[ppo.RolloutForward, torch.Tensor]:
    model = _toy_model()
    forward = ppo.RolloutForward(model.policy)
    return forward, _sparse_matrix(24, 12, 0.15, seed=6)


def test_the_rollouts_forward_is_logits_and_values_up_to_rounding_and_follows_an_update():
    forward, observations = _sparse_toy_forward()
    policy = forward.policy
    with torch.inference_mode():
        forward.start_rollout()
        logits, values = forward(observations)
        assert forward.sparse
        want_logits, want_values = ppo.logits_and_values(policy, observations)
        torch.testing.assert_close(logits, want_logits)
        torch.testing.assert_close(values, want_values)
    # An optimizer step changes the weights in place (no version counter records it).
    loss = sum(parameter.sum() for parameter in policy.parameters())
    loss.backward()
    policy.optimizer.step()
    with torch.inference_mode():
        forward.start_rollout()
        logits, values = forward(observations)
        want_logits, want_values = ppo.logits_and_values(policy, observations)
        torch.testing.assert_close(logits, want_logits)
        torch.testing.assert_close(values, want_values)


def test_the_rollouts_forward_over_dense_features_is_logits_and_values_and_stops_scanning_them(monkeypatch):
    forward, _ = _sparse_toy_forward()
    dense = torch.rand(24, 12) + 0.5
    scans = []
    original = NonzeroEntries.of.__func__
    monkeypatch.setattr(NonzeroEntries, "of", classmethod(lambda cls, x: scans.append(1) or original(cls, x)))
    with torch.inference_mode():
        forward.start_rollout()
        for _ in range(3):
            logits, values = forward(dense)
        want_logits, want_values = ppo.logits_and_values(forward.policy, dense)
    assert torch.equal(logits, want_logits) and torch.equal(values, want_values)
    assert not forward.sparse and len(scans) == 1


def test_the_rollouts_forward_reads_the_critics_own_features_when_they_differ():
    from sb3_contrib import MaskablePPO

    from madiao_mao.agents.base import RandomAgent
    from madiao_mao.training.sb3.adapter import LearnerVecEnv
    from tests.common.test_training import ToyVectorEnv

    venv = LearnerVecEnv(ToyVectorEnv(8, seed=0), RandomAgent(seed=0), seed=0)
    model = MaskablePPO(
        "MlpPolicy", venv, n_steps=8, policy_kwargs={"net_arch": [16], "share_features_extractor": False}
    )
    policy = model.policy
    policy.vf_features_extractor.forward = lambda observations: observations.flatten(1) * 3.0
    forward = ppo.RolloutForward(policy)
    observations = _sparse_matrix(24, 12, 0.15, seed=7)
    with torch.inference_mode():
        forward.start_rollout()
        logits, values = forward(observations)
        want_logits, want_values = ppo.logits_and_values(policy, observations)
    assert forward.sparse
    torch.testing.assert_close(logits, want_logits)
    torch.testing.assert_close(values, want_values)


def test_a_sparse_agent_given_dense_inputs_plays_them_densely_and_stops_scanning_them(monkeypatch):
    sparse, dense = _sparse_toy_agent(True), _sparse_toy_agent(False)
    scans = []
    original = NonzeroEntries.of.__func__
    monkeypatch.setattr(NonzeroEntries, "of", classmethod(lambda cls, x: scans.append(1) or original(cls, x)))
    sparse._logits(np.zeros((0, 12), dtype=np.float32))  # no rows: nothing learned from them
    assert isinstance(sparse._actor_layers[2], SparseFirstLayer) and not scans
    observations = np.random.default_rng(8).random((20, 12)).astype(np.float32) + 0.5
    for _ in range(3):
        np.testing.assert_array_equal(sparse._logits(observations), dense._logits(observations))
    assert len(scans) == 1 and sparse._actor_layers[2] is None


def test_madiaos_default_features_take_the_sparse_path_in_the_rollout_and_in_a_snapshot():
    from madiao_mao.benchmarks.learner import QUICK_RUN, default_model

    model, config = default_model(settings=QUICK_RUN)
    model.learn(config.n_envs * config.n_steps)
    observations = model.rollout_buffer.observations.reshape(-1, *model.observation_space.shape)
    observations = torch.as_tensor(observations, dtype=torch.float32)
    forward = ppo.RolloutForward(model.policy)
    with torch.inference_mode():
        forward.start_rollout()
        logits, values = forward(observations)
        want_logits, want_values = ppo.logits_and_values(model.policy, observations)
    assert forward.sparse
    torch.testing.assert_close(logits, want_logits)
    torch.testing.assert_close(values, want_values)
    snapshot = LearnedPolicyAgent(model=model, deterministic=False, seed=0, sparse_inputs=True)
    snapshot._logits(observations.numpy())
    assert isinstance(snapshot._actor_layers[2], SparseFirstLayer)
