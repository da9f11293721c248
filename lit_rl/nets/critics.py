"""Q-function ensembles: ``n_critics`` critics fused into batched matmuls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from lit_rl.nets.batch_renorm import BatchRenorm
from lit_rl.nets.mlp import EnsembleLinear, build_mlp


class QEnsemble(nn.Module):
    """``n_critics`` independent Q(s, a) networks evaluated in one pass.

    ``forward(obs, actions)`` returns ``(n_critics, batch)``. Member ``i`` owns
    slice ``i`` of every parameter (and of every BatchRenorm statistic).
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        net_arch: Sequence[int],
        n_critics: int = 2,
        activation_fn: type[nn.Module] = nn.ReLU,
        batch_norm: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if n_critics < 1:
            raise ValueError(f"n_critics={n_critics} must be at least 1")
        self.n_critics = n_critics
        self.q_net = build_mlp(obs_dim + action_dim, net_arch, 1, activation_fn, batch_norm, ensemble_size=n_critics)

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return self.q_net(torch.cat([obs, actions], dim=-1)).squeeze(-1)

    def member_forward(self, obs: torch.Tensor, actions: torch.Tensor, index: int = 0) -> torch.Tensor:
        """Q-values of critic ``index`` alone, shape ``(batch,)``: equal to ``forward(obs, actions)[index]``.

        For losses that use one critic (TD3's actor loss): the other members' matmuls
        and their backward would be work whose result is discarded.
        """
        x = torch.cat([obs, actions], dim=-1)
        for layer in self.q_net:
            if isinstance(layer, EnsembleLinear):
                x = torch.addmm(layer.bias[index], x, layer.weight[index])
            elif isinstance(layer, BatchRenorm):
                raise NotImplementedError("member_forward does not slice BatchRenorm statistics; use forward")
            else:
                x = layer(x)
        return x.squeeze(-1)
