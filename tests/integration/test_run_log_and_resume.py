"""train.log holds the run's record; resume=<run folder> continues in that folder (metrics, summary, log)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

from lit_rl.launcher.loggers import RunCSVLogger
from tests.helpers import ROOT, read_csv_rows, read_summary, run_launcher

SMOKE = ["trainer=smoke", "env=Pendulum-v1", "eval.freq=100", "trainer.enable_progress_bar=false"]


def launch_in(cwd, *overrides: str) -> subprocess.CompletedProcess:
    """``python -m lit_rl.train`` from ``cwd`` without ``hydra.run.dir``: the folder is the launcher's choice."""
    env = dict(os.environ, WANDB_MODE="offline", HYDRA_FULL_ERROR="0", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "lit_rl.train", *overrides]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_a_failed_run_logs_its_traceback(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, *SMOKE, "algo.gamma=1.5")
    assert proc.returncode != 0
    log = (run_dir / "train.log").read_text()
    assert "[ERROR] - Run failed: InstantiationException" in log and "Traceback (most recent call last)" in log
    assert "gamma=1.5 is out of range" in log
    assert "Traceback" not in proc.stdout  # the console gets Hydra's error once (stderr), not a second copy


def test_the_python_api_stays_silent():
    code = (
        "from lit_rl import CrossQ\n"
        "m = CrossQ('MlpPolicy', learning_starts=50, batch_size=16, buffer_size=1000, seed=0,\n"
        "           policy_kwargs={'net_arch': {'pi': [16, 16], 'qf': [16, 16]}})\n"
        "m.learn(120, env='Pendulum-v1')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "lit_rl" not in proc.stdout + proc.stderr  # no INFO record of the library's loggers


def test_resume_continues_in_the_same_folder(tmp_path):
    first = launch_in(tmp_path, *SMOKE, "total_timesteps=300")
    assert first.returncode == 0, first.stderr[-3000:]
    (run_dir,) = (tmp_path / "outputs").glob("*/*_crossq_Pendulum-v1_s0")
    before = read_csv_rows(run_dir / "metrics.csv")
    log = (run_dir / "train.log").read_text()  # train.log holds what the console showed
    for line in [
        "[lit_rl.train][INFO] - crossq on Pendulum-v1, seed 0: total_timesteps=300, n_envs=1 (sync)",
        "Trainer: accelerator=cpu devices=1 precision=32-true -> device cpu",
        f"Run folder: {run_dir}",
        "[lit_rl.callbacks.evaluation][INFO] - Eval at env step 100: return ",
        "Eval at env step 300: return ",
        "over 1 episodes",
        "[lit_rl.callbacks.summary][INFO] - Run completed: 300 env steps in ",
        "GPU available: False",  # Lightning's own info lines reach the file too
    ]:
        assert line in log, log
    assert "Tip:" not in log  # Lightning's advertisement is dropped
    assert first.stdout.count("Eval at env step") == 3  # the console shows the same records, once each
    assert "INFO: GPU available" not in first.stderr  # not twice through Lightning's own stderr handler

    for budget in (400, 500):
        proc = launch_in(tmp_path, *SMOKE, f"total_timesteps={budget}", f"resume={run_dir}")
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert [p.parent for p in (tmp_path / "outputs").glob("*/*/summary.json")] == [run_dir]  # no new folder

    summary = read_summary(run_dir)
    assert summary["status"] == "completed" and summary["env_steps"] == 500
    assert summary["resumed_from"] == str(run_dir / "checkpoints" / "last.ckpt")
    assert [(r["env_step"], r["previous_status"]) for r in summary["resumes"]] == [
        (300, "completed"),
        (400, "completed"),
    ]
    rows = read_csv_rows(run_dir / "metrics.csv")
    assert rows[: len(before)] == before  # the first run's rows are kept, unchanged
    steps = [int(r["step"]) for r in rows]
    assert steps == sorted(steps) and steps[-1] == 500
    assert [int(r["step"]) for r in rows if r["eval/mean_reward"]] == [100, 200, 300, 400, 500]
    log = (run_dir / "train.log").read_text()
    assert log.count("Run completed") == 3 and "Run completed: 500 env steps" in log
    assert f"Resuming from {run_dir}/checkpoints/last.ckpt at env step 300" in log
    # The run's first config stays in .hydra/; each resume's config is kept beside it.
    assert "resume=" not in (run_dir / ".hydra" / "overrides.yaml").read_text()
    resumed = sorted((run_dir / ".hydra").glob("resume_*/overrides.yaml"))
    assert resumed and all(f"resume={run_dir}" in p.read_text() for p in resumed)


def test_resume_auto_of_a_completed_run_does_nothing_and_says_so(tmp_path):
    """A cluster job requeued after its run ended: exit 0, nothing trained or rewritten."""
    run_dir = tmp_path / "run"
    assert run_launcher(run_dir, *SMOKE, "total_timesteps=200").returncode == 0
    files = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.suffix in (".ckpt", ".json", ".csv")}
    again = run_launcher(run_dir, *SMOKE, "total_timesteps=200", "resume=auto")
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"The run in {run_dir} already completed its 200 env steps (resume=auto): nothing to do" in (
        run_dir / "train.log"
    ).read_text()
    assert {p: p.read_bytes() for p in files} == files
    longer = run_launcher(run_dir, *SMOKE, "total_timesteps=300", "resume=auto")  # a raised budget still trains
    assert longer.returncode == 0 and read_summary(run_dir)["env_steps"] == 300, longer.stderr[-3000:]


