"""Multi-layer perceptrons, single and fused-ensemble, optionally with BatchRenorm."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from lit_rl.nets.batch_renorm import BatchRenorm

ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "elu": nn.ELU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
}


def activation_class(name: str | type[nn.Module]) -> type[nn.Module]:
    """Resolve an activation given by name (as configs do) or by class."""
    if isinstance(name, type):
        return name
    if name not in ACTIVATIONS:
        raise ValueError(f"activation_fn={name!r} is not known; allowed: {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]


class EnsembleLinear(nn.Module):
    """``n_members`` independent linear layers applied as one batched matmul.

    Input ``(n_members, batch, in)`` or ``(batch, in)`` (broadcast to every
    member); output ``(n_members, batch, out)``. Each member is initialised as
    ``nn.Linear`` would be.
    """

    def __init__(self, n_members: int, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_members, in_features, out_features))
        self.bias = nn.Parameter(torch.empty(n_members, 1, out_features))
        bound = 1.0 / math.sqrt(in_features)
        # nn.Linear's default init (kaiming_uniform with a=sqrt(5)) is U(-1/sqrt(in), 1/sqrt(in)).
        nn.init.uniform_(self.weight, -bound, bound)
        nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 2:
            return torch.matmul(x, self.weight) + self.bias
        return torch.baddbmm(self.bias, x, self.weight)

    def extra_repr(self) -> str:
        n, i, o = self.weight.shape
        return f"n_members={n}, in_features={i}, out_features={o}"


def build_mlp(
    input_dim: int,
    hidden: Sequence[int],
    output_dim: int | None,
    activation_fn: type[nn.Module] = nn.ReLU,
    batch_norm: dict[str, Any] | None = None,
    ensemble_size: int | None = None,
) -> nn.Sequential:
    """An MLP ``[BN] Linear act [BN] Linear act ... [BN] Linear(out)``.

    With ``batch_norm`` (BatchRenorm keyword arguments) a BatchRenorm layer
    precedes every linear layer, as in CrossQ; with ``output_dim=None`` the
    network ends with the last hidden activation (followed by a BatchRenorm
    when enabled), for heads added by the caller. ``ensemble_size`` builds
    that many independent networks fused into batched matmuls
    (:func:`lit_rl.nets.network.build_network` adds the ``policy_kwargs.net`` options).
    """
    layers: list[nn.Module] = []
    dims = [input_dim, *hidden]

    def linear(i: int, o: int) -> nn.Module:
        return nn.Linear(i, o) if ensemble_size is None else EnsembleLinear(ensemble_size, i, o)

    def norm(n: int) -> list[nn.Module]:
        return [] if batch_norm is None else [BatchRenorm(n, ensemble_size=ensemble_size, **batch_norm)]

    for i, o in zip(dims[:-1], dims[1:], strict=False):
        layers += [*norm(i), linear(i, o), activation_fn()]
    if output_dim is None:
        layers += norm(dims[-1])
    else:
        layers += [*norm(dims[-1]), linear(dims[-1], output_dim)]
    return nn.Sequential(*layers)
