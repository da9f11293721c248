"""DQN's policy: a Q-network (features extractor, then an MLP) and its target copy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import torch
from gymnasium import spaces
from torch import nn

from lit_rl.nets.full_precision import full_precision
from lit_rl.nets.mlp import activation_class, build_mlp
from lit_rl.policies.base import BasePolicy, frozen_copy, split_net_arch
from lit_rl.policies.features import FeatureExtraction


class QNetwork(FeatureExtraction, nn.Sequential):
    """SB3's ``QNetwork``: ``features_extractor``, then the MLP's layers, one output per discrete action.

    The MLP's layers are the Sequential's items (``q_net[0]`` is the first Linear, state-dict keys
    ``0.weight`` ...); the extractor is a named child that iteration and indexing skip.
    """

    def __init__(self, features_extractor: nn.Module, observation_space: Any, n_actions: int, net_arch: list[int],
                 activation_fn: type[nn.Module], normalize_images: bool = True) -> None:  # fmt: skip
        features_dim = cast(int, features_extractor.features_dim)  # checked by BasePolicy's extractor build
        super().__init__(*build_mlp(features_dim, net_arch, n_actions, activation_fn, None))
        self.attach_features_extractor(
            features_extractor, {"observation_space": observation_space, "normalize_images": normalize_images}
        )

    def _layers(self) -> list[nn.Module]:
        return [m for name, m in self._modules.items() if name != "features_extractor"]

    def __iter__(self) -> Iterator[nn.Module]:
        return iter(self._layers())

    def __len__(self) -> int:
        return len(self._layers())

    def __getitem__(self, index: int | slice) -> nn.Module:
        layers = self._layers()
        return nn.Sequential(*layers[index]) if isinstance(index, slice) else layers[index]

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self(obs).argmax(dim=1)  # greedy action indices (SB3's QNetwork._predict)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        x = self.extract_features(obs)
        for layer in self._layers():
            x = layer(x)
        return full_precision(x)  # fp32 Q-values under mixed precision (core/precision.py)


class DQNPolicy(BasePolicy):
    """``q_net`` (one output per discrete action) and ``q_net_target``; greedy actions.

    ``net_arch``: a list, or a dict whose ``qf`` entry is used (so one override fits every algorithm);
    default [64, 64], and [] with NatureCNN (SB3's).
    """

    hyperparameters = {"net_arch": None, "activation_fn": nn.ReLU}
    default_net_arch = {"pi": [64, 64], "qf": [64, 64]}

    def build(self, hp: dict[str, Any]) -> None:
        default = {"pi": [], "qf": []} if self.uses_nature_cnn else self.default_net_arch
        _, self.net_arch = split_net_arch(hp["net_arch"], default)
        action_space = self.action_space
        assert isinstance(action_space, spaces.Discrete)  # DQN's supported_action_spaces
        self.n_actions = int(action_space.n)
        self.action_start = int(action_space.start)  # Discrete(n, start=k): env actions are k .. k+n-1
        self.activation_fn = activation_class(hp["activation_fn"])
        self.q_net = self.make_q_net()
        self.q_net_target = frozen_copy(self.q_net)

    def make_q_net(self) -> QNetwork:
        """A Q-network with its own features extractor."""
        return QNetwork(self.make_features_extractor(), self.observation_space, self.n_actions, self.net_arch,
                        self.activation_fn, self.normalize_images)  # fmt: skip

    def q_values(self, obs: torch.Tensor) -> torch.Tensor:
        """Q(s, .): ``(batch, n_actions)``, the values a greedy action maximises."""
        return self.q_net(obs)

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self.q_values(obs).argmax(dim=1) + self.action_start
