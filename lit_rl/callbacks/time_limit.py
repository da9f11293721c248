"""A warning when a SLURM job's time limit is shorter than one checkpoint interval.

A job stopped without its time-limit signal (a hard limit, a node failure, ``sbatch`` without ``--signal``)
continues from its last checkpoint; if the limit is shorter than the time between two checkpoints, every
requeue starts from the same checkpoint and the job never ends. The check measures the run's own speed, so it
warns with the ``eval.freq`` that fits.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from typing import Any

import lightning as L

log = logging.getLogger("lit_rl.train")


def parse_slurm_time(value: str) -> float | None:
    """Seconds of a SLURM duration (``[days-]hours:minutes:seconds``, ``minutes:seconds``, ``minutes``), or None
    for ``UNLIMITED``, ``NOT_SET`` and anything else that is no duration."""
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", value.strip())
    if match is None:
        return None
    days, *clock = match.groups()
    parts = [int(p) for p in clock if p is not None]
    if days is not None:  # days-hours[:minutes[:seconds]]
        parts += [0] * (3 - len(parts))
        return int(days) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
    if len(parts) == 1:  # minutes
        return parts[0] * 60.0
    if len(parts) == 2:  # minutes:seconds
        return parts[0] * 60.0 + parts[1]
    return parts[0] * 3600.0 + parts[1] * 60 + parts[2]


def slurm_time_limit() -> float | None:
    """This SLURM job's time limit in seconds (``squeue %l``), or None outside SLURM or without a limit."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return None
    try:
        out = subprocess.run(["squeue", "-h", "-j", job, "-o", "%l"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):  # squeue missing on the compute node: no check, no failure
        return None
    return parse_slurm_time(out.stdout.splitlines()[0]) if out.returncode == 0 and out.stdout.strip() else None


class CheckpointIntervalCheck(L.Callback):
    """Warns once, ``after_s`` seconds into training, if one checkpoint interval (``eval_freq`` env steps at the
    speed measured so far) takes longer than ``time_limit_s`` (default: this SLURM job's limit)."""

    def __init__(self, eval_freq: int, time_limit_s: float | None = None, after_s: float = 30.0) -> None:
        super().__init__()
        self.eval_freq, self.after_s = eval_freq, after_s
        self.time_limit_s = time_limit_s if time_limit_s is not None else slurm_time_limit()
        self.warned = False
        self._start: tuple[float, int] | None = None

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        self._start = (time.monotonic(), pl_module.num_timesteps)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.warned or self.time_limit_s is None or self._start is None:
            return
        elapsed, steps = time.monotonic() - self._start[0], pl_module.num_timesteps - self._start[1]
        if elapsed < min(self.after_s, self.time_limit_s / 4) or steps <= 0:
            return
        self.warned = True  # one measurement: the check costs nothing after it
        rate = steps / elapsed
        interval_s = self.eval_freq / rate
        if interval_s <= self.time_limit_s:
            return
        fits = max(1, int(rate * self.time_limit_s / 2))
        log.warning(
            "The job's time limit (%.1f min) is shorter than one checkpoint interval (eval.freq=%d env steps, "
            "about %.1f min at %.0f env steps/s): a job stopped without its time-limit signal restarts from the same "
            "checkpoint each time and never ends; set eval.freq=%d or less (half the limit) or a longer time limit",
            self.time_limit_s / 60,
            self.eval_freq,
            interval_s / 60,
            rate,
            fits,
        )
