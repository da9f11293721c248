"""SAC's policy: a squashed Gaussian actor, twin critics and their target copy."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lit_rl.policies.actor_critic import BATCH_RENORM_ARGUMENTS, SDE_ARGUMENTS, Actor, ContinuousCritic
from lit_rl.policies.base import BasePolicy, check_actor_critic_kwargs, frozen_copy, pick, split_net_arch

ACTOR_KEYS = {"activation_fn", "net", *SDE_ARGUMENTS, *BATCH_RENORM_ARGUMENTS}
CRITIC_KEYS = {"activation_fn", "net", "n_critics", *BATCH_RENORM_ARGUMENTS}


class SACPolicy(BasePolicy):
    """``actor`` (:class:`Actor` without BatchRenorm), ``critic`` and ``critic_target``, as SB3's SACPolicy.

    Each network has its own features extractor; with ``share_features_extractor`` the critic
    uses the actor's, which only the actor loss trains (:meth:`critic_parameters` leaves it out),
    and the target critic has a copy of it.
    """

    squash_output = True

    hyperparameters = {"net_arch": None, "activation_fn": nn.ReLU, **SDE_ARGUMENTS, "n_critics": 2, "net": None}
    actor_class, critic_class = Actor, ContinuousCritic
    has_target_critic = True
    check_kwargs = staticmethod(check_actor_critic_kwargs)

    def build(self, hp: dict[str, Any]) -> None:
        pi, qf = split_net_arch(hp["net_arch"], self.default_net_arch)
        self.use_sde = hp["use_sde"]
        self.actor_kwargs = {"net_arch": pi, "batch_norm": False, **pick(hp, ACTOR_KEYS)}
        self.critic_kwargs = {"net_arch": qf, "share_features_extractor": self.share_features_extractor,
                              **pick(hp, CRITIC_KEYS)}  # fmt: skip
        self.actor = self.make_actor()
        self.critic = self.make_critic(self.actor.features_extractor if self.share_features_extractor else None)
        if self.has_target_critic:
            self.critic_target = frozen_copy(self.critic)

    def make_actor(self, features_extractor: nn.Module | None = None) -> Actor:
        """An actor with ``features_extractor`` (None: a new one)."""
        kwargs = self.with_features_extractor(self.actor_kwargs, features_extractor)
        return self.actor_class(self.observation_space, self.action_space, **kwargs)

    def make_critic(self, features_extractor: nn.Module | None = None) -> ContinuousCritic:
        """Critics with ``features_extractor`` (None: a new one)."""
        kwargs = self.with_features_extractor(self.critic_kwargs, features_extractor)
        return self.critic_class(self.observation_space, self.action_space, **kwargs)

    def actor_parameters(self) -> list[nn.Parameter]:
        """What the actor's optimizer trains: the actor, its features extractor included."""
        return list(self.actor.parameters())

    def critic_parameters(self) -> list[nn.Parameter]:
        """What the critic's optimizer trains: the critics, without a shared features extractor (SB3)."""
        return self.critic.own_parameters()

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.actor(obs, deterministic=deterministic)

    def reset_noise(self, batch_size: int = 1) -> None:
        """New gSDE exploration matrices: one shared (updates) and ``batch_size`` for the envs."""
        self.actor.reset_noise(batch_size)
