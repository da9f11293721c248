"""One Optuna study shared by many workers: storages, the cross-process lock, heartbeats, the launcher.

``python -m lit_rl.tune ... storage=<url> n_trials=12 workers.n=3 workers.launcher=slurm`` submits a SLURM
job array (through submitit) whose tasks each run :func:`run_worker` on the shared study; ``n_trials`` is
then the study's total. Each worker repeats: under a cross-process lock, fail the trials whose heartbeat
stopped, count the study's non-failed trials and, if fewer than ``n_trials``, ask for a new one; then run
it outside the lock, with a heartbeat. Counting and asking under one lock makes the total exact: two
workers never both take the last slot. A worker that finds the study full waits while other workers'
trials still run, since one of them may die and its slot must be run again. A trial that failed (its worker
killed, its heartbeat stopped, or an error) is queued again with the same parameters under the same lock
(Optuna's ``RetryFailedTrialCallback``, ``workers.max_retry`` times), and the next free worker runs it.

Storages: PostgreSQL (``postgresql://...``; the lock is a PostgreSQL advisory lock), SQLite (``sqlite:///...``)
and Optuna's journal file (``journal:///abs/path.log``, or a path ending ``.log``; the lock is an fcntl lock
on ``<file>.tune.lock`` beside it). Optuna 5.1's ``JournalStorage`` has no heartbeat, so
:class:`HeartbeatJournalStorage` adds one: a worker writes the time into its running trial's system
attributes every ``heartbeat_interval`` seconds; the clocks of the workers' nodes must agree (NTP).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import JournalStorage, RDBStorage, RetryFailedTrialCallback
from optuna.storages._heartbeat import BaseHeartbeat
from optuna.storages.journal import JournalFileBackend
from optuna.storages.journal._file import get_lock_file
from optuna.trial import FrozenTrial, TrialState

LAUNCHERS = ("slurm", "local")
HEARTBEAT_ATTR = "lit_rl:heartbeat"


class WholeLinesJournalFileBackend(JournalFileBackend):
    """Optuna's journal file, whose appends are whole lines or nothing.

    Optuna appends with buffered writes: a write cut short (a full disk) leaves half a line, the next append
    continues it, and every later read of the study fails with a JSON error. Here a failed append is cut back
    to the file's size before it, under the same lock, and raises: the study stays readable.
    """

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        data = ("\n".join(json.dumps(log, separators=(",", ":")) for log in logs) + "\n").encode("utf-8")
        with get_lock_file(self._lock):
            fd = os.open(self._file_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                size = os.fstat(fd).st_size
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)
                except OSError:
                    os.ftruncate(fd, size)
                    raise
            finally:
                os.close(fd)


class HeartbeatJournalStorage(JournalStorage, BaseHeartbeat):
    """Optuna's journal storage with the heartbeat Optuna gives only its RDB storage.

    ``record_heartbeat`` stores the wall time in the trial's system attributes; a running trial whose
    last heartbeat is older than ``grace_period`` is stale, and ``optuna.storages.fail_stale_trials``
    marks it FAIL. Trials that never recorded a heartbeat (run without workers) are never stale.
    """

    def __init__(self, path: str, heartbeat_interval: int | None = None, grace_period: int | None = None) -> None:
        super().__init__(WholeLinesJournalFileBackend(path))
        self.heartbeat_interval = heartbeat_interval
        self.grace_period = grace_period if grace_period is not None else 2 * (heartbeat_interval or 0)

    def record_heartbeat(self, trial_id: int) -> None:
        self.set_trial_system_attr(trial_id, HEARTBEAT_ATTR, time.time())

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        now = time.time()
        return [
            t._trial_id
            for t in self.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,))
            if HEARTBEAT_ATTR in t.system_attrs and now - t.system_attrs[HEARTBEAT_ATTR] > self.grace_period
        ]

    def get_heartbeat_interval(self) -> int | None:
        return self.heartbeat_interval

    def get_heartbeat_stale_trial_callback(self) -> Callable[[optuna.Study, FrozenTrial], None] | None:
        return None  # failed trials are queued again by the workers (run_worker), whatever failed them


def journal_path(spec: str) -> Path | None:
    """The journal file of a storage value (``journal:///abs/x.log``, ``journal://rel/x.log``, ``x.log``), or None."""
    if spec.startswith("journal://"):
        return Path(spec[len("journal://") :])
    if "://" not in spec and spec.endswith(".log"):
        return Path(spec)
    return None


def open_storage(
    spec: str, heartbeat_interval: int | None = None, grace_period: int | None = None
) -> optuna.storages.BaseStorage:
    """A storage object for ``storage=<spec>``; with ``heartbeat_interval``, running trials record heartbeats."""
    path = journal_path(spec)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        return HeartbeatJournalStorage(str(path.resolve()), heartbeat_interval, grace_period)
    if "://" not in spec:
        raise ValueError(
            f"storage={spec!r} is not a storage; allowed: sqlite:///path.db, postgresql://user@host:port/db "
            "(or another SQLAlchemy URL), journal:///abs/path.log or a file path ending .log (Optuna's journal file)"
        )
    with warnings.catch_warnings():  # Optuna calls its heartbeat experimental since 2.9; lit_rl relies on it
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return RDBStorage(spec, heartbeat_interval=heartbeat_interval, grace_period=grace_period)


@contextlib.contextmanager
def study_lock(storage: optuna.storages.BaseStorage, study_name: str) -> Iterator[None]:
    """Hold a lock shared by every process on ``storage``'s ``study_name`` (released if the process dies)."""
    if isinstance(storage, RDBStorage) and storage.engine.dialect.name == "postgresql":
        from sqlalchemy import text

        key = int.from_bytes(hashlib.sha256(f"lit_rl.tune:{study_name}".encode()).digest()[:8], "big", signed=True)
        # A session lock on a dedicated connection: the server drops it with the connection.
        with storage.engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
                conn.commit()
        return
    if isinstance(storage, HeartbeatJournalStorage) and isinstance(
        storage._backend, JournalFileBackend
    ):  # it makes one
        path = Path(storage._backend._file_path)
    elif isinstance(storage, RDBStorage) and storage.engine.dialect.name == "sqlite" and storage.engine.url.database:
        path = Path(storage.engine.url.database)
    else:
        raise ValueError(
            f"storage={storage!r} cannot be shared by workers; allowed: postgresql://..., sqlite:///path.db, "
            "journal:///path.log"
        )
    # POSIX record locks (lockf): the kernel drops them when the process dies; NFS supports them through lockd.
    with open(path.parent / f"{path.name}.tune.lock", "a") as handle:
        fcntl.lockf(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def heartbeat(storage: BaseHeartbeat, trial_id: int, interval: float) -> Iterator[None]:
    """Record ``trial_id``'s heartbeat every ``interval`` seconds in a thread, until the block ends."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(interval):
            try:
                storage.record_heartbeat(trial_id)
            except Exception as error:  # a storage hiccup: the next beat may pass; grace_period covers a few
                print(f"heartbeat of trial id {trial_id} failed: {error!r}")

    thread = threading.Thread(target=beat, name=f"optuna-heartbeat-{trial_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()  # no heartbeat may land after the trial is told: a finished trial rejects it


def worker_name() -> str:
    """This worker's id: the SLURM job (``<array job>_<task>``) or local submitit job, else host:pid."""
    if os.environ.get("SLURM_ARRAY_JOB_ID"):
        return f"slurm:{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ.get('SLURM_ARRAY_TASK_ID', '0')}"
    if os.environ.get("SLURM_JOB_ID"):
        return f"slurm:{os.environ['SLURM_JOB_ID']}"
    if os.environ.get("SUBMITIT_LOCAL_JOB_ID"):
        return f"local:{os.environ['SUBMITIT_LOCAL_JOB_ID']}"
    return f"{socket.gethostname()}:{os.getpid()}"


def queue_retries(study: optuna.Study, trials: list[FrozenTrial], retry: RetryFailedTrialCallback) -> bool:
    """Queue again every failed trial that has no retry yet (``retry`` stops after its ``max_retry``); True if any.

    Run under the study lock before the count, so however a trial failed (its worker killed or preempted, its
    heartbeat stopped, an error, a worker that died between failing the trial and queueing it), no worker counts
    its slot free before its retry is queued.
    """
    retried = {n for t in trials for n in t.system_attrs.get("retry_history", [])}
    owed = [t for t in trials if t.state == TrialState.FAIL and t.number not in retried]
    if not owed:  # the usual case: no storage read beyond the caller's
        return False
    for t in owed:
        retry(study, t)
    return len(study.get_trials(deepcopy=False)) > len(trials)


def run_worker(tuner: Any, n_trials: int, poll_s: float, max_retry: int = 0) -> list[int]:
    """Run trials of ``tuner``'s study until it holds ``n_trials`` non-failed trials; return the numbers run here.

    A failed trial is queued again with its parameters, ``max_retry`` times at most (:func:`queue_retries`).
    """
    study, storage = tuner.study, tuner.study._storage
    name = worker_name()
    ran: list[int] = []
    interval = storage.get_heartbeat_interval()
    retry = RetryFailedTrialCallback(max_retry=max_retry) if max_retry > 0 else None
    while True:
        with study_lock(tuner.storage_obj, tuner.study_name):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                optuna.storages.fail_stale_trials(study)
            trials = study.get_trials(deepcopy=False)
            if retry is not None and queue_retries(study, trials, retry):
                trials = study.get_trials(deepcopy=False)
            alive = [t for t in trials if t.state != TrialState.FAIL]
            trial = None
            # A queued retry (WAITING) already holds its slot in the count: ask() hands it out first.
            if len(alive) < n_trials or any(t.state == TrialState.WAITING for t in alive):
                trial = study.ask()
                storage.record_heartbeat(trial._trial_id)  # before the lock opens: a stale check may see it
                trial.set_user_attr("worker", name)
                trial.set_user_attr("worker_host", socket.gethostname())
                trial.set_user_attr("worker_pid", os.getpid())
            running = any(t.state == TrialState.RUNNING for t in alive)
        if trial is None:
            if not running:
                return ran
            time.sleep(poll_s)  # a running trial elsewhere may yet fail and free its slot
            continue
        state, value, error = TrialState.COMPLETE, None, None
        with heartbeat(storage, trial._trial_id, interval):
            try:
                value = tuner.objective(trial)
            except optuna.TrialPruned:
                state = TrialState.PRUNED
            except BaseException as e:  # also SystemExit (a preempted job): the trial is lost, say so now
                state, error = TrialState.FAIL, e
        try:
            if state == TrialState.COMPLETE:
                study.tell(trial, value)
            else:
                study.tell(trial, state=state)
        except optuna.exceptions.UpdateFinishedTrialError:
            # Another worker failed it for a missed heartbeat (grace_period too short for this machine).
            print(f"{name}: trial {trial.number} was marked failed by another worker; its result is dropped")
            continue
        if error is not None:
            raise error
        ran.append(trial.number)


def check_workers_config(cfg: Any) -> None:
    """Clear errors for bad ``workers.*`` values, naming the key."""
    w = cfg.workers
    if w.launcher not in LAUNCHERS:
        raise ValueError(f"workers.launcher={w.launcher!r} is not allowed; allowed: {list(LAUNCHERS)}")
    for key in ("n", "cpus_per_task", "timeout_min", "heartbeat_interval", "grace_period", "max_retry"):
        value, least = w[key], 0 if key in ("n", "max_retry") else 1
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(f"workers.{key}={value!r} must be an integer >= {least}")
    if w.grace_period <= w.heartbeat_interval:
        raise ValueError(
            f"workers.grace_period={w.grace_period} must exceed workers.heartbeat_interval={w.heartbeat_interval}"
        )
    if cfg.retrain_best and not w.wait:
        raise ValueError(
            "retrain_best=true needs workers.wait=true; or run `python -m lit_rl.tune ... n_trials=0 "
            "retrain_best=true` with the same study once the workers are done"
        )


def make_executor(cfg: Any, folder: Path) -> Any:
    import submitit

    w = cfg.workers
    if w.launcher == "local":
        local = submitit.LocalExecutor(folder=folder / "%j")
        local.update_parameters(timeout_min=w.timeout_min)
        return local
    executor = submitit.AutoExecutor(folder=folder / "%j", cluster="slurm")
    executor.update_parameters(
        name=f"tune_{cfg.study_name}",
        timeout_min=w.timeout_min,
        cpus_per_task=w.cpus_per_task,
        mem_gb=w.mem_gb,
        slurm_partition=w.partition,
        slurm_array_parallelism=w.n,
        slurm_additional_parameters=dict(w.additional_parameters or {}),
    )
    return executor


def job_ended(job: Any, launcher: str) -> bool:
    """Whether a submitted worker is over. Without SLURM accounting (no sacct) submitit never learns that a
    killed job ended, so SLURM jobs are also asked to squeue: a job it no longer lists has ended."""
    if launcher == "local":
        return job.done()
    if job.paths.result_pickle.exists():
        return True
    listed = subprocess.run(["squeue", "-h", "-j", job.job_id, "-o", "%T"], capture_output=True, text=True)
    return listed.returncode != 0 or not listed.stdout.strip()


def job_outcome(job: Any) -> str:
    """``ok`` or why a worker ended without a result (SLURM's job state, the log's last line)."""
    if job.paths.result_pickle.exists():
        try:
            job.result()
            return "ok"
        except Exception as error:  # the worker raised: its trial is FAIL, the message says why
            return f"raised {str(error).strip().splitlines()[-1]}"
    state = subprocess.run(["scontrol", "show", "job", job.job_id, "-o"], capture_output=True, text=True).stdout
    state = next((f.split("=", 1)[1] for f in state.split() if f.startswith("JobState=")), "ended")
    return f"{state} without a result (killed?); log {job.paths.stderr}"


def launch(
    tuner: Any, tuner_overrides: list[str], train_overrides: list[str], worker_job: Callable[..., dict[str, Any]]
) -> dict[str, Any]:
    """Submit ``workers.n`` jobs of ``worker_job(tuner_overrides, train_overrides, index)`` on ``tuner``'s study; with ``workers.wait``, wait and report their trials."""
    cfg = tuner.cfg
    folder = tuner.study_dir.resolve() / "workers"
    # Workers run elsewhere (another node, another cwd): pass the resolved study, not defaults relative to here.
    pinned = [f"study_name={tuner.study_name}", f"study_dir={tuner.study_dir.resolve()}", f"storage={tuner.storage}"]
    worker_overrides = [o for o in tuner_overrides if o.split("=", 1)[0] not in {"study_name", "study_dir", "storage"}]
    executor = make_executor(cfg, folder)
    jobs = executor.map_array(
        worker_job,
        [[*worker_overrides, *pinned]] * cfg.workers.n,
        [train_overrides] * cfg.workers.n,
        list(range(cfg.workers.n)),
    )
    ids = [job.job_id for job in jobs]
    print(f"submitted {len(jobs)} workers ({cfg.workers.launcher}): {' '.join(ids)}; logs in {folder}")
    report = {"study": tuner.study_name, "storage": tuner.storage, "jobs": ids, "outcomes": {}}
    if not cfg.workers.wait:
        return report
    pending = list(jobs)
    while pending:
        pending = [job for job in pending if not job_ended(job, cfg.workers.launcher)]
        if pending:
            time.sleep(2)
    report["outcomes"] = {job.job_id: job_outcome(job) for job in jobs}
    by_worker: dict[str, list[str]] = {}
    for t in tuner.study.get_trials(deepcopy=False):
        by_worker.setdefault(t.user_attrs.get("worker", "?"), []).append(f"{t.number} {t.state.name.lower()}")
    report["trials_by_worker"] = by_worker
    for job in jobs:
        print(f"worker {job.job_id}: {report['outcomes'][job.job_id]}")
    for worker, trials in sorted(by_worker.items()):
        print(f"  {worker}: trials {', '.join(trials)}")
    (tuner.study_dir / "workers.json").write_text(json.dumps(report, indent=2) + "\n")
    return report
