"""Training metrics of an algorithm: accumulated on the device, read and written only at log time."""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from lit_rl.core.host import AlgorithmHost
from lit_rl.core.sb3_logger import SB3Logger
from lit_rl.utils.checks import NonFiniteError


class RunMetrics(AlgorithmHost):
    """Mixin of :class:`~lit_rl.core.off_policy.OffPolicyAlgorithm` (uses its counters and collector)."""

    @property
    def ep_returns(self):
        """Returns of the last ``stats_window_size`` training episodes."""
        return self.collector.ep_returns

    @property
    def ep_lengths(self):
        """Lengths of the last ``stats_window_size`` training episodes."""
        return self.collector.ep_lengths

    @property
    def ep_info_buffer(self):
        """SB3's ``ep_info_buffer``: ``{"r", "l", "t"}`` of the last ``stats_window_size`` training episodes."""
        return self.collector.ep_info_buffer

    @property
    def ep_success_buffer(self):
        """SB3's ``ep_success_buffer``: ``info["is_success"]`` of the last training episodes that reported it."""
        return self.collector.ep_success_buffer

    @property  # SB3's logger where Lightning's has its own type: SB3Logger forwards the rest to Lightning's
    def logger(self) -> SB3Logger:  # type: ignore[override]  # SB3's model.logger API on Lightning's name
        """SB3's ``model.logger`` (record, record_mean, name_to_value, dump); other attributes: Lightning's logger."""
        sb3_logger = self.__dict__.get("_sb3_logger")
        if sb3_logger is None:
            sb3_logger = self.__dict__["_sb3_logger"] = SB3Logger(self)
        return sb3_logger

    def reset_metrics(self) -> None:
        """Start the metric sums and the fit's clock (``time/fps``)."""
        self._metric_sums: dict[str, torch.Tensor] = {}
        self._metric_counts: dict[str, int] = {}
        self.latest_metrics: dict[str, float] = {}
        self._learning_seconds, self._learning_steps = 0.0, 0
        self._fit_start_time, self._fit_start_steps = time.perf_counter(), 0

    def record(self, name: str, value: torch.Tensor | float) -> None:
        """Accumulate a metric; it is averaged and written at the next log (no host sync here)."""
        value = value.detach() if isinstance(value, torch.Tensor) else torch.tensor(float(value))
        if name in self._metric_sums:
            self._metric_sums[name] += value
            self._metric_counts[name] += 1
        else:
            self._metric_sums[name] = value.clone()
            self._metric_counts[name] = 1

    def dump_logs(self) -> None:
        """Write rollout, time and averaged train metrics to every logger at step ``num_timesteps``."""
        elapsed = max(time.perf_counter() - self._fit_start_time, 1e-9)
        metrics: dict[str, float] = {"time/fps": (self.num_timesteps - self._fit_start_steps) / elapsed}
        if self.ep_returns:
            metrics["rollout/ep_rew_mean"] = float(np.mean(self.ep_returns))
            metrics["rollout/ep_len_mean"] = float(np.mean(self.ep_lengths))
        for name, total in self._metric_sums.items():
            metrics[name] = float(total) / self._metric_counts[name]
        metrics["train/n_updates"] = self._n_updates
        self._metric_sums, self._metric_counts = {}, {}
        bad = {k: v for k, v in metrics.items() if k.startswith("train/") and not math.isfinite(v)}
        if bad:
            raise NonFiniteError(
                f"non-finite training metrics {bad} at env step {self.num_timesteps} (update {self._n_updates}); "
                "training stops and the last good checkpoint is kept; lower the learning rate or check rewards"
            )
        # SB3-style records (model.logger.record) join this row; those excluded from some format go separately.
        records = self.logger.take_records()
        metrics.update({k: v for k, (v, excluded) in records.items() if not excluded})
        self.log_metrics(metrics)
        self.logger.write({k: r for k, r in records.items() if r[1]}, self.num_timesteps)
        self.logger.written(metrics)

    def check_finite_parameters(self) -> None:
        """Raise :class:`NonFiniteError` naming the first NaN/inf parameter (checked before every checkpoint)."""
        for name, tensor in self.state_dict().items():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                raise NonFiniteError(
                    f"parameter {name} is not finite at env step {self.num_timesteps}; not saving it over the last "
                    "good checkpoint"
                )

    def log_metrics(self, metrics: dict[str, float]) -> None:
        """Send metrics to the loggers with env steps as the x-axis, and expose them to callbacks."""
        self.latest_metrics.update(metrics)
        if self._trainer is None:
            return
        for logger in self.loggers:
            logger.log_metrics(metrics, step=self.num_timesteps)
        self.trainer.callback_metrics.update({k: torch.tensor(v) for k, v in metrics.items()})

    @property
    def learning_phase_fps(self) -> float:
        """Env steps per second of training-step time after ``learning_starts`` (excludes evaluation)."""
        return self._learning_steps / self._learning_seconds if self._learning_seconds > 0 else float("nan")
