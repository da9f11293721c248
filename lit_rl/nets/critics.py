"""Q-function ensembles: ``n_critics`` critics fused into batched matmuls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from lit_rl.nets.batch_renorm import BatchRenorm
from lit_rl.nets.categorical import CategoricalHead
from lit_rl.nets.full_precision import full_precision
from lit_rl.nets.mlp import EnsembleLinear
from lit_rl.nets.net_options import NetOptions
from lit_rl.nets.network import build_network


class QEnsemble(nn.Module):
    """``n_critics`` independent Q(s, a) networks evaluated in one pass.

    ``forward(obs, actions)`` returns ``(n_critics, batch)``. Member ``i`` owns
    slice ``i`` of every parameter (and of every BatchRenorm statistic).
    ``options`` (``policy_kwargs.net``) changes the layers; with a categorical head the
    networks output logits (:meth:`outputs`) and ``forward`` returns their expectation.
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        net_arch: Sequence[int],
        n_critics: int = 2,
        activation_fn: type[nn.Module] = nn.ReLU,
        batch_norm: dict[str, Any] | None = None,
        options: NetOptions | None = None,
    ) -> None:
        super().__init__()
        if n_critics < 1:
            raise ValueError(f"n_critics={n_critics} must be at least 1")
        self.n_critics = n_critics
        self.options = options or NetOptions()
        o = self.options
        self.head = CategoricalHead(o.n_bins, o.v_min, o.v_max) if o.categorical else None
        out = o.n_bins if o.categorical else 1
        self.q_net = build_network(obs_dim + action_dim, net_arch, out, activation_fn, batch_norm, n_critics, o)

    def outputs(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """What the networks output: Q-values ``(n_critics, batch)``, or logits ``(n_critics, batch, n_bins)``."""
        out = full_precision(self.q_net(torch.cat([obs, actions], dim=-1)))  # fp32 under mixed precision
        return out if self.head is not None else out.squeeze(-1)

    def expected_q(self, outputs: torch.Tensor) -> torch.Tensor:
        """Q-values ``(n_critics, batch)`` from :meth:`outputs`."""
        return outputs if self.head is None else self.head.expectation(outputs)

    def td_loss(self, outputs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """``0.5 * sum_i MSE(Q_i, target)``, or with a categorical head ``sum_i CE(logits_i, two_hot(target))``."""
        if self.head is not None:
            return self.head.loss(outputs, target)
        losses = [F.mse_loss(q_i, target) for q_i in outputs]
        return 0.5 * sum(losses[1:], losses[0])

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return self.expected_q(self.outputs(obs, actions))

    def member_forward(self, obs: torch.Tensor, actions: torch.Tensor, index: int = 0) -> torch.Tensor:
        """Q-values of critic ``index`` alone, shape ``(batch,)``: equal to ``forward(obs, actions)[index]``.

        For losses that use one critic (TD3's actor loss): the other members' matmuls
        and their backward would be work whose result is discarded.
        """
        if not self.options.is_default:
            return self.forward(obs, actions)[index]  # option layers have no member slicing
        x = torch.cat([obs, actions], dim=-1)
        for layer in self.q_net:
            if isinstance(layer, EnsembleLinear):
                x = torch.addmm(layer.bias[index], x, layer.weight[index])
            elif isinstance(layer, BatchRenorm):
                raise NotImplementedError("member_forward does not slice BatchRenorm statistics; use forward")
            else:
                x = layer(x)
        return full_precision(x).squeeze(-1)
