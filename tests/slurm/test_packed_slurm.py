"""``hydra/launcher=packed_slurm`` on a real SLURM: a sweep's packs as one job array, a pack per task. A task cut by
the time-limit signal (SIGUSR2, as submitit's ``--signal`` sends it) saves every member, is requeued alone, and with
``resume=auto`` each member ends bitwise equal to the same pack run locally without a cut."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from lit_rl import SAC
from tests.helpers import read_summary, run_multirun
from tests.slurm.sweeps import finish, slurm_sweep, submitit_logs, wait_for
from tests.slurm.test_requeue import assert_bitwise_equal

pytestmark = [pytest.mark.slow, pytest.mark.ci, pytest.mark.xdist_group("slurm"), pytest.mark.timeout(1200)]

TOTAL, EVAL_FREQ = 2000, 500
# Four seeds in packs of two: a job array of two tasks.
SWEEP = ("algo=sac", "env=Pendulum-v1", "trainer=smoke", f"total_timesteps={TOTAL}", f"eval.freq={EVAL_FREQ}",
         "eval.episodes=1", "seed=0,1,2,3", "hydra.launcher.pack_size=2", "trainer.enable_progress_bar=false")  # fmt: skip


def test_a_pack_cut_by_its_time_limit_is_requeued_and_continues_bitwise(slurm_cluster, tmp_path, monkeypatch):
    sweep_dir = tmp_path / "sweep"
    started = time.monotonic()
    process = slurm_sweep(sweep_dir, slurm_cluster, *SWEEP, timeout_min=30, launcher="packed_slurm")
    wait_for(sweep_dir / "0" / "train.log", f"Eval at env step {EVAL_FREQ}:", process)
    task = next(p.name for p in (sweep_dir / ".submitit").iterdir() if p.name.endswith("_0"))
    subprocess.run(["scancel", "--signal=USR2", task], check=True, capture_output=True)
    for job in ("0", "1"):
        wait_for(sweep_dir / job / "train.log", "Resuming from", process)
    finish(process, sweep_dir)
    print(f"packed SLURM sweep: {time.monotonic() - started:.0f} s")
    # The same packs run locally, never cut, one thread as the SLURM tasks (cpus_per_task=1).
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MKL_NUM_THREADS", "1")
    reference = run_multirun(tmp_path / "reference", *SWEEP, "hydra/launcher=packed")
    assert reference.returncode == 0, reference.stderr[-3000:]

    logs = submitit_logs(sweep_dir)
    assert "Received SIGUSR2: each job of the pack saved its checkpoint; requeueing the pack" in logs
    assert set(re.findall(r"Requeued job (\S+)", logs)) == {task}  # the cut pack's task alone
    for job in range(4):
        summary = read_summary(sweep_dir / str(job))
        assert summary["status"] == "completed" and summary["env_steps"] == TOTAL
        resumes = summary.get("resumes", [])
        if job < 2:  # the cut pack: both members saved mid-run, then went on from there
            assert [r["previous_status"] for r in resumes] == ["requeued"], resumes
            assert EVAL_FREQ <= resumes[0]["env_step"] < TOTAL
        else:
            assert resumes == []
        assert_bitwise_equal(sweep_dir / str(job), tmp_path / "reference" / str(job))
    # Each member's checkpoint loads alone, as an ordinary run's.
    assert SAC.load(sweep_dir / "0" / "checkpoints" / "last.ckpt", device="cpu").num_timesteps == TOTAL
    assert (sweep_dir / "sweep_summary.csv").exists()
