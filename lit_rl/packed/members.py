"""What members of one pack must share, and what each may set alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from lit_rl.packed.adam import StackedAdam
from lit_rl.packed.stack import Stack

# Scalar hyperparameters each member may set alone (the algorithms' that have them); every other setting must be
# equal across the pack, the network shapes (policy_kwargs) and the env's spaces first.
PER_MEMBER = ("learning_rate", "tau", "gamma", "seed", "ent_coef", "target_entropy", "target_policy_noise",
              "target_noise_clip", "action_noise_std")  # fmt: skip


def check_members(members: Sequence[Any], kind: type[Any], keys: Sequence[str]) -> None:
    """Raise a ``ValueError`` unless every member is a ``kind`` with equal ``keys`` and a constant learning rate."""
    if not members:
        raise ValueError("a pack needs at least one member; got none")
    for i, member in enumerate(members):
        if type(member) is not kind:
            raise ValueError(f"member {i} is a {type(member).__name__}; allowed: {kind.__name__} members only")
        if callable(member.learning_rate):
            raise ValueError(
                f"member {i}: learning_rate={member.learning_rate!r} is a schedule, which a pack cannot share; "
                "allowed: a number per member (run schedules as separate jobs)"
            )
        if member.precision not in ("32-true", "bf16-mixed") or member.compile_updates:
            raise ValueError(
                f"member {i}: precision={member.precision!r}, compile={member.compile_updates!r}; allowed in a pack: "
                "precision '32-true' or 'bf16-mixed', compile=False (the pack compiles its own step: compile=True)"
            )
    for key in ("policy_kwargs", "observation_space", "action_space", "precision", *keys):
        values = [getattr(m, key) for m in members]
        if any(v != values[0] for v in values[1:]):
            raise ValueError(
                f"{key} differs across the pack ({values}); allowed to differ: {', '.join(PER_MEMBER)} "
                "(run other differences as separate packs)"
            )


def stacked_adam(
    members: Sequence[Any], stack: Stack, prefix: str, optimizer_index: int, compile: bool = False
) -> StackedAdam:
    """A :class:`StackedAdam` over ``stack``'s parameters under ``prefix``, with each member's optimizer settings
    (``optimizer_index`` in its list of optimizers); refused for anything but a plain Adam of equal settings."""
    groups = []
    for i, member in enumerate(members):
        optimizers = member.configure_optimizers()  # as the member's own run would build them (one, or a list)
        optimizer = optimizers[optimizer_index] if isinstance(optimizers, list | tuple) else optimizers
        (group,) = optimizer.param_groups
        if type(optimizer) is not torch.optim.Adam or group["weight_decay"] or group["amsgrad"]:
            raise ValueError(
                f"member {i}: a pack steps plain Adam (no weight decay, no amsgrad); got {type(optimizer).__name__} "
                f"with weight_decay={group['weight_decay']}, amsgrad={group['amsgrad']}"
            )
        groups.append(group)
    settings = {(tuple(g["betas"]), g["eps"]) for g in groups}
    if len(settings) > 1:
        raise ValueError(f"optimizer betas and eps differ across the pack ({sorted(settings)}); allowed: equal")
    ((betas, eps),) = settings
    return StackedAdam(stack.params(prefix), [g["lr"] for g in groups], betas, eps, compile)


def per_member(values: Sequence[float]) -> torch.Tensor:
    """Scalars of the members as a float32 tensor with the member axis."""
    return torch.tensor([float(v) for v in values], dtype=torch.float32)
