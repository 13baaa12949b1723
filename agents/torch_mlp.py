"""The plain MLPs of an SB3 actor-critic (``MlpExtractor``'s nets and the linear heads) as lists
of (linear layer, activation) pairs, and their forward pass without ``nn.Module`` calls.

Two hot loops run these layers thousands of times on small batches: the fast engine's update
(``madiao_mao.training.fast.ppo.HandBackward``) and the league's policy opponents
(``madiao_mao.agents.learned.LearnedPolicyAgent.act_jointly``). A module call costs several
microseconds of Python around each product; here each layer is one ``torch.addmm`` (the kernel
``nn.Linear`` runs for a batch of rows, so the outputs are its outputs bit for bit) and one
in-place activation. This module imports torch: import it where torch is already needed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from stable_baselines3.common.torch_layers import MlpExtractor
from torch import nn

#: The activations the forward pass (and the fast engine's written-out backward) knows.
KNOWN_ACTIVATIONS = (nn.Tanh, nn.ReLU)

Layers = list[tuple[nn.Linear, type | None]]


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
