"""SimBa's residual trunk (Lee et al., ICLR 2025): pre-LayerNorm MLP blocks on a residual stream.

``Linear(in, h) -> n x [x + Linear(4h, h)(act(Linear(h, 4h)(LN(x))))] -> LN -> head``, one block per
entry of ``net_arch`` (all of width ``h``). The paper's running-statistics input normalisation is
left out (observation normalisation belongs to the env side). With ``batch_norm`` (CrossQ)
BatchRenorm replaces LayerNorm and also normalises the input, so CrossQ keeps its batch statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from lit_rl.nets.batch_renorm import BatchRenorm
from lit_rl.nets.droq import ensemble_linear
from lit_rl.nets.layer_norm import layer_norm
from lit_rl.nets.net_options import NetOptions

EXPANSION = 4  # the block's inner width, as a multiple of the residual width (SimBa's)


class ResidualBlock(nn.Module):
    """``x + Linear(act(Linear(norm(x))))`` with an inner width ``EXPANSION * width``."""

    def __init__(self, width: int, activation_fn: type[nn.Module], norm: nn.Module, ensemble_size: int | None,
                 options: NetOptions) -> None:  # fmt: skip
        super().__init__()
        layers: list[nn.Module] = [norm, ensemble_linear(width, EXPANSION * width, ensemble_size, options.weight_norm)]
        if options.dropout > 0:
            layers.append(nn.Dropout(options.dropout))
        layers += [activation_fn(), ensemble_linear(EXPANSION * width, width, ensemble_size, options.weight_norm)]
        self.mlp = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(x)


def build_simba(
    input_dim: int, hidden: Sequence[int], output_dim: int | None, activation_fn: type[nn.Module],
    batch_norm: dict[str, Any] | None, ensemble_size: int | None, options: NetOptions,
) -> nn.Sequential:  # fmt: skip
    """A SimBa trunk (and a linear head of ``output_dim`` unless it is None) in place of an MLP."""
    if not hidden or len(set(hidden)) != 1:
        raise ValueError(
            f"net_arch={list(hidden)} with policy_kwargs.net.residual=true must be one or more equal widths "
            "(one residual block each), e.g. [256, 256]"
        )
    width = hidden[0]

    def norm(n: int) -> nn.Module:
        if batch_norm is not None:
            return BatchRenorm(n, ensemble_size=ensemble_size, **batch_norm)
        return layer_norm(n, ensemble_size)

    layers: list[nn.Module] = [norm(input_dim)] if batch_norm is not None else []
    layers.append(ensemble_linear(input_dim, width, ensemble_size, options.weight_norm))
    layers += [ResidualBlock(width, activation_fn, norm(width), ensemble_size, options) for _ in hidden]
    layers.append(norm(width))
    if output_dim is not None:
        layers.append(ensemble_linear(width, output_dim, ensemble_size, False))
    return nn.Sequential(*layers)
