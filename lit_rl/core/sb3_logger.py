"""Stable-Baselines3's ``model.logger`` / ``callback.logger``: ``record``, ``record_mean``, ``name_to_value``, ``dump``.

Records go to the run's Lightning loggers (CSV, TensorBoard, W&B) at the next
dump: an explicit ``dump(step)`` or the algorithm's own periodic log, whose
row they join. ``output_formats`` lists SB3-style output formats: the stdout
table at ``verbose >= 1`` and one per Lightning logger (a TensorBoard one has
SB3's ``.writer``). Anything else asked of it (``experiment``, ``log_dir``, ...)
is answered by the Lightning logger, so Lightning code using
``self.logger`` keeps working.
"""

from __future__ import annotations

import numbers
import sys
from collections import defaultdict
from typing import Any, SupportsFloat, TextIO

import numpy as np
import torch
from tqdm import tqdm

# SB3's output format names for Lightning's logger classes; ``exclude=`` names them.
FORMAT_NAMES = {"CSVLogger": "csv", "TensorBoardLogger": "tensorboard", "WandbLogger": "wandb"}


def _as_float(value: Any) -> float | None:
    """A number as float; None for what a metrics logger cannot take (text, figures, videos, SB3's HParam)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.detach())
    if isinstance(value, np.ndarray) and value.size == 1:
        return float(value)
    # Every real-valued Number (int, float, Fraction, Decimal, numpy scalars) has __float__.
    if isinstance(value, numbers.Number) and not isinstance(value, complex) and isinstance(value, SupportsFloat):
        return float(value)
    return None


def _exclusions(exclude: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if exclude is None:
        return ()
    return (exclude,) if isinstance(exclude, str) else tuple(exclude)


def _plain(value: Any) -> Any:
    """A one-element tensor or array as a Python number; anything else as SB3 would print it."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    if isinstance(value, np.ndarray) and value.size == 1:
        return value.item()
    return value


class HumanOutputFormat:
    """SB3's stdout table (``HumanOutputFormat``): one ``| key | value |`` row per record, grouped by ``tag/``.

    Same layout as SB3: keys sorted, floats as ``{:<8.3g}``, other values as ``str``, keys and values
    cut to ``max_length``; records excluded for ``"stdout"`` or ``"log"`` are left out. ``file=None``
    writes to the ``sys.stdout`` of the moment, above a running tqdm bar.
    """

    name = "stdout"

    def __init__(self, file: TextIO | None = None, max_length: int = 36) -> None:
        self.file = file
        self.max_length = max_length

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        """Print ``key_values`` as one table (nothing when none is left to print)."""
        rows: dict[tuple[str, str], str] = {}
        tag = ""
        for key in sorted(key_values):
            if {"stdout", "log"} & set(key_excluded.get(key) or ()):
                continue
            value = _plain(key_values[key])
            value_text = f"{value:<8.3g}" if isinstance(value, float) else str(value)
            if key.find("/") > 0:  # a new tag gets its own header row
                tag = key[: key.find("/") + 1]
                rows[(tag, self._truncate(tag))] = ""
            if tag and tag in key:
                key = f"{'':3}{key[len(tag) :]}"
            rows[(tag, self._truncate(key))] = self._truncate(value_text)
        if not rows:
            return
        key_width = max(len(key) for _, key in rows)
        value_width = max(len(value) for value in rows.values())
        dashes = "-" * (key_width + value_width + 7)
        lines = [
            dashes,
            *(f"| {key:<{key_width}} | {value:<{value_width}} |" for (_, key), value in rows.items()),
            dashes,
        ]
        text = "\n".join(lines) + "\n"
        file = self.file if self.file is not None else sys.stdout
        if file is sys.stdout:
            tqdm.write(text, file=file, end="")  # a progress bar on stdout is redrawn below the table
        else:
            file.write(text)
        file.flush()

    def _truncate(self, text: str) -> str:
        return text[: self.max_length - 3] + "..." if len(text) > self.max_length else text

    def close(self) -> None:
        """Nothing to close: the file is the caller's."""


