"""Runs an SB3-style callback inside a Lightning fit."""

from __future__ import annotations

from typing import Any

import lightning as L

from lit_rl.callbacks.sb3.base import BaseCallback


class SB3CallbackAdapter(L.Callback):
    """Runs an SB3-style callback inside a Lightning fit: the algorithm calls it after every env step."""

    def __init__(self, callback: BaseCallback) -> None:
        super().__init__()
        self.callback = callback

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        self.callback.init_callback(pl_module)
        self.callback.on_training_start({}, {})
        pl_module.collector.step_callback = self.callback

    def on_train_end(self, trainer: L.Trainer, pl_module: Any) -> None:
        self.callback.on_training_end()

    def teardown(self, trainer: L.Trainer, pl_module: Any, stage: str) -> None:
        pl_module.collector.step_callback = None
