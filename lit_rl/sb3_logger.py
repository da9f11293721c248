"""Stable-Baselines3's ``model.logger`` / ``callback.logger``: ``record``, ``record_mean``, ``name_to_value``, ``dump``.

Records go to the run's Lightning loggers (CSV, TensorBoard, W&B) at the next
dump: an explicit ``dump(step)`` or the algorithm's own periodic log, whose
row they join. Anything else asked of it (``experiment``, ``log_dir``, ...)
is answered by the Lightning logger, so Lightning code using
``self.logger`` keeps working.
"""

from __future__ import annotations

import numbers
from collections import defaultdict
from typing import Any

import numpy as np
import torch

# SB3's output format names for Lightning's logger classes; ``exclude=`` names them.
FORMAT_NAMES = {"CSVLogger": "csv", "TensorBoardLogger": "tensorboard", "WandbLogger": "wandb"}


def _as_float(value: Any) -> float | None:
    """A number as float; None for what a metrics logger cannot take (text, figures, videos, SB3's HParam)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.detach())
    if isinstance(value, np.ndarray) and value.size == 1:
        return float(value)
    if isinstance(value, numbers.Number) and not isinstance(value, complex):
        return float(value)
    return None


def _exclusions(exclude: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if exclude is None:
        return ()
    return (exclude,) if isinstance(exclude, str) else tuple(exclude)


class SB3Logger:
    """SB3's ``Logger`` API over an algorithm's Lightning loggers.

    ``record`` keeps the last value of a key, ``record_mean`` a running mean
    (SB3's formula); ``exclude`` names output formats to skip (``"csv"``,
    ``"tensorboard"``, ``"wandb"``). Non-numeric values are kept in
    ``name_to_value`` but not written. After the algorithm's periodic log,
    ``name_to_value`` holds the values it wrote (``train/...``, ``rollout/...``)
    until new records arrive, so they can be read after ``learn``.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.name_to_value: defaultdict[str, Any] = defaultdict(float)
        self.name_to_count: defaultdict[str, int] = defaultdict(int)
        self.name_to_excluded: defaultdict[str, tuple[str, ...]] = defaultdict(tuple)
        self._recorded: set[str] = set()  # keys recorded since the last dump (the others are already written)

    def record(self, key: str, value: Any, exclude: str | tuple[str, ...] | None = None) -> None:
        """Set ``key`` to ``value`` for the next dump (the last value recorded wins)."""
        self.name_to_value[key] = value
        self.name_to_excluded[key] = _exclusions(exclude)
        self._recorded.add(key)

    def record_mean(self, key: str, value: Any, exclude: str | tuple[str, ...] | None = None) -> None:
        """Average ``value`` into ``key`` until the next dump (None is ignored, as in SB3)."""
        if value is None:
            return
        old, count = self.name_to_value[key], self.name_to_count[key]
        self.name_to_value[key] = old * count / (count + 1) + value / (count + 1)
        self.name_to_count[key] = count + 1
        self.name_to_excluded[key] = _exclusions(exclude)
        self._recorded.add(key)

    def take_records(self) -> dict[str, tuple[float, tuple[str, ...]]]:
        """The numeric records since the last dump with their exclusions; forget all records (SB3's dump does)."""
        records = {}
        for key in self._recorded:
            value = _as_float(self.name_to_value[key])
            if value is not None:
                records[key] = (value, self.name_to_excluded[key])
        self.name_to_value.clear()
        self.name_to_count.clear()
        self.name_to_excluded.clear()
        self._recorded.clear()
        return records

    def dump(self, step: int = 0) -> None:
        """Write the records to the run's Lightning loggers at ``step``, then forget them."""
        self.write(self.take_records(), step)

    def write(self, records: dict[str, tuple[float, tuple[str, ...]]], step: int) -> None:
        """Send ``records`` to every Lightning logger that is not excluded for them."""
        if not records:
            return
        self.model.latest_metrics.update({k: v for k, (v, _) in records.items()})
        for logger in self.model.loggers:
            name = FORMAT_NAMES.get(type(logger).__name__, type(logger).__name__.lower())
            metrics = {k: v for k, (v, excluded) in records.items() if name not in excluded}
            if metrics:
                logger.log_metrics(metrics, step=step)

    def written(self, metrics: dict[str, float]) -> None:
        """The algorithm wrote ``metrics``: readable in ``name_to_value`` (not written again)."""
        self.name_to_value.update(metrics)

    def get_dir(self) -> str | None:
        """The first Lightning logger's folder (SB3: the log folder), or None."""
        loggers = self.model.loggers
        return getattr(loggers[0], "log_dir", None) if loggers else None

    def log(self, *args: Any) -> None:
        """Print ``args`` when the model is verbose (SB3's ``logger.log``/``info``)."""
        if getattr(self.model, "verbose", 0):
            print(*args)

    info = log

    def warn(self, *args: Any) -> None:
        print(*args)

    error = warn

    def __getattr__(self, name: str) -> Any:
        # Lightning's ``module.logger`` API (experiment, log_dir, log_metrics, ...) stays reachable.
        if name.startswith("_") or name == "model":
            raise AttributeError(name)
        lightning_logger = self.model._trainer.logger if self.model._trainer is not None else None
        if lightning_logger is None:
            raise AttributeError(f"SB3Logger has no attribute {name!r} and the model has no Lightning logger")
        return getattr(lightning_logger, name)
