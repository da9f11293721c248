"""A ``last.ckpt`` cut off mid-write: the run continues from the checkpoint before it, ends bitwise equal to the
uncut run, and never starts over from zero."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lit_rl.utils.io import write_atomically
from tests.helpers import read_summary, run_launcher

COMMON = ["trainer=smoke", "algo=sac", "env=Pendulum-v1", "env.max_episode_steps=200", "eval.episodes=2"]


def _load(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=False)


def _cut_in_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_a_damaged_last_checkpoint_gives_way_to_the_previous_one(tmp_path):
    straight, cut = tmp_path / "straight", tmp_path / "cut"
    assert run_launcher(straight, *COMMON, "eval.freq=126", "total_timesteps=504").returncode == 0
    assert run_launcher(cut, *COMMON, "eval.freq=126", "total_timesteps=378").returncode == 0
    last, previous = cut / "checkpoints" / "last.ckpt", cut / "checkpoints" / "previous.ckpt"
    last_step = _load(last)["rl_state"]["num_timesteps"]
    previous_step = _load(previous)["rl_state"]["num_timesteps"]
    assert (previous_step, last_step) == (252, 378)
    _cut_in_half(last)

    proc = run_launcher(cut, *COMMON, "eval.freq=126", "total_timesteps=504", "resume=auto")
    assert proc.returncode == 0, proc.stderr[-3000:]
    output = proc.stdout + proc.stderr
    assert f"{last} cannot be read" in output and f"continuing from the checkpoint before it, {previous}" in output
    assert "(env step 252)" in output, output
    damaged = last.with_name("last.ckpt.damaged")
    assert damaged.is_file() and damaged.stat().st_size < previous.stat().st_size  # kept for a look, set aside
    summary = read_summary(cut)
    assert summary["status"] == "completed" and summary["resumed_from"] == str(previous)
    assert [r["env_step"] for r in summary["resumes"]] == [252], summary["resumes"]

    a, b = _load(straight / "checkpoints" / "last.ckpt"), _load(last)
    assert a["rl_state"]["num_timesteps"] == b["rl_state"]["num_timesteps"] == 504
    for name, tensor in a["state_dict"].items():
        assert torch.equal(tensor, b["state_dict"][name]), f"parameter {name} differs from the uncut run"
    assert read_summary(straight)["final_eval_return"] == summary["final_eval_return"]
    assert _load(previous)["rl_state"]["num_timesteps"] == 378  # the next saves kept the one before the last again


def test_with_both_checkpoints_damaged_the_run_stops_naming_both(tmp_path):
    run = tmp_path / "run"
    assert run_launcher(run, *COMMON, "eval.freq=100", "total_timesteps=200").returncode == 0
    last, previous = run / "checkpoints" / "last.ckpt", run / "checkpoints" / "previous.ckpt"
    _cut_in_half(last)
    previous.write_text("not a checkpoint\n")
    before = {p.name: p.read_bytes() for p in (run / "checkpoints").iterdir()}

    proc = run_launcher(run, *COMMON, "eval.freq=100", "total_timesteps=400", f"resume={run}")
    assert proc.returncode != 0
    assert "the run folder's checkpoints cannot be read" in proc.stderr and "allowed:" in proc.stderr
    assert f"({last}: ckpt_path=" in proc.stderr and f"({previous}: ckpt_path=" in proc.stderr, proc.stderr[-3000:]
    assert {p.name: p.read_bytes() for p in (run / "checkpoints").iterdir()} == before  # nothing moved or written
    assert read_summary(run)["env_steps"] == 200  # not started over


def test_a_failed_write_keeps_both_the_last_and_the_previous_file(tmp_path):
    path, previous = tmp_path / "last.ckpt", tmp_path / "previous.ckpt"
    write_atomically(path, lambda tmp: tmp.write_text("one"), previous=previous)
    write_atomically(path, lambda tmp: tmp.write_text("two"), previous=previous)
    assert (path.read_text(), previous.read_text()) == ("two", "one")

    def fail(tmp: Path) -> None:
        tmp.write_text("thr")  # a part written, then the disk is full
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left on device"):
        write_atomically(path, fail, previous=previous)
    assert (path.read_text(), previous.read_text()) == ("two", "one")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt", "previous.ckpt"]
