"""When an algorithm may call torch's optimizers and ``backward`` directly instead of Lightning's wrappers."""

from __future__ import annotations

import lightning as L
from lightning.pytorch.plugins.precision import Precision
from lightning.pytorch.strategies import SingleDeviceStrategy

# Hooks that Lightning's optimizer and backward wrappers call; overriding one needs the wrappers.
WRAPPER_HOOKS = ("on_before_backward", "on_after_backward", "on_before_optimizer_step")


def lightning_wrappers_needed(trainer: L.Trainer, module: L.LightningModule) -> bool:
    """True unless the run is on one device, in plain 32-bit precision, with no wrapper hook overridden.

    Then ``LightningOptimizer.step`` and ``manual_backward`` only call empty
    hooks and count ``trainer.global_step`` (which nothing here reads), at
    tens of microseconds per call: a few percent of a small update on a CPU.
    Mixed precision (gradient scaling), multi-device strategies and
    gradient-watching callbacks keep Lightning's path.
    """
    if type(trainer.precision_plugin) is not Precision or not isinstance(trainer.strategy, SingleDeviceStrategy):
        return True
    if trainer.max_steps != -1:  # counts optimizer steps through the wrappers
        return True
    for hook in WRAPPER_HOOKS:
        if getattr(type(module), hook) is not getattr(L.LightningModule, hook):
            return True
        if any(getattr(type(cb), hook) is not getattr(L.Callback, hook) for cb in trainer.callbacks):
            return True
    return False
