"""Where the updates' standard Gaussian noise comes from: torch's generator, or tensors drawn beforehand.

A packed update (:mod:`lit_rl.packed`) draws each member's noise outside ``torch.func.vmap`` and hands it in here,
so each member sees exactly the noise it is given, as its own update would with the same tensors; a packed run's
members, each in its own thread, act with noise from their own generators.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

# Module globals, not ContextVars: torch.compile guards on them cheaply.
_supply: list[torch.Tensor] | None = None
_per_thread = False  # whether any thread has drawn from its own generator (members of a packed run)
_local = threading.local()


def standard_normal_like(like: torch.Tensor) -> torch.Tensor:
    """``torch.randn_like(like)``, drawn from this thread's generator inside :func:`thread_generator`, or the next
    tensor handed in by :func:`given_noise`."""
    if _supply is None:
        generator = this_threads_generator()
        if generator is None:
            return torch.randn_like(like)
        return torch.randn(like.shape, generator=generator, dtype=like.dtype, device=like.device)
    if not _supply:
        raise RuntimeError("the update drew more noise tensors than given_noise() was handed")
    noise = _supply.pop(0)
    if noise.shape != like.shape:
        raise ValueError(f"noise of shape {tuple(noise.shape)} handed in where {tuple(like.shape)} is drawn")
    return noise


def this_threads_generator() -> torch.Generator | None:
    """The generator of this thread inside :func:`thread_generator`, else None (torch's global one)."""
    return getattr(_local, "generator", None) if _per_thread else None


@contextmanager
def given_noise(tensors: Sequence[torch.Tensor]) -> Iterator[None]:
    """Inside the block, :func:`standard_normal_like` returns ``tensors`` in order instead of drawing."""
    global _supply
    previous, _supply = _supply, list(tensors)
    try:
        yield
    finally:
        _supply = previous


@contextmanager
def thread_generator(generator: torch.Generator) -> Iterator[None]:
    """Inside the block, this thread's draws come from ``generator`` rather than torch's global one: runs in threads
    of one process each keep their own stream."""
    global _per_thread
    _per_thread, _local.generator = True, generator
    try:
        yield
    finally:
        _local.generator = None
