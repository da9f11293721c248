"""TD3's (and DDPG's) policy: a deterministic actor, critics and target copies of both."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lit_rl.nets.net_options import net_options
from lit_rl.policies.actor_critic import ContinuousCritic, DeterministicPolicyActor
from lit_rl.policies.base import BasePolicy, check_actor_critic_kwargs, frozen_copy, split_net_arch


class TD3Policy(BasePolicy):
    """``actor``, ``actor_target``, ``critic`` and ``critic_target``, as SB3's TD3Policy.

    Default ``net_arch`` [400, 300], [256, 256] with NatureCNN (SB3's). With
    ``share_features_extractor`` the critic uses the actor's extractor (trained by the actor
    loss only) and the target critic the target actor's, as in SB3.
    """

    squash_output = True

    hyperparameters = {"net_arch": None, "activation_fn": nn.ReLU, "n_critics": 2, "net": None}
    default_net_arch = {"pi": [400, 300], "qf": [400, 300]}
    check_kwargs = staticmethod(check_actor_critic_kwargs)

    def build(self, hp: dict[str, Any]) -> None:
        default = {"pi": [256, 256], "qf": [256, 256]} if self.uses_nature_cnn else self.default_net_arch
        pi, qf = split_net_arch(hp["net_arch"], default)
        if net_options(hp["net"]).categorical:
            raise ValueError("policy_kwargs.net.critic_head='categorical' needs SAC's or CrossQ's critic loss; "
                             f"{type(self).__name__} allows: 'scalar'")  # fmt: skip
        self.actor_kwargs = {"net_arch": pi, "activation_fn": hp["activation_fn"], "net": hp["net"]}
        self.critic_kwargs = {"net_arch": qf, "activation_fn": hp["activation_fn"], "n_critics": hp["n_critics"],
                              "share_features_extractor": self.share_features_extractor, "net": hp["net"]}  # fmt: skip
        self.actor = self.make_actor()
        self.critic = self.make_critic(self.actor.features_extractor if self.share_features_extractor else None)
        self.actor_target = frozen_copy(self.actor)
        self.critic_target = frozen_copy(self.critic)
        if self.share_features_extractor:
            # SB3: the target critic uses the target actor's extractor, so Polyak moves it twice per update.
            self.critic_target.features_extractor = self.actor_target.features_extractor

    def make_actor(self, features_extractor: nn.Module | None = None) -> DeterministicPolicyActor:
        """An actor with ``features_extractor`` (None: a new one)."""
        kwargs = self.with_features_extractor(self.actor_kwargs, features_extractor)
        return DeterministicPolicyActor(self.observation_space, self.action_space, **kwargs)

    def make_critic(self, features_extractor: nn.Module | None = None) -> ContinuousCritic:
        """Critics with ``features_extractor`` (None: a new one)."""
        kwargs = self.with_features_extractor(self.critic_kwargs, features_extractor)
        return ContinuousCritic(self.observation_space, self.action_space, **kwargs)

    def actor_parameters(self) -> list[nn.Parameter]:
        """What the actor's optimizer trains: the actor, its features extractor included."""
        return list(self.actor.parameters())

    def critic_parameters(self) -> list[nn.Parameter]:
        """What the critic's optimizer holds: all the critic's parameters, a shared extractor's too, as SB3's TD3
        (the critic loss sends it no gradient, so the optimizer leaves it as it is)."""
        return list(self.critic.parameters())

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.actor(obs)
