"""The entropy coefficient of a pack of maximum-entropy members (SAC, CrossQ): stacked, stepped by its own Adam."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch.func import vmap

from lit_rl.core.entropy import policy_samples
from lit_rl.nets.noise_source import given_noise
from lit_rl.packed.adam import StackedAdam
from lit_rl.packed.base import PackedUpdate
from lit_rl.packed.members import stacked_adam
from lit_rl.packed.stack import Stack


class PackedEntropy(PackedUpdate):
    """A :class:`PackedUpdate` whose members learn (or fix) an entropy coefficient: ``self.alpha`` (each member's
    coefficient), ``self.ent_grads`` (the batched gradient of its loss) and its Adam (the members' third optimizer).
    gSDE is refused: its exploration matrices are not packed."""

    def __init__(
        self, members: Sequence[Any], generators: Sequence[torch.Generator] | None = None, compile: bool = False
    ) -> None:
        super().__init__(members, generators, compile)
        if members[0].use_sde:
            raise ValueError("use_sde=True: gSDE's exploration matrices are not packed; allowed: use_sde=False")
        kinds = {m.entropy.learned for m in members}
        if len(kinds) > 1:
            raise ValueError(f"ent_coef differs in kind across the pack ({[m.ent_coef for m in members]}); allowed: "
                             "all learned ('auto', 'auto_<initial value>') or all fixed (numbers)")  # fmt: skip
        self.entropy = entropy = Stack([m.entropy for m in members], "ent_coef")
        learned = members[0].entropy.learned
        self.entropy_adam = stacked_adam(members, self.entropy, "", 2, compile) if learned else None

        def ent_loss(e: dict, others: dict, log_prob: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            loss = entropy.call({**others, **e}, lambda m, lp: m.loss(lp), log_prob)  # each member's target entropy
            return loss, loss.detach()

        self.alpha = vmap(lambda e: entropy.call(e, lambda m: m.value()))
        self.ent_grads = self.batched_grad(ent_loss)

    def acting_noise_shapes(self, obs: torch.Tensor) -> list[tuple[int, ...]]:
        """The squashed Gaussian's one draw per env: ``(members, envs, action_dim)``."""
        return [(obs.shape[0], obs.shape[1], int(np.prod(self.members[0].action_space.shape)))]

    def sampled_actor_grads(self, loss: Callable[..., tuple[torch.Tensor, dict]]) -> Callable[..., tuple[dict, Any]]:
        """The batched gradient, with respect to the actor, of ``loss(policy, obs, a, log pi(a|s), alpha)`` with ``a``
        drawn by :func:`~lit_rl.core.entropy.policy_samples` from the noise given; its aux is ``(metrics, log pi)``
        (CrossQ's and TQC's actor step)."""
        policy = self.policy

        def actor(actor_p: dict, others: dict, obs: torch.Tensor, alpha: torch.Tensor, eps: torch.Tensor) -> tuple:
            def loss_of(p: Any, obs: torch.Tensor) -> tuple[torch.Tensor, tuple]:
                with given_noise([eps]):
                    actions, log_prob = policy_samples(p, obs)
                value, metrics = loss(p, obs, actions, log_prob, alpha)
                return value, (metrics, log_prob.detach())

            return policy.call({**others, **actor_p}, loss_of, obs)

        return self.batched_grad(actor)

    def adams(self) -> list[tuple[StackedAdam, Stack]]:
        return super().adams() + ([(self.entropy_adam, self.entropy)] if self.entropy_adam is not None else [])
