"""CrossQ's gradient step for a pack of CrossQ members: :meth:`lit_rl.algorithms.crossq.CrossQ.tensor_step`,
batched; each member's BatchRenorm statistics are its own slice of the stacked buffers."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lit_rl.algorithms.crossq import CrossQ, actor_loss, critic_loss
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.nets.noise_source import given_noise
from lit_rl.packed.entropy import PackedEntropy


class PackedCrossQ(PackedEntropy):
    """The gradient steps of ``members`` (CrossQ instances with built networks) as one batched step.

    Per step, as each member's own: a critic step (BatchRenorm in training mode over ``cat([s, s'])``), and every
    ``policy_delay``-th step the entropy-coefficient and actor steps on one sample of ``pi(s)`` (the actor's
    BatchRenorm statistics move once per step, as in the member's own step).
    """

    algorithm = CrossQ
    shared = ("batch_size", "policy_delay", "use_sde", "n_steps", "gradient_steps",
              "train_freq", "learning_starts", "buffer_size")  # fmt: skip
    targets = ()  # no target network

    def __init__(
        self, members: Sequence[CrossQ], generators: Sequence[torch.Generator] | None = None, compile: bool = False
    ) -> None:
        super().__init__(members, generators, compile)
        self.policy_delay = members[0].policy_delay
        policy = self.policy

        def critic(critic_p: dict, fixed: dict, b: tuple, alpha: torch.Tensor, gamma: torch.Tensor,
                   eps: torch.Tensor) -> tuple[torch.Tensor, dict]:  # fmt: skip
            with given_noise([eps]):
                return policy.call({**fixed, **critic_p}, critic_loss, ReplayBatch(*b), alpha, gamma)

        self.critic_grads = self.batched_grad(critic)
        self.actor_grads = self.sampled_actor_grads(actor_loss)

    def noise_shapes(self, batch: ReplayBatch) -> list[tuple[int, ...]]:
        """The actions at ``s'`` (the critic's target) and, on an actor step, at ``s``."""
        actor_step = (self.n_updates + 1) % self.policy_delay == 0
        return [tuple(batch.actions.shape)] * (2 if actor_step else 1)

    def packed_step(self, batch: ReplayBatch, noise: Sequence[torch.Tensor], round_step: int) -> dict:
        self.n_updates += 1
        alpha = self.alpha(self.entropy.tensors).detach()
        discount = self.gamma if batch.discounts is None else batch.discounts
        critic_p, fixed = self.policy.params("critic."), self.policy.others("critic.")
        grads, metrics = self.critic_grads(critic_p, fixed, tuple(batch[:5]), alpha, discount, noise[0])
        self.critic_adam.step(grads)
        metrics["train/ent_coef"] = alpha
        if self.n_updates % self.policy_delay != 0:
            return metrics
        actor_p, others = self.policy.params("actor."), self.policy.others("actor.")
        actor_grads, (actor_metrics, log_prob) = self.actor_grads(actor_p, others, batch.observations, alpha, noise[1])
        if self.entropy_adam is not None:
            grads, metrics["train/ent_coef_loss"] = self.ent_grads(self.entropy.params(), self.entropy.others(""), log_prob)
            self.entropy_adam.step(grads)
        self.actor_adam.step(actor_grads)
        return metrics | actor_metrics
