"""Modules of one structure stacked along a leading member axis, each module's tensors views into the stack."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn


class _Call(nn.Module):
    """Runs ``fn(module, *args)`` as its forward, so ``torch.func.functional_call`` can lend ``module`` tensors for
    any function of it (a loss that calls several of its methods), not only its own forward."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(self.module, *args)


class Stack:
    """The parameters and buffers of ``modules`` (one structure) as tensors with a leading member axis.

    Each module's own parameters and buffers become views of its slice, so the modules keep working alone (acting,
    ``state_dict``, saving) and see every in-place change made to the stack. A module whose structure differs is
    refused with a ``ValueError`` naming the tensor and the member.
    """

    def __init__(self, modules: Sequence[nn.Module], what: str) -> None:
        if not modules:
            raise ValueError(f"{what}: a pack needs at least one member")
        first = dict(modules[0].named_parameters()) | dict(modules[0].named_buffers())
        for i, module in enumerate(modules[1:], start=1):
            tensors = dict(module.named_parameters()) | dict(module.named_buffers())
            for name in [*first, *(n for n in tensors if n not in first)]:
                a, b = first.get(name), tensors.get(name)
                if a is None or b is None or a.shape != b.shape or a.dtype != b.dtype:
                    shapes = [None if t is None else (tuple(t.shape), str(t.dtype)) for t in (a, b)]
                    raise ValueError(
                        f"{what}: member {i} differs from member 0 in {name} ({shapes[1]} against {shapes[0]}); "
                        "allowed: members of equal shapes (the same net_arch, env and algorithm)"
                    )
        self.members = list(modules)
        self.call_module = _Call(modules[0])
        self.param_names = [name for name, _ in modules[0].named_parameters()]
        self.tensors: dict[str, torch.Tensor] = {}
        for name in first:
            self.tensors[name] = torch.stack([_tensor(m, name).detach() for m in modules])
            for i, module in enumerate(modules):
                _tensor(module, name).data = self.tensors[name][i]
        for module in modules:
            module.register_state_dict_post_hook(_own_storage)
        self.size = len(modules)

    def params(self, prefix: str = "") -> dict[str, torch.Tensor]:
        """The stacked parameters whose names start with ``prefix``."""
        return {n: self.tensors[n] for n in self.param_names if n.startswith(prefix)}

    def others(self, prefix: str) -> dict[str, torch.Tensor]:
        """Every stacked tensor but the parameters under ``prefix``: what a loss differentiated with respect to
        :meth:`params` of ``prefix`` reads besides them (buffers under ``prefix`` included)."""
        params = set(self.params(prefix))
        return {n: t for n, t in self.tensors.items() if n not in params}

    def call(self, tensors: dict[str, torch.Tensor], fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(module, *args)`` with one member's ``tensors`` (under ``vmap``: slices of the stack) lent to the
        module; tensors not given are the first module's own."""
        lent = {f"module.{name}": t for name, t in tensors.items()}
        return torch.func.functional_call(self.call_module, lent, (fn, *args), strict=False)


def _own_storage(module: nn.Module, state_dict: dict[str, Any], prefix: str, local_metadata: Any) -> None:
    """A member's ``state_dict`` holds copies of its slices: ``torch.save`` writes a view's whole storage, which
    would make every member's checkpoint as large as the pack's."""
    for key, tensor in state_dict.items():
        if key.startswith(prefix) and isinstance(tensor, torch.Tensor) and _is_slice(tensor):
            state_dict[key] = tensor.clone()


def _is_slice(tensor: torch.Tensor) -> bool:
    return tensor.untyped_storage().nbytes() > tensor.numel() * tensor.element_size()


def _tensor(module: nn.Module, name: str) -> torch.Tensor:
    owner, _, leaf = name.rpartition(".")
    holder = module.get_submodule(owner) if owner else module
    return getattr(holder, leaf)
