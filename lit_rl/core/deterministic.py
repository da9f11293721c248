"""The deterministic actor-critic update that TD3 and DDPG share (Stable-Baselines3 makes DDPG a special TD3).

Critic step against ``r + (1 - terminated) * gamma * min_i Q'_i(s', a')`` with
``a' = clip(pi'(s') + clip(eps, -c, c), -1, 1)``, ``eps ~ N(0, target_policy_noise^2)``
and ``c = target_noise_clip``; every ``policy_delay`` critic steps an actor
step on ``-Q_0(s, pi(s))`` (the first critic only), then Polyak updates of the
target actor and critics. TD3 and DDPG differ only in these three settings and
the number of critics; each names its own defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from lit_rl.buffers.replay import ReplayBatch
from lit_rl.core.compiled import compiled, run_update
from lit_rl.core.gradients import frozen
from lit_rl.core.hyperparameters import NO_SDE, NO_SDE_HINT
from lit_rl.core.off_policy import OffPolicyAlgorithm
from lit_rl.nets.noise_source import standard_normal_like
from lit_rl.nets.target import update_target
from lit_rl.policies.td3 import TD3Policy
from lit_rl.utils.checks import check_float, check_int


@dataclass(frozen=True)
class TargetSmoothing:
    """Target policy smoothing: Gaussian noise of std ``noise`` on the target action, clipped to ``[-clip, clip]``."""

    noise: float
    clip: float

    @property
    def active(self) -> bool:
        """False for DDPG (either setting 0): the target action is used as it is, with no random draw."""
        return self.noise > 0 and self.clip > 0


def critic_loss(
    policy: TD3Policy, batch: ReplayBatch, discount: torch.Tensor | float, smoothing: TargetSmoothing
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``sum_i MSE(Q_i(s, a), r + (1 - terminated) * discount * min_i Q'_i(s', a'))``, SB3's (no factor 0.5).

    ``a'`` is the target actor's action at ``s'``, smoothed by ``smoothing``; no gradients through the target.
    """
    with torch.no_grad():
        next_actions = policy.actor_target(batch.next_observations)
        if smoothing.active:
            noise = (standard_normal_like(next_actions) * smoothing.noise).clamp(-smoothing.clip, smoothing.clip)
            next_actions = (next_actions + noise).clamp(-1.0, 1.0)
        next_q = policy.critic_target.q_values(batch.next_observations, next_actions).min(dim=0).values
        target = batch.rewards + (1.0 - batch.terminated) * discount * next_q
    q = policy.critic.q_values(batch.observations, batch.actions)
    losses = [F.mse_loss(q_i, target) for q_i in q]
    loss = sum(losses[1:], losses[0])
    return loss, {"train/critic_loss": loss.detach()}


def actor_loss(policy: TD3Policy, obs: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``-mean Q_0(s, pi(s))``: the first critic only (SB3's ``q1_forward``); no gradient work on critic parameters."""
    with frozen(policy.critic):
        loss = -policy.critic.member_forward(obs, policy.actor(obs), 0).mean()
    return loss, {"train/actor_loss": loss.detach()}


class DeterministicActorCritic(OffPolicyAlgorithm):
    """Base class of :class:`~lit_rl.algorithms.td3.TD3` and :class:`~lit_rl.algorithms.ddpg.DDPG` (the update above).

    A subclass declares (or pins) ``policy_delay``, ``target_policy_noise`` and ``target_noise_clip``.
    Exploration comes from ``action_noise`` (default none, as SB3).
    """

    default_policy_class = TD3Policy
    pinned = NO_SDE
    pinned_hint = NO_SDE_HINT

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        super().set_hyperparameters(hp)
        self.policy_delay = check_int("policy_delay", hp["policy_delay"], minimum=1)
        self.target_policy_noise = check_float("target_policy_noise", hp["target_policy_noise"], 0.0, np.inf,
                                               low_open=False)  # fmt: skip
        self.target_noise_clip = check_float("target_noise_clip", hp["target_noise_clip"], 0.0, np.inf, low_open=False)

    @property
    def target_smoothing(self) -> TargetSmoothing:
        """The smoothing settings as they are now (SB3 users may set ``target_policy_noise`` on the model)."""
        return TargetSmoothing(self.target_policy_noise, self.target_noise_clip)

    def configure_optimizers(self):
        return self.actor_critic_optimizers()

    def gradient_step(self, batch: ReplayBatch) -> dict[str, torch.Tensor]:
        """Critic step; every ``policy_delay`` steps the actor step and the target updates."""
        self.clock.n_updates += 1  # counted first: policy_delay reads the count
        actor_step = self._n_updates % self.policy_delay == 0
        update = DeterministicActorCritic.tensor_step
        return run_update(self, update, batch, self.discounts(batch), self.target_smoothing, actor_step)

    def tensor_step(
        self,
        optimizers: list,
        batch: ReplayBatch,
        discount: torch.Tensor | float,
        smoothing: TargetSmoothing,
        actor_step: bool,
    ) -> dict[str, torch.Tensor]:
        """The gradient step's tensor work (one compiled graph with ``compile`` on: :func:`run_update`)."""
        policy = self.policy
        actor_optimizer, critic_optimizer = optimizers
        loss, metrics = compiled(self, critic_loss)(policy, batch, discount, smoothing)
        self.optimizer_step(critic_optimizer, loss)
        if actor_step:
            loss, actor_metrics = compiled(self, actor_loss, frozen=policy.critic)(policy, batch.observations)
            self.optimizer_step(actor_optimizer, loss)
            metrics |= actor_metrics
            update_target(policy.critic, policy.critic_target, self.tau)
            update_target(policy.actor, policy.actor_target, self.tau)
        return metrics
