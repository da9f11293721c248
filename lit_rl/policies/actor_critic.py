"""The actor and critic modules of the actor-critic policies (SAC, CrossQ, TD3, DDPG), as SB3 names them."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

from lit_rl.nets.actors import DeterministicActor, SquashedGaussianActor
from lit_rl.nets.critics import QEnsemble
from lit_rl.nets.mlp import activation_class
from lit_rl.nets.net_options import net_options
from lit_rl.policies.base import set_bn_training_mode
from lit_rl.policies.features import FeatureExtraction
from lit_rl.utils.declared import REQUIRED, Hyperparameters

# Arguments of every network module, as SB3's.
NETWORK_ARGUMENTS: dict[str, Any] = {
    "observation_space": REQUIRED,
    "action_space": REQUIRED,
    "net_arch": REQUIRED,
    "features_extractor": None,  # None: a flatten (Dict spaces: one per key)
    "features_dim": None,  # None: the extractor's features_dim
    "activation_fn": nn.ReLU,
    "normalize_images": True,
    "net": None,  # network options (residual, dropout, layer_norm, weight_norm, critic_head): lit_rl/nets/net_options.py
}
# gSDE (generalized state-dependent exploration) options of the squashed Gaussian actor, SB3's defaults.
SDE_ARGUMENTS: dict[str, Any] = {
    "use_sde": False,
    "log_std_init": -3.0,  # initial log std of the exploration matrix's entries
    "full_std": True,  # one std per (feature, action); False: per feature
    "use_expln": False,  # expln instead of exp keeps the std from exploding
    "clip_mean": 2.0,  # clamp the pre-tanh mean to [-2, 2]; 0 disables
}
# BatchRenorm layers (CrossQ), sb3-contrib's defaults.
BATCH_RENORM_ARGUMENTS: dict[str, Any] = {
    "batch_norm": True,
    "batch_norm_momentum": 0.01,
    "batch_norm_eps": 0.001,
    "renorm_warmup_steps": 100_000,
}


def action_dim(hp: dict[str, Any]) -> int:
    """Size of a (Box) action."""
    return int(np.prod(hp["action_space"].shape))


def batch_renorm_options(hp: dict[str, Any]) -> dict[str, Any] | None:
    """The ``batch_norm`` argument of :func:`~lit_rl.nets.mlp.build_mlp` (None: no BatchRenorm)."""
    if not hp.get("batch_norm", False):
        return None
    return {"momentum": hp["batch_norm_momentum"], "eps": hp["batch_norm_eps"], "warmup_steps": hp["renorm_warmup_steps"]}


class Actor(FeatureExtraction, Hyperparameters, SquashedGaussianActor):
    """Squashed Gaussian actor of SAC and CrossQ (BatchRenorm layers with ``batch_norm``); gSDE with ``use_sde``.

    Its ``features_extractor`` runs before ``latent_pi`` (see :class:`FeatureExtraction`).
    """

    squash_output = True  # tanh-squashed Gaussian (SB3)

    hyperparameters = {**NETWORK_ARGUMENTS, **SDE_ARGUMENTS, **BATCH_RENORM_ARGUMENTS}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        hp = self.bind_hyperparameters(args, kwargs)
        extractor, features_dim = self.extractor_and_dim(hp)
        sde = {k: hp[k] for k in SDE_ARGUMENTS}  # by name: SDE_ARGUMENTS' keys are the actor's parameters
        super().__init__(features_dim, action_dim(hp), list(hp["net_arch"]), activation_class(hp["activation_fn"]),
                         batch_renorm_options(hp), **sde, options=net_options(hp["net"]).actor_options())  # fmt: skip
        self.attach_features_extractor(extractor, hp)

    # Every forward path (actions, log-probabilities, gSDE latents) starts in one of these two.
    def latent_and_mean(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The last hidden features and the mean of the pre-squash Gaussian."""
        return super().latent_and_mean(self.extract_features(obs))

    def distribution_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log standard deviation (clamped) of the pre-squash Gaussian (without gSDE)."""
        return super().distribution_params(self.extract_features(obs))

    def get_std(self) -> torch.Tensor:
        """Standard deviation of the gSDE exploration matrix's entries (gSDE only)."""
        if not self.use_sde:
            raise ValueError("get_std() needs use_sde=True; this actor's std depends on the observation")
        return self.action_dist.weight_std()

    def get_action_dist_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """Mean and log std of the pre-squash Gaussian, and gSDE's ``latent_sde`` when it is used."""
        if self.use_sde:
            latent, mean = self.latent_and_mean(obs)
            return mean, self.action_dist.log_std, {"latent_sde": latent}
        mean, log_std = self.distribution_params(obs)
        return mean, log_std, {}

    def set_bn_training_mode(self, mode: bool) -> None:
        """Train (True: batch statistics, running averages move) or evaluate the BatchRenorm layers."""
        set_bn_training_mode(self, mode)


