"""Run one launcher job so that a failing sweep job is recorded instead of stopping the sweep."""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Callable
from pathlib import Path

from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from lit_rl.launcher.job_context import hydra_job
from lit_rl.launcher.loggers import finish_wandb_run
from lit_rl.launcher.run_lock import run_folder_lock
from lit_rl.utils.io import log_to_files_only, write_json_atomically

log = logging.getLogger(__name__)


def write_failed_summary(run_dir: Path, cfg: DictConfig, error: BaseException) -> None:
    """A minimal ``summary.json`` (status "failed" and the error) unless the run already wrote one."""
    path = run_dir / "summary.json"
    if path.exists():  # RunSummary records failures that happen during training, with the run's numbers
        return
    choices = hydra_job().runtime.choices
    write_json_atomically(
        path,
        {
            "algo": choices.get("algo"),
            "env": OmegaConf.select(cfg, "env.id", default=None),
            "seed": OmegaConf.select(cfg, "seed", default=None),
            "run_dir": str(run_dir),
            "status": "failed",
            "error": f"{type(error).__name__}: {error}",
        },
    )


def clear_stale_submitit_result() -> None:
    """Remove the half-written result an earlier attempt of this submitit job left (a full disk at its end).

    submitit refuses to write a result while ``<job>_result.pkl.save_tmp`` exists and never removes it after a
    failed write, so every later attempt of the job would end without a result. Only this job writes that file,
    and SLURM runs one attempt of a job at a time.
    """
    if not os.environ.get("SUBMITIT_FOLDER"):
        return
    import submitit

    with contextlib.suppress(Exception):  # not a submitit job after all, or no such file: nothing to clear
        result = submitit.JobEnvironment().paths.result_pickle
        stale = result.with_suffix(result.suffix + ".save_tmp")
        if stale.exists():
            stale.unlink()
            log.warning("Removed %s, a result an earlier attempt of this job could not finish writing", stale)


def run_job(train: Callable[[DictConfig], float], cfg: DictConfig) -> float:
    """``train(cfg)``; in a multirun, a failure is logged and recorded and the job returns NaN.

    Hydra's sweepers re-raise the first failed job's exception after the batch,
    which skips the sweep summary; catching here lets the other jobs and the
    summary run (it then exits non-zero). A single run still raises, so the
    command exits non-zero with the error.
    """
    hydra_cfg = hydra_job()
    clear_stale_submitit_result()
    # Held from before the first file of the run is written until after the last (RunFolderInUse: another
    # process's folder, so nothing is recorded in it).
    with run_folder_lock(hydra_cfg.runtime.output_dir):
        failed = True
        try:
            objective = train(cfg)
            failed = False
            return objective
        except Exception as error:
            if hydra_cfg.mode != RunMode.MULTIRUN:
                log_to_files_only(log, logging.ERROR, "Run failed: %s: %s", type(error).__name__, error, exc_info=True)
                raise
            log.exception("Job %s failed; the sweep continues", hydra_cfg.job.num)
            try:
                write_failed_summary(Path(hydra_cfg.runtime.output_dir), cfg, error)
            except OSError as unwritten:  # a full disk: the job still ends as failed, and the sweep goes on
                log.error("The failed job's summary.json could not be written: %s", unwritten)
            return math.nan  # sweepers that optimise (Optuna) record NaN as a failed trial
        finally:
            # Jobs of the basic launcher share one process: each must close its own W&B run.
            finish_wandb_run(failed)
