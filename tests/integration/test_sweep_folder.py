"""A sweep folder holds one sweep: its own command may run there again, another config is refused by name."""

from __future__ import annotations

import os

from tests.helpers import ROOT
from tests.launcher_farm import launch

SWEEP = ["-m", "seed=0,1", "algo=sac", "env=Pendulum-v1", "trainer=smoke", "total_timesteps=60", "eval.episodes=1",
         "algo.learning_starts=20", "trainer.enable_progress_bar=false"]  # fmt: skip


def sweep(tmp_path, sweep_dir, *extra: str):
    env = dict(os.environ, WANDB_MODE="offline", HYDRA_FULL_ERROR="0")
    args = [*SWEEP, *extra, f"hydra.sweep.dir={sweep_dir}"]
    return launch("lit_rl.train", args, cwd=ROOT, env=env, timeout=600, logs=tmp_path / "logs")


def test_a_sweep_folder_takes_its_own_command_again_and_refuses_another_config(tmp_path):
    sweep_dir = tmp_path / "sweep"
    first = sweep(tmp_path, sweep_dir)
    assert first.returncode == 0, first.stderr[-3000:]
    again = sweep(tmp_path, sweep_dir)  # a resubmitted sweep: the same command into its own folder
    assert again.returncode == 0, again.stderr[-3000:]
    summary = (sweep_dir / "sweep_summary.csv").read_text()

    other = sweep(tmp_path, sweep_dir, "algo.learning_rate=0.001")
    assert other.returncode == 1
    message = other.stderr
    assert f"hydra.sweep.dir={str(sweep_dir)!r} holds a sweep of another config" in message, message[-3000:]
    assert "algo.learning_rate: 0.0003 there, 0.001 here" in message
    assert "overrides: [" in message and "'algo.learning_rate=0.001'" in message
    assert "allowed: the same command as the sweep there" in message
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir()) == ["0", "1"]
    assert (sweep_dir / "sweep_summary.csv").read_text() == summary  # nothing of the refused sweep written
