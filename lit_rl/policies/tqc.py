"""TQC's policy: a squashed Gaussian actor and quantile critics, with a target copy (or, CrossQ-style, BatchRenorm and none)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lit_rl.nets.mlp import activation_class
from lit_rl.nets.net_options import net_options
from lit_rl.nets.quantile_critics import QuantileEnsemble
from lit_rl.policies.actor_critic import (
    BATCH_RENORM_ARGUMENTS,
    NETWORK_ARGUMENTS,
    CriticFeatures,
    action_dim,
    batch_renorm_options,
)
from lit_rl.policies.base import check_actor_critic_kwargs, check_counts_and_switches, set_bn_training_mode
from lit_rl.policies.sac import SACPolicy
from lit_rl.utils.declared import Hyperparameters

__all__ = ["QuantileCritic", "TQCPolicy"]

# BatchRenorm layers are off by default (sb3-contrib's TQC has none); the CrossQ-style preset turns them on.
OPTIONAL_BATCH_RENORM: dict[str, Any] = {**BATCH_RENORM_ARGUMENTS, "batch_norm": False}


class QuantileCritic(CriticFeatures, Hyperparameters, QuantileEnsemble):
    """``n_critics`` quantile networks Z(s, a) fused into batched matmuls (sb3-contrib's TQC ``Critic``).

    ``forward`` returns ``(batch, n_critics, n_quantiles)`` as sb3-contrib; the updates use
    :meth:`quantiles`, ``(n_critics, batch, n_quantiles)``. A shared features extractor is
    trained by the actor loss only, as in :class:`ContinuousCritic`.
    """

    hyperparameters = {
        **NETWORK_ARGUMENTS,
        "n_quantiles": 25,
        "n_critics": 2,
        "share_features_extractor": False,
        **OPTIONAL_BATCH_RENORM,
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        hp = self.bind_hyperparameters(args, kwargs)
        extractor, features_dim = self.extractor_and_dim(hp)
        options = net_options(hp["net"])
        if options.categorical:
            raise ValueError("policy_kwargs.net.critic_head='categorical' is not for TQC (its critics are quantile "
                             "networks); allowed: 'scalar'")  # fmt: skip
        super().__init__(features_dim, action_dim(hp), list(hp["net_arch"]), hp["n_quantiles"], hp["n_critics"],
                         activation_class(hp["activation_fn"]), batch_renorm_options(hp), options)  # fmt: skip
        self.attach_features_extractor(extractor, hp)
        self.share_features_extractor = bool(hp["share_features_extractor"])

    def quantiles(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """All critics' quantiles in one pass, shape ``(n_critics, batch, n_quantiles)``."""
        return super().forward(self.critic_features(obs), actions)

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return self.quantiles(obs, actions).transpose(0, 1)

    def set_bn_training_mode(self, mode: bool) -> None:
        """Train (True: batch statistics, running averages move) or evaluate the BatchRenorm layers (if any)."""
        set_bn_training_mode(self, mode)


def check_tqc_kwargs(policy_kwargs: dict[str, Any]) -> None:
    """SAC's checks plus ``n_quantiles``, ``batch_norm`` and ``target_network``."""
    check_actor_critic_kwargs(policy_kwargs)
    check_counts_and_switches(policy_kwargs, counts=("n_quantiles",), switches=("batch_norm", "target_network"))


class TQCPolicy(SACPolicy):
    """``actor`` (:class:`~lit_rl.policies.actor_critic.Actor`), ``critic`` and ``critic_target``
    (:class:`QuantileCritic`), as sb3-contrib's TQCPolicy.

    Beyond sb3-contrib's arguments: ``full_std`` (gSDE), ``batch_norm`` (BatchRenorm layers in
    actor and critics, as CrossQ) and ``target_network`` (False: no ``critic_target``; the
    update bootstraps from the online critics, CrossQ-style).
    """

    hyperparameters = {"n_quantiles": 25, **OPTIONAL_BATCH_RENORM, "target_network": True}
    # SAC's build and parameter lists use only CriticFeatures' methods, which QuantileCritic shares; its head
    # (quantiles, not ContinuousCritic's Q-values) is what the TQC update reads, so it is declared here.
    critic: QuantileCritic  # type: ignore[assignment]  # a quantile critic, not SAC's ContinuousCritic
    critic_target: QuantileCritic  # type: ignore[assignment]  # a copy of ``critic``
    critic_class = QuantileCritic  # type: ignore[assignment]  # see ``critic``
    check_kwargs = staticmethod(check_tqc_kwargs)

    def build(self, hp: dict[str, Any]) -> None:
        self.n_quantiles = hp["n_quantiles"]
        self.has_target_critic = bool(hp["target_network"])
        super().build(hp)

    def make_critic(  # type: ignore[override]  # quantile critics, not SAC's ContinuousCritic (see ``critic``)
        self, features_extractor: nn.Module | None = None
    ) -> QuantileCritic:
        """Quantile critics with ``features_extractor`` (None: a new one)."""
        kwargs = self.with_features_extractor(
            {**self.critic_kwargs, "n_quantiles": self.n_quantiles}, features_extractor
        )
        return self.critic_class(self.observation_space, self.action_space, **kwargs)

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        # Rollouts and evaluation use BatchRenorm's running statistics (no-op without BatchRenorm).
        self.actor.set_bn_training_mode(False)
        return self.actor(obs, deterministic=deterministic)
