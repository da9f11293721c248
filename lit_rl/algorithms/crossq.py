"""CrossQ (Bhatt, Palenicek et al., ICLR 2024): SAC with BatchRenorm and no target network."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from lit_rl.algorithms.entropy import EntropyRegularized
from lit_rl.algorithms.off_policy import OffPolicyAlgorithm
from lit_rl.algorithms.optimizers import make_adam
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.checks import check_int
from lit_rl.policies.crossq import CrossQPolicy


class CrossQ(EntropyRegularized, OffPolicyAlgorithm):
    """CrossQ as in the paper and sb3-contrib 2.9 (``policy_kwargs``: see :class:`CrossQPolicy`).

    The critic sees ``cat([s, s'])`` and ``cat([a, a'])`` in one forward with
    BatchRenorm in training mode, so its batch statistics mix both halves;
    Q(s', a') is detached and used without a target network. The actor and the
    entropy coefficient are updated every ``policy_delay`` critic updates.
    With ``use_sde`` the gSDE features are the actor's last (BatchRenorm-normalised)
    hidden layer, in the same train/eval mode as the rest of the actor.
    """

    default_policy_class = CrossQPolicy
    hyperparameters = {
        "learning_rate": 1e-3,
        "policy_delay": 3,  # critic updates per actor and entropy-coefficient update
    }
    pinned = {"tau": 0.005}  # no target network: sb3-contrib's CrossQ takes no tau
    pinned_hint = "CrossQ has no target network"

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        super().set_hyperparameters(hp)
        self.policy_delay = check_int("policy_delay", hp["policy_delay"], minimum=1)

    def configure_optimizers(self):
        lr = self.initial_learning_rate()
        # betas (0.5, 0.999) for actor and critic as in the paper; the entropy coefficient keeps Adam's defaults.
        betas = self.policy.optimizer_kwargs.get("betas", (0.5, 0.999))
        return [
            make_adam(self.policy.actor.parameters(), lr=lr, betas=betas),
            make_adam(self.policy.critic.parameters(), lr=lr, betas=betas),
            *self.entropy_optimizer(lr),
        ]

    def gradient_step(self, batch: ReplayBatch) -> dict[str, torch.Tensor]:
        """Critic step; every ``policy_delay`` steps the entropy-coefficient and actor steps."""
        actor, critic = self.policy.actor, self.policy.critic
        optimizers = self.optimizers()
        self._n_updates += 1
        if self.use_sde:
            actor.reset_noise()  # one matrix for a' and, on actor steps, for pi(s) (sb3-contrib)
        alpha = self.entropy.value().detach()

        # Critic: next actions from the actor with BatchRenorm in eval mode, no gradients.
        with torch.no_grad():
            actor.set_bn_training_mode(False)
            next_actions, next_log_prob = actor.action_log_prob(batch.next_observations)
        # One joint forward over (s, a) and (s', a'): BatchRenorm statistics see both halves.
        critic.set_bn_training_mode(True)
        q_all = critic.q_values(
            torch.cat([batch.observations, batch.next_observations]), torch.cat([batch.actions, next_actions])
        )
        q, q_next = q_all.split(batch.rewards.shape[0], dim=1)
        with torch.no_grad():
            next_v = q_next.min(dim=0).values - alpha * next_log_prob
            target = batch.rewards + (1.0 - batch.terminated) * self.discounts(batch) * next_v
        critic_loss = 0.5 * sum(F.mse_loss(q_i, target) for q_i in q)
        optimizers[1].zero_grad(set_to_none=True)
        self.manual_backward(critic_loss)
        optimizers[1].step()
        metrics = {"train/critic_loss": critic_loss, "train/ent_coef": alpha}
        if self._n_updates % self.policy_delay != 0:
            return metrics

        # Entropy coefficient, then actor (BatchRenorm in train mode) against the critics in eval mode.
        actor.set_bn_training_mode(True)
        actions, log_prob = actor.action_log_prob(batch.observations)
        if self.entropy.learned:
            metrics["train/ent_coef_loss"] = self.entropy.step(log_prob, optimizers[2], self.manual_backward)
        critic.set_bn_training_mode(False)
        critic.requires_grad_(False)  # the actor loss must not spend work on critic gradients
        q_pi = critic.q_values(batch.observations, actions).min(dim=0).values
        critic.requires_grad_(True)
        actor_loss = (alpha * log_prob - q_pi).mean()
        optimizers[0].zero_grad(set_to_none=True)
        self.manual_backward(actor_loss)
        optimizers[0].step()
        metrics["train/actor_loss"] = actor_loss
        return metrics
