"""The fast engine's first layers over sparse features: products over the non-zero entries only.

Madiao's card features are about 8% non-zero (90 of 1,096 per row on average, at most about 126),
and the first layers of the actor and the critic (1,096 inputs each) are most of the update's
multiplies. When a rollout's features are this sparse, the update keeps each row's non-zero
entries (their columns and values, padded to the widest row: ``SparseRows``) and computes

- the first layers' outputs as sums of the weight columns those entries name, scaled by their
  values (``torch.nn.functional.embedding_bag`` in "sum" mode with per-sample weights, FBGEMM's
  kernel on the CPU), and
- the first layers' weight gradients as the same sums turned around: for each entry, its value
  times its row's output gradient added to its column (``_add_weight_gradient``, a Numba loop:
  no torch operation adds rows into columns given per row without sorting them first, and a
  sort per minibatch cost more than the dense product it replaces).

Both want a weight stored column by column (the 1,096 inputs' rows of 256 outputs contiguous);
an ``nn.Linear`` stores it row by row. Within the update each first layer's weight is also a
parameter stored column by column, which the optimizer steps in its place (``weights_by_column``);
after it, everything is laid out as always. The sums are the dense products' up to float rounding
(the order of the additions differs), checked in ``tests/common/test_fast_sparse_features.py``.
The measured gain is in ``benchmarks/README.md``, "Sparse first layers in the fast engine's update".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from cardgame_core.jit import njit
from madiao_mao.agents.torch_mlp import SPARSE_SHARE

#: The sparse path is taken when the widest row has at most this share of its entries non-zero
#: (rows are padded to the widest here): the break-even share of the inference's sums.
SPARSE_WIDTH_SHARE = SPARSE_SHARE


@njit
def _widest_row(features: np.ndarray) -> int:
    """The most non-zero entries in a row of ``features`` (at least 1: a row of zeros still gets
    one padding entry, so every row has a slot)."""
    widest = 1
    for row in range(features.shape[0]):
        count = 0
        for column in range(features.shape[1]):
            if features[row, column] != 0:
                count += 1
        widest = max(widest, count)
    return widest


@njit
def _fill_rows(features: np.ndarray, columns: np.ndarray, values: np.ndarray) -> None:
    """Each row's non-zero entries of ``features``, in column order, into the zeroed ``columns``
    and ``values`` (the slots after them keep column 0 and value 0: padding that adds nothing)."""
    for row in range(features.shape[0]):
        slot = 0
        for column in range(features.shape[1]):
            value = features[row, column]
            if value != 0:
                columns[row, slot] = column
                values[row, slot] = value
                slot += 1


@njit
def _add_weight_gradient(
    columns: np.ndarray, values: np.ndarray, output_gradient: np.ndarray, gradient_by_column: np.ndarray
) -> None:
    """The gradient of a first layer's weight, stored column by column (``gradient_by_column[c]``:
    the gradients of input ``c``'s weights): sum over the minibatch's rows of each non-zero
    entry's value times the row's ``output_gradient``, into its column; zero elsewhere."""
    gradient_by_column[:] = 0
    width = output_gradient.shape[1]
    for row in range(columns.shape[0]):
        for slot in range(columns.shape[1]):
            value = values[row, slot]
            if value != 0:
                column = columns[row, slot]
                for output in range(width):
                    gradient_by_column[column, output] += value * output_gradient[row, output]


@dataclass(frozen=True)
class SparseMinibatch:
    """A minibatch's rows of ``SparseRows``: flat for the embedding bag, by row for the gradient."""

    columns: torch.Tensor
    values: torch.Tensor
    offsets: torch.Tensor

    def first_layer_output(self, weight_by_column: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """A first layer's output for these rows, from its weight stored column by column
        (``weights_by_column``) and its bias."""
        output = functional.embedding_bag(
            self.columns.reshape(-1),
            weight_by_column,
            self.offsets,
            mode="sum",
            per_sample_weights=self.values.reshape(-1),
        )
        return output.add_(bias)

    def first_layer_gradient(
        self, weight_by_column: torch.Tensor, bias: torch.Tensor, output_gradient: torch.Tensor
    ) -> None:
        """A first layer's weight and bias gradients (into their ``.grad``) from the gradient of
        its output for these rows."""
        _add_weight_gradient(
            self.columns.numpy(),
            self.values.numpy(),
            output_gradient.contiguous().numpy(),
            weight_by_column.grad.numpy(),
        )
        torch.sum(output_gradient, 0, out=bias.grad)


@dataclass(frozen=True)
class SparseRows:
    """The non-zero entries of every row of a rollout's features: ``columns[r, k]`` and
    ``values[r, k]``, row ``r``'s k-th non-zero entry in column order, then padding (column 0,
    value 0) up to the widest row."""

    columns: torch.Tensor
    values: torch.Tensor

    @classmethod
    def of(cls, features: torch.Tensor) -> SparseRows | None:
        """``features``' non-zero entries, or None when they are not sparse enough to pay
        (``SPARSE_WIDTH_SHARE``) or not a CPU float32 matrix (on a GPU the dense product stays)."""
        if features.device.type != "cpu" or features.dtype != torch.float32 or features.dim() != 2:
            return None
        dense = np.ascontiguousarray(features.numpy())
        width = _widest_row(dense)
        if width > SPARSE_WIDTH_SHARE * dense.shape[1]:
            return None
        columns = np.zeros((dense.shape[0], width), dtype=np.int64)
        values = np.zeros((dense.shape[0], width), dtype=np.float32)
        _fill_rows(dense, columns, values)
        return cls(torch.from_numpy(columns), torch.from_numpy(values))

    def minibatch(self, rows: torch.Tensor) -> SparseMinibatch:
        """The entries of ``rows`` (a minibatch's row numbers)."""
        width = self.columns.shape[1]
        offsets = torch.arange(0, rows.numel() * width, width, dtype=torch.int64)
        return SparseMinibatch(self.columns[rows], self.values[rows], offsets)


@contextlib.contextmanager
def weights_by_column(
    layers: list[nn.Linear], optimizer: torch.optim.Optimizer
) -> Iterator[dict[int, nn.Parameter]]:
    """Within: each of ``layers``' weights also as a parameter stored column by column (inputs
    by outputs, ``weight.t()`` contiguous), which ``optimizer`` steps in the weight's place, with
    the weight's state (Adam's moments) transposed; the layer's weight is a view of it, so the
    layer's forward reads the stepped values. Yields {id(weight): its parameter by column}.
    After: each weight is stored row by row again, holding the stepped values and the last
    gradient, and the optimizer steps it and its state, transposed back: what is saved, copied
    to the env workers, played by the league and resumed by either engine is laid out as always.

    Why not just store the weight column by column: torch's fused Adam copies a parameter that is
    not contiguous, its gradient and its moments to contiguous memory and back at every step,
    which cost more than the sparse products save; and one of them left in the other layout
    would be updated with another entry's gradient."""
    by_column: dict[int, nn.Parameter] = {}
    try:  # the setup too: a layer swapped before a failure is given back as well
        for layer in layers:
            weight = layer.weight
            column_weight = nn.Parameter(weight.detach().t().contiguous())
            column_weight.grad = torch.zeros_like(column_weight)
            by_column[id(weight)] = column_weight
            _swap_in_optimizer(optimizer, weight, column_weight, torch.Tensor.t)
            weight.data = column_weight.data.t()
        yield by_column
    finally:
        for layer in layers:
            weight = layer.weight
            column_weight = by_column.get(id(weight))
            if column_weight is not None:
                weight.data = column_weight.detach().t().contiguous()
                weight.grad = column_weight.grad.t().contiguous()
                _swap_in_optimizer(optimizer, column_weight, weight, torch.Tensor.t)


def _swap_in_optimizer(
    optimizer: torch.optim.Optimizer, old: nn.Parameter, new: nn.Parameter, arrange
) -> None:
    """``new`` in ``old``'s place in ``optimizer``'s groups and state, each state tensor of
    ``old``'s shape ``arrange``d (and made contiguous) to ``new``'s."""
    for group in optimizer.param_groups:
        group["params"] = [new if parameter is old else parameter for parameter in group["params"]]
    if old in optimizer.state:
        state = optimizer.state.pop(old)
        optimizer.state[new] = {
            key: arrange(value).contiguous()
            if isinstance(value, torch.Tensor) and value.shape == old.shape
            else value
            for key, value in state.items()
        }