def test_resume_of_a_folder_without_checkpoint_fails_and_writes_nothing_there(tmp_path):
    folder = tmp_path / "not_a_run"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    proc = launch_in(tmp_path, *SMOKE, f"resume={folder}")
    assert proc.returncode != 0
    assert "last.ckpt" in proc.stderr and "does not exist" in proc.stderr, proc.stderr[-3000:]
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]


def test_csv_logger_keeps_the_rows_a_checkpoint_covers(tmp_path):
    path = tmp_path / "metrics.csv"
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["a", "step"])
        writer.writeheader()
        writer.writerows([{"a": 1, "step": 100}, {"a": 2, "step": 200}, {"a": 3, "step": 300}])
    logger = RunCSVLogger(save_dir=tmp_path, name="", version="")
    logger.continue_from(200)  # rows after the checkpoint (step 300) are logged again by the resumed run
    logger.log_metrics({"a": 4.0, "b": 5.0}, step=300)
    logger.save()
    rows = read_csv_rows(path)
    assert [(r["a"], r.get("b", ""), r["step"]) for r in rows] == [
        ("1", "", "100"),
        ("2", "", "200"),
        ("4.0", "5.0", "300"),
    ]


def test_csv_logger_without_continue_from_starts_a_new_file(tmp_path):
    (tmp_path / "metrics.csv").write_text("a,step\n1,100\n")
    logger = RunCSVLogger(save_dir=tmp_path, name="", version="")
    logger.log_metrics({"a": 2.0}, step=10)
    logger.save()
    assert [r["step"] for r in read_csv_rows(tmp_path / "metrics.csv")] == ["10"]


def test_resume_auto_writes_again_a_hydra_record_cut_short(tmp_path):
    """A full disk (or a kill) while Hydra wrote ``.hydra/`` left an empty config and no overrides: the resumed run
    writes the record again, so evaluation, plots and reruns can read the run's config."""
    run_dir = tmp_path / "run"
    assert run_launcher(run_dir, *SMOKE, "total_timesteps=200").returncode == 0
    (run_dir / ".hydra" / "config.yaml").write_text("")
    (run_dir / ".hydra" / "overrides.yaml").unlink()
    again = run_launcher(run_dir, *SMOKE, "total_timesteps=300", "resume=auto")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "total_timesteps: 300" in (run_dir / ".hydra" / "config.yaml").read_text()
    assert "resume=auto" in (run_dir / ".hydra" / "overrides.yaml").read_text()
    assert not list((run_dir / ".hydra").glob("resume_*"))
