"""TD3's (and DDPG's) policy: a deterministic actor, critics and target copies of both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from gymnasium import spaces
from torch import nn

from lit_rl.nets.target import make_target
from lit_rl.policies.actor_critic import ContinuousCritic, DeterministicPolicyActor
from lit_rl.policies.base import BasePolicy, check_actor_critic_kwargs, split_net_arch


class TD3Policy(BasePolicy):
    """``actor``, ``actor_target``, ``critic`` and ``critic_target``, as SB3's TD3Policy."""

    default_net_arch = {"pi": [400, 300], "qf": [400, 300]}

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        lr_schedule: Callable[[float], float] | None = None,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] | str = nn.ReLU,
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
        self.actor_kwargs = {"net_arch": pi, "activation_fn": activation_fn}
        self.critic_kwargs = {"net_arch": qf, "activation_fn": activation_fn, "n_critics": n_critics}
        self.actor = self.make_actor()
        self.critic = self.make_critic()
        self.actor_target = make_target(self.actor)
        self.critic_target = make_target(self.critic)

    check_kwargs = staticmethod(check_actor_critic_kwargs)

    def make_actor(self, features_extractor: nn.Module | None = None) -> DeterministicPolicyActor:
        return DeterministicPolicyActor(self.observation_space, self.action_space, **self.actor_kwargs)

    def make_critic(self, features_extractor: nn.Module | None = None) -> ContinuousCritic:
        return ContinuousCritic(self.observation_space, self.action_space, **self.critic_kwargs)

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.actor(obs)
