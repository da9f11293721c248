"""Checkpoint on a stop signal (preemption, time limit, Ctrl-C), then stop: a resume loses nothing.

Signals and who acts on them:

- SIGTERM (cluster preemption, ``scontrol requeue``, ``scancel``) and SIGINT (Ctrl-C): checkpoint and
  stop; the scheduler decides whether the job runs again.
- SIGUSR1 / SIGUSR2, the time-limit warnings of SLURM (submitit sends SIGUSR2), when a requeue
  authority has installed a handler for them (submitit does inside its jobs): checkpoint, stop, then
  hand the signal to that handler, which requeues the job and exits. One party requeues: the one
  that owns the job (submitit), never Lightning (:func:`lit_rl.core.trainer.single_process_environment`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L

from lit_rl.callbacks.evaluation import save_checkpoint_atomically

HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# Time-limit warnings: handled only where a requeue authority listens for them (else their default stays).
REQUEUE_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2)

SignalHandler = Callable[[int, Any], Any]


def requeue_handler(signum: int) -> SignalHandler | None:
    """The Python handler installed for ``signum`` by someone else (submitit), or None."""
    handler = signal.getsignal(signum)
    return handler if callable(handler) else None


class Preempted(Exception):
    """Training stopped on a signal after writing a checkpoint.

    ``requeue`` is the requeue authority's handler for a time-limit signal (call it to requeue the
    job and exit), None for a plain stop.
    """

    def __init__(self, signum: int, checkpoint: Path, requeue: SignalHandler | None = None) -> None:
        self.signum, self.checkpoint, self.requeue = signum, checkpoint, requeue
        super().__init__(f"received {self.signal_name}: checkpoint saved to {checkpoint}")

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def status(self) -> str:
        """``summary.json``'s status: ``requeued`` (handed to the requeue authority) or ``interrupted``."""
        return "requeued" if self.requeue is not None else "interrupted"


class PreemptionCheckpoint(L.Callback):
    """On a stop signal, finish the running collect/update round, save ``path`` and raise :class:`Preempted`.

    The signal only sets a flag: the model is never saved halfway through an
    update. A second SIGINT interrupts at once (Python's default).
    Replaces Lightning's own SIGTERM handler for the duration of the fit.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.received: int | None = None
        self._previous: dict[int, Any] = {}
        self._requeue: dict[int, SignalHandler] = {}

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.received is not None and signum == signal.SIGINT:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt
        self.receive(signum)

    def receive(self, signum: int, requeue: SignalHandler | None = None) -> None:
        """Stop after the running round as on ``signum`` (the first signal counts); ``requeue`` hands the stop to a
        requeue authority, as its own handler for a time-limit signal does."""
        if self.received is None:
            self.received = signum
            if requeue is not None:
                self._requeue[signum] = requeue

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be installed from the main thread
        self._requeue = {s: h for s in REQUEUE_SIGNALS if (h := requeue_handler(s)) is not None}
        for signum in (*HANDLED_SIGNALS, *self._requeue):
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def next_batch_end(self, pl_module: Any) -> int | None:
        """Once a signal came, now: the algorithm ends its batch after the running round, and it is saved."""
        return pl_module.num_timesteps if self.received is not None else None

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        # A signal in the last round of the budget lets the run finish (final evaluation, summary "completed"):
        # requeued instead, its next start would find nothing left to train.
        if self.received is not None and pl_module.num_timesteps < pl_module.total_timesteps:
            save_checkpoint_atomically(trainer, self.path, keep_previous=True)
            raise Preempted(self.received, self.path, self._requeue.get(self.received))

    def teardown(self, trainer: L.Trainer, pl_module: Any, stage: str) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
