"""Network outputs and statistics in at least fp32: what mixed precision (``lit_rl.core.precision``) relies on."""

from __future__ import annotations

import torch


def full_precision(x: torch.Tensor) -> torch.Tensor:
    """``x`` in at least float32: bf16/fp16 (a matrix product under autocast) up to fp32; fp32 and fp64 unchanged."""
    return x.to(torch.promote_types(x.dtype, torch.float32))
