"""Faults lose no work: non-finite training stops cleanly, SIGKILL during saves never corrupts a checkpoint,
a crashing env is named, and two runs with one seed are identical."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
import torch

from lit_rl import TD3
from lit_rl.core.persistence import read_model_file, write_model_file
from tests.helpers import ROOT, mounted_tmpfs, read_summary, run_launcher


def test_non_finite_loss_stops_the_run_and_marks_it_failed(tmp_path):
    run_dir = tmp_path / "run"
    # An absurd learning rate blows the critic up within a few updates.
    proc = run_launcher(run_dir, "trainer=smoke", "env=Pendulum-v1", "algo=td3", "algo.learning_rate=1e30")
    assert proc.returncode != 0
    assert "non-finite" in proc.stderr and "at env step" in proc.stderr, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    assert summary["status"] == "failed" and "NonFiniteError" in summary["error"]
    last = run_dir / "checkpoints" / "last.ckpt"
    if last.exists():  # any checkpoint left behind holds a finite model
        state = read_model_file(last)["state_dict"]
        assert all(torch.isfinite(t).all() for t in state.values() if t.is_floating_point())


def test_sigkill_during_checkpoint_saves_leaves_the_last_checkpoint_loadable(tmp_path):
    run_dir = tmp_path / "run"
    env = dict(os.environ, WANDB_MODE="offline")
    ckpt = run_dir / "checkpoints" / "last.ckpt"
    rng = random.Random(0)
    for attempt in range(3):
        # eval.freq=20 with a 20k buffer: a checkpoint (with the buffer) is being written most of the time.
        cmd = [sys.executable, "-m", "lit_rl.train", "trainer=smoke", "env=Pendulum-v1", "algo=td3",
               "total_timesteps=100000", "eval.freq=20", "eval.episodes=1", "buffer.buffer_size=20000",
               "trainer.enable_progress_bar=false", f"hydra.run.dir={run_dir}"]
        if attempt:
            cmd.append(f"resume={run_dir}")
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        start = ckpt.stat().st_mtime if ckpt.exists() else 0.0
        while not (ckpt.exists() and ckpt.stat().st_mtime > start):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        model = TD3.load(ckpt, device="cpu")  # never a torn file
        assert model.num_timesteps >= 20
        assert read_model_file(ckpt)["rl_state"]["training"]["replay_buffer"]["extra"]["pos"] == model.num_timesteps


class CrashingPendulum(gym.Wrapper):
    """Pendulum whose simulator fails at its 30th step."""

    def __init__(self) -> None:
        super().__init__(gym.make("Pendulum-v1"))
        self.steps = 0

    def step(self, action):
        self.steps += 1
        if self.steps == 30:
            raise FloatingPointError("simulator diverged")
        return super().step(action)


def test_a_crashing_env_is_named_with_the_step():
    model = TD3("MlpPolicy", learning_starts=10, batch_size=8, buffer_size=100, policy_kwargs={"net_arch": [8]})
    with pytest.raises(RuntimeError, match=r"env Pendulum-v1 raised during step at env step 29: FloatingPointError"):
        model.learn(100, env=CrashingPendulum())


def _metrics_without_wall_clock(run_dir) -> list[list[str]]:
    lines = [line.split(",") for line in (run_dir / "metrics.csv").read_text().splitlines()]
    keep = [i for i, name in enumerate(lines[0]) if name != "time/fps"]
    return [[row[i] for i in keep] for row in lines]


def test_same_seed_gives_identical_runs(tmp_path):
    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        assert run_launcher(run, "trainer=smoke", "env=Pendulum-v1", "seed=3").returncode == 0
    a, b = (read_model_file(r / "checkpoints" / "last.ckpt")["state_dict"] for r in runs)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert _metrics_without_wall_clock(runs[0]) == _metrics_without_wall_clock(runs[1])
    info = [json.loads((r / "run_info.json").read_text()) for r in runs]
    assert info[0]["seeds"] == info[1]["seeds"] and info[0]["seeds"]["replay buffer sampler"] == 3
    assert info[0]["versions"]["torch"] == torch.__version__
    assert info[0]["git"] is None or len(info[0]["git"]["commit"]) == 40
    assert np.isfinite(read_summary(runs[0])["final_eval_return"])


def test_a_dead_async_worker_is_reported_not_a_hang():
    venv = gym.make_vec(
        "Pendulum-v1", num_envs=2, vectorization_mode="async",
        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
    )

    def kill_a_worker(locals_, globals_) -> bool:
        if model.num_timesteps == 40:
            venv.unwrapped.processes[0].kill()
            venv.unwrapped.processes[0].join()
        return True

    model = TD3("MlpPolicy", learning_starts=10, batch_size=8, buffer_size=200, policy_kwargs={"net_arch": [8]})
    with pytest.raises(RuntimeError, match=r"env Pendulum-v1 raised during step at env step 40"):
        model.learn(150, env=venv, callback=kill_a_worker)


@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MiB tmpfs: a real full disk (needs mount rights, as root in CI containers)."""
    with mounted_tmpfs(tmp_path / "tiny", "size=1M") as folder:
        yield folder


def test_full_disk_fails_clearly_and_keeps_the_previous_checkpoint(tiny_disk):
    path = tiny_disk / "model.pt"
    write_model_file({"rl_state": {}, "state_dict": {"w": torch.ones(1000)}}, path)
    with pytest.raises(OSError, match=r"could not write .*model\.pt.*disk full"):
        write_model_file({"rl_state": {}, "state_dict": {"w": torch.ones(1_000_000)}}, path)  # 4 MB
    assert torch.equal(read_model_file(path)["state_dict"]["w"], torch.ones(1000))
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["model.pt"]  # no temporary file left


def test_an_output_folder_that_cannot_be_created_fails_clearly(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    with pytest.raises(OSError, match=r"could not write .*file/ckpt/model\.pt"):
        write_model_file({"rl_state": {}, "state_dict": {}}, blocker / "ckpt" / "model.pt")
