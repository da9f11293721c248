"""TQC's gradient step for a pack of TQC members: :meth:`lit_rl.algorithms.tqc.TQC.tensor_step`, batched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.func import vmap

from lit_rl.algorithms.tqc import TQC, actor_loss, critic_loss
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.core.entropy import policy_samples
from lit_rl.nets.noise_source import given_noise
from lit_rl.packed.entropy import PackedEntropy


class PackedTQC(PackedEntropy):
    """The gradient steps of ``members`` (TQC instances with target critics) as one batched step.

    Per step, in TQC's order: on every ``policy_delay``-th step the actions at ``s`` and the entropy-coefficient
    step; the critics' quantile Huber loss against the truncated target mixture; the actor step; then the targets
    every ``target_update_interval``-th step. TQC without target critics (BatchRenorm critics) is refused.
    """

    algorithm = TQC
    shared = ("batch_size", "target_update_interval", "use_sde", "n_steps",
              "gradient_steps", "train_freq", "learning_starts", "buffer_size", "policy_delay",
              "top_quantiles_to_drop_per_net")  # fmt: skip
    targets = ("critic",)

    def __init__(
        self, members: Sequence[TQC], generators: Sequence[torch.Generator] | None = None, compile: bool = False
    ) -> None:
        if not members[0].policy.has_target_critic:
            raise ValueError("TQC without target critics (BatchRenorm critics) has no packed update; allowed: TQC "
                             "with its target critics (the default)")  # fmt: skip
        super().__init__(members, generators, compile)
        self.policy_delay = members[0].policy_delay
        self.target_update_interval = members[0].target_update_interval
        n_target = members[0].n_target_quantiles
        policy = self.policy

        def critic(critic_p: dict, fixed: dict, b: tuple, alpha: torch.Tensor, gamma: torch.Tensor,
                   eps: torch.Tensor) -> tuple[torch.Tensor, dict]:  # fmt: skip
            with given_noise([eps]):
                return policy.call({**fixed, **critic_p}, critic_loss, ReplayBatch(*b), alpha, gamma, n_target)

        def sample(actor_p: dict, obs: torch.Tensor, eps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            with given_noise([eps]):
                return policy.call(actor_p, policy_samples, obs)

        self.sample_actions = vmap(sample)
        self.critic_grads = self.batched_grad(critic)
        self.actor_grads = self.sampled_actor_grads(actor_loss)

    def policy_step(self, n_updates: int) -> bool:
        return n_updates % self.policy_delay == 0

    def noise_shapes(self, batch: ReplayBatch) -> list[tuple[int, ...]]:
        """On an actor step the actions at ``s`` (drawn first), then those at ``s'`` (the critics' target)."""
        return [tuple(batch.actions.shape)] * (2 if self.policy_step(self.n_updates + 1) else 1)

    def packed_step(self, batch: ReplayBatch, noise: Sequence[torch.Tensor], round_step: int) -> dict:
        self.n_updates += 1
        policy_step = self.policy_step(self.n_updates)
        alpha = self.alpha(self.entropy.tensors).detach()  # read before its own step, as TQC's
        metrics: dict[str, Any] = {"train/ent_coef": alpha}
        if policy_step and self.entropy_adam is not None:
            actor_tensors = {n: t for n, t in self.policy.tensors.items() if n.startswith("actor.")}
            _, log_prob = self.sample_actions(actor_tensors, batch.observations, noise[0])
            grads, metrics["train/ent_coef_loss"] = self.ent_grads(self.entropy.params(), self.entropy.others(""), log_prob.detach())
            self.entropy_adam.step(grads)
        discount = self.gamma if batch.discounts is None else batch.discounts
        critic_p, fixed = self.policy.params("critic."), self.policy.others("critic.")
        grads, critic_metrics = self.critic_grads(critic_p, fixed, tuple(batch[:5]), alpha, discount, noise[-1])
        self.critic_adam.step(grads)
        metrics |= critic_metrics
        if policy_step:  # the same draw as the entropy step's: the actor has not moved since
            actor_p, others = self.policy.params("actor."), self.policy.others("actor.")
            grads, (actor_metrics, _) = self.actor_grads(actor_p, others, batch.observations, alpha, noise[0])
            self.actor_adam.step(grads)
            metrics |= actor_metrics
        if round_step % self.target_update_interval == 0:
            self.update_targets()
        return metrics
