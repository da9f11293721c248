"""LayerNorm for fused ensembles: each member has its own scale and shift."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class EnsembleLayerNorm(nn.Module):
    """LayerNorm over the last dimension of ``(n_members, batch, features)``, one affine per member."""

    def __init__(self, n_members: int, features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n_members, 1, features))
        self.bias = nn.Parameter(torch.zeros(n_members, 1, features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, x.shape[-1:], eps=self.eps) * self.weight + self.bias


def layer_norm(features: int, ensemble_size: int | None) -> nn.Module:
    """``nn.LayerNorm`` for a single network, :class:`EnsembleLayerNorm` for a fused ensemble."""
    return nn.LayerNorm(features) if ensemble_size is None else EnsembleLayerNorm(ensemble_size, features)
