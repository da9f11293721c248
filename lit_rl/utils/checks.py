"""Argument checks that raise errors naming the key, the value and what is allowed."""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import torch


def check_int(name: str, value: Any, minimum: int | None = None, allowed_extra: tuple[int, ...] = ()) -> int:
    """Return ``value`` if it is an int >= ``minimum`` (or one of ``allowed_extra``), else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}={value!r} must be an integer")
    if value in allowed_extra:
        return int(value)
    if minimum is not None and value < minimum:
        extra = f" (or {', '.join(map(str, allowed_extra))})" if allowed_extra else ""
        raise ValueError(f"{name}={value!r} is out of range; allowed: an integer >= {minimum}{extra}")
    return int(value)


def check_float(
    name: str, value: Any, low: float, high: float, low_open: bool = True, high_open: bool = False
) -> float:
    """Return ``value`` if it is a real number inside the interval, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}={value!r} must be a number")
    number = float(value)  # a Real; numbers.Real's stubs declare no comparisons with float
    above = number > low if low_open else number >= low
    below = number < high if high_open else number <= high
    if not (above and below):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{name}={value!r} is out of range; allowed: {interval}")
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool (not merely truthy), else raise."""
    if not isinstance(value, bool):
        raise TypeError(f"{name}={value!r} must be a bool; allowed: True, False")
    return value


class NonFiniteError(RuntimeError):
    """A loss, metric or parameter became NaN or infinite: training stops rather than save it."""


def check_accelerator(accelerator: str) -> None:
    """``trainer=gpu`` on a machine without a CUDA GPU fails here, naming the key."""
    if accelerator in ("gpu", "cuda") and not torch.cuda.is_available():
        raise ValueError(
            f"trainer.accelerator={accelerator!r} but this machine has no CUDA GPU; allowed here: 'cpu', 'auto'"
        )


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` -> cuda when available, else cpu; CUDA on a machine without one falls back to the CPU, as SB3.

    The fallback warns: a script written for a GPU still runs, and says where. (The launcher's
    ``trainer=gpu`` without a GPU is an error instead: a cluster job should not silently run 50x slower.)
    """
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        warnings.warn(f"device={str(device)!r} is not available on this machine (no CUDA GPU): using the CPU",
                      stacklevel=3)  # fmt: skip
        return torch.device("cpu")
    return device
