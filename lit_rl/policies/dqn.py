"""DQN's policy: a Q-network over flat observations and its target copy."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lit_rl.nets.mlp import activation_class, build_mlp
from lit_rl.nets.target import make_target
from lit_rl.policies.base import BasePolicy, split_net_arch


class DQNPolicy(BasePolicy):
    """``q_net`` (one output per discrete action) and ``q_net_target``; greedy actions.

    ``net_arch``: a list, or a dict whose ``qf`` entry is used (so one override fits every algorithm).
    """

    hyperparameters = {"net_arch": None, "activation_fn": nn.ReLU}
    default_net_arch = {"pi": [64, 64], "qf": [64, 64]}

    def build(self, hp: dict[str, Any]) -> None:
        _, self.net_arch = split_net_arch(hp["net_arch"], self.default_net_arch)
        self.n_actions = int(self.action_space.n)
        self.action_start = int(self.action_space.start)  # Discrete(n, start=k): env actions are k .. k+n-1
        activation = activation_class(hp["activation_fn"])
        self.q_net = build_mlp(self.obs_dim, self.net_arch, self.n_actions, activation, None)
        self.q_net_target = make_target(self.q_net)

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.q_net(obs).argmax(dim=1) + self.action_start
