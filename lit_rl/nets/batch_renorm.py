"""Batch Renormalization (Ioffe, 2017) as CrossQ uses it."""

from __future__ import annotations

import torch
from torch import nn

from lit_rl.nets.full_precision import full_precision


class BatchRenorm(nn.Module):
    """Batch Renormalization over the batch dimension (the second to last).

    Inputs are ``(..., batch, features)``; ``ensemble_size`` gives the leading
    dimension for a fused ensemble (one set of statistics per member).

    In training mode the layer normalises with the batch statistics (unbiased
    variance), corrected towards the running statistics by ``r`` (clipped to
    ``[1/r_max, r_max]``) and ``d`` (clipped to ``[-d_max, d_max]``) once more
    than ``warmup_steps`` training forwards have been seen; before that it is
    plain batch norm. In eval mode it uses the running statistics. The step
    count is a buffer, so it survives checkpoints.
    """

    running_mean: torch.Tensor
    running_var: torch.Tensor
    steps: torch.Tensor

    def __init__(
        self,
        num_features: int,
        momentum: float = 0.01,
        eps: float = 1e-3,
        r_max: float = 3.0,
        d_max: float = 5.0,
        warmup_steps: int = 100_000,
        ensemble_size: int | None = None,
    ) -> None:
        super().__init__()
        shape = (num_features,) if ensemble_size is None else (ensemble_size, 1, num_features)
        stat_shape = (num_features,) if ensemble_size is None else (ensemble_size, num_features)
        self.momentum, self.eps = momentum, eps
        self.r_max, self.d_max = r_max, d_max
        self.warmup_steps = warmup_steps
        self.weight = nn.Parameter(torch.ones(shape))
        self.bias = nn.Parameter(torch.zeros(shape))
        self.register_buffer("running_mean", torch.zeros(stat_shape))
        self.register_buffer("running_var", torch.ones(stat_shape))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = full_precision(x)  # statistics in fp32 under mixed precision (core/precision.py)
        if self.training:
            batch_mean = x.mean(-2)
            # Unbiased, as the reference implementations; two-pass rather than x.var(-2), whose
            # reduction over the (strided) batch dimension is several times slower on the CPU.
            batch_var = (x - batch_mean.unsqueeze(-2)).square().sum(-2) / (x.shape[-2] - 1)
            # sb3-contrib's BatchRenorm1d (and sbx's layer): r and d from the eps-regularised stds, but the
            # renormalised mean below from the plain batch std.
            running_std = (self.running_var + self.eps).sqrt()
            r = ((batch_var + self.eps).sqrt() / running_std).detach().clamp(1.0 / self.r_max, self.r_max)
            d = ((batch_mean - self.running_mean) / running_std).detach().clamp(-self.d_max, self.d_max)
            # torch.where instead of `if steps > warmup`: no host sync, graph-capturable.
            renorm = self.steps > self.warmup_steps
            r = torch.where(renorm, r, torch.ones_like(r))
            d = torch.where(renorm, d, torch.zeros_like(d))
            # (x - mean_B) / std_B * r + d, written as one affine normalisation.
            mean = batch_mean - d * batch_var.sqrt() / r
            var = batch_var / r**2
            with torch.no_grad():  # lerp then copy_ (the same values as lerp_): both batch under torch.func.vmap
                self.running_mean.copy_(torch.lerp(self.running_mean, batch_mean.detach(), self.momentum))
                self.running_var.copy_(torch.lerp(self.running_var, batch_var.detach(), self.momentum))
                self.steps += 1
        else:
            mean, var = self.running_mean, self.running_var
        # weight * (x - mean) / sqrt(var + eps) + bias as one affine map x * scale + shift: the
        # per-feature terms are small, so the (batch, features) tensor is read once forward
        # (and a few times backward) instead of four times each way.
        scale = self.weight * (var.unsqueeze(-2) + self.eps).rsqrt()
        shift = self.bias - mean.unsqueeze(-2) * scale
        return torch.addcmul(shift, x, scale)

    def extra_repr(self) -> str:
        return (
            f"{self.running_mean.shape[-1]}, momentum={self.momentum}, eps={self.eps}, "
            f"r_max={self.r_max}, d_max={self.d_max}, warmup_steps={self.warmup_steps}"
        )
