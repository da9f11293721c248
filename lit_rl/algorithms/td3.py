"""TD3 (Fujimoto et al., 2018): twin delayed DDPG with target policy smoothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from lit_rl.algorithms.hyperparameters import NO_SDE, NO_SDE_HINT
from lit_rl.algorithms.off_policy import OffPolicyAlgorithm
from lit_rl.algorithms.optimizers import make_adam
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.checks import check_float, check_int
from lit_rl.nets.target import update_target
from lit_rl.policies.td3 import TD3Policy


class TD3(OffPolicyAlgorithm):
    """Twin Delayed DDPG as in Stable-Baselines3 2.x (``policy_kwargs``: see :class:`TD3Policy`).

    Per gradient step: critic step against
    ``r + (1 - terminated) * gamma * min_i Q'_i(s', clip(pi'(s') + clip(eps, -c, c), -1, 1))``
    with ``eps ~ N(0, target_policy_noise^2)`` and ``c = target_noise_clip``;
    every ``policy_delay`` steps an actor step on ``-Q_0(s, pi(s))`` (the first
    critic only) followed by Polyak updates of the target actor and critics.
    Exploration comes from ``action_noise`` (default none, as SB3).
    """

    default_policy_class = TD3Policy
    hyperparameters = {
        "learning_rate": 1e-3,
        "policy_delay": 2,  # critic updates per actor (and target) update
        "target_policy_noise": 0.2,  # smoothing noise on the target action ...
        "target_noise_clip": 0.5,  # ... clipped to this range
    }
    pinned = NO_SDE
    pinned_hint = NO_SDE_HINT

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        super().set_hyperparameters(hp)
        self.policy_delay = check_int("policy_delay", hp["policy_delay"], minimum=1)
        self.target_policy_noise = check_float("target_policy_noise", hp["target_policy_noise"], 0.0, np.inf,
                                               low_open=False)  # fmt: skip
        self.target_noise_clip = check_float("target_noise_clip", hp["target_noise_clip"], 0.0, np.inf, low_open=False)

    def configure_optimizers(self):
        lr, kwargs = self.initial_learning_rate(), self.policy.optimizer_kwargs
        return [
            make_adam(self.policy.actor.parameters(), lr=lr, **kwargs),
            make_adam(self.policy.critic.parameters(), lr=lr, **kwargs),
        ]

    def gradient_step(self, batch: ReplayBatch) -> dict[str, torch.Tensor]:
        """Critic step; every ``policy_delay`` steps the actor step and the target updates."""
        policy = self.policy
        actor_opt, critic_opt = self.optimizers()
        self._n_updates += 1

        # Critic: target policy smoothing, then the minimum over the target critics, no gradients.
        with torch.no_grad():
            next_actions = policy.actor_target(batch.next_observations)
            if self.target_policy_noise > 0 and self.target_noise_clip > 0:
                noise = torch.randn_like(next_actions) * self.target_policy_noise
                next_actions = (next_actions + noise.clamp(-self.target_noise_clip, self.target_noise_clip)).clamp(
                    -1.0, 1.0
                )
            next_q = policy.critic_target.q_values(batch.next_observations, next_actions).min(dim=0).values
            target = batch.rewards + (1.0 - batch.terminated) * self.discounts(batch) * next_q
        q = policy.critic.q_values(batch.observations, batch.actions)
        critic_loss = sum(F.mse_loss(q_i, target) for q_i in q)  # SB3's TD3: no factor 0.5
        critic_opt.zero_grad(set_to_none=True)
        self.manual_backward(critic_loss)
        critic_opt.step()
        metrics = {"train/critic_loss": critic_loss}

        if self._n_updates % self.policy_delay == 0:
            # Actor: the first critic only (SB3's q1_forward); no gradient work on critic parameters.
            policy.critic.requires_grad_(False)
            actor_loss = -policy.critic.member_forward(batch.observations, policy.actor(batch.observations), 0).mean()
            policy.critic.requires_grad_(True)
            actor_opt.zero_grad(set_to_none=True)
            self.manual_backward(actor_loss)
            actor_opt.step()
            metrics["train/actor_loss"] = actor_loss
            update_target(policy.critic, policy.critic_target, self.tau)
            update_target(policy.actor, policy.actor_target, self.tau)
        return metrics