class LightningOutputFormat:
    """One Lightning logger of the run as an SB3 output format (``name``: ``"csv"``, ``"wandb"``, ...)."""

    def __init__(self, logger: Any) -> None:
        self.logger = logger
        self.name = next(  # a subclass (the launcher's W&B logger) keeps its base's name
            (FORMAT_NAMES[c.__name__] for c in type(logger).__mro__ if c.__name__ in FORMAT_NAMES),
            type(logger).__name__.lower(),
        )

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        """Log the numeric values not excluded for this format at ``step`` (text, figures: not written)."""
        metrics = {}
        for key, value in key_values.items():
            number = _as_float(value)
            if number is not None and self.name not in (key_excluded.get(key) or ()):
                metrics[key] = number
        if metrics:
            self.logger.log_metrics(metrics, step=step)

    def close(self) -> None:
        """Nothing to close here: Lightning finalizes its loggers at the end of the run."""


class TensorBoardOutputFormat(LightningOutputFormat):
    """The run's TensorBoard logger as SB3's ``TensorBoardOutputFormat``: ``writer`` is its ``SummaryWriter``."""

    @property
    def writer(self) -> Any:
        """The run's ``torch.utils.tensorboard.SummaryWriter`` (SB3's way to add images, histograms, text)."""
        return self.logger.experiment


def output_format(logger: Any) -> LightningOutputFormat:
    """The SB3 output format of a Lightning logger."""
    is_tensorboard = type(logger).__name__ == "TensorBoardLogger"
    return TensorBoardOutputFormat(logger) if is_tensorboard else LightningOutputFormat(logger)


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
        self._formats: list[Any] = []
        self._format_sources: tuple[Any, ...] | None = None  # what _formats was built from

    @property
    def output_formats(self) -> list[Any]:
        """SB3's ``Logger.output_formats``: :class:`HumanOutputFormat` at ``verbose >= 1``, then one per Lightning logger.

        A TensorBoard logger is a :class:`TensorBoardOutputFormat` whose ``writer`` is the run's SummaryWriter.
        The list is rebuilt when the run's loggers or the verbosity change, and is otherwise the same list.
        """
        sources = (getattr(self.model, "verbose", 0) >= 1, *self.model.loggers)
        if sources != self._format_sources:
            self._formats = [HumanOutputFormat()] if sources[0] else []
            self._formats += [output_format(logger) for logger in sources[1:]]
            self._format_sources = sources
        return self._formats

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
        """Write the records to every output format at ``step`` (the table too, at ``verbose >= 1``), then forget them."""
        values = {key: self.name_to_value[key] for key in self._recorded}
        excluded = {key: self.name_to_excluded[key] for key in self._recorded}
        self.model.latest_metrics.update({k: v for k, (v, _) in self.take_records().items()})
        for output in self.output_formats:
            output.write(values, excluded, step)

    def write(self, records: dict[str, tuple[float, tuple[str, ...]]], step: int) -> None:
        """Send ``records`` (value, exclusions) to the run's loggers that are not excluded for them (not the table)."""
        if not records:
            return
        self.model.latest_metrics.update({k: v for k, (v, _) in records.items()})
        values = {k: v for k, (v, _) in records.items()}
        excluded = {k: e for k, (_, e) in records.items()}
        for output in self.output_formats:
            if not isinstance(output, HumanOutputFormat):
                output.write(values, excluded, step)

    def print_table(self, values: dict[str, Any], step: int) -> None:
        """Print ``values`` and the records not yet dumped as SB3's table, through the stdout formats only."""
        pending = {key: self.name_to_value[key] for key in self._recorded}
        excluded = {key: self.name_to_excluded[key] for key in self._recorded}
        for output in self.output_formats:
            if isinstance(output, HumanOutputFormat):
                output.write({**pending, **values}, excluded, step)

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
