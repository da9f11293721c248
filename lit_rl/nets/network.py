"""The trunk of an actor or critic: the plain MLP, or one with the ``policy_kwargs.net`` options."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import nn

from lit_rl.nets.droq import build_droq_mlp
from lit_rl.nets.mlp import build_mlp
from lit_rl.nets.net_options import NetOptions
from lit_rl.nets.simba import build_simba


def build_network(
    input_dim: int, hidden: Sequence[int], output_dim: int | None, activation_fn: type[nn.Module] = nn.ReLU,
    batch_norm: dict[str, Any] | None = None, ensemble_size: int | None = None, options: NetOptions | None = None,
) -> nn.Sequential:  # fmt: skip
    """:func:`~lit_rl.nets.mlp.build_mlp`'s network, or with ``options``: a SimBa residual trunk
    (``residual``) or DroQ/XQC layers (dropout, LayerNorm, weight normalisation)."""
    args = (input_dim, hidden, output_dim, activation_fn, batch_norm, ensemble_size)
    if options is None or options.is_default:
        return build_mlp(*args)
    return (build_simba if options.residual else build_droq_mlp)(*args, options)
