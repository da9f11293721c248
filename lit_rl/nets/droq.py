"""DroQ's Q-network layers (Hiraoka et al., ICLR 2022): ``Linear -> Dropout -> LayerNorm -> activation``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import nn

from lit_rl.nets.batch_renorm import BatchRenorm
from lit_rl.nets.layer_norm import layer_norm
from lit_rl.nets.mlp import EnsembleLinear
from lit_rl.nets.net_options import NetOptions
from lit_rl.nets.weight_norm import WeightNormEnsembleLinear


def ensemble_linear(in_features: int, out_features: int, ensemble_size: int | None, weight_norm: bool) -> nn.Module:
    """A linear layer: ``nn.Linear``, :class:`EnsembleLinear`, or its weight-normalised form."""
    if ensemble_size is None:
        if weight_norm:
            return nn.utils.parametrizations.weight_norm(nn.Linear(in_features, out_features))
        return nn.Linear(in_features, out_features)
    cls = WeightNormEnsembleLinear if weight_norm else EnsembleLinear
    return cls(ensemble_size, in_features, out_features)


def build_droq_mlp(
    input_dim: int, hidden: Sequence[int], output_dim: int | None, activation_fn: type[nn.Module],
    batch_norm: dict[str, Any] | None, ensemble_size: int | None, options: NetOptions,
) -> nn.Sequential:  # fmt: skip
    """:func:`~lit_rl.nets.mlp.build_mlp`'s MLP with, after each hidden linear layer, dropout and LayerNorm.

    ``weight_norm`` normalises the hidden linear layers (the output layer stays plain, as in XQC's
    critics); BatchRenorm layers (CrossQ) stay where ``build_mlp`` puts them.
    """
    layers: list[nn.Module] = []
    dims = [input_dim, *hidden]

    def norm(n: int) -> list[nn.Module]:
        return [] if batch_norm is None else [BatchRenorm(n, ensemble_size=ensemble_size, **batch_norm)]

    for i, o in zip(dims[:-1], dims[1:], strict=False):
        layers += [*norm(i), ensemble_linear(i, o, ensemble_size, options.weight_norm)]
        if options.dropout > 0:
            layers.append(nn.Dropout(options.dropout))
        if options.layer_norm:
            layers.append(layer_norm(o, ensemble_size))
        layers.append(activation_fn())
    layers += norm(dims[-1])
    if output_dim is not None:
        layers.append(ensemble_linear(dims[-1], output_dim, ensemble_size, False))
    return nn.Sequential(*layers)
