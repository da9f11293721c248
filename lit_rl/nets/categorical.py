"""A categorical (distributional) Q head: logits over fixed values, trained by cross-entropy with a two-hot target.

As in C51 / "Stop regressing" (Farebrother et al., 2024) with a two-hot target: a scalar
target ``y`` clipped to ``[v_min, v_max]`` puts mass on the two support values around it so
that the distribution's mean is ``y``; Q is the mean of ``softmax(logits)`` over the support.
"""

from __future__ import annotations

import torch
from torch import nn


class CategoricalHead(nn.Module):
    """The support ``linspace(v_min, v_max, n_bins)``; expectation of logits and the two-hot cross-entropy."""

    support: torch.Tensor

    def __init__(self, n_bins: int, v_min: float, v_max: float) -> None:
        super().__init__()
        self.n_bins, self.v_min, self.v_max = n_bins, v_min, v_max
        self.register_buffer("support", torch.linspace(v_min, v_max, n_bins))

    def expectation(self, logits: torch.Tensor) -> torch.Tensor:
        """Q-values ``sum softmax(logits) * support`` over the last dimension."""
        return (torch.softmax(logits, dim=-1) * self.support).sum(-1)

    def two_hot(self, target: torch.Tensor) -> torch.Tensor:
        """``(..., n_bins)`` probabilities on the two support values around ``target`` (clipped), mean = target."""
        position = (target.clamp(self.v_min, self.v_max) - self.v_min) / (self.v_max - self.v_min) * (self.n_bins - 1)
        lower = position.floor().clamp(max=self.n_bins - 2)
        upper_weight = (position - lower).unsqueeze(-1)
        lower_index = lower.long().unsqueeze(-1)
        probs = torch.zeros(*target.shape, self.n_bins, device=target.device, dtype=target.dtype)
        probs.scatter_(-1, lower_index, 1.0 - upper_weight)
        probs.scatter_add_(-1, lower_index + 1, upper_weight)
        return probs

    def loss(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """``sum_i mean_batch CE(logits_i, two_hot(target))`` for logits ``(n_critics, batch, n_bins)``."""
        log_probs = torch.log_softmax(logits, dim=-1)
        return -(self.two_hot(target) * log_probs).sum(-1).mean(-1).sum()

    def extra_repr(self) -> str:
        return f"n_bins={self.n_bins}, v_min={self.v_min}, v_max={self.v_max}"
