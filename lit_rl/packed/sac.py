"""SAC's gradient step for a pack of SAC members: :meth:`lit_rl.algorithms.sac.SAC.tensor_step`, batched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.func import vmap

from lit_rl.algorithms.sac import SAC, actor_loss, critic_loss
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.nets.noise_source import given_noise
from lit_rl.packed.entropy import PackedEntropy


class PackedSAC(PackedEntropy):
    """The gradient steps of ``members`` (SAC instances with built networks) as one batched step.

    Per step, in SAC's order: entropy-coefficient, critic and actor steps, then the targets every
    ``target_update_interval``-th step, each a ``vmap`` of SAC's own loss over the members' stacked tensors.
    Member ``i``'s networks change as its own :meth:`~lit_rl.algorithms.sac.SAC.gradient_step` would change them
    given the same batch and the same noise.
    """

    algorithm = SAC
    shared = ("batch_size", "target_update_interval", "use_sde", "n_steps",
              "gradient_steps", "train_freq", "learning_starts", "buffer_size")  # fmt: skip
    targets = ("critic",)

    def __init__(
        self, members: Sequence[SAC], generators: Sequence[torch.Generator] | None = None, compile: bool = False
    ) -> None:
        super().__init__(members, generators, compile)
        self.target_update_interval = members[0].target_update_interval
        policy = self.policy

        def sample(actor_p: dict, obs: torch.Tensor, eps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            with given_noise([eps]):
                return policy.call(actor_p, lambda p, o: p.actor.action_log_prob(o), obs)

        def critic(critic_p: dict, fixed: dict, b: tuple, alpha: torch.Tensor, gamma: torch.Tensor,
                   eps: torch.Tensor) -> tuple[torch.Tensor, dict]:  # fmt: skip
            with given_noise([eps]):
                return policy.call({**fixed, **critic_p}, critic_loss, ReplayBatch(*b), alpha, gamma)

        def actor(actor_p: dict, others: dict, obs: torch.Tensor, alpha: torch.Tensor, eps: torch.Tensor) -> tuple:
            def loss_of(p: Any, obs: torch.Tensor) -> tuple[torch.Tensor, dict]:
                with given_noise([eps]):
                    acts, lp = p.actor.action_log_prob(obs)  # the same draw as the sample: the actor has not moved
                return actor_loss(p, obs, acts, lp, alpha)

            return policy.call({**others, **actor_p}, loss_of, obs)

        self.sample_actions = vmap(sample)
        self.critic_grads = self.batched_grad(critic)
        self.actor_grads = self.batched_grad(actor)

    def noise_shapes(self, batch: ReplayBatch) -> list[tuple[int, ...]]:
        """The actions sampled at ``s`` (entropy and actor losses) and at ``s'`` (the critic's target)."""
        return [tuple(batch.actions.shape), tuple(batch.actions.shape)]

    def packed_step(self, batch: ReplayBatch, noise: Sequence[torch.Tensor], round_step: int) -> dict:
        self.n_updates += 1
        obs_noise, next_noise = noise
        actor_tensors = {n: t for n, t in self.policy.tensors.items() if n.startswith("actor.")}
        _, log_prob = self.sample_actions(actor_tensors, batch.observations, obs_noise)
        alpha = self.alpha(self.entropy.tensors).detach()
        metrics = {"train/ent_coef": alpha}
        if self.entropy_adam is not None:
            grads, metrics["train/ent_coef_loss"] = self.ent_grads(self.entropy.params(), self.entropy.others(""), log_prob.detach())
            self.entropy_adam.step(grads)

        fixed = self.policy.others("critic.")
        discount = self.gamma if batch.discounts is None else batch.discounts
        critic_p = self.policy.params("critic.")
        grads, critic_metrics = self.critic_grads(critic_p, fixed, tuple(batch[:5]), alpha, discount, next_noise)
        self.critic_adam.step(grads)

        others = self.policy.others("actor.")
        actor_p = self.policy.params("actor.")
        grads, actor_metrics = self.actor_grads(actor_p, others, batch.observations, alpha, obs_noise)
        self.actor_adam.step(grads)
        if round_step % self.target_update_interval == 0:
            self.update_targets()
        return metrics | critic_metrics | actor_metrics
