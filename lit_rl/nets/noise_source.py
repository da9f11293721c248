"""Where the updates' standard Gaussian noise comes from: torch's generator, or tensors drawn beforehand.

A packed update (:mod:`lit_rl.packed`) draws each member's noise outside ``torch.func.vmap`` and hands it in here,
so each member sees exactly the noise it is given, as its own update would with the same tensors.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

_supply: list[torch.Tensor] | None = None  # a module global, not a ContextVar: torch.compile guards on it cheaply


def standard_normal_like(like: torch.Tensor) -> torch.Tensor:
    """``torch.randn_like(like)``, or the next tensor handed in by :func:`given_noise`."""
    if _supply is None:
        return torch.randn_like(like)
    if not _supply:
        raise RuntimeError("the update drew more noise tensors than given_noise() was handed")
    noise = _supply.pop(0)
    if noise.shape != like.shape:
        raise ValueError(f"noise of shape {tuple(noise.shape)} handed in where {tuple(like.shape)} is drawn")
    return noise


@contextmanager
def given_noise(tensors: Sequence[torch.Tensor]) -> Iterator[None]:
    """Inside the block, :func:`standard_normal_like` returns ``tensors`` in order instead of drawing."""
    global _supply
    previous, _supply = _supply, list(tensors)
    try:
        yield
    finally:
        _supply = previous
