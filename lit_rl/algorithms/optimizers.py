"""Optimizer construction shared by the algorithms."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

# Devices with a fused Adam kernel in torch >= 2.4.
FUSED_ADAM_DEVICES = ("cpu", "cuda")


def make_adam(
    params: Iterable[torch.nn.Parameter], lr: float, betas: tuple[float, float] = (0.9, 0.999), **kwargs: Any
) -> torch.optim.Adam:
    """``torch.optim.Adam`` with its fused kernel where the parameters' device has one.

    Same update rule; on the CPU the default (non-fused, non-foreach) Adam
    launches about ten tensor ops per parameter per step, which costs several
    times the fused kernel (measured: SAC critics 3.1 ms -> 0.7 ms, CrossQ
    2x[1024,1024] critics 60 ms -> 8 ms per step on one busy core).
    """
    params = list(params)
    fused = bool(params) and all(p.device.type in FUSED_ADAM_DEVICES and p.is_floating_point() for p in params)
    return torch.optim.Adam(params, lr=lr, betas=betas, fused=fused or None, **kwargs)
