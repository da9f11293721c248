"""The deterministic actor-critic step for a pack of TD3 or DDPG members:
:meth:`lit_rl.core.deterministic.DeterministicActorCritic.tensor_step`, batched."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lit_rl.buffers.replay import ReplayBatch
from lit_rl.core.deterministic import DeterministicActorCritic, actor_loss, critic_loss
from lit_rl.nets.noise_source import given_noise
from lit_rl.packed.base import PackedUpdate
from lit_rl.packed.members import per_member


@dataclass(frozen=True)
class PackedSmoothing:
    """One member's target policy smoothing inside the batched step: its std and clip as tensors (a pack smooths all
    its members or none: ``active``)."""

    noise: torch.Tensor
    clip: torch.Tensor
    active: bool


class PackedTD3(PackedUpdate):
    """The gradient steps of ``members`` (TD3 or DDPG instances of one class, networks built) as one batched step.

    Per step, as each member's own: a critic step, and every ``policy_delay``-th step an actor step and the
    Polyak updates of the target actor and critics, each a ``vmap`` of the algorithm's own loss.
    """

    algorithm = DeterministicActorCritic
    shared = ("batch_size", "policy_delay", "n_steps", "gradient_steps", "train_freq", "learning_starts",
              "buffer_size")  # fmt: skip
    targets = ("actor", "critic")

    def __init__(
        self,
        members: Sequence[DeterministicActorCritic],
        generators: Sequence[torch.Generator] | None = None,
        compile: bool = False,
    ) -> None:
        super().__init__(members, generators, compile)
        self.smoothing = members[0].target_smoothing
        if len({m.target_smoothing.active for m in members}) > 1:
            raise ValueError("target_policy_noise / target_noise_clip: 0 for some members and not for others "
                             f"({[(m.target_policy_noise, m.target_noise_clip) for m in members]}); allowed: "
                             "all above 0 (each member its own) or all 0")  # fmt: skip
        self.smoothing_noise = per_member([m.target_smoothing.noise for m in members])
        self.smoothing_clip = per_member([m.target_smoothing.clip for m in members])
        self.policy_delay = members[0].policy_delay
        policy, active = self.policy, self.smoothing.active

        def critic(critic_p: dict, fixed: dict, b: tuple, gamma: torch.Tensor, noise: torch.Tensor,
                   clip: torch.Tensor, *eps: torch.Tensor) -> tuple:  # fmt: skip
            smoothing = PackedSmoothing(noise, clip, active)  # the member's own, as tensors under vmap
            with given_noise(eps):
                return policy.call({**fixed, **critic_p}, critic_loss, ReplayBatch(*b), gamma, smoothing)

        def actor(actor_p: dict, others: dict, obs: torch.Tensor) -> tuple[torch.Tensor, dict]:
            return policy.call({**others, **actor_p}, actor_loss, obs)

        self.critic_grads = self.batched_grad(critic)
        self.actor_grads = self.batched_grad(actor)

    def member_class(self, members: Sequence[DeterministicActorCritic]) -> type:
        """TD3 or DDPG, as the first member is: the two do not mix."""
        if members and not isinstance(members[0], DeterministicActorCritic):
            raise ValueError(f"PackedTD3 packs TD3 or DDPG members; got a {type(members[0]).__name__}")
        return type(members[0]) if members else DeterministicActorCritic

    def noise_shapes(self, batch: ReplayBatch) -> list[tuple[int, ...]]:
        """The target smoothing's draw (none for DDPG)."""
        return [tuple(batch.actions.shape)] if self.smoothing.active else []

    def packed_step(self, batch: ReplayBatch, noise: Sequence[torch.Tensor], round_step: int) -> dict:
        self.n_updates += 1
        fixed = self.policy.others("critic.")
        discount = self.gamma if batch.discounts is None else batch.discounts
        critic_p = self.policy.params("critic.")
        grads, metrics = self.critic_grads(critic_p, fixed, tuple(batch[:5]), discount, self.smoothing_noise,
                                           self.smoothing_clip, *noise)  # fmt: skip
        self.critic_adam.step(grads)
        if self.n_updates % self.policy_delay == 0:
            others = self.policy.others("actor.")
            grads, actor_metrics = self.actor_grads(self.policy.params("actor."), others, batch.observations)
            self.actor_adam.step(grads)
            metrics |= actor_metrics
            self.update_targets()
        return metrics
