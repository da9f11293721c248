"""Training metrics of an algorithm: accumulated on the device, read and written only at log time."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch

from lit_rl.utils.checks import NonFiniteError


class RunMetrics:
    """The algorithm's metric sums (tensors, never synced until a log), its latest logged values and the fit's clock.

    ``latest`` is what loggers last received (callbacks and the progress bar read it); the learning-phase
    seconds and env steps give ``learning_phase_fps`` (env steps/s after ``learning_starts``, evaluation excluded).
    """

    def __init__(self) -> None:
        self.sums: dict[str, torch.Tensor] = {}
        self.counts: dict[str, int] = {}
        self.latest: dict[str, float] = {}
        self.learning_seconds, self.learning_steps = 0.0, 0
        self.fit_start_time, self.fit_start_steps = time.perf_counter(), 0

    def record(self, name: str, value: torch.Tensor | float) -> None:
        """Accumulate a metric; it is averaged and written at the next log (no host sync here)."""
        value = value.detach() if isinstance(value, torch.Tensor) else torch.tensor(float(value))
        if name in self.sums:
            self.sums[name] += value
            self.counts[name] += 1
        else:
            self.sums[name] = value.clone()
            self.counts[name] = 1

    def start_fit(self, num_timesteps: int) -> None:
        """A fit starts at ``num_timesteps``: ``time/fps`` counts from here."""
        self.fit_start_time, self.fit_start_steps = time.perf_counter(), num_timesteps

    def add_learning(self, seconds: float, env_steps: int) -> None:
        """One collect/update round of the learning phase took ``seconds`` for ``env_steps``."""
        self.learning_seconds += seconds
        self.learning_steps += env_steps

    @property
    def learning_phase_fps(self) -> float:
        """Env steps per second of training-step time after ``learning_starts`` (excludes evaluation)."""
        return self.learning_steps / self.learning_seconds if self.learning_seconds > 0 else float("nan")

    def take_averages(self) -> dict[str, float]:
        """The recorded metrics averaged since the last log (one host read each); the sums start again."""
        averages = {name: float(total) / self.counts[name] for name, total in self.sums.items()}
        self.sums, self.counts = {}, {}
        return averages


def log_row(algo: Any) -> dict[str, float]:
    """The log row at ``algo.num_timesteps``: fps, episode statistics, averaged train metrics, ``n_updates``.

    Non-finite train metrics raise :class:`NonFiniteError`: the run ends without saving a diverged model.
    """
    metrics: RunMetrics = algo.metrics
    elapsed = max(time.perf_counter() - metrics.fit_start_time, 1e-9)
    row: dict[str, float] = {"time/fps": (algo.num_timesteps - metrics.fit_start_steps) / elapsed}
    if algo.ep_returns:
        row["rollout/ep_rew_mean"] = float(np.mean(algo.ep_returns))
        row["rollout/ep_len_mean"] = float(np.mean(algo.ep_lengths))
    if algo.ep_success_buffer:  # info["is_success"] of the last episodes (goal-conditioned envs), as SB3 logs it
        row["rollout/success_rate"] = float(np.mean(algo.ep_success_buffer))
    row.update(metrics.take_averages())
    row["train/n_updates"] = algo._n_updates
    bad = {k: v for k, v in row.items() if k.startswith("train/") and not math.isfinite(v)}
    if bad:
        raise NonFiniteError(
            f"non-finite training metrics {bad} at env step {algo.num_timesteps} (update {algo._n_updates}); "
            "training stops and the last good checkpoint is kept; lower the learning rate or check rewards"
        )
    return row


def check_finite_parameters(algo: Any) -> None:
    """Raise :class:`NonFiniteError` naming the first NaN/inf parameter (checked before every checkpoint)."""
    for name, tensor in algo.state_dict().items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise NonFiniteError(
                f"parameter {name} is not finite at env step {algo.num_timesteps}; not saving it over the last "
                "good checkpoint"
            )
