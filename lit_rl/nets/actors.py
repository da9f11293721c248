"""Actors: the squashed Gaussian policy of SAC and CrossQ, the deterministic policy of TD3 and DDPG."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from lit_rl.nets.distributions import StateDependentNoiseDistribution
from lit_rl.nets.full_precision import full_precision
from lit_rl.nets.network import build_network
from lit_rl.nets.noise_source import standard_normal_like

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
# Keeps log(1 - tanh(u)^2) finite when tanh saturates (SB3's value).
TANH_LOG_EPS = 1e-6
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class SquashedGaussianActor(nn.Module):
    """Gaussian policy squashed by tanh into ``[-1, 1]^action_dim``.

    ``forward`` returns actions; ``action_log_prob`` returns a reparameterised
    sample and its log-probability, corrected for the tanh squashing.

    With ``use_sde`` the noise is gSDE's ``latent @ W`` (see
    :class:`~lit_rl.nets.distributions.StateDependentNoiseDistribution`):
    ``log_std`` is a learned matrix instead of a head, the mean is clipped to
    ``[-clip_mean, clip_mean]`` (0 disables the clip) so tanh does not
    saturate, and :meth:`reset_noise` draws a new exploration matrix, as in
    Stable-Baselines3's SAC ``Actor``.
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        net_arch: Sequence[int],
        activation_fn: type[nn.Module] = nn.ReLU,
        batch_norm: dict[str, Any] | None = None,
        use_sde: bool = False,
        log_std_init: float = -3.0,
        full_std: bool = True,
        use_expln: bool = False,
        clip_mean: float = 2.0,
        options: Any = None,
    ) -> None:
        super().__init__()
        self.latent_pi = build_network(obs_dim, net_arch, None, activation_fn, batch_norm, options=options)
        last = net_arch[-1] if net_arch else obs_dim
        self.mu = nn.Linear(last, action_dim)
        self.use_sde, self.clip_mean = use_sde, clip_mean
        if use_sde:
            self.action_dist = StateDependentNoiseDistribution(last, action_dim, full_std, use_expln, log_std_init)
        else:
            self.log_std = nn.Linear(last, action_dim)

    def latent_and_mean(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The last hidden features and the mean of the pre-squash Gaussian."""
        # fp32 outputs under mixed precision (core/precision.py): the distribution's math stays in fp32.
        latent = full_precision(self.latent_pi(obs))
        mean = full_precision(self.mu(latent))
        if self.use_sde and self.clip_mean > 0:
            mean = mean.clamp(-self.clip_mean, self.clip_mean)  # SB3's Hardtanh on the gSDE mean
        return latent, mean

    def distribution_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log standard deviation (clamped) of the pre-squash Gaussian (without gSDE)."""
        latent = self.latent_pi(obs)
        return full_precision(self.mu(latent)), full_precision(self.log_std(latent)).clamp(LOG_STD_MIN, LOG_STD_MAX)

    def reset_noise(self, batch_size: int = 1) -> None:
        """Draw new gSDE exploration matrices (one shared, and one per env for rollouts: ``batch_size`` envs)."""
        if not self.use_sde:
            raise ValueError("reset_noise() needs use_sde=True; this actor uses unstructured Gaussian noise")
        self.action_dist.sample_weights(batch_size)

    def forward(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        if self.use_sde:
            latent, mean = self.latent_and_mean(obs)
            return torch.tanh(mean if deterministic else mean + self.action_dist.noise(latent))
        mean, log_std = self.distribution_params(obs)
        if deterministic:
            return torch.tanh(mean)
        return torch.tanh(mean + log_std.exp() * standard_normal_like(mean))

    def action_log_prob(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action in [-1, 1] and its log-probability, shape (batch,)."""
        if self.use_sde:
            latent, mean = self.latent_and_mean(obs)
            noise = self.action_dist.noise(latent)
            std = self.action_dist.action_std(latent)
            return squashed_sample_log_prob(mean, noise / std, std.log())
        mean, log_std = self.distribution_params(obs)
        return squashed_sample_log_prob(mean, standard_normal_like(mean), log_std)


def squashed_sample_log_prob(
    mean: torch.Tensor, standard_noise: torch.Tensor, log_std: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``tanh(mean + std * standard_noise)`` and its log-probability under the tanh-squashed N(mean, std^2)."""
    action = torch.tanh(mean + log_std.exp() * standard_noise)
    # log N(pre_tanh; mean, std) summed over action dims, then the tanh Jacobian.
    gaussian_log_prob = (-0.5 * standard_noise.pow(2) - log_std - HALF_LOG_2PI).sum(-1)
    log_prob = gaussian_log_prob - torch.log(1.0 - action.pow(2) + TANH_LOG_EPS).sum(-1)
    return action, log_prob


class DeterministicActor(nn.Module):
    """Deterministic policy ``tanh(MLP(obs))`` with actions in ``[-1, 1]^action_dim`` (TD3, DDPG)."""

    def __init__(self, obs_dim: int, action_dim: int, net_arch: Sequence[int], activation_fn: type[nn.Module] = nn.ReLU,
                 batch_norm: dict[str, Any] | None = None, options: Any = None) -> None:  # fmt: skip
        super().__init__()
        self.mu = build_network(obs_dim, net_arch, action_dim, activation_fn, batch_norm, options=options)

    def forward(self, obs: torch.Tensor, deterministic: bool = True) -> torch.Tensor:
        # ``deterministic`` is accepted for a common actor interface; exploration noise is added outside.
        return torch.tanh(full_precision(self.mu(obs)))  # fp32 under mixed precision (core/precision.py)
