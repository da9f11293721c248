"""One Optuna study shared by many workers (``python -m lit_rl.tune ... workers.n=3``) on a real SLURM
(``scripts/slurm.sh``) and a real PostgreSQL server (``scripts/postgres.sh``), and on Optuna's journal file.

The test cluster has 2 CPUs: at most two 1-CPU workers run at once; the third starts when one ends.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import optuna
import pytest

from lit_rl.launcher.tune_workers import open_storage, run_worker

# One xdist worker runs every test of the 2-CPU test cluster, so their jobs do not queue behind each other.
pytestmark = pytest.mark.xdist_group("slurm")

TINY = [
    "hparams_search=sac_optuna", "env=Pendulum-v1", "trainer=smoke", "trainer.enable_progress_bar=false",
    "eval.freq=100", "algo.policy_kwargs.net_arch.qf=[32,32]", "algo.policy_kwargs.net_arch.pi=[32,32]",
]  # fmt: skip
WORKERS = [
    "workers.n=3", "workers.launcher=slurm", "workers.cpus_per_task=1", "workers.mem_gb=1",
    "workers.timeout_min=15", "workers.heartbeat_interval=1", "workers.grace_period=5",
]  # fmt: skip
FINISHED = {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED}


def storage_for(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "postgres":
        return request.getfixturevalue("postgres_server")
    return f"journal://{tmp_path / 'study' / 'study.log'}"  # journal:// + an absolute path


def tune_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "lit_rl.tune", *TINY, *WORKERS, *args]


def tune_env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def trials_by_worker(study: optuna.Study) -> dict[str, list[optuna.trial.FrozenTrial]]:
    by_worker = defaultdict(list)
    for t in study.get_trials(deepcopy=False):
        by_worker[t.user_attrs["worker"]].append(t)
    return dict(by_worker)


@pytest.mark.parametrize("kind", ["postgres", pytest.param("journal", marks=pytest.mark.slow)])
def test_three_slurm_workers_share_one_study(kind, slurm_cluster, tmp_path, request):
    storage, name = storage_for(kind, tmp_path, request), f"shared_{kind}_{os.getpid()}_{time.time_ns()}"
    common = [f"storage={storage}", f"study_name={name}", f"study_dir={tmp_path / 'study'}", "n_trials=12"]
    pruning = ["sampler.seed=0", "pruner.name=median", "pruner.n_startup_trials=2"]
    run = subprocess.run(
        tune_command(*common, *pruning, f"workers.partition={slurm_cluster}", "retrain_best=true"),
        cwd=tmp_path, env=tune_env(), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    print(f"[{kind}]\n" + run.stdout[run.stdout.find("submitted") :])

    study = optuna.load_study(study_name=name, storage=open_storage(storage))
    trials = study.get_trials(deepcopy=False)
    assert sorted(t.number for t in trials) == list(range(12))  # exactly 12: none lost, none beyond the total
    assert {t.state for t in trials} <= FINISHED
    searched = {"algo.learning_rate", "algo.batch_size", "algo.gamma", "algo.tau"}  # the net sizes are pinned
    assert all(set(t.params) == searched for t in trials)
    assert len({tuple(sorted(t.params.items())) for t in trials}) == 12  # no two workers sampled alike
    for t in trials:
        assert t.user_attrs["worker"].startswith("slurm:")  # <array job>_<task>
        assert (tmp_path / "study" / f"trial_{t.number}" / "summary.json").is_file()
    by_worker = trials_by_worker(study)
    assert set(by_worker) <= {
        f"slurm:{job}" for job in run.stdout.split("submitted 3 workers (slurm): ")[1].split(";")[0].split()
    }

    # Pruning across workers: a trial pruned while its own worker had finished fewer trials than the
    # pruner's startup count was judged against other workers' trials.
    pruned = [t for t in trials if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned, "median pruner pruned nothing"
    if sum(bool(ts) for ts in by_worker.values()) >= 2:  # two workers ran at once (the cluster may be busy)

        def own_completed_before(p):
            return sum(
                t.state == optuna.trial.TrialState.COMPLETE and t.datetime_complete < p.datetime_complete
                for t in by_worker[p.user_attrs["worker"]]
            )

        assert any(own_completed_before(p) < 2 for p in pruned), [(p.number, p.user_attrs["worker"]) for p in pruned]

    # The best trial was retrained once the workers were done.
    best = study.best_trial
    retrained = tmp_path / "study" / f"best_trial_{best.number}_s0" / "summary.json"
    assert json.loads(retrained.read_text())["status"] == "completed"
    assert f"retrained best trial {best.number}" in run.stdout


@pytest.mark.parametrize("kind", ["journal", pytest.param("postgres", marks=pytest.mark.slow)])
def test_a_killed_worker_leaves_its_trial_failed_and_the_others_finish(kind, slurm_cluster, tmp_path, request):
    # On the journal file this checks lit_rl's heartbeat (Optuna 5.1 has none there); on PostgreSQL, Optuna's.
    storage, name = storage_for(kind, tmp_path, request), f"killed_{kind}_{os.getpid()}_{time.time_ns()}"
    common = [f"storage={storage}", f"study_name={name}", f"study_dir={tmp_path / 'study'}", "n_trials=12"]
    launcher = subprocess.Popen(
        tune_command(*common, "pruner.name=none", f"workers.partition={slurm_cluster}"),
        cwd=tmp_path, env=tune_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    killed = None
    try:
        deadline = time.monotonic() + 600
        while killed is None and time.monotonic() < deadline and launcher.poll() is None:
            time.sleep(0.2)
            try:
                study = optuna.load_study(study_name=name, storage=open_storage(storage))
            except KeyError:  # not created yet
                continue
            # Mid-trial: running, past its first evaluation.
            running = [t for t in study.get_trials(states=(optuna.trial.TrialState.RUNNING,)) if t.intermediate_values]
            if running:
                killed = running[0]
                os.kill(killed.user_attrs["worker_pid"], signal.SIGKILL)
        assert killed is not None, "no trial was seen mid-run"
        out, _ = launcher.communicate(timeout=900)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    print(f"[{kind}] killed trial {killed.number} of {killed.user_attrs['worker']}\n" + out[out.find("submitted") :])
    assert launcher.returncode == 0, out[-4000:]

    study = optuna.load_study(study_name=name, storage=open_storage(storage))
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    assert trials[killed.number].state == optuna.trial.TrialState.FAIL  # marked by a live worker's stale check
    done = [t for t in trials.values() if t.state in FINISHED]
    assert len(done) == 12 and len(trials) == 13  # the killed slot ran again: 12 finished + 1 failed
    (retry,) = [t for t in trials.values() if t.system_attrs.get("failed_trial") == killed.number]
    assert retry.state in FINISHED and retry.params == killed.params  # queued again with the same parameters
    assert not [t for t in trials.values() if t.state == optuna.trial.TrialState.RUNNING]
    assert all(
        t.user_attrs["worker"] != killed.user_attrs["worker"] for t in trials.values() if t.number > killed.number
    )
    assert f"worker {killed.user_attrs['worker'].removeprefix('slurm:')}: FAILED" in out


class QuickTrials:
    """A study whose trials take 20 ms: many processes racing on count-then-ask."""

    def __init__(self, storage: str, study_name: str) -> None:
        self.storage_obj = open_storage(storage, heartbeat_interval=1, grace_period=5)
        self.study_name = study_name
        self.study = optuna.load_study(study_name=study_name, storage=self.storage_obj)

    def objective(self, trial: optuna.Trial) -> float:
        time.sleep(0.02)
        return trial.suggest_float("x", 0.0, 1.0)


def race(storage: str, study_name: str, n_trials: int) -> list[int]:
    return run_worker(QuickTrials(storage, study_name), n_trials, poll_s=0.1)


@pytest.mark.parametrize("kind", [pytest.param("postgres", marks=pytest.mark.slow), "journal"])
def test_racing_workers_run_exactly_n_trials(kind, tmp_path, request):
    # Without the lock, 4 processes each counting then asking overshoot the total; with it, never.
    storage, name = storage_for(kind, tmp_path, request), f"race_{kind}_{os.getpid()}_{time.time_ns()}"
    created = open_storage(storage)
    optuna.create_study(study_name=name, storage=created, direction="maximize")
    if hasattr(created, "engine"):
        created.engine.dispose()  # forked children must not share this process's database connections
    # spawn, not fork: a fork of this multi-threaded process (pytest-xdist's I/O thread, Optuna's heartbeat)
    # can hang in a lock held by another thread at the fork; it did, in a full `make test`.
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        ran = pool.starmap(race, [(storage, name, 30)] * 4)
    numbers = sorted(n for worker in ran for n in worker)
    assert numbers == list(range(30))
    assert sum(bool(worker) for worker in ran) >= 2  # they did race
    study = optuna.load_study(study_name=name, storage=open_storage(storage))
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 30


def test_journal_storage_fails_trials_whose_heartbeat_stopped(tmp_path):
    storage = open_storage(f"{tmp_path / 'study.log'}", heartbeat_interval=1, grace_period=2)
    study = optuna.create_study(study_name="beat", storage=storage)
    alive, dead, unbeaten = study.ask(), study.ask(), study.ask()
    storage.record_heartbeat(dead._trial_id)
    time.sleep(2.5)
    storage.record_heartbeat(alive._trial_id)
    optuna.storages.fail_stale_trials(study)
    states = {t.number: t.state.name for t in study.get_trials()}
    # A trial without any heartbeat (run without workers) is never judged stale.
    assert states == {alive.number: "RUNNING", dead.number: "FAIL", unbeaten.number: "RUNNING"}
