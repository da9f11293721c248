"""Callbacks that fire every ``n_steps`` env steps: ``EveryNTimesteps``, ``LogEveryNTimesteps``."""

from __future__ import annotations

from typing import Any

from lit_rl.callbacks.sb3.base import BaseCallback, ConvertCallback, EventCallback


class EveryNTimesteps(EventCallback):
    """Trigger ``callback`` every ``n_steps`` env steps."""

    def __init__(self, n_steps: int, callback: BaseCallback) -> None:
        super().__init__(callback)
        if n_steps < 1:
            raise ValueError(f"n_steps={n_steps} must be >= 1")
        self.n_steps, self.last_time_trigger = n_steps, 0

    def _on_step(self) -> bool:
        if self.num_timesteps - self.last_time_trigger >= self.n_steps:
            self.last_time_trigger = self.num_timesteps
            return self._on_event()
        return True


class LogEveryNTimesteps(EveryNTimesteps):
    """Write the model's logs (:meth:`dump_logs`) every ``n_steps`` env steps."""

    def __init__(self, n_steps: int) -> None:
        super().__init__(n_steps, ConvertCallback(self._log_data))

    def _log_data(self, _locals: dict[str, Any], _globals: dict[str, Any]) -> bool:
        self.model.dump_logs()
        return True
