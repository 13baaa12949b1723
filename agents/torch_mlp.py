"""The plain MLPs of an SB3 actor-critic (``MlpExtractor``'s nets and the linear heads) as lists
of (linear layer, activation) pairs, and their forward pass without ``nn.Module`` calls.

Two hot loops run these layers thousands of times on small batches: the fast engine's update
(``madiao_mao.training.fast.ppo.HandBackward``) and the league's policy opponents
(``madiao_mao.agents.learned.LearnedPolicyAgent.act_jointly``). A module call costs several
microseconds of Python around each product; here each layer is one ``torch.addmm`` (the kernel
``nn.Linear`` runs for a batch of rows, so the outputs are its outputs bit for bit) and one
in-place activation. This module imports torch: import it where torch is already needed.

A first layer can also be computed over the non-zero entries of its inputs only
(``SparseFirstLayer``): Madiao's card features are about 8% non-zero, and the first layer is most
of the network's multiplies. That is the dense product up to float rounding, not bit for bit,
so it serves the league's snapshots and the learner's own rollout in training, never a player
whose decisions must be SB3's ``predict``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from stable_baselines3.common.torch_layers import MlpExtractor
from torch import nn
from torch.nn import functional

from cardgame_core.jit import njit

#: The activations the forward pass (and the fast engine's written-out backward) knows.
KNOWN_ACTIVATIONS = (nn.Tanh, nn.ReLU)

Layers = list[tuple[nn.Linear, type | None]]

#: A first layer is computed over its inputs' non-zero entries only when at most this share of
#: them is non-zero: a term of the sparse sums costs about as much as four of the dense product's
#: multiply-adds on this project's 2-core machines (benchmarks/README.md, "Sparse first layers in
#: the fast engine's update").
SPARSE_SHARE = 0.25


def mlp_layers(sequence: nn.Module | None) -> Layers | None:
    """The (linear layer, activation class or None) pairs of an ``nn.Sequential`` of linear layers
    each followed by at most one known activation (what SB3's ``MlpExtractor`` builds); None when
    it holds anything else, or a layer has no bias."""
    if not isinstance(sequence, nn.Sequential):
        return None
    layers: Layers = []
    for module in sequence:
        if isinstance(module, nn.Linear) and module.bias is not None:
            layers.append((module, None))
        elif type(module) in KNOWN_ACTIVATIONS and layers and layers[-1][1] is None:
            layers[-1] = (layers[-1][0], type(module))
        else:
            return None
    return layers


def actor_layers(policy) -> Layers | None:
    """The actor of an SB3 actor-critic ``policy`` from its features to its action logits (the
    MLP extractor's ``policy_net``, then ``action_net``), or None when it is not plain layers."""
    return _head_on_net(policy, "policy_net", "action_net")


def critic_layers(policy) -> Layers | None:
    """The critic of ``policy`` from its features to its values (``value_net`` of the MLP
    extractor, then the policy's ``value_net`` head), or None when it is not plain layers."""
    return _head_on_net(policy, "value_net", "value_net")


def _head_on_net(policy, net: str, head: str) -> Layers | None:
    extractor = getattr(policy, "mlp_extractor", None)
    # SB3's extractor runs its nets as they are; a subclass may run them in a way of its own.
    plain = isinstance(extractor, MlpExtractor) and all(
        getattr(type(extractor), name) is getattr(MlpExtractor, name)
        for name in ("forward", "forward_actor", "forward_critic")
    )
    layers = mlp_layers(getattr(extractor, net, None)) if plain else None
    head_layer = getattr(policy, head, None)
    if layers is None or not isinstance(head_layer, nn.Linear) or head_layer.bias is None:
        return None
    return [*layers, (head_layer, None)]


@torch.no_grad()
def mlp_outputs(
    layers: Layers,
    inputs: torch.Tensor,
    activate: Callable[[torch.Tensor, type | None], torch.Tensor] | None = None,
) -> list[torch.Tensor]:
    """The input and every layer's output (what a written-out backward reads), without a graph;
    ``activate``: how each layer's activation is applied in place (default ``activate_``, torch's
    kernels: the modules' outputs bit for bit)."""
    activate = activate or activate_
    outputs = [inputs]
    for layer, activation in layers:
        outputs.append(activate(torch.addmm(layer.bias, outputs[-1], layer.weight.t()), activation))
    return outputs


def activate_(output: torch.Tensor, activation: type | None) -> torch.Tensor:
    """``output`` through ``activation`` (one of ``KNOWN_ACTIVATIONS`` or None), in place."""
    if activation is nn.Tanh:
        output.tanh_()
    elif activation is nn.ReLU:
        output.relu_()
    return output


def activate_rounded_(output: torch.Tensor, activation: type | None) -> torch.Tensor:
    """``activate_``, with numpy's tanh for a contiguous CPU tensor: about six times faster than
    torch's on this project's machines (benchmarks/README.md, "Sparse first layers in the fast
    engine's update"), equal to it up to float rounding, not bit for bit."""
    if activation is nn.Tanh and output.device.type == "cpu" and output.is_contiguous():
        values = output.numpy()
        np.tanh(values, out=values)
        return output
    return activate_(output, activation)


@njit
def _nonzero_entries(features: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The non-zero entries of a float32 matrix by row, in column order: their columns, their
    values, and where each row's entries start (what ``embedding_bag`` calls offsets)."""
    rows, width = features.shape
    offsets = np.empty(rows, dtype=np.int64)
    total = 0
    for row in range(rows):
        offsets[row] = total
        for column in range(width):
            if features[row, column] != 0:
                total += 1
    columns = np.empty(total, dtype=np.int64)
    values = np.empty(total, dtype=np.float32)
    entry = 0
    for row in range(rows):
        for column in range(width):
            value = features[row, column]
            if value != 0:
                columns[entry] = column
                values[entry] = value
                entry += 1
    return columns, values, offsets


@dataclass(frozen=True)
class NonzeroEntries:
    """The non-zero entries of the rows of a first layer's inputs (``embedding_bag``'s indices,
    per-sample weights and offsets: each row's entries are summed on their own, so a row's output
    does not depend on the other rows of its batch)."""

    columns: torch.Tensor
    values: torch.Tensor
    offsets: torch.Tensor

    @classmethod
    def of(cls, inputs: torch.Tensor) -> NonzeroEntries | None:
        """The non-zero entries of ``inputs``, or None when they would not pay: more than
        ``SPARSE_SHARE`` of them non-zero, no rows, or not a CPU float32 matrix."""
        if inputs.device.type != "cpu" or inputs.dtype != torch.float32 or inputs.dim() != 2:
            return None
        if inputs.shape[0] == 0 or inputs.shape[1] == 0:
            return None
        columns, values, offsets = _nonzero_entries(np.ascontiguousarray(inputs.numpy()))
        if columns.size > SPARSE_SHARE * inputs.numel():
            return None
        return cls(torch.from_numpy(columns), torch.from_numpy(values), torch.from_numpy(offsets))


class SparseFirstLayer:
    """A linear layer computed from ``NonzeroEntries`` of its inputs: the sums of the weight's
    columns that the entries name, scaled by their values, plus the bias (``embedding_bag`` in
    "sum" mode, FBGEMM's kernel on the CPU). It reads a copy of the weight stored column by
    column, made at the first call and again when the weight's storage changes: the layer's
    weights must not be changed in place while it serves (a league snapshot's never are; a
    training policy's are, at every optimizer step, which no version counter records), or the
    copy is to be renewed with ``refresh``."""

    def __init__(self, layer: nn.Linear) -> None:
        self.layer = layer
        self._by_column: torch.Tensor | None = None
        #: The weight the copy was made from, held so that no later weight can take its address.
        self._copied_from: torch.Tensor | None = None

    def refresh(self) -> None:
        """Copy the weight again (the layer's weights have changed)."""
        weight = self.layer.weight.detach()
        self._by_column = weight.t().contiguous()
        self._copied_from = weight

    def __call__(self, entries: NonzeroEntries) -> torch.Tensor:
        """The layer's outputs (float32, one row per row of the inputs)."""
        if self._copied_from is None or self._copied_from.data_ptr() != self.layer.weight.data_ptr():
            self.refresh()
        output = functional.embedding_bag(
            entries.columns,
            self._by_column,
            entries.offsets,
            mode="sum",
            per_sample_weights=entries.values,
        )
        return output.add_(self.layer.bias.detach())


@torch.no_grad()
def sparse_mlp_output(layers: Layers, first_layer: SparseFirstLayer, entries: NonzeroEntries) -> torch.Tensor:
    """The last output of ``layers`` (whose first is ``first_layer``'s) from the non-zero
    ``entries`` of their inputs; every activation through ``activate_rounded_`` (these outputs
    round differently from the modules' anyway)."""
    first = activate_rounded_(first_layer(entries), layers[0][1])
    return mlp_outputs(layers[1:], first, activate_rounded_)[-1]