class DeterministicPolicyActor(FeatureExtraction, Hyperparameters, DeterministicActor):
    """``tanh(MLP(features(obs)))`` actor of TD3 and DDPG (SB3's TD3 ``Actor``)."""

    squash_output = True  # tanh output (SB3)

    hyperparameters = NETWORK_ARGUMENTS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        hp = self.bind_hyperparameters(args, kwargs)
        extractor, features_dim = self.extractor_and_dim(hp)
        super().__init__(features_dim, action_dim(hp), list(hp["net_arch"]), activation_class(hp["activation_fn"]),
                         options=net_options(hp["net"]).actor_options())  # fmt: skip
        self.attach_features_extractor(extractor, hp)

    def forward(self, obs: torch.Tensor, deterministic: bool = True) -> torch.Tensor:
        return super().forward(self.extract_features(obs))


class CriticFeatures(FeatureExtraction):
    """The shared-extractor rules of every critic (:class:`ContinuousCritic`, TQC's ``QuantileCritic``), whatever the head.

    With ``share_features_extractor`` the extractor is the actor's, as in SB3: the critic
    losses do not train it (features without gradients), and :meth:`requires_grad_`
    (freezing the critic for the actor loss) leaves it alone.
    """

    def critic_features(self, obs: torch.Tensor) -> torch.Tensor:
        """Features for the Q-networks; no gradient reaches a shared extractor (SB3: the actor loss trains it)."""
        if self.features_are_observations:
            return self.extract_features(obs)
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.share_features_extractor):
            return self.extract_features(obs)

    def own_parameters(self) -> list[nn.Parameter]:
        """The parameters this critic trains: all but a shared extractor's (SB3's critic optimizer)."""
        if not self.share_features_extractor:
            return list(self.parameters())
        return [p for name, p in self.named_parameters() if not name.startswith("features_extractor.")]

    def requires_grad_(self: _Critic, requires_grad: bool = True) -> _Critic:
        for param in self.own_parameters():
            param.requires_grad_(requires_grad)
        return self


_Critic = TypeVar("_Critic", bound=CriticFeatures)


class ContinuousCritic(CriticFeatures, Hyperparameters, QEnsemble):
    """``n_critics`` Q(s, a) networks fused into batched matmuls (SAC, TD3, DDPG).

    ``forward`` returns a tuple of per-critic ``(batch, 1)`` tensors, as SB3; they are views
    of :meth:`q_values`' fused ``(n_critics, batch)`` output, which the updates use.

    With ``share_features_extractor`` the extractor is the actor's, as in SB3: the critic
    losses do not train it (features without gradients), and :meth:`requires_grad_`
    (freezing the critic for the actor loss) leaves it alone.
    """

    hyperparameters = {**NETWORK_ARGUMENTS, "n_critics": 2, "share_features_extractor": True}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        hp = self.bind_hyperparameters(args, kwargs)
        extractor, features_dim = self.extractor_and_dim(hp)
        super().__init__(features_dim, action_dim(hp), list(hp["net_arch"]), hp["n_critics"],
                         activation_class(hp["activation_fn"]), batch_renorm_options(hp), net_options(hp["net"]))  # fmt: skip
        self.attach_features_extractor(extractor, hp)
        self.share_features_extractor = bool(hp["share_features_extractor"])

    def q_values(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """All critics' Q-values in one pass, shape ``(n_critics, batch)``."""
        return super().forward(self.critic_features(obs), actions)

    def q_outputs(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The networks' outputs (Q-values, or a categorical head's logits) for :meth:`td_loss` and :meth:`expected_q`."""
        return self.outputs(self.critic_features(obs), actions)

    def member_forward(self, obs: torch.Tensor, actions: torch.Tensor, index: int = 0) -> torch.Tensor:
        """Q-values of critic ``index`` alone (TD3's actor loss); features without gradients, as SB3's ``q1_forward``."""
        if self.features_are_observations:
            return super().member_forward(self.extract_features(obs), actions, index)
        with torch.no_grad():
            features = self.extract_features(obs)
        return super().member_forward(features, actions, index)

    # SB3's ContinuousCritic.forward returns one (batch, 1) tensor per critic, not QEnsemble's fused tensor.
    def forward(  # type: ignore[override]  # SB3's per-critic tuple, not QEnsemble's fused tensor
        self, obs: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return tuple(self.q_values(obs, actions).unsqueeze(-1).unbind(0))


class CrossQCritic(ContinuousCritic):
    """CrossQ's critics: :class:`ContinuousCritic` with BatchRenorm layers (``batch_norm``)."""

    hyperparameters = BATCH_RENORM_ARGUMENTS

    def set_bn_training_mode(self, mode: bool) -> None:
        """Train (True: batch statistics, running averages move) or evaluate the BatchRenorm layers."""
        set_bn_training_mode(self, mode)
