"""Multiruns end to end: failing jobs, the sweep tables, parallel launchers and W&B grouping."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from tests.helpers import ROOT, read_csv_rows, read_summary, read_wandb_run_file, run_launcher, run_multirun

SMOKE = ["trainer=smoke", "env=Pendulum-v1", "total_timesteps=200"]


def overrides(row: dict) -> dict[str, str]:
    """A table row's overrides as {key: value}."""
    return dict(o.split("=", 1) for o in row["overrides"].split())


@pytest.fixture(scope="module")
def mixed_sweep(tmp_path_factory):
    """Four jobs with the basic launcher: buffer_size=0 fails at configuration, 1000 completes."""
    sweep = tmp_path_factory.mktemp("sweep") / "lr_study"
    proc = run_multirun(sweep, *SMOKE, "seed=0,1", "buffer.buffer_size=0,1000", "logger=[csv,wandb]")
    return sweep, proc


def test_a_failing_job_is_recorded_and_the_others_still_run(mixed_sweep):
    sweep, proc = mixed_sweep
    assert proc.returncode != 0, "a sweep with a failed job must exit non-zero"
    rows = {
        (f"seed={overrides(r)['seed']}", f"buffer.buffer_size={overrides(r)['buffer.buffer_size']}"): r
        for r in read_csv_rows(sweep / "sweep_summary.csv")
    }
    assert len(rows) == 4
    for seed in ("seed=0", "seed=1"):
        failed, done = rows[(seed, "buffer.buffer_size=0")], rows[(seed, "buffer.buffer_size=1000")]
        assert (
            failed["status"] == "failed" and "buffer_size=0" in failed["error"] and failed["final_eval_return"] == ""
        )
        assert done["status"] == "completed" and done["error"] == ""
        assert float(done["final_eval_return"]) < 0 and float(done["learning_phase_fps"]) > 0
        assert int(done["env_steps"]) == 200
    failed_summary = read_summary(sweep / rows[("seed=0", "buffer.buffer_size=0")]["job"])
    assert failed_summary["status"] == "failed" and "buffer_size=0 is out of range" in failed_summary["error"]
    assert "1 of" not in proc.stdout and "2 of 4 jobs did not complete" in proc.stdout + proc.stderr
    failed_log = (sweep / rows[("seed=0", "buffer.buffer_size=0")]["job"] / "train.log").read_text()
    assert "Job" in failed_log and "failed; the sweep continues" in failed_log and "Traceback" in failed_log
    done_log = (sweep / rows[("seed=0", "buffer.buffer_size=1000")]["job"] / "train.log").read_text()
    assert "Run completed: 200 env steps" in done_log


def test_seed_table_aggregates_jobs_that_differ_only_in_seed(mixed_sweep):
    sweep, _ = mixed_sweep
    jobs = read_csv_rows(sweep / "sweep_summary.csv")
    groups = {g["config"]: g for g in read_csv_rows(sweep / "sweep_seeds.csv")}
    assert set(groups) == {"buffer.buffer_size=0", "buffer.buffer_size=1000"}
    bad, good = groups["buffer.buffer_size=0"], groups["buffer.buffer_size=1000"]
    assert (bad["n"], bad["failed"], bad["final_mean"]) == ("0", "2", "")
    finals = [float(j["final_eval_return"]) for j in jobs if j["status"] == "completed"]
    assert (good["n"], good["failed"], good["seeds"]) == ("2", "0", "0 1")
    assert float(good["final_mean"]) == pytest.approx(statistics.fmean(finals))
    assert float(good["final_std"]) == pytest.approx(statistics.stdev(finals))
    assert float(good["final_iqm"]) == pytest.approx(statistics.fmean(finals))  # two values: IQM is the mean
    markdown = (sweep / "sweep_summary.md").read_text()
    assert "## Across seeds" in markdown and "| failed |" in markdown and "buffer_size=0 |" in markdown
    assert "Common overrides: `env=Pendulum-v1" in markdown


def test_sweep_summary_runs_by_hand_on_a_sweep_folder(mixed_sweep):
    sweep, _ = mixed_sweep
    before = (sweep / "sweep_summary.csv").read_text()
    (sweep / "sweep_summary.csv").unlink()
    proc = subprocess.run(
        [sys.executable, "-m", "lit_rl.sweep_summary", str(sweep)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (sweep / "sweep_summary.csv").read_text() == before
    assert "## Across seeds" in proc.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "lit_rl.sweep_summary", str(sweep / "nope")], cwd=ROOT, capture_output=True, text=True
    )
    assert missing.returncode != 0 and "nope" in missing.stderr and "does not exist" in missing.stderr


def test_sweep_jobs_share_one_wandb_group_with_config_and_summary(mixed_sweep):
    sweep, _ = mixed_sweep
    jobs = [j for j in read_csv_rows(sweep / "sweep_summary.csv") if j["status"] == "completed"]
    runs = []
    for job in jobs:
        files = list((sweep / job["job"] / "wandb").glob("offline-run-*/run-*.wandb"))
        assert len(files) == 1, "each job of a one-process sweep gets its own W&B run"
        runs.append((read_summary(sweep / job["job"]), read_wandb_run_file(files[0])))
    assert {run["group"] for _, run in runs} == {f"{sweep.parent.name}/{sweep.name}"}
    for summary, run in runs:
        assert run["tags"] == ["crossq", "Pendulum-v1"]
        assert run["config"]["env"]["id"] == "Pendulum-v1" and run["config"]["seed"] == summary["seed"]
        assert run["config"]["buffer"]["buffer_size"] == 1000 and run["config"]["total_timesteps"] == 200
        for key in ("status", "final_eval_return", "best_eval_return", "learning_phase_fps", "env_steps"):
            assert run["summary"][key] == summary[key], key


def test_a_single_wandb_run_has_no_group_but_config_and_summary(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, *SMOKE, "logger=wandb", "seed=3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (file,) = (run_dir / "wandb").glob("offline-run-*/run-*.wandb")
    run = read_wandb_run_file(file)
    summary = read_summary(run_dir)
    assert run["group"] == "" and run["config"]["seed"] == 3 and run["config"]["algo"]["_target_"].endswith("CrossQ")
    assert run["summary"]["final_eval_return"] == summary["final_eval_return"]


@pytest.mark.parametrize(
    "launcher", [["hydra/launcher=submitit_local"], ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]]
)
def test_parallel_launchers_run_a_sweep_with_one_table(tmp_path, launcher):
    sweep = tmp_path / "sweep"
    proc = run_multirun(sweep, *SMOKE, "seed=0,1", *launcher)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_csv_rows(sweep / "sweep_summary.csv")
    assert [overrides(r)["seed"] for r in rows] == ["0", "1"]
    assert all(r["status"] == "completed" and float(r["final_eval_return"]) < 0 for r in rows)
    for row in rows:
        assert json.loads((sweep / row["job"] / "summary.json").read_text())["seed"] == int(overrides(row)["seed"])
