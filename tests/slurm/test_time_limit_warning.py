"""A SLURM job whose time limit is shorter than one checkpoint interval is warned, with the ``eval.freq`` that fits
(``lit_rl.callbacks.time_limit``), on a real SLURM (``scripts/slurm.sh``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from lit_rl.callbacks.time_limit import parse_slurm_time
from tests.helpers import ROOT

WARNING = "is shorter than one checkpoint interval"


@pytest.mark.xdist_group("slurm")
@pytest.mark.timeout(300)
def test_a_time_limit_shorter_than_the_checkpoint_interval_is_warned(slurm_cluster, tmp_path):
    run_dir = tmp_path / "run"
    train = [
        sys.executable, "-m", "lit_rl.train", "trainer=smoke", "env=Pendulum-v1", "algo=sac",
        "algo.policy_kwargs.net_arch.pi=[32,32]", "algo.policy_kwargs.net_arch.qf=[32,32]", "eval.freq=1000000",
        "total_timesteps=2000000", "buffer.buffer_size=10000", "trainer.enable_progress_bar=false",
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    submitted = subprocess.run(
        ["sbatch", "--parsable", f"--partition={slurm_cluster}", "--time=1", "--cpus-per-task=1", "--mem=1G",
         f"--output={tmp_path / 'job.out'}", "--wrap", " ".join(train)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    job = submitted.stdout.strip().split(";")[0]
    try:
        log = run_dir / "train.log"
        deadline = time.monotonic() + 150  # a queue wait, the imports, then 15 s of training (a quarter of 1 min)
        while time.monotonic() < deadline and not (log.is_file() and WARNING in log.read_text()):
            time.sleep(1)
        text = log.read_text() if log.is_file() else (tmp_path / "job.out").read_text()
    finally:
        subprocess.run(["scancel", job], capture_output=True)
    assert WARNING in text, text[-3000:]
    warning = next(line for line in text.splitlines() if WARNING in line)
    assert "time limit (1.0 min)" in warning and "eval.freq=1000000 env steps" in warning
    fits = int(re.search(r"set eval.freq=(\d+) or less", warning).group(1))
    rate = float(re.search(r"at (\d+) env steps/s", warning).group(1))
    assert 0 < fits < 1_000_000 and fits == pytest.approx(rate * 30, rel=0.05, abs=2)  # half a minute's steps


@pytest.mark.parametrize(
    ("squeue", "seconds"),
    [("1:00", 60), ("59:30", 3570), ("2:00:00", 7200), ("1-00:00:00", 86400), ("3-12", 302400), ("UNLIMITED", None),
     ("NOT_SET", None), ("INVALID", None)],
)  # fmt: skip
def test_slurm_durations_are_read_as_squeue_prints_them(squeue, seconds):
    assert parse_slurm_time(squeue) == seconds
