"""CrossQ's policy: an actor and critics with BatchRenorm layers and no target network."""

from __future__ import annotations

import torch

from lit_rl.policies.actor_critic import BATCH_RENORM_ARGUMENTS, Actor, CrossQCritic
from lit_rl.policies.sac import SACPolicy

__all__ = ["Actor", "CrossQCritic", "CrossQPolicy"]


class CrossQPolicy(SACPolicy):
    """``actor`` (:class:`Actor`) and ``critic`` (:class:`CrossQCritic`), as sb3-contrib's CrossQPolicy.

    SAC's policy with BatchRenorm layers (``batch_norm`` ...) in both networks and no target critic.
    ``full_std`` (gSDE) is lit_rl's addition to sb3-contrib's arguments.
    """

    hyperparameters = BATCH_RENORM_ARGUMENTS
    default_net_arch = {"pi": [256, 256], "qf": [1024, 1024]}
    critic_class = CrossQCritic
    critic: CrossQCritic  # what make_critic builds from critic_class
    has_target_critic = False

    def _predict(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        # Rollouts and evaluation use BatchRenorm's running statistics.
        self.actor.set_bn_training_mode(False)
        return self.actor(obs, deterministic=deterministic)

    def set_training_mode(self, mode: bool) -> None:
        """Training (True) or evaluation mode of both networks, BatchRenorm included."""
        self.train(mode)
