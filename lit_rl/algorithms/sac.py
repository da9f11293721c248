"""SAC (Haarnoja et al., 2018): soft actor-critic with twin critics, target critics and a learned temperature."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from lit_rl.algorithms.entropy import EntropyRegularized
from lit_rl.algorithms.off_policy import OffPolicyAlgorithm
from lit_rl.algorithms.optimizers import make_adam
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.checks import check_int
from lit_rl.nets.target import update_target
from lit_rl.policies.sac import SACPolicy


class SAC(EntropyRegularized, OffPolicyAlgorithm):
    """Soft Actor-Critic as in Stable-Baselines3 2.x (``policy_kwargs``: see :class:`SACPolicy`).

    Per gradient step, in SB3's order: entropy-coefficient step (on the
    log-probability of fresh actions pi(s)), critic step against
    ``r + (1 - terminated) * gamma * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))``
    with ``a' ~ pi(s')`` and the target critics Q', actor step on
    ``alpha * log pi(a|s) - min_i Q_i(s, a)``, then a Polyak update of the
    target critics on every ``target_update_interval``-th gradient step
    counted, as SB3 counts them, from 0 within the gradient steps that follow
    one rollout (SB3's ``train`` call): the first step after each rollout
    always updates them, so with ``gradient_steps=1`` every step does.
    ``use_sde`` explores with gSDE instead of independent Gaussian noise per step.
    """

    default_policy_class = SACPolicy
    hyperparameters = {
        "target_update_interval": 1,  # every N-th gradient step after each rollout, counted from 0 (SB3)
    }

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        super().set_hyperparameters(hp)
        self.target_update_interval = check_int("target_update_interval", hp["target_update_interval"], minimum=1)

    def configure_optimizers(self):
        lr, kwargs = self.initial_learning_rate(), self.policy.optimizer_kwargs
        return [
            make_adam(self.policy.actor.parameters(), lr=lr, **kwargs),
            make_adam(self.policy.critic.parameters(), lr=lr, **kwargs),
            *self.entropy_optimizer(lr),
        ]

    def gradient_step(self, batch: ReplayBatch) -> dict[str, torch.Tensor]:
        """Entropy-coefficient, critic and actor steps, then (every ``target_update_interval``) the targets."""
        actor, critic, critic_target = self.policy.actor, self.policy.critic, self.policy.critic_target
        optimizers = self.optimizers()
        self._n_updates += 1
        if self.use_sde:
            actor.reset_noise()

        # Fresh actions for the entropy and actor losses; alpha is read before its own step (SB3).
        actions_pi, log_prob = actor.action_log_prob(batch.observations)
        alpha = self.entropy.value().detach()
        metrics = {"train/ent_coef": alpha}
        if self.entropy.learned:
            metrics["train/ent_coef_loss"] = self.entropy.step(log_prob, optimizers[2], self.manual_backward)

        # Critic: soft Bellman target from the target critics, no gradients.
        with torch.no_grad():
            next_actions, next_log_prob = actor.action_log_prob(batch.next_observations)
            next_q = critic_target.q_values(batch.next_observations, next_actions).min(dim=0).values
            target = batch.rewards + (1.0 - batch.terminated) * self.discounts(batch) * (next_q - alpha * next_log_prob)
        q = critic.q_values(batch.observations, batch.actions)
        critic_loss = 0.5 * sum(F.mse_loss(q_i, target) for q_i in q)
        optimizers[1].zero_grad(set_to_none=True)
        self.manual_backward(critic_loss)
        optimizers[1].step()
        metrics["train/critic_loss"] = critic_loss

        # Actor: against the just-updated critics; no gradient work on critic parameters.
        critic.requires_grad_(False)
        q_pi = critic.q_values(batch.observations, actions_pi).min(dim=0).values
        critic.requires_grad_(True)
        actor_loss = (alpha * log_prob - q_pi).mean()
        optimizers[0].zero_grad(set_to_none=True)
        self.manual_backward(actor_loss)
        optimizers[0].step()
        metrics["train/actor_loss"] = actor_loss

        # SB3 tests its loop index within one train call, not the total number of updates.
        if self.round_gradient_step % self.target_update_interval == 0:
            update_target(critic, critic_target, self.tau)
        return metrics
