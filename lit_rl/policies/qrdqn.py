"""QR-DQN's policy: a quantile network (``n_quantiles`` outputs per discrete action) and its target copy."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lit_rl.policies.base import check_counts_and_switches, cnn_policy_class
from lit_rl.policies.dqn import DQNPolicy, QNetwork
from lit_rl.utils.checks import check_int

__all__ = ["CnnPolicy", "MlpPolicy", "MultiInputPolicy", "QRDQNPolicy", "QuantileNetwork"]


class QuantileNetwork(QNetwork):
    """sb3-contrib's ``QuantileNetwork``: a :class:`QNetwork` whose outputs are ``n_quantiles`` quantiles of the
    return per action, ``forward`` -> ``(batch, n_quantiles, n_actions)``."""

    def __init__(self, features_extractor: nn.Module, observation_space: Any, n_actions: int, net_arch: list[int],
                 activation_fn: type[nn.Module], normalize_images: bool = True, n_quantiles: int = 200) -> None:  # fmt: skip
        super().__init__(features_extractor, observation_space, n_actions * n_quantiles, net_arch, activation_fn,
                         normalize_images)  # fmt: skip
        self.n_quantiles, self.n_actions = n_quantiles, n_actions

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return super().forward(obs).view(-1, self.n_quantiles, self.n_actions)  # sb3-contrib's layout of the outputs

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        return self(obs).mean(dim=1).argmax(dim=1)  # greedy on the mean of the quantiles


class QRDQNPolicy(DQNPolicy):
    """A :class:`DQNPolicy` whose ``q_net`` is a :class:`QuantileNetwork` (``n_quantiles``, default 200, as
    sb3-contrib); greedy actions maximise the mean over quantiles. ``quantile_net`` and ``quantile_net_target``
    are sb3-contrib's names of ``q_net`` and ``q_net_target``. ``net_arch``: as :class:`DQNPolicy` (default
    [64, 64], [] with NatureCNN)."""

    hyperparameters = {"n_quantiles": 200}
    q_net: QuantileNetwork
    q_net_target: QuantileNetwork

    def build(self, hp: dict[str, Any]) -> None:
        self.n_quantiles = check_int("policy_kwargs.n_quantiles", hp["n_quantiles"], minimum=1)
        super().build(hp)

    def make_q_net(self) -> QuantileNetwork:
        """A quantile network with its own features extractor."""
        return QuantileNetwork(self.make_features_extractor(), self.observation_space, self.n_actions, self.net_arch,
                               self.activation_fn, self.normalize_images, self.n_quantiles)  # fmt: skip

    def q_values(self, obs: torch.Tensor) -> torch.Tensor:
        """The mean of each action's quantiles: ``(batch, n_actions)``."""
        return self.q_net(obs).mean(dim=1)

    @property
    def quantile_net(self) -> QuantileNetwork:
        """sb3-contrib's name of the online quantile network."""
        return self.q_net

    @property
    def quantile_net_target(self) -> QuantileNetwork:
        """sb3-contrib's name of the target quantile network."""
        return self.q_net_target

    @classmethod
    def check_kwargs(cls, policy_kwargs: dict[str, Any]) -> None:
        super().check_kwargs(policy_kwargs)
        check_counts_and_switches(policy_kwargs, counts=("n_quantiles",), switches=())


# sb3-contrib's policy names. Dict observations are flattened into one vector, so MultiInputPolicy is MlpPolicy.
MlpPolicy = QRDQNPolicy
MultiInputPolicy = QRDQNPolicy
# The class the name "CnnPolicy" gives QRDQN (NatureCNN extractors), importable by its own name too, so that a
# model given the class pickles it by reference.
CnnPolicy = CnnQRDQNPolicy = cnn_policy_class(QRDQNPolicy)
