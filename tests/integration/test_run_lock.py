"""One process at a time writes a run folder: a second one is refused, naming the first; a killed one frees it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from lit_rl.launcher.run_lock import LOCK_NAME, RunFolderInUse, run_folder_lock
from tests.helpers import ROOT, run_launcher

HOLD = "import sys, time; from lit_rl.launcher.run_lock import run_folder_lock\nwith run_folder_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(300)"


def test_a_held_folder_is_refused_naming_its_holder_and_free_again_after(tmp_path):
    with run_folder_lock(tmp_path):
        assert (tmp_path / LOCK_NAME).read_text().startswith(f"pid {os.getpid()} on ")
        with pytest.raises(RunFolderInUse, match=rf"run folder {tmp_path} is being written by .*pid {os.getpid()}"):
            with run_folder_lock(tmp_path):
                pass
    with run_folder_lock(tmp_path):  # released on leaving the block
        pass


def test_a_process_killed_without_a_signal_frees_the_folder(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    with pytest.raises(RunFolderInUse, match=f"pid {holder.pid} on "):
        with run_folder_lock(tmp_path):
            pass
    holder.send_signal(signal.SIGKILL)  # as the OOM killer: no handler runs
    holder.wait(30)
    with run_folder_lock(tmp_path):
        pass


def test_a_second_launcher_on_a_running_folder_is_refused_and_writes_nothing_there(tmp_path):
    run_dir = tmp_path / "run"
    args = ["trainer=smoke", "algo=sac", "env=Pendulum-v1", "eval.freq=100000", "total_timesteps=100000"]
    cmd = [sys.executable, "-m", "lit_rl.train", *args, f"hydra.run.dir={run_dir}", "trainer.enable_progress_bar=false"]
    env = dict(os.environ, WANDB_MODE="offline")
    first = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (run_dir / LOCK_NAME).is_file() or not (run_dir / LOCK_NAME).read_text():
            assert first.poll() is None and time.monotonic() < deadline, "the first run did not start"
            time.sleep(0.2)
        log_before = (run_dir / "train.log").read_text()

        second = run_launcher(run_dir, *args, "resume=auto")
        assert second.returncode != 0
        assert f"is being written by another process (pid {first.pid} on " in second.stderr, second.stderr[-2000:]
        assert "allowed: one process per run folder" in second.stderr
        assert (run_dir / "train.log").read_text().startswith(log_before)
        assert "Run failed" not in (run_dir / "train.log").read_text()  # the refusal is not recorded in its folder
        assert first.poll() is None  # the first run goes on
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(120)
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()  # the first run checkpointed on SIGTERM
