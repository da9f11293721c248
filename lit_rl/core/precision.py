"""Mixed precision owned by the algorithm (``precision=``, the launcher's ``trainer.precision``).

The algorithm, not Lightning's precision plugin, decides where bf16 (or fp16) is used, so the
choice is the same eager and compiled and the whole-step graph keeps working:

- in the low precision: the matrix products (``Linear``, the critics' ensemble ``baddbmm``,
  convolutions), chosen by ``torch.autocast`` around the gradient step and acting;
- in fp32: master weights, gradients and Adam moments (autocast casts copies, never the
  parameters), every network's output (the nets cast their heads' outputs back), so losses and
  their reductions, Bellman targets, log-probabilities, the entropy coefficient and Polyak
  updates; BatchRenorm statistics (the layer casts its input to fp32); observation and reward
  normalisation (before any network). Actions leave the policy as float32.

``16-mixed`` scales each loss before its backward (:class:`LossScaling`, one
``torch.amp.GradScaler`` per optimizer) since fp16 gradients underflow; bf16 has fp32's range
and needs no scaling.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import torch

# Lightning's names for the precisions an algorithm offers, and the dtype of their matrix products.
PRECISIONS: dict[str, torch.dtype | None] = {"32-true": None, "bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}
# Lightning's short spellings of the same settings.
ALIASES: dict[Any, str] = {32: "32-true", "32": "32-true", "bf16": "bf16-mixed", 16: "16-mixed", "16": "16-mixed"}


def check_precision(value: Any, key: str = "precision") -> str:
    """The precision's full name, or a ValueError naming ``key``, the value and what is allowed."""
    name = ALIASES.get(value, value) if not isinstance(value, bool) else value
    if name in PRECISIONS or name == "auto":
        return str(name)
    raise ValueError(
        f"{key}={value!r} is not allowed; allowed: {[*PRECISIONS, 'auto']} (fp32 weights, optimizer states and "
        "losses; the matrix products in bf16 or fp16 for the mixed settings; auto: bf16-mixed where the hardware "
        "has bf16 matrix units, else 32-true)"
    )


def resolve_precision(precision: str, device: torch.device) -> str:
    """The precision ``auto`` stands for on ``device``; any other setting as it is."""
    if precision != "auto":
        return precision
    return "bf16-mixed" if bf16_matrix_units(device.type, device.index) else "32-true"


@functools.cache
def bf16_matrix_units(device_type: str, index: int | None = None) -> bool:
    """Whether bf16 matrix products run on dedicated units: tensor cores (compute capability 8.0 and newer:
    Ampere, Hopper, ...) or a CPU's AMX tiles. Elsewhere bf16 is emulated or converted and gains little."""
    if device_type == "cuda":
        return torch.cuda.get_device_capability(index)[0] >= 8
    if device_type == "cpu":
        amx = getattr(torch.cpu, "_is_amx_tile_supported", None)  # torch's own CPU feature probe
        return bool(amx and amx())
    return False


def matmul_precision(precision: str, device: torch.device) -> contextlib.AbstractContextManager:
    """``torch.autocast`` on ``device`` for a mixed ``precision`` (``auto`` resolved for ``device``); a no-op context
    for ``32-true`` (acting and every update enter it: no generator per call)."""
    dtype = PRECISIONS[resolve_precision(precision, device)]
    if dtype is None:
        return contextlib.nullcontext()
    # No cache of cast weights: a cached cast is one autograd node shared by the critic loss and the actor loss,
    # which the whole-step graph's second autograd.grad would find already consumed.
    return torch.autocast(device.type, dtype=dtype, cache_enabled=False)


def float32_actions(actions: torch.Tensor) -> torch.Tensor:
    """Float actions as float32 whatever the policy's precision; discrete actions (indices) as they are."""
    return actions.float() if actions.is_floating_point() else actions


class LossScaling:
    """fp16 loss scaling for ``16-mixed``: one ``torch.amp.GradScaler`` per optimizer, created on first use.

    Each optimizer's scale grows and shrinks with its own gradients (a critic's overflow does not
    skip the actor's step). A step whose gradients overflowed is skipped, as ``GradScaler.step`` does.
    """

    def __init__(self) -> None:
        # By the order in which the optimizers first step: fixed by the algorithm's update, so a resumed run
        # (new optimizer objects) gives each restored scale to the same optimizer.
        self.scalers: list[torch.amp.GradScaler] = []
        self._order: dict[int, int] = {}  # id(optimizer) -> its scaler's position
        self._pending: dict[int, dict[str, Any]] = {}  # restored states, applied when each scaler is created

    def scaler(self, optimizer: Any, device: torch.device) -> torch.amp.GradScaler:
        """The scaler of ``optimizer``."""
        index = self._order.get(id(optimizer))
        if index is None:
            index = self._order[id(optimizer)] = len(self.scalers)
            scaler = torch.amp.GradScaler(device.type)
            if index in self._pending:
                scaler.load_state_dict(self._pending.pop(index))
            self.scalers.append(scaler)
        return self.scalers[index]

    def step(self, optimizer: Any, loss: torch.Tensor, backward: Any, clip: Any, device: torch.device) -> None:
        """``backward(scaled loss)``, unscale, ``clip()``, then the optimizer step unless gradients overflowed."""
        scaler = self.scaler(optimizer, device)
        backward(scaler.scale(loss))
        scaler.unscale_(optimizer)  # clipping and the overflow check see true gradients
        clip()
        scaler.step(optimizer)
        scaler.update()

    def state_dict(self) -> dict[int, dict[str, Any]]:
        """Each scaler's scale and growth counter (for an exact resume)."""
        return {index: scaler.state_dict() for index, scaler in enumerate(self.scalers)} | self._pending

    def load_state_dict(self, state: dict[int, dict[str, Any]]) -> None:
        """Restore the scales saved by :meth:`state_dict` (each applied when its optimizer next steps)."""
        self.scalers.clear()
        self._order.clear()
        self._pending = dict(state)


def check_trainer_precision(trainer_precision: str, algo_name: str) -> None:
    """A ValueError when a user's Trainer was built with a precision plugin: the algorithm owns its casts.

    Lightning's mixed-precision plugin would run the whole step under autocast (BatchRenorm statistics and
    Bellman targets included) and keep the update from being one compiled graph.
    """
    if trainer_precision != "32-true":
        raise ValueError(
            f"Trainer(precision={trainer_precision!r}) is not allowed for {algo_name}: its precision is the "
            f"algorithm's; build the Trainer with precision='32-true' (the default) and pass "
            f"precision={trainer_precision!r} to {algo_name}(...) (the launcher's trainer.precision does this); "
            f"allowed there: {[*PRECISIONS, 'auto']}"
        )
