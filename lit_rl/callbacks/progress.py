"""A progress bar counted in env steps rather than Lightning batches."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import ProgressBar
from tqdm.auto import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm


class EnvStepProgressBar(ProgressBar):
    """tqdm bar over ``total_timesteps`` env steps with steps/s, recent episode return and last eval."""

    def __init__(self, refresh_seconds: float = 0.5) -> None:
        super().__init__()
        self.refresh_seconds = refresh_seconds
        self._enabled = True
        self._bar: tqdm | None = None
        self._last_refresh = 0.0
        self._log_redirect = contextlib.ExitStack()

    def disable(self) -> None:
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        if not self._enabled:
            return
        self._bar = tqdm(
            total=pl_module.total_timesteps,
            initial=pl_module.num_timesteps,
            desc=f"{type(pl_module).__name__} {trainer.datamodule.env_id}",
            unit="step",
            dynamic_ncols=True,
            file=sys.stdout,
            smoothing=0.05,
        )
        # Log lines (evaluations, the launcher's train.log records) on the console go above the bar, not through it.
        self._log_redirect.enter_context(logging_redirect_tqdm(tqdm_class=type(self._bar)))

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self._bar is None:
            return
        now = time.perf_counter()
        if now - self._last_refresh < self.refresh_seconds and pl_module.num_timesteps < pl_module.total_timesteps:
            return
        self._last_refresh = now
        self._bar.update(pl_module.num_timesteps - self._bar.n)
        postfix = {}
        if pl_module.ep_returns:
            postfix["ep_rew"] = f"{sum(pl_module.ep_returns) / len(pl_module.ep_returns):.1f}"
        if "eval/mean_reward" in pl_module.latest_metrics:
            postfix["eval"] = f"{pl_module.latest_metrics['eval/mean_reward']:.1f}"
        self._bar.set_postfix(postfix, refresh=True)

    def on_train_end(self, trainer: L.Trainer, pl_module: Any) -> None:
        if self._bar is not None:
            self._bar.update(pl_module.num_timesteps - self._bar.n)
            self._bar.close()
            self._bar = None
        self._log_redirect.close()

    def on_exception(self, trainer: L.Trainer, pl_module: Any, exception: BaseException) -> None:
        self._log_redirect.close()
