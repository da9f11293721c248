"""A sweep whose last job ends while its disk is full: the summary waits for room, or says how to write it later."""

from __future__ import annotations

import shutil
import threading

import pytest
from omegaconf import OmegaConf

from lit_rl.launcher import sweep_summary
from tests.helpers import fill_disk, mounted_tmpfs, read_csv_rows, run_multirun


@pytest.fixture(scope="module")
def finished_sweep(tmp_path_factory):
    """A real two-job multirun; each test copies it onto its own small disk."""
    sweep = tmp_path_factory.mktemp("sweep") / "s"
    proc = run_multirun(sweep, "trainer=smoke", "env=Pendulum-v1", "total_timesteps=200", "seed=0,1", "logger=csv")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("sweep_summary.csv", "sweep_seeds.csv", "sweep_summary.md"):
        (sweep / name).unlink()
    return sweep


@pytest.fixture
def sweep_on_a_small_disk(finished_sweep, tmp_path):
    with mounted_tmpfs(tmp_path / "disk", "size=16m") as disk:
        shutil.copytree(finished_sweep, disk / "s")
        yield disk / "s"


def test_the_summary_waits_for_a_full_disk_to_have_room(sweep_on_a_small_disk, caplog):
    sweep = sweep_on_a_small_disk
    fill_disk(sweep.parent)
    freed = threading.Timer(3.0, (sweep.parent / "ballast").unlink)
    freed.start()
    rows, _ = sweep_summary.write_sweep_summary_patiently(sweep, wait_s=60)
    freed.join()
    assert len(rows) == 2 and len(read_csv_rows(sweep / "sweep_summary.csv")) == 2
    assert "is full" in caplog.text and "writing the sweep summary again" in caplog.text


def test_a_disk_that_stays_full_ends_the_sweep_with_the_command_to_write_it_later(sweep_on_a_small_disk, caplog):
    sweep = sweep_on_a_small_disk
    fill_disk(sweep.parent)
    callback = sweep_summary.SweepSummaryCallback(disk_full_wait_s=0.0)
    config = OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}}})
    with pytest.raises(SystemExit) as exited:
        callback.on_multirun_end(config)
    assert exited.value.code == 1
    assert f"python -m lit_rl.sweep_summary {sweep}" in caplog.text and "No space left" in caplog.text
    assert not list(sweep.glob(".*.tmp")) and not (sweep / "sweep_summary.csv").exists()  # nothing half-written
    (sweep.parent / "ballast").unlink()
    assert sweep_summary.main([str(sweep)]) == 0 and len(read_csv_rows(sweep / "sweep_summary.csv")) == 2
