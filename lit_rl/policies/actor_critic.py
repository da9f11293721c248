"""The actor and critic modules of the actor-critic policies (SAC, CrossQ, TD3, DDPG), as SB3 names them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from lit_rl.nets.actors import DeterministicActor, SquashedGaussianActor
from lit_rl.nets.critics import QEnsemble
from lit_rl.nets.mlp import activation_class
from lit_rl.policies.base import set_bn_training_mode


def batch_renorm_options(batch_norm: bool, momentum: float, eps: float, warmup_steps: int) -> dict[str, Any] | None:
    """The ``batch_norm`` argument of :func:`~lit_rl.nets.mlp.build_mlp` (None: no BatchRenorm)."""
    return {"momentum": momentum, "eps": eps, "warmup_steps": warmup_steps} if batch_norm else None


def _dims(observation_space: spaces.Space, action_space: spaces.Space, features_dim: int | None) -> tuple[int, int]:
    return features_dim or int(np.prod(observation_space.shape)), int(np.prod(action_space.shape))


class Actor(SquashedGaussianActor):
    """Squashed Gaussian actor of SAC and CrossQ (BatchRenorm layers with ``batch_norm``); gSDE with ``use_sde``.

    ``features_extractor`` may only be None or a flatten layer: observations reach the actor flat.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        net_arch: Sequence[int],
        features_extractor: nn.Module | None = None,
        features_dim: int | None = None,
        activation_fn: type[nn.Module] | str = nn.ReLU,
        use_sde: bool = False,
        log_std_init: float = -3.0,
        full_std: bool = True,
        use_expln: bool = False,
        clip_mean: float = 2.0,
        normalize_images: bool = True,
        batch_norm: bool = True,
        batch_norm_momentum: float = 0.01,
        batch_norm_eps: float = 0.001,
        renorm_warmup_steps: int = 100_000,
    ) -> None:
        obs_dim, action_dim = _dims(observation_space, action_space, features_dim)
        bn = batch_renorm_options(batch_norm, batch_norm_momentum, batch_norm_eps, renorm_warmup_steps)
        super().__init__(
            obs_dim, action_dim, list(net_arch), activation_class(activation_fn), bn, use_sde, log_std_init, full_std,
            use_expln, clip_mean,
        )  # fmt: skip

    def get_std(self) -> torch.Tensor:
        """Standard deviation of the gSDE exploration matrix's entries (gSDE only)."""
        if not self.use_sde:
            raise ValueError("get_std() needs use_sde=True; this actor's std depends on the observation")
        return self.action_dist.weight_std()

    def get_action_dist_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """Mean and log std of the pre-squash Gaussian, and gSDE's ``latent_sde`` when it is used."""
        if self.use_sde:
            latent, mean = self.latent_and_mean(obs)
            return mean, self.action_dist.log_std, {"latent_sde": latent}
        mean, log_std = self.distribution_params(obs)
        return mean, log_std, {}

    def set_bn_training_mode(self, mode: bool) -> None:
        """Train (True: batch statistics, running averages move) or evaluate the BatchRenorm layers."""
        set_bn_training_mode(self, mode)


class DeterministicPolicyActor(DeterministicActor):
    """``tanh(MLP(obs))`` actor of TD3 and DDPG (SB3's TD3 ``Actor``)."""

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        net_arch: Sequence[int],
        features_extractor: nn.Module | None = None,
        features_dim: int | None = None,
        activation_fn: type[nn.Module] | str = nn.ReLU,
        normalize_images: bool = True,
    ) -> None:
        obs_dim, action_dim = _dims(observation_space, action_space, features_dim)
        super().__init__(obs_dim, action_dim, list(net_arch), activation_class(activation_fn))


class ContinuousCritic(QEnsemble):
    """``n_critics`` Q(s, a) networks fused into batched matmuls (SAC, TD3, DDPG; CrossQ adds BatchRenorm).

    ``forward`` returns a tuple of per-critic ``(batch, 1)`` tensors, as SB3; they are views
    of :meth:`q_values`' fused ``(n_critics, batch)`` output, which the updates use.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        net_arch: Sequence[int],
        features_extractor: nn.Module | None = None,
        features_dim: int | None = None,
        activation_fn: type[nn.Module] | str = nn.ReLU,
        normalize_images: bool = True,
        n_critics: int = 2,
        share_features_extractor: bool = True,
        batch_norm: dict[str, Any] | None = None,
    ) -> None:
        obs_dim, action_dim = _dims(observation_space, action_space, features_dim)
        super().__init__(obs_dim, action_dim, list(net_arch), n_critics, activation_class(activation_fn), batch_norm)

    def q_values(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """All critics' Q-values in one pass, shape ``(n_critics, batch)``."""
        return super().forward(obs, actions)

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(self.q_values(obs, actions).unsqueeze(-1).unbind(0))


class CrossQCritic(ContinuousCritic):
    """CrossQ's critics: :class:`ContinuousCritic` with BatchRenorm layers (``batch_norm``)."""

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        net_arch: Sequence[int],
        features_extractor: nn.Module | None = None,
        features_dim: int | None = None,
        activation_fn: type[nn.Module] | str = nn.ReLU,
        normalize_images: bool = True,
        n_critics: int = 2,
        share_features_extractor: bool = True,
        batch_norm: bool = True,
        batch_norm_momentum: float = 0.01,
        batch_norm_eps: float = 0.001,
        renorm_warmup_steps: int = 100_000,
    ) -> None:
        bn = batch_renorm_options(batch_norm, batch_norm_momentum, batch_norm_eps, renorm_warmup_steps)
        super().__init__(
            observation_space, action_space, net_arch, features_extractor, features_dim, activation_fn,
            normalize_images, n_critics, share_features_extractor, bn,
        )  # fmt: skip

    def set_bn_training_mode(self, mode: bool) -> None:
        """Train (True: batch statistics, running averages move) or evaluate the BatchRenorm layers."""
        set_bn_training_mode(self, mode)
