"""What a run shows as it goes: a progress bar counted in env steps, SB3's log table at ``verbose >= 1``."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

import lightning as L
import numpy as np
from lightning.pytorch.callbacks import ProgressBar
from tqdm.auto import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from lit_rl.data.trainer_fields import trainer_datamodule


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
            desc=f"{type(pl_module).__name__} {trainer_datamodule(trainer).env_id}",
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


def sb3_table_values(module: Any) -> dict[str, Any]:
    """What SB3's off-policy ``dump_logs`` (and the ``train()`` records before it) puts in its table, from ``module``.

    ``train/`` losses are averages over the updates since the algorithm's last log row (SB3: its last
    ``train()`` call); ``train/`` rows appear once updates have run, as in SB3.
    """
    elapsed = max(time.perf_counter() - module.metrics.fit_start_time, sys.float_info.epsilon)
    values: dict[str, Any] = {
        "time/episodes": module.collector.episode_num,
        "time/fps": int((module.num_timesteps - module.metrics.fit_start_steps) / elapsed),
        "time/time_elapsed": int(elapsed),
        "time/total_timesteps": module.num_timesteps,
    }
    if module.ep_returns:
        values["rollout/ep_rew_mean"] = float(np.mean(module.ep_returns))
        values["rollout/ep_len_mean"] = float(np.mean(module.ep_lengths))
    if module.ep_success_buffer:
        values["rollout/success_rate"] = float(np.mean(module.ep_success_buffer))
    if hasattr(module, "exploration_rate"):  # DQN's epsilon, recorded by SB3's DQN at every step
        values["rollout/exploration_rate"] = float(module.exploration_rate)
    if module._n_updates:
        values.update({k: v for k, v in module.latest_metrics.items() if k.startswith("train/")})
        # The sums are read here, at most every few episodes: one host sync per table.
        values.update({k: float(total) / module.metrics.counts[k] for k, total in module.metrics.sums.items()})
        values["train/learning_rate"] = float(module.lr_schedule(module.progress_remaining()))
        values["train/n_updates"] = module._n_updates
    return values


class SB3LogTable(L.Callback):
    """SB3's ``verbose=1`` table every ``log_interval`` training episodes (SB3's off-policy ``dump_logs``).

    The table goes to the model's stdout output formats (``model.logger.output_formats``). It is printed
    at the end of the collect/update round in which the episode count reached a multiple of
    ``log_interval`` (the round ends its Lightning batch there); when several multiples fall in one round
    (episodes shorter than a round), one table is printed.
    """

    def __init__(self, log_interval: int) -> None:
        self.log_interval = log_interval
        self._next_episode = log_interval

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        self._next_episode = self._following(pl_module.collector.episode_num)

    def _following(self, episodes: int) -> int:
        return (episodes // self.log_interval + 1) * self.log_interval

    def next_batch_end(self, pl_module: Any) -> int | None:
        """End the running batch now when a table is due (see :func:`lit_rl.core.batching.batch_end_step`)."""
        return pl_module.num_timesteps if pl_module.collector.episode_num >= self._next_episode else None

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        episodes = pl_module.collector.episode_num
        if episodes >= self._next_episode:
            self._next_episode = self._following(episodes)
            pl_module.logger.print_table(sb3_table_values(pl_module), pl_module.num_timesteps)
