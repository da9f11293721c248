"""Adam on stacked parameters, with a learning rate per member: elementwise, so each member's slice takes exactly
the step ``torch.optim.Adam`` (single-tensor, not capturable) would take on that member's own tensor."""

from __future__ import annotations

from collections.abc import Sequence

import torch


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
    ) -> None:
        self.params = params
        self.lrs = [float(lr) for lr in lrs]
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.step_count = 0
        self.exp_avg = {n: torch.zeros_like(p) for n, p in params.items()}
        self.exp_avg_sq = {n: torch.zeros_like(p) for n, p in params.items()}

    @torch.no_grad()
    def step(self, grads: dict[str, torch.Tensor]) -> None:
        """One step on ``grads`` (stacked as the parameters are)."""
        self.step_count += 1
        bias_correction1 = 1 - self.beta1**self.step_count
        bias_correction2_sqrt = (1 - self.beta2**self.step_count) ** 0.5
        for name, param in self.params.items():
            grad, exp_avg, exp_avg_sq = grads[name], self.exp_avg[name], self.exp_avg_sq[name]
            exp_avg.lerp_(grad, 1 - self.beta1)
            exp_avg_sq.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(self.eps)
            # Adam's addcdiv_(exp_avg, denom, value=-lr / bias_correction1), with one value per member: the
            # kernel computes self + (value * exp_avg) / denom, in this order.
            step_size = torch.tensor([-lr / bias_correction1 for lr in self.lrs], dtype=param.dtype)
            param.add_(step_size.view(-1, *[1] * (param.dim() - 1)) * exp_avg / denom)
