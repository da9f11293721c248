"""Adam on stacked parameters, with a learning rate per member: elementwise, so each member's slice takes exactly
the step ``torch.optim.Adam`` (single-tensor, not capturable) would take on that member's own tensor."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from lit_rl.core.compiled import CompiledFunction


class StackedAdam:
    """Adam over ``params`` (tensors with a leading member axis), member ``i`` at learning rate ``lrs[i]``.

    The operations and their order are ``torch.optim.Adam``'s (``foreach=False``): the same float32 results.
    """

    def __init__(
        self,
        params: dict[str, torch.Tensor],
        lrs: Sequence[float],
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        compile: bool = False,
    ) -> None:
        self.params = params
        self.lrs = [float(lr) for lr in lrs]
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.step_count = 0
        self.exp_avg = {n: torch.zeros_like(p) for n, p in params.items()}
        self.exp_avg_sq = {n: torch.zeros_like(p) for n, p in params.items()}
        # The per-step scalars as tensors, so a compiled update is traced once (graph inputs, not constants).
        self.step_size = torch.zeros(len(self.lrs))
        self.bias_correction2_sqrt = torch.zeros(())
        # lit_rl's compiled functions: each its own compile cache, the CPU inductor settings.
        self.update = CompiledFunction(adam_update, owner=nn.Module()) if compile else adam_update

    @torch.no_grad()
    def step(self, grads: dict[str, torch.Tensor]) -> None:
        """One step on ``grads`` (stacked as the parameters are)."""
        self.step_count += 1
        bias_correction1 = 1 - self.beta1**self.step_count
        self.bias_correction2_sqrt.fill_((1 - self.beta2**self.step_count) ** 0.5)
        self.step_size.copy_(torch.tensor([-lr / bias_correction1 for lr in self.lrs]))
        self.update(self.params, grads, self.exp_avg, self.exp_avg_sq, self.step_size, self.bias_correction2_sqrt,
                    self.beta1, self.beta2, self.eps)  # fmt: skip


@torch.no_grad()
def adam_update(
    params: dict[str, torch.Tensor],
    grads: dict[str, torch.Tensor],
    exp_avgs: dict[str, torch.Tensor],
    exp_avg_sqs: dict[str, torch.Tensor],
    step_size: torch.Tensor,
    bias_correction2_sqrt: torch.Tensor,
    beta1: float,
    beta2: float,
    eps: float,
) -> None:
    """Adam's update of each stacked tensor in place, ``step_size`` (``-lr / bias_correction1``) per member."""
    for name, param in params.items():
        grad, exp_avg, exp_avg_sq = grads[name], exp_avgs[name], exp_avg_sqs[name]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        # Adam's addcdiv_(exp_avg, denom, value=-lr / bias_correction1), with one value per member: the
        # kernel computes self + (value * exp_avg) / denom, in this order.
        param.add_(step_size.view(-1, *[1] * (param.dim() - 1)) * exp_avg / denom)
