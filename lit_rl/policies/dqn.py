"""DQN's policy: a Q-network over flat observations and its target copy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from gymnasium import spaces
from torch import nn

from lit_rl.nets.mlp import activation_class, build_mlp
from lit_rl.nets.target import make_target
from lit_rl.policies.base import BasePolicy, split_net_arch


class DQNPolicy(BasePolicy):
    """``q_net`` (one output per discrete action) and ``q_net_target``; greedy actions.

    ``net_arch``: a list, or a dict whose ``qf`` entry is used (so one override fits every algorithm).
    """

    default_net_arch = {"pi": [64, 64], "qf": [64, 64]}

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Discrete,
        lr_schedule: Callable[[float], float] | None = None,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] | str = nn.ReLU,
        features_extractor_class: Any = None,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        optimizer_class: type[torch.optim.Optimizer] = torch.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            observation_space, action_space, lr_schedule, features_extractor_class, features_extractor_kwargs,
            normalize_images, optimizer_class, optimizer_kwargs,
        )  # fmt: skip
        _, self.net_arch = split_net_arch(net_arch, self.default_net_arch)
        self.n_actions = int(action_space.n)
        self.action_start = int(action_space.start)  # Discrete(n, start=k): env actions are k .. k+n-1
        self.q_net = build_mlp(self.obs_dim, self.net_arch, self.n_actions, activation_class(activation_fn), None)
        self.q_net_target = make_target(self.q_net)

    @classmethod
    def check_kwargs(cls, policy_kwargs: dict[str, Any]) -> None:
        split_net_arch(policy_kwargs.get("net_arch"), cls.default_net_arch)

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.q_net(obs).argmax(dim=1) + self.action_start
