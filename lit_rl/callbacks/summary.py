"""summary.json: what a run did, in one small file at the top of its folder."""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

import lightning as L

from lit_rl.callbacks.evaluation import PeriodicEvaluation
from lit_rl.callbacks.preemption import Preempted
from lit_rl.data.trainer_fields import trainer_callbacks
from lit_rl.utils.io import write_json_atomically

log = logging.getLogger(__name__)


def _finite_or_none(x: float) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _format_return(x: float | None) -> str:
    return "none" if x is None else f"{x:.2f}"


def log_summary(summary: dict[str, Any], path: Path) -> None:
    """One line (two for a failure) that says how the run ended, into the job's log (``train.log``)."""
    fps = summary.get("learning_phase_fps")
    log.log(
        logging.INFO if summary["status"] == "completed" else logging.WARNING,
        "Run %s: %d env steps in %.1f s (learning phase %s env steps/s); final eval return %s, best %s; wrote %s",
        summary["status"],
        summary["env_steps"],
        summary["wall_seconds"],
        "n/a" if fps is None else f"{fps:.1f}",
        _format_return(summary.get("final_eval_return")),
        _format_return(summary.get("best_eval_return")),
        path,
    )
    if "error" in summary:
        log.warning("Stopped by %s", summary["error"])


def publish_to_wandb(trainer: L.Trainer, summary: dict[str, Any]) -> None:
    """Copy the summary into the run summary of every W&B logger (the numbers a W&B table shows)."""
    from lightning.pytorch.loggers import WandbLogger

    for logger in trainer.loggers:
        if isinstance(logger, WandbLogger):
            try:
                logger.experiment.summary.update(summary)
            except Exception as error:  # e.g. a preemption's SIGTERM already stopped W&B's service process
                log.warning("W&B: summary not updated (%s: %s); summary.json has it", type(error).__name__, error)


class RunSummary(L.Callback):
    """Writes ``summary.json`` when training ends (status "completed"), fails ("failed") or stops on a signal
    ("interrupted", or "requeued" when a time-limit signal hands the job to its requeue authority).

    Holds ``algo``, ``env``, ``seed``, env steps, wall seconds, learning-phase
    env steps per second and the final and best evaluation returns (read from
    the trainer's :class:`PeriodicEvaluation`).
    """

    def __init__(self, path: str | Path, info: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.path = Path(path)
        self.info = dict(info or {})
        self.summary: dict[str, Any] = {}
        self._start = time.perf_counter()
        self._started = False

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        self._started = True

    def on_fit_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        self._start = time.perf_counter()

    def build(self, trainer: L.Trainer, pl_module: Any, status: str, error: str | None = None) -> dict[str, Any]:
        """The summary as a dict (also kept on ``self.summary``)."""
        evals = next((cb for cb in trainer_callbacks(trainer) if isinstance(cb, PeriodicEvaluation)), None)
        summary = {
            **self.info,
            "status": status,
            "env_steps": pl_module.num_timesteps,
            "wall_seconds": round(time.perf_counter() - self._start, 3),
            "learning_phase_fps": _finite_or_none(pl_module.learning_phase_fps),
            "final_eval_return": _finite_or_none(evals.last_mean_reward) if evals else None,
            "best_eval_return": _finite_or_none(evals.best_mean_reward) if evals else None,
            "eval_seconds": round(evals.eval_seconds, 3) if evals else None,
        }
        if error is not None:
            summary["error"] = error
        self.summary = summary
        return summary

    def on_train_end(self, trainer: L.Trainer, pl_module: Any) -> None:
        write_json_atomically(self.path, self.build(trainer, pl_module, "completed"))
        log_summary(self.summary, self.path)
        publish_to_wandb(trainer, self.summary)

    def on_exception(self, trainer: L.Trainer, pl_module: Any, exception: BaseException) -> None:
        if not self._started:  # a configuration error: no run happened, so no summary
            return
        if isinstance(exception, Preempted):
            # The signal, the status and the env step (the checkpoint's) say where a resume continues.
            summary = self.build(trainer, pl_module, exception.status, f"Preempted: {exception}")
            summary["signal"] = exception.signal_name
        else:
            status = "interrupted" if isinstance(exception, KeyboardInterrupt) else "failed"
            summary = self.build(trainer, pl_module, status, f"{type(exception).__name__}: {exception}")
        write_json_atomically(self.path, summary)
        log_summary(self.summary, self.path)
        publish_to_wandb(trainer, self.summary)
