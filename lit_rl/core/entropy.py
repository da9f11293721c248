"""The entropy coefficient of maximum-entropy algorithms (SAC, CrossQ): fixed or learned."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from lit_rl.core.host import AlgorithmHost
from lit_rl.core.optimizers import make_adam


class EntropyCoefficient(nn.Module):
    """alpha in ``Q - alpha * log pi``.

    ``ent_coef="auto"`` learns ``log alpha`` (initial alpha 1.0, or
    ``"auto_0.1"`` for 0.1) towards ``target_entropy`` (``"auto"`` =
    ``-action_dim``); a number keeps alpha fixed.
    """

    fixed_ent_coef: torch.Tensor  # a registered buffer, for a fixed coefficient
    # A buffer, not in the state_dict (it is a setting): a pack's stacked tensors hold each member's own.
    target_entropy: torch.Tensor

    def __init__(self, ent_coef: str | float, target_entropy: str | float, action_dim: int) -> None:
        super().__init__()
        self.check(ent_coef, target_entropy)
        target = -float(action_dim) if target_entropy == "auto" else float(target_entropy)
        self.register_buffer("target_entropy", torch.tensor(target), persistent=False)
        self.learned = isinstance(ent_coef, str)
        if isinstance(ent_coef, str):
            init = float(ent_coef.split("_", 1)[1]) if "_" in ent_coef else 1.0
            self.log_ent_coef = nn.Parameter(torch.tensor(math.log(init)))
        else:
            self.register_buffer("fixed_ent_coef", torch.tensor(float(ent_coef)))

    @staticmethod
    def check(ent_coef: str | float, target_entropy: str | float) -> None:
        """Raise a ValueError naming the value unless both settings are valid."""
        if isinstance(ent_coef, str):
            ok = ent_coef == "auto"
            if ent_coef.startswith("auto_"):
                try:
                    ok = float(ent_coef[5:]) > 0
                except ValueError:
                    ok = False
            if not ok:
                raise ValueError(
                    f"ent_coef={ent_coef!r} is not allowed; allowed: 'auto', 'auto_<initial value>' or a number >= 0"
                )
        elif isinstance(ent_coef, bool) or not isinstance(ent_coef, (int, float)) or ent_coef < 0:
            raise ValueError(
                f"ent_coef={ent_coef!r} is not allowed; allowed: 'auto', 'auto_<initial value>' or a number >= 0"
            )
        if target_entropy != "auto" and (
            isinstance(target_entropy, (str, bool)) or not isinstance(target_entropy, (int, float))
        ):
            raise ValueError(f"target_entropy={target_entropy!r} is not allowed; allowed: 'auto' or a number")

    def value(self) -> torch.Tensor:
        """The current alpha (a scalar tensor)."""
        return self.log_ent_coef.exp() if self.learned else self.fixed_ent_coef

    def loss(self, log_prob: torch.Tensor) -> torch.Tensor:
        """``-log alpha * (log pi + target_entropy)``, averaged: raises alpha when entropy is too low."""
        return -(self.log_ent_coef * (log_prob.detach() + self.target_entropy)).mean()


def policy_samples(policy: Any, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``a ~ pi(s)`` and ``log pi(a|s)`` with the actor's BatchRenorm (if any) in train mode: the samples the
    entropy-coefficient and actor losses of CrossQ and TQC share."""
    policy.actor.set_bn_training_mode(True)
    return policy.actor.action_log_prob(obs)


class EntropyRegularized(AlgorithmHost):
    """Mixin of the maximum-entropy algorithms (SAC, CrossQ): ``ent_coef`` / ``target_entropy`` and ``self.entropy``."""

    # SB3's attributes: the learned log of the coefficient (None for a fixed one), and a fixed one as a tensor.
    log_ent_coef = property(lambda self: self.entropy.log_ent_coef if self.entropy.learned else None)
    ent_coef_tensor = property(lambda self: None if self.entropy.learned else self.entropy.fixed_ent_coef)

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        super().set_hyperparameters(hp)
        EntropyCoefficient.check(hp["ent_coef"], hp["target_entropy"])
        self.ent_coef, self.target_entropy = hp["ent_coef"], hp["target_entropy"]

    def build_networks(self, observation_space: Any, action_space: Any) -> None:
        super().build_networks(observation_space, action_space)
        self.entropy = EntropyCoefficient(self.ent_coef, self.target_entropy, self.policy.action_dim)

    def entropy_optimizer(self, lr: float) -> list[torch.optim.Optimizer]:
        """Adam (default betas) for a learned coefficient, whatever ``optimizer_class`` (as SB3); nothing for a fixed one."""
        return [make_adam(self.entropy.parameters(), lr=lr)] if self.entropy.learned else []

    def batch_norm_betas(self) -> bool:
        """Whether the actor and critic optimizers take CrossQ's Adam betas (networks with BatchRenorm)."""
        return False

    def configure_optimizers(self):
        return [
            *self.actor_critic_optimizers(self.batch_norm_betas()),
            *self.entropy_optimizer(self.initial_learning_rate()),
        ]
