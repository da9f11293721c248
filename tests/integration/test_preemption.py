"""SIGTERM/SIGINT during training: a checkpoint is written, and resuming reaches the exact step budget."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from tests.helpers import ROOT, read_summary, run_launcher

ARGS = ["trainer=smoke", "env=Pendulum-v1", "total_timesteps=100000", "eval.freq=100", "trainer.enable_progress_bar=false"]


def _start(run_dir) -> subprocess.Popen:
    env = dict(os.environ, WANDB_MODE="offline")
    cmd = [sys.executable, "-m", "lit_rl.train", *ARGS, f"hydra.run.dir={run_dir}"]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_saves_a_checkpoint_and_resume_reaches_the_budget(tmp_path, signum):
    run_dir = tmp_path / "run"
    proc = _start(run_dir)
    ckpt = run_dir / "checkpoints" / "last.ckpt"
    deadline = time.monotonic() + 300
    while not ckpt.exists():  # the first evaluation (step 100) writes it: training is under way
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no checkpoint within 300 s"
        time.sleep(0.2)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signum, stderr[-3000:]
    assert "checkpoint saved" in stderr and f"resume={run_dir}" in stderr
    summary = read_summary(run_dir)
    saved_steps = torch.load(ckpt, map_location="cpu", weights_only=False)["rl_state"]["num_timesteps"]
    assert summary["status"] == "interrupted" and summary["env_steps"] == saved_steps >= 100

    resumed = tmp_path / "resumed"
    budget = saved_steps + 150
    done = run_launcher(resumed, *ARGS[:-1], f"total_timesteps={budget}", f"resume={run_dir}")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = read_summary(resumed)
    assert summary["status"] == "completed" and summary["env_steps"] == budget
    assert summary["resumed_from"] == str(ckpt)
