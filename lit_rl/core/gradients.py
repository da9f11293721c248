"""Gradient plumbing shared by the actor-critic losses."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn


@contextmanager
def frozen(module: nn.Module) -> Iterator[None]:
    """Inside the block ``module``'s parameters get no gradients; gradients still flow through it to its inputs.

    The actor losses go through the critics: their parameter gradients would
    be computed and thrown away (the critic's optimizer zeroes them first).
    """
    if torch.compiler.is_compiling():  # requires_grad flips break graphs: the compiled caller froze it (compiled.py)
        yield
        return
    if torch._C._functorch.peek_interpreter_stack() is not None:  # under torch.func.grad (lit_rl.packed): the
        yield  # gradients go to the arguments it differentiates, never to the module's lent tensors
        return
    module.requires_grad_(False)
    try:
        yield
    finally:
        module.requires_grad_(True)
