#!/usr/bin/env python
"""``make chaos``: a SLURM sweep under injected faults ends with every job complete and equal to its uncut run.

A sweep of SAC and TD3 on Pendulum-v1 (learning rates x seeds, ``resume=auto``) runs on the project's own SLURM
(``scripts/slurm.sh``) through ``hydra/launcher=slurm``, as a user runs one. A driver, seeded, injects faults into
running jobs at random times and writes each to ``faults.jsonl`` (time, kind, job), so a failure can be replayed:

- ``requeue``: ``scontrol requeue`` (a preemption: SIGTERM, the job checkpoints and is requeued);
- ``time_limit``: the job's time limit cut to just past its elapsed time (submitit's signal, or SLURM's kill);
- ``kill``: SIGKILL to every process of the job (no handler runs: it resumes from its last checkpoint);
- ``truncated_checkpoint``: the job killed, then its ``last.ckpt`` cut in half (it resumes from ``previous.ckpt``);
- ``node_down``: the node set DOWN and every process of its jobs killed, then RESUME (SLURM requeues every job
  that was running on it);
- ``disk_full``: the sweep's file system (a tmpfs the script mounts for the sweep) filled for a few seconds, then
  freed: every write of the running jobs fails with ENOSPC meanwhile (a checkpoint write fails whole, the job stops
  and is requeued).

A job that ended without a result (killed, timed out unsignalled) is requeued by the driver, as a user resubmits
one. At the end the script checks, and prints as a table:

- every job ``completed`` with all its env steps, and the sweep command exited 0;
- ``sweep_summary.csv`` has one row per job, none twice;
- the final weights and final eval return of a sample of jobs (``--uncut``, or all with ``--full``) are bitwise
  those of the same job run uncut, locally;
- no job started over from zero after it had a checkpoint (``train.log``: every later start resumes);
- no SLURM job and no job process left behind.

Usage: ``python scripts/chaos.py [--lrs 25 --seeds 2]`` (100 jobs), ``--lrs 5 --seeds 1 --faults 12`` (10 jobs).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import torch

from lit_rl.utils.machine import BF16_FLAGS, cpu_model_and_flags

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("requeue", "time_limit", "kill", "truncated_checkpoint", "node_down", "disk_full")
ENDED_WITHOUT_RESULT = ("FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")
JOB_NAME = "train"  # submitit names the jobs after the task function
TIME_LIMIT_MIN = 60


def run_overrides(steps: int, eval_freq: int) -> list[str]:
    return [
        "trainer=smoke",
        "env=Pendulum-v1",
        f"total_timesteps={steps}",
        f"eval.freq={eval_freq}",
        "eval.episodes=1",
        f"buffer.buffer_size={steps}",
        "algo.batch_size=64",
        "logger=csv",
        "trainer.enable_progress_bar=false",
    ]


def sh(*cmd: str, check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=check, timeout=60)


def stop_on_signal(signum: int, frame: object) -> None:
    """SIGTERM: exit through the ``finally`` blocks (cancel the jobs, unmount); a second signal cannot cut them."""
    signal.signal(signum, signal.SIG_IGN)
    sys.exit(128 + signum)


def jobs_in_squeue(name: str = JOB_NAME) -> dict[str, tuple[str, int]]:
    """``{job id: (state, elapsed seconds)}`` of the jobs named ``name`` SLURM still knows (finished ones included)."""
    out = sh("squeue", "-h", "-r", "-t", "all", "-n", name, "-o", "%i|%T|%M").stdout  # -r: a line per task
    jobs = {}
    for line in out.splitlines():
        job, state, elapsed = line.strip().split("|")
        parts = [int(p) for p in re.split(r"[-:]", elapsed)] if re.fullmatch(r"[\d:-]+", elapsed) else [0]
        seconds = sum(p * m for p, m in zip(reversed(parts), (1, 60, 3600, 86400), strict=False))
        jobs[job] = (state, seconds)
    return jobs


def sweep_arrays(sweep_dir: Path) -> list[str]:
    """The job arrays the sweep submitted (``.submitit/<array>_<task>`` folders)."""
    folder = sweep_dir / ".submitit"
    return sorted({p.name.partition("_")[0] for p in folder.iterdir()}) if folder.is_dir() else []


def sweep_jobs(sweep_dir: Path, old_arrays: set[str] | frozenset[str] = frozenset()) -> dict[str, tuple[str, int]]:
    """:func:`jobs_in_squeue` of this sweep's job arrays only, without ``old_arrays`` (a resubmitted sweep's)."""
    arrays = set(sweep_arrays(sweep_dir)) - set(old_arrays)
    return {job: state for job, state in jobs_in_squeue().items() if job.partition("_")[0] in arrays}


def failed_jobs(sweep_dir: Path) -> list[str]:
    """The sweep's run folders whose job did not complete (``summary.json`` says otherwise, or was never written)."""
    failed = []
    for folder in sorted((p for p in sweep_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        try:
            status = json.loads((folder / "summary.json").read_text()).get("status")
        except (OSError, ValueError):
            status = None
        if status != "completed":
            failed.append(folder.name)
    return failed


def job_pids(job: str) -> list[int]:
    """The processes of ``job`` (``scontrol listpids``, which takes an array task's own id)."""
    raw = sh("squeue", "-h", "-r", "-j", job, "-o", "%A").stdout.strip()
    out = sh("scontrol", "listpids", raw or job).stdout
    return [int(line.split()[0]) for line in out.splitlines()[1:] if line.split() and line.split()[0].isdigit()]


def kill_pids(pids: list[int]) -> list[int]:
    """SIGKILL ``pids``, as the OOM killer or a dying node would: no handler runs, no checkpoint is written.
    Returns once they are gone."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return pids


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs: a zombie (killed, not yet reaped by its parent) does not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def kill_job_processes(job: str) -> list[int]:
    """SIGKILL every process of ``job`` (:func:`kill_pids`)."""
    return kill_pids(job_pids(job))


def fill_file_system(ballast: Path, seconds: float) -> int:
    """Fill ``ballast``'s file system to the last byte, hold it full for ``seconds``, free it; returns the bytes."""
    filled = 0
    chunk = b"\0" * (1 << 20)
    with ballast.open("wb") as f:
        try:
            while True:
                filled += os.write(f.fileno(), chunk)
        except OSError:  # ENOSPC: full
            pass
        try:
            while True:  # the last partial megabyte, a block at a time
                filled += os.write(f.fileno(), chunk[:4096])
        except OSError:
            pass
        time.sleep(seconds)
    ballast.unlink()
    return filled


@contextlib.contextmanager
def own_file_system(folder: Path, size_mb: int) -> Iterator[None]:
    """``folder`` on a tmpfs of ``size_mb`` (a disk the sweep can fill); its files are moved to disk at the end."""
    folder.mkdir(parents=True)
    sh("mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder), check=True)
    try:
        yield
    finally:
        kept = folder.with_name(folder.name + ".kept")
        subprocess.run(["cp", "-a", str(folder), str(kept)], check=False)
        if sh("umount", str(folder)).returncode != 0:
            sh("umount", "-l", str(folder))  # a straggler still holds a file: detach now, free when it ends
        folder.rmdir()
        kept.rename(folder)


@dataclass
class FaultSchedule:
    """Which faults are due: ``total`` spread evenly over the progress from 0 to ``spread`` (the caller's measure
    of the work done, 0 to 1), each a seeded exponential gap of mean ``gap_s`` after the one before. Paced by
    progress rather than by the clock, a sweep that runs faster or slower than expected receives every fault."""

    rng: random.Random
    total: int
    spread: float = 0.6
    gap_s: float = 2.0
    last: float = float("-inf")
    draw: float = 0.0

    def due(self, injected: int, progress: float) -> bool:
        """Whether a fault is due with ``injected`` faults so far at ``progress``."""
        quota = min(self.total, math.ceil(self.total * min(1.0, progress / self.spread)))
        return injected < quota and time.monotonic() - self.last >= self.draw * self.gap_s

    def injected(self) -> None:
        self.last = time.monotonic()
        self.draw = self.rng.expovariate(1.0)


@dataclass
class Driver:
    sweep_dir: Path
    rng: random.Random
    log_file: Path
    faults: list[dict] = field(default_factory=list)
    requeued_by_driver: int = 0
    restore_limit: set[str] = field(default_factory=set)
    old_arrays: set[str] = field(default_factory=set)
    results_dir: Path | None = None  # submitit's job folders (default: the sweep's .submitit)
    job_name: str = JOB_NAME
    released: int = 0
    started: float = field(default_factory=time.monotonic)

    def record(self, kind: str, job: str, **detail: object) -> None:
        entry = {"t": round(time.monotonic() - self.started, 1), "kind": kind, "job": job, **detail}
        self.faults.append(entry)
        with self.log_file.open("a") as f:
            f.write(json.dumps(entry) + "\n")

    def job_folder(self, job: str) -> Path | None:
        """The run folder of array task ``<id>_<n>``: ``<sweep>/<n>``."""
        task = job.partition("_")[2]
        return self.sweep_dir / task if task.isdigit() else None

    def has_result(self, job: str) -> bool:
        return any((self.results_dir or self.sweep_dir / ".submitit").joinpath(job).glob("*_result.pkl"))

    def inject(self, kind: str, running: list[str], jobs: dict[str, tuple[str, int]]) -> bool:
        """Inject a fault of ``kind`` into one of the ``running`` jobs (all of them for a node or a disk);
        ``False`` where this kind does not apply to the job drawn now."""
        job = self.rng.choice(running)
        if kind == "requeue":
            sh("scontrol", "requeue", job)
            self.record(kind, job)
        elif kind == "time_limit":
            limit = jobs[job][1] + self.rng.randint(5, 30)
            sh("scontrol", "update", f"JobId={job}", f"TimeLimit={limit // 60}:{limit % 60:02d}")
            self.restore_limit.add(job)
            self.record(kind, job, limit_s=limit)
        elif kind == "kill":
            self.record(kind, job, pids=kill_job_processes(job))
        elif kind == "truncated_checkpoint":
            folder = self.job_folder(job)
            last = folder / "checkpoints" / "last.ckpt" if folder else None
            if last is None or not last.is_file() or not (last.parent / "previous.ckpt").is_file():
                # One checkpoint only: damaging it is a loss no fallback can mend (the run stops, as it must).
                return False
            kill_job_processes(job)
            if self.has_result(job):
                return False  # it had finished: a damaged final checkpoint is no crash mid-write, nothing resumes it
            data = last.read_bytes()
            last.write_bytes(data[: len(data) // 2])
            self.record(kind, job, bytes_kept=len(data) // 2)
        elif kind == "disk_full":
            held = self.rng.uniform(3, 8)
            filled = fill_file_system(self.sweep_dir / ".ballast", held)
            for hit in running:
                self.record(kind, hit, bytes_filled=filled, held_s=round(held, 1))
        elif kind == "node_down":
            # A node that fails takes its processes with it: SLURM requeues its jobs, the processes are gone.
            # (Marked DOWN alone, the test node keeps them running, and a requeued job's second copy drains it.)
            node = socket.gethostname().split(".")[0]
            pids = [pid for job in running for pid in job_pids(job)]
            sh("scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=chaos")
            kill_pids(pids)
            time.sleep(self.rng.uniform(2, 6))
            sh("scontrol", "update", f"NodeName={node}", "State=RESUME")
            for hit in running:
                self.record(kind, hit)
        return True

    def recover(self, jobs: dict[str, tuple[str, int]]) -> None:
        """Requeue jobs that ended without a result (as a user resubmits them), release jobs SLURM held after a
        failed launch (a requeue onto a node going down: "launch failed requeued held"); lift cut time limits."""
        pending = sh("squeue", "-h", "-r", "-t", "PD", "-n", self.job_name, "-o", "%i|%r").stdout.splitlines()
        for job, _, reason in (line.partition("|") for line in pending):
            if job in jobs and "held" in reason.lower() and sh("scontrol", "release", job).returncode == 0:
                self.released += 1
        for job, (state, _) in jobs.items():
            if state in ENDED_WITHOUT_RESULT and not self.has_result(job):
                if sh("scontrol", "requeue", job).returncode == 0:
                    self.requeued_by_driver += 1
            if job in self.restore_limit and state in ("PENDING", "REQUEUED", "REQUEUE_HOLD"):
                if sh("scontrol", "update", f"JobId={job}", f"TimeLimit={TIME_LIMIT_MIN}").returncode == 0:
                    self.restore_limit.discard(job)


def fresh_starts_after_a_checkpoint(train_log: Path) -> int:
    """Starts of the run (``Run folder:`` lines) that did not resume although a checkpoint was written before."""
    starts: list[list[bool]] = []  # [a checkpoint existed, it resumed]
    checkpointed = False
    for line in train_log.read_text().splitlines():
        if "Run folder:" in line:
            starts.append([checkpointed, False])
        elif "Resuming from" in line and starts:
            starts[-1][1] = True
        elif "Checkpoint last.ckpt written at env step" in line or "checkpoint saved to" in line:
            checkpointed = True
    return sum(1 for had_checkpoint, resumed in starts if had_checkpoint and not resumed)


def parameters(run_dir: Path) -> dict[str, torch.Tensor]:
    return torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)["state_dict"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lrs", type=int, default=25, help="learning rates per algorithm (jobs = 2 x lrs x seeds)")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3000, help="env steps per job")
    parser.add_argument("--eval-freq", type=int, default=500, help="env steps between evaluations (checkpoints)")
    parser.add_argument("--faults", type=int, default=200, help="faults to inject")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"fault kinds, from {','.join(KINDS)}")
    parser.add_argument("--seed", type=int, default=0, help="seeds the fault driver")
    parser.add_argument("--uncut", type=int, default=10, help="jobs compared with their uncut run")
    parser.add_argument("--full", action="store_true", help="compare every job with its uncut run")
    parser.add_argument("--out", type=Path, default=None, help="default: outputs/chaos/<date>_<time>")
    parser.add_argument("--disk-mb", type=int, default=4096, help="size of the sweep's own file system (disk_full)")
    parser.add_argument("--timeout", type=float, default=3 * 3600, help="seconds before the sweep is given up")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, stop_on_signal)  # clean up (jobs, mount) on kill
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        parser.error(f"--kinds={args.kinds!r} has unknown kinds {unknown}; allowed: {list(KINDS)}")
    out = (args.out or ROOT / "outputs" / "chaos" / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")).resolve()
    if (out / "sweep").exists():
        parser.error(f"--out={str(out)!r} already holds a chaos run; allowed: a new folder")
    out.mkdir(parents=True, exist_ok=True)
    disk = own_file_system(out / "sweep", args.disk_mb) if "disk_full" in kinds else contextlib.nullcontext()
    with disk:
        return run_chaos(args, kinds, out)


def run_chaos(args: argparse.Namespace, kinds: list[str], out: Path) -> int:
    """The sweep, the faults, the uncut runs and the checks; the table and ``chaos.json`` in ``out``."""

    if subprocess.run(["bash", str(ROOT / "scripts" / "slurm.sh"), "start"]).returncode != 0:
        print("chaos: SLURM could not be started (scripts/slurm.sh start)", file=sys.stderr)
        return 2
    lrs = [float(f"{3e-3 * (1e-4 / 3e-3) ** (i / max(args.lrs - 1, 1)):.2e}") for i in range(args.lrs)]
    common = run_overrides(args.steps, args.eval_freq)
    sweep_dir = out / "sweep"
    cmd = [
        sys.executable, "-m", "lit_rl.train", "-m", "hydra/launcher=slurm", "hydra.launcher.partition=debug",
        "hydra.launcher.gpus_per_node=0", "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=1",
        f"hydra.launcher.timeout_min={TIME_LIMIT_MIN}", "hydra.launcher.signal_delay_s=15",
        "hydra.launcher.max_num_timeout=1000", f"hydra.sweep.dir={sweep_dir}", "resume=auto",
        "algo=sac,td3", f"algo.learning_rate={','.join(map(str, lrs))}", f"seed={','.join(map(str, range(args.seeds)))}",
        *common,
    ]  # fmt: skip
    n_jobs = 2 * args.lrs * args.seeds
    print(f"chaos: {n_jobs} jobs, {args.faults} faults ({', '.join(kinds)}), driver seed {args.seed}; {out}")
    (out / "command.txt").write_text(" ".join(cmd) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.update(WANDB_MODE="offline", HYDRA_FULL_ERROR="1")
    started = time.monotonic()
    driver = Driver(sweep_dir, random.Random(args.seed), out / "faults.jsonl")
    schedule = FaultSchedule(driver.rng, args.faults)
    resubmitted: list[list[str]] = []  # the jobs that had failed, per resubmission of the sweep command
    try:
        while True:
            with (out / "sweep.log").open("a") as log:
                sweep = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            while sweep.poll() is None:
                if time.monotonic() - started > args.timeout:
                    raise TimeoutError(f"the sweep did not end within {args.timeout:.0f} s")
                jobs = sweep_jobs(sweep_dir, driver.old_arrays)
                driver.recover(jobs)
                running = [j for j, (state, elapsed) in jobs.items() if state == "RUNNING" and elapsed >= 3]
                progress = (sum(driver.has_result(j) for j in jobs) + 1) / n_jobs  # the first jobs' faults due at once
                if running and schedule.due(len(driver.faults), progress):
                    if driver.inject(driver.rng.choice(kinds), running, jobs):
                        schedule.injected()
                time.sleep(1.0)
            # A job that failed (a full disk) is recorded as failed and the sweep exits 1: as a user does, run the
            # same command again once the disk is free; every job continues from its last checkpoint.
            failed = failed_jobs(sweep_dir)
            if sweep.returncode == 0 or not failed or len(resubmitted) >= 3:
                break
            resubmitted.append(failed)
            driver.old_arrays |= set(sweep_arrays(sweep_dir))
            print(f"chaos: jobs {', '.join(failed)} failed; the sweep command runs again (resume=auto)")
    finally:
        if sweep.poll() is None:
            sweep.kill()
        sh("scancel", f"--name={JOB_NAME}")
        node = socket.gethostname().split(".")[0]
        sh("scontrol", "update", f"NodeName={node}", "State=RESUME")
    sweep_seconds = time.monotonic() - started

    # The uncut runs: the same overrides, locally, one after another.
    rows = (
        list(csv.DictReader((sweep_dir / "sweep_summary.csv").open()))
        if (sweep_dir / "sweep_summary.csv").is_file()
        else []
    )
    folders = sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))
    sample = folders if args.full else random.Random(args.seed + 1).sample(folders, min(args.uncut, len(folders)))
    equal, compared = [], []
    for folder in sorted(sample, key=lambda p: int(p.name)):
        overrides = (folder / ".hydra" / "overrides.yaml").read_text()
        job_overrides = [line[2:].strip() for line in overrides.splitlines() if line.startswith("- ")]
        job_overrides = [o for o in job_overrides if not o.startswith("resume=")]
        uncut = out / "uncut" / folder.name
        proc = subprocess.run(
            [sys.executable, "-m", "lit_rl.train", *job_overrides, f"hydra.run.dir={uncut}"],
            cwd=ROOT, env={**env, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}, capture_output=True, text=True,
        )  # fmt: skip
        compared.append(folder.name)
        if proc.returncode != 0 or not (folder / "checkpoints" / "last.ckpt").is_file():
            continue
        try:
            got, want = parameters(folder), parameters(uncut)
        except Exception as error:  # a final checkpoint that does not load fails the check, naming the folder
            print(f"chaos: {folder}: {type(error).__name__}: {error}", file=sys.stderr)
            continue
        same = got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)
        finals = [json.loads((d / "summary.json").read_text()).get("final_eval_return") for d in (folder, uncut)]
        if same and finals[0] == finals[1]:
            equal.append(folder.name)

    summaries = {
        f.name: json.loads((f / "summary.json").read_text()) for f in folders if (f / "summary.json").is_file()
    }
    completed = [n for n, s in summaries.items() if s.get("status") == "completed" and s.get("env_steps") == args.steps]
    fresh = {f.name: fresh_starts_after_a_checkpoint(f / "train.log") for f in folders if (f / "train.log").is_file()}
    in_use = sum((f / "train.log").read_text().count("RunFolderInUse") for f in folders if (f / "train.log").is_file())
    fallbacks = sum(
        (f / "train.log").read_text().count("continuing from the checkpoint before it")
        for f in folders
        if (f / "train.log").is_file()
    )
    left = [j for j, (state, _) in sweep_jobs(sweep_dir).items() if state in ("RUNNING", "PENDING", "COMPLETING")]
    orphans = sh("pgrep", "-f", "submitit.core._submit").stdout.split()
    row_dirs = [r.get("run_dir") or r.get("job") for r in rows]

    by_kind = {k: sum(1 for f in driver.faults if f["kind"] == k) for k in KINDS}
    checks = [
        ("sweep command exit status 0", sweep.returncode == 0, f"{sweep.returncode}"),
        (f"jobs completed ({args.steps} env steps)", len(completed) == n_jobs, f"{len(completed)}/{n_jobs}"),
        ("sweep_summary.csv rows, none twice", len(rows) == n_jobs and len(set(row_dirs)) == len(rows), f"{len(rows)}"),
        ("bitwise equal to the uncut run", len(equal) == len(compared) > 0, f"{len(equal)}/{len(compared)}"),
        ("fresh starts after a checkpoint", sum(fresh.values()) == 0, str(sum(fresh.values()))),
        ("SLURM jobs or job processes left", not left and not orphans, f"{len(left)} jobs, {len(orphans)} processes"),
    ]
    model, flags = cpu_model_and_flags()
    commit = sh("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD").stdout.strip() or "unknown"
    bf16 = ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in BF16_FLAGS)
    lines = [
        f"Chaos run {datetime.now():%Y-%m-%d %H:%M}, commit {commit}, {model} ({os.cpu_count()} CPUs; {bf16}): "
        f"{n_jobs} jobs, {len(driver.faults)} faults, driver seed {args.seed}, sweep {sweep_seconds / 60:.1f} min",
        "",
        "| fault | injected |",
        "|---|---|",
        *[f"| {k} | {by_kind[k]} |" for k in KINDS],
        f"| requeued by the driver (ended without a result) | {driver.requeued_by_driver} |",
        f"| released by the driver (held after a failed launch) | {driver.released} |",
        f"| resumes from previous.ckpt (damaged last.ckpt) | {fallbacks} |",
        f"| sweep command run again (jobs failed on a full disk) | {len(resubmitted)} ({sum(map(len, resubmitted))} jobs) |",
        f"| starts refused: run folder in use | {in_use} |",
        "",
        "| check | outcome | passed |",
        "|---|---|---|",
        *[f"| {name} | {value} | {'yes' if ok else 'NO'} |" for name, ok, value in checks],
    ]
    table = "\n".join(lines)
    print(table)
    (out / "chaos.md").write_text(table + "\n")
    result = {
        "jobs": n_jobs, "faults": driver.faults, "by_kind": by_kind, "requeued_by_driver": driver.requeued_by_driver, "released": driver.released,
        "fallbacks": fallbacks, "resubmitted": resubmitted, "in_use": in_use, "sweep_seconds": sweep_seconds, "compared": compared,
        "equal": equal, "fresh_starts": fresh, "checks": {name: ok for name, ok, _ in checks},
    }  # fmt: skip
    (out / "chaos.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
