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

from lit_rl.callbacks.evaluation import previous_checkpoint
from lit_rl.callbacks.preemption import Preempted
from lit_rl.core.persistence import read_model_file, resolve_class
from lit_rl.launcher.loggers import finish_wandb_run
from lit_rl.launcher.run_log import log
from lit_rl.launcher.run_records import run_checkpoint
from lit_rl.utils.io import log_to_files_only

HYDRA_RECORD = ("config.yaml", "hydra.yaml", "overrides.yaml")  # what Hydra writes in a run's .hydra/


def resume_run_dir(resume: str | None, new_run_dir: str) -> str:
    """``hydra.run.dir``: the folder named by ``resume=<run folder>`` (the run continues in it), else ``new_run_dir``.

    ``resume=auto`` (this run folder's own checkpoint) and a ``resume`` that is no run folder with a
    ``checkpoints/last.ckpt`` (rejected by ``resolve_checkpoint`` with a clear error) keep the new folder,
    so a typo never creates a folder of that name and a foreign folder gets no files.
    """
    last = Path(str(resume)) / "checkpoints" / "last.ckpt"
    if resume is None or resume == "auto" or not (last.is_file() or previous_checkpoint(last).is_file()):
        return new_run_dir
    return str(resume)


def resume_output_subdir(resume: str | None, output_dir: str, stamp: str) -> str:
    """``hydra.output_subdir``: ``.hydra``, or ``.hydra/resume_<stamp>`` when a resumed run continues in a folder
    that already holds a run's config, so the run's original ``.hydra/`` record (what was typed first) is kept.

    A record cut short (a full disk or a kill while Hydra wrote it: a file missing or empty) is written again.
    """
    record = Path(output_dir) / ".hydra"
    whole = all((record / name).is_file() and (record / name).stat().st_size > 0 for name in HYDRA_RECORD)
    if resume is not None and whole:
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
    A run folder's damaged ``last.ckpt`` gives way to the one before it (:func:`readable_last_checkpoint`).
    """
    if cfg.resume is not None and cfg.ckpt_path is not None:
        raise ValueError(f"resume={cfg.resume!r} and ckpt_path={cfg.ckpt_path!r} are both set; allowed: one of them")
    if cfg.resume == "auto":
        found = readable_last_checkpoint(run_dir / "checkpoints" / "last.ckpt")
    elif cfg.resume is not None:
        last = run_checkpoint(cfg.resume, "last", key="resume")
        found = readable_last_checkpoint(last)
        if found is None:
            raise FileNotFoundError(
                f"resume={cfg.resume!r} has no checkpoint ({last} does not exist); allowed: a run folder that "
                "lit_rl.train wrote a checkpoint in"
            )
    elif cfg.ckpt_path is not None:
        # Missing, truncated, foreign or other-algorithm files fail here, in seconds, before any env exists.
        found = (cfg.ckpt_path, read_model_file(cfg.ckpt_path))
    else:
        found = None
    if found is None:
        return None, None
    ckpt_path, checkpoint = found
    rl_state = checkpoint["rl_state"]
    saved, wanted = rl_state.get("algorithm"), cfg.algo._target_
    if saved is not None and resolve_class(saved) is not get_class(wanted):
        raise ValueError(
            f"ckpt_path={ckpt_path!r} holds a {saved.rpartition('.')[2]} model but algo builds "
            f"{wanted.rpartition('.')[2]}; allowed: a checkpoint of the same algorithm"
        )
    return ckpt_path, int(rl_state.get("num_timesteps", 0))


def readable_last_checkpoint(last: Path) -> tuple[str, dict[str, Any]] | None:
    """A run folder's ``last.ckpt`` and its content, or None where the folder has no checkpoint yet.

    A ``last.ckpt`` cut off mid-write (a disk that filled, a node that went down) or otherwise unreadable gives
    way to ``previous.ckpt``, the one written before it, with a warning naming both; the damaged file is moved
    aside to ``last.ckpt.damaged`` so the next save cannot make it the "previous" one. If neither reads, the run
    stops with both reasons: it never starts over from zero on a folder that had a checkpoint.
    """
    previous = previous_checkpoint(last)
    if not last.exists() and not previous.exists():
        return None
    try:
        return str(last), read_model_file(last)
    except (FileNotFoundError, ValueError) as err:
        damage = err
    try:
        checkpoint = read_model_file(previous)
    except (FileNotFoundError, ValueError) as err:
        raise ValueError(
            f"the run folder's checkpoints cannot be read ({last}: {damage}) ({previous}: {err}); allowed: a run "
            "folder with a readable checkpoint, or a new run folder to start over"
        ) from damage
    damaged = last.with_name(last.name + ".damaged")
    if last.exists():
        last.replace(damaged)
    log.warning(
        "%s cannot be read (%s); continuing from the checkpoint before it, %s (env step %d); the damaged file "
        "is kept as %s",
        last,
        damage,
        previous,
        int(checkpoint["rl_state"].get("num_timesteps", 0)),
        damaged,
    )
    return str(previous), checkpoint


def completed_run(run_dir: Path, ckpt_step: int | None, total_timesteps: int) -> float | None:
    """The final eval return of ``run_dir``'s run if it already completed ``total_timesteps``, else None.

    ``resume=auto`` on such a folder (a job requeued after it finished) has nothing to train: the launcher logs so
    and returns this instead of failing with "total_timesteps is already reached".
    """
    summary_file = run_dir / "summary.json"
    if ckpt_step is None or ckpt_step < total_timesteps or not summary_file.is_file():
        return None
    summary = json.loads(summary_file.read_text())
    if summary.get("status") != "completed" or summary.get("env_steps", 0) < total_timesteps:
        return None
    log.info("The run in %s already completed its %d env steps (resume=auto): nothing to do", run_dir, ckpt_step)
    final = summary.get("final_eval_return")
    return float(final) if final is not None else float("-inf")


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
