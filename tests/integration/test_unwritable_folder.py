"""A run or sweep folder that cannot be written fails before anything starts, naming the key, the value and why;
nothing is left behind. ``resume=auto`` says it needs the folder for its checkpoints."""

from __future__ import annotations

import os

import pytest

from tests.helpers import ROOT, mounted_tmpfs, run_launcher
from tests.launcher_farm import launch


@pytest.fixture
def read_only_folder(tmp_path):
    """A read-only file system (a tmpfs mounted ``ro``)."""
    with mounted_tmpfs(tmp_path / "ro", "ro,size=1m") as folder:
        yield folder


def test_resume_auto_in_a_folder_below_a_file_fails_before_the_run(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    run_dir = blocker / "run"
    proc = run_launcher(run_dir, "trainer=smoke", "env=Pendulum-v1", "resume=auto", "total_timesteps=200", timeout=120)
    assert proc.returncode == 1
    assert f"hydra.run.dir='{run_dir}' cannot be written: {blocker} is not a folder" in proc.stderr, proc.stderr
    assert "resume=auto continues a run from the checkpoints it writes there" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_read_only_run_folder_fails_before_the_run(read_only_folder):
    run_dir = read_only_folder / "run"
    proc = run_launcher(run_dir, "trainer=smoke", "env=Pendulum-v1", "resume=auto", "total_timesteps=200", timeout=120)
    assert proc.returncode == 1
    assert f"{read_only_folder} is on a read-only file system" in proc.stderr, proc.stderr
    assert "resume=auto" in proc.stderr and "Traceback" not in proc.stderr


def test_a_sweep_into_a_read_only_folder_fails_before_any_job(read_only_folder, tmp_path):
    sweep_dir = read_only_folder / "sweep"
    args = ["-m", "trainer=smoke", "env=Pendulum-v1", "seed=0,1", "total_timesteps=200", f"hydra.sweep.dir={sweep_dir}"]
    proc = launch("lit_rl.train", args, cwd=ROOT, env=dict(os.environ), timeout=120, logs=tmp_path / "logs")
    assert proc.returncode == 1
    assert f"hydra.sweep.dir='{sweep_dir}' cannot be written: {read_only_folder} is on a read-only" in proc.stderr
    assert "resume=auto" not in proc.stderr  # only a resume=auto sweep is told about its checkpoints
