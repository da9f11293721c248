"""Target networks: frozen copies of online networks that follow them by Polyak averaging."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import TypeVar

import torch
from torch import nn

ModuleT = TypeVar("ModuleT", bound=nn.Module)


def make_target(module: ModuleT) -> ModuleT:
    """A frozen deep copy of ``module`` (no gradients; it only moves through :func:`update_target`)."""
    target = copy.deepcopy(module)
    target.requires_grad_(False)
    return target


@torch.no_grad()
def polyak_update(params: Iterable[torch.Tensor], target_params: Iterable[torch.Tensor], tau: float) -> None:
    """``target <- (1 - tau) * target + tau * param`` in place, for matching sequences of tensors."""
    params, target_params = list(params), list(target_params)
    if len(params) != len(target_params):
        raise ValueError(f"polyak_update got {len(params)} parameters and {len(target_params)} target parameters")
    if params:
        torch._foreach_lerp_(target_params, params, tau)


@torch.no_grad()
def update_target(online: nn.Module, target: nn.Module, tau: float) -> None:
    """Polyak-average the parameters of ``target`` towards ``online``; copy its buffers (as SB3, tau 1 for them).

    Buffers (BatchNorm statistics, step counters) are not averaged: averaged
    running statistics would not describe any network's activations.
    """
    polyak_update(online.parameters(), target.parameters(), tau)
    for buf, target_buf in zip(online.buffers(), target.buffers(), strict=True):
        target_buf.copy_(buf)
