#!/usr/bin/env python
"""``make chaos`` (second part): one Optuna study on 8 SLURM workers under injected faults ends complete.

``python -m lit_rl.tune ... workers.n=8 workers.launcher=slurm`` runs a small SAC study on Pendulum-v1, its
storage a PostgreSQL server (``scripts/postgres.sh``) or Optuna's journal file, on the project's own SLURM
(``scripts/slurm.sh``; its ``shared`` partition runs 4 jobs per core, so all 8 workers run at once). The fault
driver of ``scripts/chaos.py`` hits the running workers: ``requeue``, ``time_limit``, ``kill`` (SIGKILL to every
process of the job), ``node_down`` and ``disk_full`` (the study's folder, on its own tmpfs, filled for a few
seconds: trial folders, worker logs and the journal file). Each fault is written to ``faults_<storage>.jsonl``.

A worker job that ended without a result is requeued (as a user resubmits it); if every worker ended before the
study was complete, the same tune command runs again (as its error message tells a user to). The script then
checks, and prints as a table:

- the study holds exactly ``n_trials`` finished trials, none running or waiting;
- every failed trial was queued again with its parameters (``RetryFailedTrialCallback``) while retries were left;
- each finished trial's value is its own run's final eval return (``trial_<n>/summary.json``: no result counted
  for another trial or twice);
- no SLURM job and no worker process left behind.

Usage: ``python scripts/chaos_tune.py [--storage both|postgres|journal] [--trials 24 --faults 24]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts.chaos, run as a file

from scripts.chaos import (  # noqa: E402
    ROOT,
    Driver,
    FaultSchedule,
    jobs_in_squeue,
    own_file_system,
    sh,
    stop_on_signal,
)

KINDS = ("requeue", "time_limit", "kill", "node_down", "disk_full")
STORAGES = ("postgres", "journal")
FINISHED = ("COMPLETE", "PRUNED")


def tune_command(storage: str, name: str, study_dir: Path, args: argparse.Namespace) -> list[str]:
    return [
        sys.executable, "-m", "lit_rl.tune", "hparams_search=sac_optuna", "env=Pendulum-v1", "trainer=smoke",
        "trainer.enable_progress_bar=false", f"total_timesteps={args.steps}", f"eval.freq={args.steps // 3}",
        "eval.episodes=1", "algo.policy_kwargs.net_arch.qf=[32,32]", "algo.policy_kwargs.net_arch.pi=[32,32]",
        f"storage={storage}", f"study_name={name}", f"study_dir={study_dir}", f"n_trials={args.trials}",
        "sampler.seed=0", "pruner.name=none", f"workers.n={args.workers}", "workers.launcher=slurm",
        "workers.partition=shared", "workers.cpus_per_task=1", "workers.mem_gb=1", "workers.timeout_min=60",
        "workers.heartbeat_interval=2", "workers.grace_period=10", "workers.poll_s=2", "workers.max_retry=5",
    ]  # fmt: skip


def worker_processes(study_dir: Path) -> list[str]:
    """Worker processes of the study still alive (submitit's command line names their job folder)."""
    return sh("pgrep", "-f", f"submitit.core._submit {study_dir / 'workers'}").stdout.split()


def check_study(storage: str, name: str, study_dir: Path, n_trials: int, max_retry: int) -> dict[str, object]:
    """The end state of the study, as the table reports it."""
    import optuna

    from lit_rl.launcher.tune_workers import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=name, storage=open_storage(storage))
    trials = study.get_trials(deepcopy=False)
    finished = [t for t in trials if t.state.name in FINISHED]
    failed = [t for t in trials if t.state.name == "FAIL"]
    left = [t.number for t in trials if t.state.name in ("RUNNING", "WAITING")]
    retried = {n for t in trials for n in t.system_attrs.get("retry_history", [])}
    # A failed trial is owed a retry unless its own line of retries ran out (max_retry of them failed before it).
    owed = [t.number for t in failed if len(t.system_attrs.get("retry_history", [])) < max_retry]
    unretried = [n for n in owed if n not in retried]
    mismatched = []
    for t in finished:
        summary_file = study_dir / f"trial_{t.number}" / "summary.json"
        summary = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
        same_trial = summary.get("optuna", {}).get("trial") == t.number
        if t.state.name == "COMPLETE" and (not same_trial or summary.get("final_eval_return") != t.value):
            mismatched.append(t.number)
    return {
        "trials": len(trials), "finished": len(finished), "failed": len(failed), "left": left,
        "retried": len(retried & {t.number for t in failed}), "unretried": unretried, "mismatched": mismatched,
    }  # fmt: skip


