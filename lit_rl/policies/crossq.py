"""CrossQ's policy: an actor and critics with BatchRenorm layers and no target network."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from gymnasium import spaces
from torch import nn

from lit_rl.policies.actor_critic import Actor, CrossQCritic
from lit_rl.policies.base import BasePolicy, check_actor_critic_kwargs, split_net_arch

__all__ = ["Actor", "CrossQCritic", "CrossQPolicy"]


class CrossQPolicy(BasePolicy):
    """``actor`` (:class:`Actor`) and ``critic`` (:class:`CrossQCritic`), as sb3-contrib's CrossQPolicy.

    ``full_std`` (gSDE) is lit_rl's addition to sb3-contrib's arguments.
    """

    default_net_arch = {"pi": [256, 256], "qf": [1024, 1024]}

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        lr_schedule: Callable[[float], float] | None = None,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] | str = nn.ReLU,
        batch_norm: bool = True,
        batch_norm_momentum: float = 0.01,
        batch_norm_eps: float = 0.001,
        renorm_warmup_steps: int = 100_000,
        use_sde: bool = False,
        log_std_init: float = -3.0,
        use_expln: bool = False,
        clip_mean: float = 2.0,
        features_extractor_class: Any = None,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        optimizer_class: type[torch.optim.Optimizer] = torch.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
        n_critics: int = 2,
        share_features_extractor: bool = False,
        full_std: bool = True,
    ) -> None:
        super().__init__(
            observation_space, action_space, lr_schedule, features_extractor_class, features_extractor_kwargs,
            normalize_images, optimizer_class, optimizer_kwargs, share_features_extractor,
        )  # fmt: skip
        pi, qf = split_net_arch(net_arch, self.default_net_arch)
        self.use_sde = use_sde
        bn = {
            "batch_norm": batch_norm,
            "batch_norm_momentum": batch_norm_momentum,
            "batch_norm_eps": batch_norm_eps,
            "renorm_warmup_steps": renorm_warmup_steps,
        }
        sde = {"use_sde": use_sde, "log_std_init": log_std_init, "full_std": full_std, "use_expln": use_expln}
        self.actor_kwargs = {"net_arch": pi, "activation_fn": activation_fn, **sde, "clip_mean": clip_mean, **bn}
        self.critic_kwargs = {"net_arch": qf, "activation_fn": activation_fn, "n_critics": n_critics, **bn}
        self.actor = self.make_actor()
        self.critic = self.make_critic()

    check_kwargs = staticmethod(check_actor_critic_kwargs)

    def make_actor(self, features_extractor: nn.Module | None = None) -> Actor:
        return Actor(self.observation_space, self.action_space, **self.actor_kwargs)

    def make_critic(self, features_extractor: nn.Module | None = None) -> CrossQCritic:
        return CrossQCritic(self.observation_space, self.action_space, **self.critic_kwargs)

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        # Rollouts and evaluation use BatchRenorm's running statistics.
        self.actor.set_bn_training_mode(False)
        return self.actor(obs, deterministic=deterministic)

    def reset_noise(self, batch_size: int = 1) -> None:
        """New gSDE exploration matrices: one shared (updates) and ``batch_size`` for the envs."""
        self.actor.reset_noise(batch_size)

    def set_training_mode(self, mode: bool) -> None:
        """Training (True) or evaluation mode of both networks, BatchRenorm included."""
        self.train(mode)
