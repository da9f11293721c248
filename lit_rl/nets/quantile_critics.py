"""Quantile critic ensembles (TQC): ``n_critics`` networks of ``n_quantiles`` outputs, fused into batched matmuls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from lit_rl.nets.full_precision import full_precision
from lit_rl.nets.network import build_network


class QuantileEnsemble(nn.Module):
    """``n_critics`` independent Z(s, a) networks, each predicting ``n_quantiles`` quantiles of the return.

    ``forward(obs, actions)`` returns ``(n_critics, batch, n_quantiles)``. Member ``i``
    owns slice ``i`` of every parameter (and of every BatchRenorm statistic).
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        net_arch: Sequence[int],
        n_quantiles: int = 25,
        n_critics: int = 2,
        activation_fn: type[nn.Module] = nn.ReLU,
        batch_norm: dict[str, Any] | None = None,
        options: Any = None,
    ) -> None:
        super().__init__()
        for name, value in (("n_quantiles", n_quantiles), ("n_critics", n_critics)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} is not allowed; allowed: an integer >= 1")
        self.n_quantiles, self.n_critics = n_quantiles, n_critics
        self.q_net = build_network(
            obs_dim + action_dim,
            net_arch,
            n_quantiles,
            activation_fn,
            batch_norm,
            ensemble_size=n_critics,
            options=options,  # policy_kwargs.net (lit_rl/nets/net_options.py)
        )

    @property
    def quantiles_total(self) -> int:
        """Quantiles over all critics (sb3-contrib's ``quantiles_total``)."""
        return self.n_quantiles * self.n_critics

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return full_precision(self.q_net(torch.cat([obs, actions], dim=-1)))  # fp32 under mixed precision
