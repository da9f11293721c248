"""Packed DQN and QR-DQN: each member's Q-network step (its algorithm's own loss, gradients clipped to its global
norm), batched over the members. The target copies and the exploration schedule stay each member's own: they
follow its env steps (``on_env_step``), in place on its slices of the stack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from lit_rl.buffers.replay import ReplayBatch
from lit_rl.core.q_learning import QLearning
from lit_rl.packed.adam import StackedAdam
from lit_rl.packed.base import PackedUpdate
from lit_rl.packed.members import stacked_adam
from lit_rl.packed.stack import Stack


class PackedQLearning(PackedUpdate):
    """The gradient steps of ``members`` (DQN or QR-DQN instances of one class, networks built) as one batched step:
    per member, its loss on its batch, its gradients clipped to a global norm of ``max_grad_norm``, its Adam step."""

    algorithm = QLearning
    shared = ("batch_size", "max_grad_norm", "target_update_interval", "exploration_fraction",
              "exploration_initial_eps", "exploration_final_eps", "n_steps", "gradient_steps", "train_freq",
              "learning_starts", "buffer_size")  # fmt: skip
    targets = ()  # each member copies its own target network, every target_update_interval env steps

    def __init__(
        self, members: Sequence[QLearning], generators: Sequence[torch.Generator] | None = None, compile: bool = False
    ) -> None:
        super().__init__(members, generators, compile)
        self.max_grad_norm = members[0].max_grad_norm
        policy, loss = self.policy, type(members[0]).loss

        def q_loss(q_params: dict, others: dict, b: tuple, gamma: torch.Tensor) -> tuple:
            return policy.call({**others, **q_params}, loss, ReplayBatch(*b), gamma)

        self.q_grads = self.batched_grad(q_loss)

    def member_class(self, members: Sequence[QLearning]) -> type:
        """DQN or QR-DQN, as the first member is: the two do not mix."""
        if members and not isinstance(members[0], QLearning):
            raise ValueError(f"PackedQLearning packs DQN or QR-DQN members; got a {type(members[0]).__name__}")
        return type(members[0]) if members else QLearning

    @torch.no_grad()
    def act(self, obs: torch.Tensor) -> torch.Tensor:
        """Every member's Q-values in one batched forward, then its own epsilon-greedy draws from its generator."""
        greedy = super().act(obs).argmax(dim=-1)
        return torch.stack([m.epsilon_greedy(greedy[i], False, g)
                            for i, (m, g) in enumerate(zip(self.members, self.generators, strict=True))])  # fmt: skip

    @staticmethod
    def acting_output(policy: Any, obs: torch.Tensor) -> torch.Tensor:
        """A member's Q-values: its greedy and exploring actions follow outside the batched forward."""
        return policy.q_values(obs)

    def make_adams(self, compile: bool) -> None:
        self.q_adam = stacked_adam(self.members, self.policy, "q_net.", 0, compile)

    def adams(self) -> list[tuple[StackedAdam, Stack]]:
        return [(self.q_adam, self.policy)]

    def noise_shapes(self, batch: ReplayBatch) -> list[tuple[int, ...]]:
        return []  # the losses draw nothing

    def packed_step(self, batch: ReplayBatch, noise: Sequence[torch.Tensor], round_step: int) -> dict:
        self.n_updates += 1
        discount = self.gamma if batch.discounts is None else batch.discounts
        grads, metrics = self.q_grads(self.policy.params("q_net."), self.policy.others("q_net."), tuple(batch[:5]),
                                      discount)  # fmt: skip
        if self.max_grad_norm is not None:
            clip_each_members_norm(grads, self.max_grad_norm)
        self.q_adam.step(grads)
        return metrics


@torch.no_grad()
def clip_each_members_norm(grads: dict[str, torch.Tensor], max_norm: float) -> None:
    """``torch.nn.utils.clip_grad_norm_`` of each member's gradients (member axis first), in place: the global L2
    norm of a member's tensors scaled down to ``max_norm``, as its own optimizer step clips them."""
    norms = torch.stack([torch.linalg.vector_norm(g.flatten(1), dim=1) for g in grads.values()])
    total = torch.linalg.vector_norm(norms, dim=0)
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for g in grads.values():
        g.mul_(coef.view(-1, *[1] * (g.dim() - 1)))
