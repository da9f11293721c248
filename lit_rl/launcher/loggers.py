"""Logger factories that need more than a constructor call."""

from __future__ import annotations

import csv
import functools
import netrc
import os
import secrets
import socket
import sys
import urllib.parse
import warnings
from pathlib import Path
from typing import Any

from lightning.fabric.loggers.logger import rank_zero_experiment
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter

from lit_rl.utils.io import write_atomically

WANDB_MODES = ("auto", "online", "offline", "disabled")


def wandb_credentials_present() -> bool:
    """True when W&B can authenticate without a prompt (env var or ~/.netrc entry)."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        hosts = netrc.netrc().hosts
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False
    return any("wandb" in host for host in hosts)


def wandb_reachable(timeout: float = 3.0) -> bool:
    """True when W&B's server (``WANDB_BASE_URL`` or api.wandb.ai) accepts a connection within ``timeout`` s."""
    url = urllib.parse.urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai"))
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=timeout).close()
    except OSError:
        return False
    return True


def make_wandb_logger(
    project: str = "lit_rl",
    entity: str | None = None,
    group: str | None = None,
    tags: list[str] | None = None,
    mode: str = "auto",
    save_dir: str = ".",
    **kwargs: Any,
):
    """A ``WandbLogger`` that never blocks on a login prompt.

    ``mode="auto"`` runs online when credentials exist and offline otherwise
    (the run folder then holds a ``wandb/`` directory that ``wandb sync``
    uploads later). ``auto`` and ``online`` fall back to offline, with one
    warning, when the W&B server cannot be reached.
    """
    if mode not in WANDB_MODES:
        raise ValueError(f"logger.wandb.mode={mode!r} is not allowed; allowed: {list(WANDB_MODES)}")
    if mode == "auto" and not wandb_credentials_present():
        mode = "offline"
        warnings.warn(
            "W&B: no credentials found, logging offline (run `wandb sync` on the run's wandb/ folder to upload)",
            stacklevel=2,
        )
    if mode in ("auto", "online") and not wandb_reachable():
        # An unreachable server must not stall or kill a run: log locally and say so once.
        mode = "offline"
        warnings.warn(
            f"W&B: {os.environ.get('WANDB_BASE_URL', 'https://api.wandb.ai')} is unreachable, logging offline "
            "(run `wandb sync` on the run's wandb/ folder to upload later)",
            stacklevel=2,
        )
    mode = "online" if mode == "auto" else mode
    os.makedirs(save_dir, exist_ok=True)
    if "id" not in kwargs and "version" not in kwargs:
        kwargs.update(id=wandb_run_id(Path(save_dir)), resume="allow")
    return _wandb_logger_class()(
        project=project, entity=entity, group=group, tags=list(tags or []), save_dir=save_dir, mode=mode, **kwargs
    )


@functools.cache
def _wandb_logger_class() -> type:
    """Lightning's ``WandbLogger``, made to outlive the loss of W&B's service process.

    On a preemption or requeue, SLURM signals every process of the job: W&B's service can exit before the run
    has saved its checkpoint, and the next ``log`` raises ``ConnectionResetError``. W&B logging then stops with one
    warning, and the run goes on to its checkpoint (``metrics.csv`` keeps every metric).
    """
    from lightning.pytorch.loggers import WandbLogger

    class SurvivingWandbLogger(WandbLogger):
        _lost: str | None = None

        def log_metrics(self, metrics: Any, step: int | None = None) -> None:
            if self._lost is None:
                try:
                    super().log_metrics(metrics, step)
                except ConnectionError as error:
                    self._lost = f"{type(error).__name__}: {error}"
                    warnings.warn(
                        f"W&B: lost the connection to its service process ({self._lost}); W&B logging stops here, "
                        "metrics.csv goes on",
                        stacklevel=2,
                    )

    return SurvivingWandbLogger