def run_study(kind: str, url: str, out: Path, args: argparse.Namespace) -> tuple[list[tuple[str, bool, str]], dict]:
    """One study under faults; returns its checks and its record."""
    name = f"chaos_{kind}_{datetime.now():%H%M%S}"
    study_dir = out / f"study_{kind}"
    storage = url if kind == "postgres" else f"journal://{study_dir / 'study.log'}"
    cmd = tune_command(storage, name, study_dir, args)
    (out / f"command_{kind}.txt").write_text(" ".join(cmd) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.update(WANDB_MODE="offline", HYDRA_FULL_ERROR="1", OMP_NUM_THREADS="1")
    job_name = f"tune_{name}"
    faults_file = out / f"faults_{kind}.jsonl"
    driver = Driver(
        study_dir, random.Random(args.seed), faults_file, results_dir=study_dir / "workers", job_name=job_name
    )
    started = time.monotonic()
    schedule = FaultSchedule(driver.rng, args.faults, spread=1.0, gap_s=args.expected / max(args.faults, 1) / 4)
    reruns = 0
    disk = own_file_system(study_dir, args.disk_mb) if "disk_full" in args.kinds else contextlib.nullcontext()
    with disk:
        try:
            while True:
                with (out / f"tune_{kind}.log").open("a") as log:
                    tune = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
                while tune.poll() is None:
                    if time.monotonic() - started > args.timeout:
                        raise TimeoutError(f"the study did not end within {args.timeout:.0f} s")
                    jobs = jobs_in_squeue(job_name)
                    driver.recover(jobs)
                    running = [j for j, (state, elapsed) in jobs.items() if state == "RUNNING" and elapsed >= 5]
                    progress = (time.monotonic() - started - 20) / args.expected  # the workers' first 20 s: none
                    if running and schedule.due(len(driver.faults), progress):
                        if driver.inject(driver.rng.choice(args.kinds), running, jobs):  # disk_full: study_dir's
                            schedule.injected()
                    time.sleep(1.0)
                if tune.returncode == 0 or reruns >= 3:
                    break
                reruns += 1  # every worker ended before the study was complete: the same command continues it
                print(f"chaos_tune[{kind}]: the tune command exited {tune.returncode}; running it again")
        finally:
            if tune.poll() is None:
                tune.kill()
            sh("scancel", f"--name={job_name}")
            sh("scontrol", "update", f"NodeName={socket.gethostname().split('.')[0]}", "State=RESUME")
        seconds = time.monotonic() - started
        state = check_study(storage, name, study_dir, args.trials, 5)
        deadline = time.monotonic() + 60  # scancel'd stragglers take KillWait to go
        while (jobs_left := [j for j, (s, _) in jobs_in_squeue(job_name).items() if s in ("RUNNING", "PENDING", "COMPLETING")]) and time.monotonic() < deadline:  # fmt: skip
            time.sleep(2)
        orphans = worker_processes(study_dir)
    by_kind = {k: sum(1 for f in driver.faults if f["kind"] == k) for k in KINDS}
    checks = [
        (f"{kind}: tune command exit status 0", tune.returncode == 0, f"{tune.returncode} (runs: {reruns + 1})"),
        (f"{kind}: finished trials (n_trials={args.trials})", state["finished"] == args.trials, str(state["finished"])),
        (f"{kind}: trials running or waiting at the end", not state["left"], str(state["left"] or 0)),
        (f"{kind}: failed trials queued again", not state["unretried"], f"{state['retried']}/{state['failed']}"),
        (f"{kind}: values equal to their own run's result", not state["mismatched"], str(state["mismatched"] or "all")),
        (f"{kind}: SLURM jobs or worker processes left", not jobs_left and not orphans,
         f"{len(jobs_left)} jobs, {len(orphans)} processes"),
    ]  # fmt: skip
    record = {
        "storage": kind, "study": name, "seconds": seconds, "faults": driver.faults, "by_kind": by_kind,
        "requeued_by_driver": driver.requeued_by_driver, "released": driver.released, "reruns": reruns, "state": state,
    }  # fmt: skip
    return checks, record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--storage", default="both", choices=("both", *STORAGES))
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--trials", type=int, default=24, help="the study's n_trials")
    parser.add_argument("--steps", type=int, default=1500, help="env steps per trial")
    parser.add_argument("--faults", type=int, default=24, help="faults per study")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"fault kinds, from {','.join(KINDS)}")
    parser.add_argument("--seed", type=int, default=0, help="seeds the fault driver")
    parser.add_argument("--expected", type=float, default=150, help="seconds the faults spread over, per study")
    parser.add_argument("--disk-mb", type=int, default=2048, help="size of the study folder's own file system")
    parser.add_argument("--out", type=Path, default=None, help="default: outputs/chaos_tune/<date>_<time>")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds before a study is given up")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, stop_on_signal)  # clean up (jobs, mount) on kill
    args.kinds = [k for k in args.kinds.split(",") if k]
    if unknown := sorted(set(args.kinds) - set(KINDS)):
        parser.error(f"--kinds has unknown kinds {unknown}; allowed: {list(KINDS)}")
    out = (args.out or ROOT / "outputs" / "chaos_tune" / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")).resolve()
    if any(out.glob("study_*")):
        parser.error(f"--out={str(out)!r} already holds a chaos run; allowed: a new folder")
    out.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["bash", str(ROOT / "scripts" / "slurm.sh"), "start"]).returncode != 0:
        print("chaos_tune: SLURM could not be started (scripts/slurm.sh start)", file=sys.stderr)
        return 2
    kinds = STORAGES if args.storage == "both" else (args.storage,)
    url = ""
    if "postgres" in kinds:
        if subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "start"]).returncode != 0:
            print("chaos_tune: PostgreSQL could not be started (scripts/postgres.sh start)", file=sys.stderr)
            return 2
        url = sh("bash", str(ROOT / "scripts" / "postgres.sh"), "url").stdout.strip()
    print(f"chaos_tune: {args.workers} workers, {args.trials} trials, {args.faults} faults per study "
          f"({', '.join(args.kinds)}), driver seed {args.seed}; {out}")  # fmt: skip
    results = [run_study(kind, url, out, args) for kind in kinds]

    from lit_rl.utils.machine import BF16_FLAGS, cpu_model_and_flags

    model, flags = cpu_model_and_flags()
    commit = sh("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD").stdout.strip() or "unknown"
    bf16 = ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in BF16_FLAGS)
    lines = [
        f"Optuna chaos run {datetime.now():%Y-%m-%d %H:%M}, commit {commit}, {model} ({os.cpu_count()} CPUs; {bf16}): "
        f"{args.workers} SLURM workers, n_trials={args.trials}, driver seed {args.seed}",
        "",
        "| fault | " + " | ".join(r["storage"] for _, r in results) + " |",
        "|---|" + "---|" * len(results),
        *[f"| {k} | " + " | ".join(str(r["by_kind"][k]) for _, r in results) + " |" for k in KINDS],
        "| workers requeued by the driver (ended without a result) | "
        + " | ".join(str(r["requeued_by_driver"]) for _, r in results) + " |",
        "| workers released by the driver (held after a failed launch) | "
        + " | ".join(str(r["released"]) for _, r in results) + " |",
        "| trials failed (each queued again with its parameters) | "
        + " | ".join(str(r["state"]["failed"]) for _, r in results) + " |",
        "| study minutes | " + " | ".join(f"{r['seconds'] / 60:.1f}" for _, r in results) + " |",
        "",
        "| check | outcome | passed |",
        "|---|---|---|",
        *[f"| {name} | {value} | {'yes' if ok else 'NO'} |" for checks, _ in results for name, ok, value in checks],
    ]  # fmt: skip
    table = "\n".join(lines)
    print(table)
    (out / "chaos_tune.md").write_text(table + "\n")
    payload = {"studies": [r for _, r in results], "checks": {n: ok for checks, _ in results for n, ok, _ in checks}}
    (out / "chaos_tune.json").write_text(json.dumps(payload, indent=2) + "\n")
    return 0 if all(payload["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
