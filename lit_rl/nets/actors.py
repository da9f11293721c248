"""Actors: the squashed Gaussian policy of SAC and CrossQ, the deterministic policy of TD3 and DDPG."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from lit_rl.nets.mlp import build_mlp

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
# Keeps log(1 - tanh(u)^2) finite when tanh saturates (SB3's value).
TANH_LOG_EPS = 1e-6
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class SquashedGaussianActor(nn.Module):
    """Gaussian policy squashed by tanh into ``[-1, 1]^action_dim``.

    ``forward`` returns actions; ``action_log_prob`` returns a reparameterised
    sample and its log-probability, corrected for the tanh squashing.
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        net_arch: Sequence[int],
        activation_fn: type[nn.Module] = nn.ReLU,
        batch_norm: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.latent_pi = build_mlp(obs_dim, net_arch, None, activation_fn, batch_norm)
        last = net_arch[-1] if net_arch else obs_dim
        self.mu = nn.Linear(last, action_dim)
        self.log_std = nn.Linear(last, action_dim)

    def distribution_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log standard deviation (clamped) of the pre-squash Gaussian."""
        latent = self.latent_pi(obs)
        return self.mu(latent), self.log_std(latent).clamp(LOG_STD_MIN, LOG_STD_MAX)

    def forward(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        mean, log_std = self.distribution_params(obs)
        if deterministic:
            return torch.tanh(mean)
        return torch.tanh(mean + log_std.exp() * torch.randn_like(mean))

    def action_log_prob(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action in [-1, 1] and its log-probability, shape (batch,)."""
        mean, log_std = self.distribution_params(obs)
        noise = torch.randn_like(mean)
        pre_tanh = mean + log_std.exp() * noise
        action = torch.tanh(pre_tanh)
        # log N(pre_tanh; mean, std) summed over action dims, then the tanh Jacobian.
        gaussian_log_prob = (-0.5 * noise.pow(2) - log_std - HALF_LOG_2PI).sum(-1)
        log_prob = gaussian_log_prob - torch.log(1.0 - action.pow(2) + TANH_LOG_EPS).sum(-1)
        return action, log_prob


class DeterministicActor(nn.Module):
    """Deterministic policy ``tanh(MLP(obs))`` with actions in ``[-1, 1]^action_dim`` (TD3, DDPG)."""

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        net_arch: Sequence[int],
        activation_fn: type[nn.Module] = nn.ReLU,
        batch_norm: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.mu = build_mlp(obs_dim, net_arch, action_dim, activation_fn, batch_norm)

    def forward(self, obs: torch.Tensor, deterministic: bool = True) -> torch.Tensor:
        # ``deterministic`` is accepted for a common actor interface; exploration noise is added outside.
        return torch.tanh(self.mu(obs))
