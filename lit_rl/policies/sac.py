"""SAC's policy: a squashed Gaussian actor, twin critics and their target copy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from gymnasium import spaces
from torch import nn

from lit_rl.nets.target import make_target
from lit_rl.policies.actor_critic import Actor, ContinuousCritic
from lit_rl.policies.base import BasePolicy, check_actor_critic_kwargs, split_net_arch


class SACPolicy(BasePolicy):
    """``actor`` (:class:`Actor` without BatchRenorm), ``critic`` and ``critic_target``, as SB3's SACPolicy."""

    default_net_arch = {"pi": [256, 256], "qf": [256, 256]}

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        lr_schedule: Callable[[float], float] | None = None,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] | str = nn.ReLU,
        use_sde: bool = False,
        log_std_init: float = -3.0,
        full_std: bool = True,
        use_expln: bool = False,
        clip_mean: float = 2.0,
        features_extractor_class: Any = None,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        optimizer_class: type[torch.optim.Optimizer] = torch.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
        n_critics: int = 2,
        share_features_extractor: bool = False,
    ) -> None:
        super().__init__(
            observation_space, action_space, lr_schedule, features_extractor_class, features_extractor_kwargs,
            normalize_images, optimizer_class, optimizer_kwargs, share_features_extractor,
        )  # fmt: skip
        pi, qf = split_net_arch(net_arch, self.default_net_arch)
        self.use_sde = use_sde
        sde = {"use_sde": use_sde, "log_std_init": log_std_init, "full_std": full_std, "use_expln": use_expln}
        self.actor_kwargs = {"net_arch": pi, "activation_fn": activation_fn, **sde, "clip_mean": clip_mean}
        self.critic_kwargs = {"net_arch": qf, "activation_fn": activation_fn, "n_critics": n_critics}
        self.actor = self.make_actor()
        self.critic = self.make_critic()
        self.critic_target = make_target(self.critic)

    check_kwargs = staticmethod(check_actor_critic_kwargs)

    def make_actor(self, features_extractor: nn.Module | None = None) -> Actor:
        return Actor(self.observation_space, self.action_space, batch_norm=False, **self.actor_kwargs)

    def make_critic(self, features_extractor: nn.Module | None = None) -> ContinuousCritic:
        return ContinuousCritic(self.observation_space, self.action_space, **self.critic_kwargs)

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.actor(obs, deterministic=deterministic)

    def reset_noise(self, batch_size: int = 1) -> None:
        """New gSDE exploration matrices: one shared (updates) and ``batch_size`` for the envs."""
        self.actor.reset_noise(batch_size)
