"""The quantile regression loss of the distributional critics (TQC, QR-DQN), as sb3-contrib computes it."""

from __future__ import annotations

import torch


def quantile_huber_loss(
    quantiles: torch.Tensor, target: torch.Tensor, sum_over_quantiles: bool = False
) -> torch.Tensor:
    """Quantile regression loss with a Huber (kappa 1) penalty (sb3-contrib's ``quantile_huber_loss``).

    ``quantiles``: ``(..., batch, n_quantiles)`` at the midpoints ``(i + 0.5) / n_quantiles`` (TQC: a leading
    critic axis); ``target``: ``(batch, n_target_quantiles)``, compared pairwise with every predicted quantile.
    The pairwise terms are averaged over everything (TQC), or summed over the predicted quantiles and then
    averaged (``sum_over_quantiles``: QR-DQN, as in its paper).
    """
    n_quantiles = quantiles.shape[-1]
    tau = (torch.arange(n_quantiles, device=quantiles.device, dtype=quantiles.dtype) + 0.5) / n_quantiles
    delta = target.unsqueeze(-2) - quantiles.unsqueeze(-1)  # (..., batch, n_quantiles, n_target)
    abs_delta = delta.abs()
    huber = torch.where(abs_delta > 1, abs_delta - 0.5, 0.5 * delta**2)
    # Under-estimates (delta > 0) weigh tau, over-estimates 1 - tau.
    loss = torch.abs(tau[:, None] - (delta.detach() < 0).to(delta.dtype)) * huber
    return loss.sum(dim=-2).mean() if sum_over_quantiles else loss.mean()
