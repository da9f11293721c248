"""Checkpoint on SIGTERM/SIGINT (cluster preemption, Ctrl-C), then stop: a resume loses nothing."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import lightning as L

from lit_rl.callbacks.evaluation import save_checkpoint_atomically

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Preempted(Exception):
    """Training stopped on a signal after writing a checkpoint."""

    def __init__(self, signum: int, checkpoint: Path) -> None:
        self.signum, self.checkpoint = signum, checkpoint
        super().__init__(f"received {signal.Signals(signum).name}: checkpoint saved to {checkpoint}")


class PreemptionCheckpoint(L.Callback):
    """On SIGTERM or SIGINT, finish the current training step, save ``path`` and raise :class:`Preempted`.

    The signal only sets a flag: the model is never saved halfway through an
    update. A second SIGINT interrupts at once (Python's default).
    Replaces Lightning's own SIGTERM handler for the duration of the fit.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.received is not None and signum == signal.SIGINT:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt
        self.received = signum

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be installed from the main thread
        for signum in HANDLED_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def next_batch_end(self, pl_module: Any) -> int | None:
        """Once a signal came, now: the algorithm ends its batch after the running round, and it is saved."""
        return pl_module.num_timesteps if self.received is not None else None

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.received is not None:
            save_checkpoint_atomically(trainer, self.path)
            raise Preempted(self.received, self.path)

    def teardown(self, trainer: L.Trainer, pl_module: Any, stage: str) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
