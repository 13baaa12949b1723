"""The fast engine's first layers over sparse features (``madiao_mao.training.fast.sparse_features``):
the non-zero entries are every row's, the sums are the dense products' up to rounding, the
optimizer steps the weight stored by column as it steps the weight, everything is laid out as
before after an update, and an update over sparse features trains as the dense one does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sb3_contrib")

import torch

from madiao_mao.training.fast import ppo, sparse_features
from madiao_mao.training.fast.sparse_features import SparseRows, weights_by_column
from tests.common.test_fast_engine import _toy_model, _update_settings


def _sparse_matrix(n_rows: int, n_columns: int, density: float, seed: int) -> torch.Tensor:
    """A float32 matrix with about ``density`` of its entries non-zero: small integers (as card
    counts are), some negative, and a row of zeros."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.randint(-3, 12, (n_rows, n_columns), generator=generator).float()
    keep = torch.rand(n_rows, n_columns, generator=generator) < density
    matrix = values * keep
    matrix[0] = 0.0
    return matrix


def _dense_of(rows: SparseRows, n_columns: int) -> torch.Tensor:
    dense = torch.zeros(rows.columns.shape[0], n_columns)
    dense.scatter_add_(1, rows.columns, rows.values)
    return dense


@settings(max_examples=40, deadline=None)
@given(
    n_rows=st.integers(1, 40),
    n_columns=st.integers(4, 60),
    density=st.floats(0.0, 0.2),
    seed=st.integers(0, 2**16),
)
def test_the_sparse_rows_hold_every_non_zero_entry_in_column_order(n_rows, n_columns, density, seed):
    matrix = _sparse_matrix(n_rows, n_columns, density, seed)
    widest = int((matrix != 0).sum(1).max())
    rows = SparseRows.of(matrix)
    if max(widest, 1) > sparse_features.SPARSE_WIDTH_SHARE * n_columns:
        assert rows is None
        return
    assert rows is not None and rows.columns.shape == (n_rows, max(widest, 1))
    assert torch.equal(_dense_of(rows, n_columns), matrix)
    for row in range(n_rows):
        count = int((matrix[row] != 0).sum())
        assert torch.equal(rows.columns[row, :count], torch.nonzero(matrix[row]).flatten())
        assert not rows.values[row, count:].any() and not rows.columns[row, count:].any()


def test_features_that_are_not_sparse_enough_or_not_a_cpu_float_matrix_keep_the_dense_product():
    sparse = _sparse_matrix(16, 100, 0.05, seed=1)
    assert SparseRows.of(sparse) is not None
    assert SparseRows.of(_sparse_matrix(16, 100, 0.5, seed=1)) is None
    assert SparseRows.of(sparse.double()) is None
    assert SparseRows.of(sparse[None]) is None
    crowded = sparse.clone()
    crowded[3, :26] = 1.0  # one row over a quarter of the columns is enough to refuse
    assert SparseRows.of(crowded) is None


