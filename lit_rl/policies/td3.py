"""TD3's (and DDPG's) policy: a deterministic actor, critics and target copies of both."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lit_rl.nets.target import make_target
from lit_rl.policies.actor_critic import ContinuousCritic, DeterministicPolicyActor
from lit_rl.policies.base import BasePolicy, check_actor_critic_kwargs, split_net_arch


class TD3Policy(BasePolicy):
    """``actor``, ``actor_target``, ``critic`` and ``critic_target``, as SB3's TD3Policy."""

    hyperparameters = {"net_arch": None, "activation_fn": nn.ReLU, "n_critics": 2}
    default_net_arch = {"pi": [400, 300], "qf": [400, 300]}
    check_kwargs = staticmethod(check_actor_critic_kwargs)

    def build(self, hp: dict[str, Any]) -> None:
        pi, qf = split_net_arch(hp["net_arch"], self.default_net_arch)
        self.actor_kwargs = {"net_arch": pi, "activation_fn": hp["activation_fn"]}
        self.critic_kwargs = {"net_arch": qf, "activation_fn": hp["activation_fn"], "n_critics": hp["n_critics"]}
        self.actor = self.make_actor()
        self.critic = self.make_critic()
        self.actor_target = make_target(self.actor)
        self.critic_target = make_target(self.critic)

    def make_actor(self, features_extractor: nn.Module | None = None) -> DeterministicPolicyActor:
        return DeterministicPolicyActor(self.observation_space, self.action_space, **self.actor_kwargs)

    def make_critic(self, features_extractor: nn.Module | None = None) -> ContinuousCritic:
        return ContinuousCritic(self.observation_space, self.action_space, **self.critic_kwargs)

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.actor(obs)
