"""Generalized State-Dependent Exploration (gSDE, Raffin et al., 2022), as in Stable-Baselines3.

The exploration noise of an action is ``latent @ W``: a linear function of the
policy's last hidden features with a weight matrix ``W ~ N(0, std^2)`` that is
held fixed between two calls of :meth:`StateDependentNoiseDistribution.sample_weights`.
The same observation therefore gets the same action until the matrix is
resampled, which gives smooth, correlated exploration on robots.
"""

from __future__ import annotations

import torch
from torch import nn

# Keeps sqrt(variance) and log(std) finite where the latent features are all zero (SB3's value).
SDE_EPSILON = 1e-6


class StateDependentNoiseDistribution(nn.Module):
    """The learned noise scale ``log_std`` of gSDE and the exploration matrices sampled from it.

    Given latent features ``z``, the pre-squash action ``mean + z @ W`` is Gaussian
    per action dimension ``k`` with variance ``sum_j z_j^2 std_jk^2`` (:meth:`action_std`).

    :param latent_dim: size of the features the noise is computed from.
    :param action_dim: number of action dimensions.
    :param full_std: one std per (feature, action) pair; otherwise one per feature, shared by all actions.
    :param use_expln: map ``log_std`` to std with ``expln`` (``exp`` below 0, ``log1p + 1`` above), which
        grows slower than ``exp`` and keeps the variance from exploding.
    :param log_std_init: initial value of every entry of ``log_std``.
    """

    def __init__(
        self,
        latent_dim: int,
        action_dim: int,
        full_std: bool = True,
        use_expln: bool = False,
        log_std_init: float = -3.0,
    ) -> None:
        super().__init__()
        self.latent_dim, self.action_dim = latent_dim, action_dim
        self.full_std, self.use_expln = full_std, use_expln
        self.log_std = nn.Parameter(torch.full((latent_dim, action_dim if full_std else 1), float(log_std_init)))
        # Plain attributes, not buffers: they are resampled at every rollout start and every update,
        # and during an update they carry the graph back to log_std (reparameterised sample).
        self.exploration_mat: torch.Tensor | None = None
        self.exploration_matrices: torch.Tensor | None = None

    def weight_std(self) -> torch.Tensor:
        """Standard deviation of each entry of the exploration matrix, shape ``(latent_dim, action_dim)``."""
        if self.use_expln:
            # exp(x) for x <= 0, log1p(x) + 1 for x > 0: continuous at 0 and only logarithmic growth above.
            below = torch.exp(self.log_std) * (self.log_std <= 0)
            safe = self.log_std * (self.log_std > 0) + SDE_EPSILON
            above = (torch.log1p(safe) + 1.0) * (self.log_std > 0)
            std = below + above
        else:
            std = torch.exp(self.log_std)
        if self.full_std:
            return std
        return torch.ones(self.latent_dim, self.action_dim, device=std.device, dtype=std.dtype) * std

    def sample_weights(self, n_matrices: int = 1) -> None:
        """Draw a new exploration matrix, and ``n_matrices`` more (one per env of a vector env)."""
        std = self.weight_std()
        self.exploration_mat = std * torch.randn_like(std)
        self.exploration_matrices = std * torch.randn((n_matrices, *std.shape), device=std.device, dtype=std.dtype)

    def noise(self, latent: torch.Tensor) -> torch.Tensor:
        """``latent @ W`` per row: one matrix per row when there is one per row (vector-env rollouts), else one shared."""
        if self.exploration_mat is None:
            self.sample_weights()
        exploration_mat, exploration_matrices = self.exploration_mat, self.exploration_matrices
        assert exploration_mat is not None and exploration_matrices is not None  # drawn by sample_weights
        if len(latent) == 1 or len(latent) != len(exploration_matrices):
            return latent @ exploration_mat
        return torch.bmm(latent.unsqueeze(1), exploration_matrices).squeeze(1)

    def action_std(self, latent: torch.Tensor) -> torch.Tensor:
        """Standard deviation of the noise per action dimension, ``sqrt(latent^2 @ std^2 + eps)``."""
        return torch.sqrt(latent.pow(2) @ self.weight_std().pow(2) + SDE_EPSILON)