def test_the_first_layers_output_and_gradients_are_the_dense_products():
    matrix = _sparse_matrix(64, 200, 0.08, seed=2)
    rows = SparseRows.of(matrix)
    generator = torch.Generator().manual_seed(3)
    layer = torch.nn.Linear(200, 24)
    weight_by_column = layer.weight.detach().t().contiguous()
    weight_by_column.grad = torch.full_like(weight_by_column, 7.0)  # stale values are overwritten
    layer.bias.grad = torch.full_like(layer.bias, 7.0)
    picked = torch.randperm(64, generator=generator)[:40]
    minibatch = rows.minibatch(picked)
    output = minibatch.first_layer_output(weight_by_column, layer.bias)
    with torch.no_grad():
        torch.testing.assert_close(output, layer(matrix[picked]), rtol=1e-5, atol=1e-5)
    output_gradient = torch.randn(40, 24, generator=generator)
    minibatch.first_layer_gradient(weight_by_column, layer.bias, output_gradient)
    expected = output_gradient.t() @ matrix[picked]
    torch.testing.assert_close(weight_by_column.grad, expected.t(), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(layer.bias.grad, output_gradient.sum(0))


def _adam_steps(by_column: bool, gradients: list[torch.Tensor]) -> tuple[torch.Tensor, dict]:
    torch.manual_seed(0)
    layer = torch.nn.Linear(30, 12)
    other = torch.nn.Parameter(torch.randn(5))
    optimizer = torch.optim.Adam([layer.weight, layer.bias, other], lr=1e-2, eps=1e-5, fused=True)
    for step, gradient in enumerate(gradients):
        if by_column and step >= 1:  # the state exists, made row by row, when the update starts
            with weights_by_column([layer], optimizer) as column_weights:
                column_weight = column_weights[id(layer.weight)]
                assert column_weight.is_contiguous() and torch.equal(column_weight.t(), layer.weight)
                assert all(column_weight is not p for p in (layer.weight, layer.bias))
                column_weight.grad.copy_(gradient.t())
                layer.bias.grad, other.grad = torch.ones(12), torch.ones(5)
                optimizer.step()
                assert torch.equal(layer.weight, column_weight.t())  # the layer reads the stepped weight
        else:
            layer.weight.grad, layer.bias.grad, other.grad = gradient.clone(), torch.ones(12), torch.ones(5)
            optimizer.step()
    assert optimizer.param_groups[0]["params"][0] is layer.weight and layer.weight.is_contiguous()
    state = optimizer.state[layer.weight]
    assert all(
        state[key].is_contiguous() and state[key].shape == (12, 30) for key in ("exp_avg", "exp_avg_sq")
    )
    return layer.weight.detach().clone(), {key: value.clone() for key, value in state.items()}


def test_the_optimizer_steps_the_weight_by_column_as_it_steps_the_weight_and_gives_it_back():
    generator = torch.Generator().manual_seed(4)
    gradients = [torch.randn(12, 30, generator=generator) for _ in range(4)]
    plain_weight, plain_state = _adam_steps(False, gradients)
    column_weight, column_state = _adam_steps(True, gradients)
    assert torch.equal(plain_weight, column_weight)
    assert plain_state.keys() == column_state.keys()
    assert all(torch.equal(plain_state[key], column_state[key]) for key in plain_state)


def test_an_error_within_gives_the_weights_and_the_optimizer_back():
    layer = torch.nn.Linear(10, 4)
    optimizer = torch.optim.Adam(layer.parameters(), lr=1e-3, fused=True)
    before = layer.weight.detach().clone()
    with pytest.raises(RuntimeError, match="stop"), weights_by_column([layer], optimizer):
        raise RuntimeError("stop")
    assert optimizer.param_groups[0]["params"][0] is layer.weight
    assert layer.weight.is_contiguous() and torch.equal(layer.weight, before)


def test_a_failure_while_laying_out_the_second_weight_gives_the_first_back(monkeypatch):
    layers = [torch.nn.Linear(10, 4), torch.nn.Linear(10, 3)]
    parameters = [p for layer in layers for p in layer.parameters()]
    optimizer = torch.optim.Adam(parameters, lr=1e-3, fused=True)
    before = [layer.weight.detach().clone() for layer in layers]
    swaps = []
    original = sparse_features._swap_in_optimizer

    def swap_then_fail_on_the_second_layer(*args):
        swaps.append(1)
        if len(swaps) == 2:
            raise RuntimeError("no memory")
        original(*args)

    monkeypatch.setattr(sparse_features, "_swap_in_optimizer", swap_then_fail_on_the_second_layer)
    with pytest.raises(RuntimeError, match="no memory"), weights_by_column(layers, optimizer):
        pass
    assert optimizer.param_groups[0]["params"] == parameters
    for layer, weight in zip(layers, before, strict=True):
        assert layer.weight.is_contiguous() and torch.equal(layer.weight, weight)


def _sparse_storage(model, seed: int) -> ppo.RolloutStorage:
    """A rollout of 32 rows whose observations are sparse (one or two small counts per row)."""
    from tests.common.test_fast_engine import _filled_storage

    storage = _filled_storage(model, seed=seed)
    obs_dim = model.observation_space.shape[0]
    generator = torch.Generator().manual_seed(seed)
    observations = torch.zeros(32, obs_dim)
    observations[torch.arange(32), torch.randint(obs_dim, (32,), generator=generator)] = 1.0
    counts = torch.randint(0, 4, (32,), generator=generator).float()  # a zero: a single entry
    observations[torch.arange(32), torch.randint(obs_dim, (32,), generator=generator)] += counts
    storage.observations[:] = observations.reshape(4, 8, -1)
    return storage


def _policy(model, shared: bool = True, learning_rate: float = 0.0):
    torch.manual_seed(1)
    return type(model.policy)(
        model.observation_space,
        model.action_space,
        lambda _: learning_rate,
        net_arch=[16],
        share_features_extractor=shared,
    )


@pytest.mark.parametrize("shared", [True, False])
def test_an_update_over_sparse_features_gives_autograds_gradients(shared, monkeypatch):
    model = _toy_model()
    storage = _sparse_storage(model, seed=5)
    settings_ = _update_settings(
        n_epochs=1, batch_size=32, ent_coef=0.05, max_grad_norm=1e9, learning_rate=0.0
    )
    features = ppo.fixed_features(_policy(model, shared), storage.observations.reshape(32, -1))
    sparse = ppo.sparse_inputs(features)
    assert sparse is not None and sparse[0] is sparse[1]  # equal inputs: their entries found once
    sums: list[int] = []
    original = sparse_features.SparseMinibatch.first_layer_gradient
    monkeypatch.setattr(
        sparse_features.SparseMinibatch,
        "first_layer_gradient",
        lambda self, *args: (sums.append(1), original(self, *args)),
    )
    policy = _policy(model, shared)
    ppo.ppo_update(policy, storage, settings_, torch.Generator().manual_seed(3))
    by_sparse = [parameter.grad.clone() for parameter in policy.parameters()]
    assert len(sums) == 2  # the actor's and the critic's first layers
    monkeypatch.undo()
    monkeypatch.setattr(ppo.HandBackward, "of", classmethod(lambda cls, policy, features: None))
    policy = _policy(model, shared)
    ppo.ppo_update(policy, storage, settings_, torch.Generator().manual_seed(3))
    by_autograd = [parameter.grad.clone() for parameter in policy.parameters()]
    for sparse_gradient, autograd_gradient in zip(by_sparse, by_autograd, strict=True):
        assert autograd_gradient.abs().sum() > 0
        torch.testing.assert_close(sparse_gradient, autograd_gradient, rtol=1e-4, atol=1e-6)


def test_an_update_over_sparse_features_trains_as_the_dense_one_and_leaves_the_layout_as_it_was(monkeypatch):
    model = _toy_model()
    storage = _sparse_storage(model, seed=6)
    settings_ = _update_settings(n_epochs=3, batch_size=8, ent_coef=0.01, learning_rate=1e-3)
    trained = {}
    for share in (sparse_features.SPARSE_WIDTH_SHARE, 0.0):  # 0: no features sparse enough
        monkeypatch.setattr(sparse_features, "SPARSE_WIDTH_SHARE", share)
        policy = _policy(model, learning_rate=1e-3)
        parameters = list(policy.parameters())
        for _ in range(2):
            ppo.ppo_update(policy, storage, settings_, torch.Generator().manual_seed(3))
        optimizer = policy.optimizer
        assert [p for group in optimizer.param_groups for p in group["params"]] == parameters
        assert list(policy.parameters()) == parameters and all(p.is_contiguous() for p in parameters)
        assert set(map(id, optimizer.state)) == set(map(id, parameters))
        assert all(
            value.is_contiguous() and value.shape == parameter.shape
            for parameter in parameters
            for value in optimizer.state[parameter].values()
            if value.dim() > 0
        )
        trained[share] = {key: value.clone() for key, value in policy.state_dict().items()}
    sparse_weights, dense_weights = trained.values()
    moved = _policy(model).state_dict()
    for key, value in sparse_weights.items():
        torch.testing.assert_close(value, dense_weights[key], rtol=1e-4, atol=1e-5)
    assert any(not torch.equal(sparse_weights[key], moved[key]) for key in moved)


def test_an_update_over_sparse_features_is_reproducible():
    model = _toy_model()
    storage = _sparse_storage(model, seed=7)
    settings_ = _update_settings(n_epochs=2, batch_size=8, ent_coef=0.01, learning_rate=1e-3)
    weights = []
    for _ in range(2):
        policy = _policy(model, learning_rate=1e-3)
        ppo.ppo_update(policy, storage, settings_, torch.Generator().manual_seed(3))
        weights.append(policy.state_dict())
    assert all(torch.equal(weights[0][key], weights[1][key]) for key in weights[0])


def test_madiaos_default_features_take_the_sparse_path():
    from madiao_mao.benchmarks.learner import QUICK_RUN, default_model

    model, config = default_model(settings=QUICK_RUN)
    model.learn(config.n_envs * config.n_steps)
    observations = torch.as_tensor(
        model.rollout_buffer.observations.reshape(-1, *model.observation_space.shape), dtype=torch.float32
    )
    features = ppo.fixed_features(model.policy, observations)
    hand_backward = ppo.HandBackward.of(model.policy, features)
    sparse = ppo.sparse_inputs(features)
    assert hand_backward is not None and sparse is not None
    dense = features if isinstance(features, torch.Tensor) else features[0]
    assert sparse[0].columns.shape[1] < 0.2 * dense.shape[1]
    np.testing.assert_array_equal(_dense_of(sparse[0], dense.shape[1]).numpy(), dense.numpy())


def test_the_rounded_activation_is_torchs_up_to_rounding_and_torchs_where_numpy_cannot_run():
    from madiao_mao.agents.torch_mlp import activate_, activate_rounded_

    generator = torch.Generator().manual_seed(8)
    values = torch.randn(64, 48, generator=generator) * 3
    for activation in (torch.nn.Tanh, torch.nn.ReLU, None):
        expected = activate_(values.clone(), activation)
        rounded = activate_rounded_(values.clone(), activation)
        torch.testing.assert_close(rounded, expected, rtol=2e-7, atol=2e-7)
    strided = values.clone().t()  # not contiguous: torch's tanh, bit for bit
    assert torch.equal(activate_rounded_(strided.clone(), torch.nn.Tanh), torch.tanh(strided))
    assert not torch.equal(activate_rounded_(values.clone(), torch.nn.Tanh), values)