def wandb_run_id(run_dir: Path) -> str:
    """The W&B run id of a run folder: made once and kept in ``wandb/run_id``, so a resumed or requeued run
    (same folder) continues the same W&B run. Offline, each resume is a folder ``wandb/offline-run-*-<id>``;
    ``wandb sync --append`` uploads them into that one run."""
    path = run_dir / "wandb" / "run_id"
    if path.is_file() and (run_id := path.read_text().strip()):
        return run_id
    run_id = secrets.token_hex(4)  # W&B's id alphabet; from the OS, so the run's seeded RNGs are untouched
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, lambda tmp: tmp.write_text(run_id + "\n"))
    return run_id


def finish_wandb_run(failed: bool = False, preempted: bool = False) -> None:
    """Finish the active W&B run, if any, so the next job in this process starts its own.

    ``preempted``: the run stops for a requeue or preemption and will be resumed (W&B marks it so).
    A failing W&B teardown is reported and never changes how the run ends.
    """
    wandb = sys.modules.get("wandb")  # never import wandb just to find out that no run exists
    run = getattr(wandb, "run", None) if wandb is not None else None
    if wandb is None or run is None:
        return
    try:
        if preempted:
            run.mark_preempting()
        wandb.finish(exit_code=1 if failed or preempted else 0)
    except Exception as error:  # e.g. its service process already killed by the scheduler
        warnings.warn(f"W&B: could not finish run {run.id}: {type(error).__name__}: {error}", stacklevel=2)


def wandb_sweep_group(mode: object, sweep_dir: str) -> str | None:
    """The default W&B group: the sweep folder's last two parts (``<date>/<time>``) in a multirun, else None."""
    if not str(mode).endswith("MULTIRUN"):
        return None
    return "/".join(Path(str(sweep_dir)).parts[-2:])


class _ContinuingExperimentWriter(ExperimentWriter):
    """Lightning's CSV writer, but an existing ``metrics.csv`` keeps its rows up to ``keep_up_to_step``.

    Lightning deletes an existing ``metrics.csv``; a resumed run instead keeps the rows its checkpoint
    covers (rows logged after the checkpoint, e.g. before a ``kill -9``, are dropped, as the resumed run
    logs those steps again) and appends to them.
    """

    def __init__(self, log_dir: str, keep_up_to_step: int) -> None:
        self.keep_up_to_step = keep_up_to_step
        super().__init__(log_dir)

    def _check_log_dir_exists(self) -> None:
        path = Path(self.metrics_file_path)
        if not path.is_file():
            return
        with open(path, newline="") as file:
            reader = csv.DictReader(file)
            header = list(reader.fieldnames or [])
            rows = [row for row in reader if _step(row) <= self.keep_up_to_step]

        def write(tmp: Path) -> None:
            with open(tmp, "w", newline="") as file:
                writer = csv.DictWriter(file, fieldnames=header)
                writer.writeheader()
                writer.writerows(rows)

        write_atomically(path, write)
        self.metrics_keys = header  # new columns extend this header (Lightning rewrites the file once then)


def _step(row: dict[str, str]) -> float:
    try:
        return float(row.get("step") or "nan")
    except ValueError:
        return float("nan")  # a row without a step is dropped (NaN compares false)


class RunCSVLogger(CSVLogger):
    """Lightning's ``CSVLogger`` that can continue an existing ``metrics.csv`` (see :meth:`continue_from`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._keep_up_to_step: int | None = None

    def continue_from(self, env_step: int) -> None:
        """Keep the rows of an existing ``metrics.csv`` up to ``env_step`` and append after them.

        Call before anything is logged (the writer is created on first use).
        """
        if self._experiment is not None:
            raise RuntimeError("continue_from() must be called before the CSV logger writes anything")
        self._keep_up_to_step = int(env_step)

    @property
    @rank_zero_experiment
    def experiment(self) -> ExperimentWriter:
        if self._experiment is None and self._keep_up_to_step is not None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = _ContinuingExperimentWriter(self.log_dir, self._keep_up_to_step)
        return super().experiment
