"""The deterministic actor-critic step for a pack of TD3 or DDPG members:
:meth:`lit_rl.core.deterministic.DeterministicActorCritic.tensor_step`, batched."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.func import grad, vmap

from lit_rl.buffers.replay import ReplayBatch
from lit_rl.core.deterministic import DeterministicActorCritic, actor_loss, critic_loss
from lit_rl.nets.noise_source import given_noise
from lit_rl.packed.members import check_members, per_member, stacked_adam
from lit_rl.packed.stack import Stack

# Settings a TD3 or DDPG pack shares; learning_rate, tau and gamma may differ (lit_rl.packed.members.PER_MEMBER).
SHARED = ("batch_size", "policy_delay", "target_policy_noise", "target_noise_clip", "n_steps", "gradient_steps",
          "train_freq", "learning_starts", "buffer_size")  # fmt: skip


class PackedTD3:
    """The gradient steps of ``members`` (TD3 or DDPG instances of one class, networks built) as one batched step.

    Per step, as each member's own: a critic step, and every ``policy_delay``-th step an actor step and the
    Polyak updates of the target actor and critics, each a ``vmap`` of the algorithm's own loss.
    """

    def __init__(self, members: Sequence[DeterministicActorCritic]) -> None:
        if members and not isinstance(members[0], DeterministicActorCritic):
            raise ValueError(f"PackedTD3 packs TD3 or DDPG members; got a {type(members[0]).__name__}")
        check_members(members, type(members[0]) if members else DeterministicActorCritic, SHARED)
        self.members = list(members)
        self.policy = Stack([m.policy for m in members], "policy")
        self.actor_adam = stacked_adam(members, self.policy, "actor.", 0)
        self.critic_adam = stacked_adam(members, self.policy, "critic.", 1)
        self.tau = per_member([m.tau for m in members])
        self.gamma = per_member([m.gamma for m in members])
        self.smoothing = members[0].target_smoothing
        self.policy_delay = members[0].policy_delay
        self.n_updates = 0

    def draw_noise(self, batch: ReplayBatch, generators: Sequence[torch.Generator]) -> list[torch.Tensor]:
        """One step's noise, each member's from its own generator: the target smoothing's draw (none for DDPG)."""
        if not self.smoothing.active:
            return []
        return [torch.stack([torch.randn(batch.actions.shape[1:], generator=g) for g in generators])]

    def gradient_step(self, batch: ReplayBatch, noise: Sequence[torch.Tensor]) -> dict:
        """One step of every member on its slice of ``batch`` (member axis first) with ``noise`` (:meth:`draw_noise`)."""
        self.n_updates += 1
        policy, smoothing = self.policy, self.smoothing
        fixed = {n: t for n, t in policy.tensors.items() if not n.startswith("critic.")}

        def critic(critic_p: dict, fixed: dict, b: tuple, gamma: torch.Tensor, *eps: torch.Tensor) -> tuple:
            with given_noise(eps):
                return policy.call({**fixed, **critic_p}, critic_loss, ReplayBatch(*b), gamma, smoothing)

        discount = self.gamma if batch.discounts is None else batch.discounts
        grads, metrics = vmap(grad(critic, has_aux=True))(
            policy.params("critic."), fixed, tuple(batch[:5]), discount, *noise
        )
        self.critic_adam.step(grads)
        if self.n_updates % self.policy_delay == 0:
            others = {n: t for n, t in policy.tensors.items() if not n.startswith("actor.")}

            def actor(actor_p: dict, others: dict, obs: torch.Tensor) -> tuple[torch.Tensor, dict]:
                return policy.call({**others, **actor_p}, actor_loss, obs)

            grads, actor_metrics = vmap(grad(actor, has_aux=True))(policy.params("actor."), others, batch.observations)
            self.actor_adam.step(grads)
            metrics |= actor_metrics
            self.update_targets()
        return metrics

    @torch.no_grad()
    def update_targets(self) -> None:
        """Polyak-average the target actor and critics at each member's ``tau``; buffers copied."""
        tensors, tau = self.policy.tensors, self.tau
        for name in tensors:
            for online in ("actor.", "critic."):
                if name.startswith(online):
                    target = tensors[online.rstrip(".") + "_target." + name.removeprefix(online)]
                    if name in self.policy.param_names:
                        target.lerp_(tensors[name], tau.view(-1, *[1] * (target.dim() - 1)))
                    else:
                        target.copy_(tensors[name])
