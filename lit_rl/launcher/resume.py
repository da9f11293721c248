"""Resuming a run: which folder it writes to, which checkpoint it continues, the record of resumes, and how a
run stopped by a signal ends (requeued, or with its resume= line)."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf

from lit_rl.callbacks.preemption import Preempted
from lit_rl.core.persistence import read_model_file, resolve_class
from lit_rl.launcher.loggers import finish_wandb_run
from lit_rl.launcher.run_log import log
from lit_rl.launcher.run_records import run_checkpoint
from lit_rl.utils.io import log_to_files_only


def resume_run_dir(resume: str | None, new_run_dir: str) -> str:
    """``hydra.run.dir``: the folder named by ``resume=<run folder>`` (the run continues in it), else ``new_run_dir``.

    ``resume=auto`` (this run folder's own checkpoint) and a ``resume`` that is no run folder with a
    ``checkpoints/last.ckpt`` (rejected by ``resolve_checkpoint`` with a clear error) keep the new folder,
    so a typo never creates a folder of that name and a foreign folder gets no files.
    """
    if resume is None or resume == "auto" or not (Path(str(resume)) / "checkpoints" / "last.ckpt").is_file():
        return new_run_dir
    return str(resume)


def resume_output_subdir(resume: str | None, output_dir: str, stamp: str) -> str:
    """``hydra.output_subdir``: ``.hydra``, or ``.hydra/resume_<stamp>`` when a resumed run continues in a folder
    that already holds a run's config, so the run's original ``.hydra/`` record (what was typed first) is kept."""
    if resume is not None and (Path(output_dir) / ".hydra" / "config.yaml").is_file():
        return f".hydra/resume_{stamp}"
    return ".hydra"


def register_resolvers() -> None:
    """The resolvers ``conf/train.yaml`` uses for ``hydra.run.dir`` and ``hydra.output_subdir``."""
    OmegaConf.register_new_resolver("resume_run_dir", resume_run_dir, replace=True)
    OmegaConf.register_new_resolver("resume_output_subdir", resume_output_subdir, replace=True)


def resolve_checkpoint(cfg: DictConfig, run_dir: Path) -> tuple[str | None, int | None]:
    """The checkpoint to continue from and its env step, checked before any env exists.

    ``ckpt_path=<file>``, ``resume=<run folder>`` (its ``checkpoints/last.ckpt``)
    or ``resume=auto``: this run folder's own ``last.ckpt`` if there is one
    (a requeued cluster job continues where it was preempted), else a fresh start.
    """
    if cfg.resume is not None and cfg.ckpt_path is not None:
        raise ValueError(f"resume={cfg.resume!r} and ckpt_path={cfg.ckpt_path!r} are both set; allowed: one of them")
    ckpt_path = cfg.ckpt_path
    if cfg.resume == "auto":
        own = run_dir / "checkpoints" / "last.ckpt"
        ckpt_path = str(own) if own.exists() else None
    elif cfg.resume is not None:
        ckpt_path = str(run_checkpoint(cfg.resume, "last", key="resume"))
    if ckpt_path is None:
        return None, None
    # Missing, truncated, foreign or other-algorithm files fail here, in seconds, before any env exists.
    rl_state = read_model_file(ckpt_path)["rl_state"]
    saved, wanted = rl_state.get("algorithm"), cfg.algo._target_
    if saved is not None and resolve_class(saved) is not get_class(wanted):
        raise ValueError(
            f"ckpt_path={ckpt_path!r} holds a {saved.rpartition('.')[2]} model but algo builds "
            f"{wanted.rpartition('.')[2]}; allowed: a checkpoint of the same algorithm"
        )
    return ckpt_path, int(rl_state.get("num_timesteps", 0))


def resume_history(run_dir: Path, ckpt_path: str, env_step: int) -> list[dict]:
    """``summary.json``'s ``resumes``: the folder's earlier resumes plus this one (when it continues in its folder)."""
    previous: dict = {}
    path = run_dir / "summary.json"
    if path.is_file():
        try:
            previous = json.loads(path.read_text())
        except (OSError, ValueError):  # an unreadable summary only loses the history, never the run
            previous = {}
    record = {
        "checkpoint": ckpt_path,
        "env_step": env_step,
        "previous_status": previous.get("status"),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    return [*previous.get("resumes", []), record]


def exit_preempted(stop: Preempted, env_steps: int, datamodule: Any, run_dir: Path) -> NoReturn:
    """End a run stopped by a signal, after its checkpoint (:class:`~lit_rl.callbacks.Preempted`).

    A time limit inside a submitit job: close everything (the requeue stops the job's other processes, W&B's
    service, at once) and let submitit requeue this job (its own array task only); ``resume=auto`` continues.
    Otherwise print the ``resume=`` line and exit with 128 + the signal's number.
    """
    if stop.requeue is not None:
        log.warning("%s; env steps done: %d; requeueing the job", stop, env_steps)
        datamodule.close()
        finish_wandb_run(preempted=True)
        stop.requeue(stop.signum, None)  # requeues and exits
    message = f"{stop}; env steps done: {env_steps}; continue with: resume={run_dir}"
    print(message, file=sys.stderr)
    log_to_files_only(log, logging.WARNING, message)
    finish_wandb_run(preempted=True)
    raise SystemExit(128 + stop.signum) from None
