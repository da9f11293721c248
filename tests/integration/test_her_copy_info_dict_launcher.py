"""``buffer.copy_info_dict`` (SB3's HerReplayBuffer argument) from the command line."""

from __future__ import annotations

import torch

from tests.helpers import read_summary, run_launcher

HER_RUN = ("trainer=smoke", "buffer=her", "algo=dqn", "env=BitFlipping", "env.n_envs=2")


def test_copy_info_dict_reaches_the_her_buffer(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, *HER_RUN, "buffer.copy_info_dict=true")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_summary(run_dir)["status"] == "completed"
    checkpoint = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert checkpoint["hyper_parameters"]["replay_buffer_kwargs"]["copy_info_dict"] is True


def test_copy_info_dict_takes_only_a_bool(tmp_path):
    proc = run_launcher(tmp_path / "run", *HER_RUN, "buffer.copy_info_dict=sometimes")
    assert proc.returncode != 0
    assert "buffer.copy_info_dict" in proc.stderr and "sometimes" in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "run").exists()
