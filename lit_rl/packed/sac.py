"""SAC's gradient step for a pack of SAC members: :meth:`lit_rl.algorithms.sac.SAC.tensor_step`, batched."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.func import grad, vmap

from lit_rl.algorithms.sac import SAC, actor_loss, critic_loss
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.nets.noise_source import given_noise
from lit_rl.packed.members import check_members, per_member, stacked_adam
from lit_rl.packed.stack import Stack

# Settings a SAC pack shares; learning_rate, tau and gamma may differ (lit_rl.packed.members.PER_MEMBER).
SHARED = ("batch_size", "ent_coef", "target_entropy", "target_update_interval", "use_sde", "n_steps",
          "gradient_steps", "train_freq", "learning_starts", "buffer_size")  # fmt: skip


class PackedSAC:
    """The gradient steps of ``members`` (SAC instances with built networks) as one batched step.

    Per step, in SAC's order: entropy-coefficient, critic and actor steps, then the targets every
    ``target_update_interval``-th step, each a ``vmap`` of SAC's own loss over the members' stacked tensors.
    Member ``i``'s networks change as its own :meth:`~lit_rl.algorithms.sac.SAC.gradient_step` would change them
    given the same batch and the same noise.
    """

    def __init__(self, members: Sequence[SAC]) -> None:
        check_members(members, SAC, SHARED)
        if members[0].use_sde:
            raise ValueError("use_sde=True: gSDE's exploration matrices are not packed yet; allowed: use_sde=False")
        self.members = list(members)
        self.policy = Stack([m.policy for m in members], "policy")
        self.entropy = Stack([m.entropy for m in members], "ent_coef")
        self.learned = members[0].entropy.learned
        self.actor_adam = stacked_adam(members, self.policy, "actor.", 0)
        self.critic_adam = stacked_adam(members, self.policy, "critic.", 1)
        self.entropy_adam = stacked_adam(members, self.entropy, "", 2) if self.learned else None
        self.tau = per_member([m.tau for m in members])
        self.gamma = per_member([m.gamma for m in members])
        self.target_update_interval = members[0].target_update_interval
        self.critic_names = list(self.policy.params("critic.")) + [
            n for n in self.policy.tensors if n.startswith("critic.") and n not in self.policy.param_names
        ]
        self.n_updates = 0

    def noise_shapes(self, batch: ReplayBatch) -> list[tuple[int, ...]]:
        """The standard normal draws of one step (member axis first): the actions at ``s`` and at ``s'``."""
        shape = (self.policy.size, *batch.actions.shape[1:])
        return [shape, shape]

    def draw_noise(self, batch: ReplayBatch, generators: Sequence[torch.Generator]) -> list[torch.Tensor]:
        """One step's noise, each member's from its own generator, in the order its own step draws it."""
        draws = [[torch.randn(s[1:], generator=g) for g in generators] for s in self.noise_shapes(batch)]
        return [torch.stack(d) for d in draws]

    def gradient_step(self, batch: ReplayBatch, noise: Sequence[torch.Tensor], round_step: int = 0) -> dict:
        """One step of every member on its slice of ``batch`` (member axis first) with ``noise``
        (:meth:`draw_noise`); ``round_step`` counts the steps since the last rollout, as SAC's targets read it."""
        self.n_updates += 1
        policy, entropy = self.policy, self.entropy
        obs_noise, next_noise = noise
        actor_p = {n: t for n, t in policy.tensors.items() if n.startswith("actor.")}

        def sample(actor_p: dict, obs: torch.Tensor, eps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            with given_noise([eps]):
                return policy.call(actor_p, lambda p, o: p.actor.action_log_prob(o), obs)

        actions, log_prob = vmap(sample)(actor_p, batch.observations, obs_noise)
        alpha = vmap(lambda e: entropy.call(e, lambda m: m.value()))(entropy.tensors).detach()
        metrics = {"train/ent_coef": alpha}
        if self.learned:

            def ent_loss(e: dict, log_prob: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                loss = entropy.call(e, lambda m, lp: m.loss(lp), log_prob)
                return loss, loss.detach()

            grads, metrics["train/ent_coef_loss"] = vmap(grad(ent_loss, has_aux=True))(entropy.params(), log_prob)
            self.entropy_adam.step(grads)

        fixed = {n: t for n, t in policy.tensors.items() if not n.startswith("critic.")}

        def critic(critic_p: dict, fixed: dict, b: tuple, alpha: torch.Tensor, gamma: torch.Tensor,
                   eps: torch.Tensor) -> tuple[torch.Tensor, dict]:  # fmt: skip
            with given_noise([eps]):
                return policy.call({**fixed, **critic_p}, critic_loss, ReplayBatch(*b), alpha, gamma)

        discount = self.gamma if batch.discounts is None else batch.discounts
        grads, critic_metrics = vmap(grad(critic, has_aux=True))(
            policy.params("critic."), fixed, tuple(batch[:5]), alpha, discount, next_noise
        )
        self.critic_adam.step(grads)

        others = {n: t for n, t in policy.tensors.items() if not n.startswith("actor.")}

        def actor(actor_p: dict, others: dict, obs: torch.Tensor, alpha: torch.Tensor, eps: torch.Tensor) -> tuple:
            def loss_of(p: object, obs: torch.Tensor) -> tuple[torch.Tensor, dict]:
                with given_noise([eps]):
                    acts, lp = p.actor.action_log_prob(obs)  # the same draw as above: the actor has not moved
                return actor_loss(p, obs, acts, lp, alpha)

            return policy.call({**others, **actor_p}, loss_of, obs)

        grads, actor_metrics = vmap(grad(actor, has_aux=True))(
            policy.params("actor."), others, batch.observations, alpha, obs_noise
        )
        self.actor_adam.step(grads)
        if round_step % self.target_update_interval == 0:
            self.update_targets()
        return metrics | critic_metrics | actor_metrics

    @torch.no_grad()
    def update_targets(self) -> None:
        """Polyak-average the target critics towards the critics at each member's ``tau``; buffers copied."""
        tensors = self.policy.tensors
        for name in self.critic_names:
            online, target = tensors[name], tensors["critic_target." + name.removeprefix("critic.")]
            if name in self.policy.param_names:
                target.lerp_(online, self.tau.view(-1, *[1] * (online.dim() - 1)))
            else:
                target.copy_(online)

