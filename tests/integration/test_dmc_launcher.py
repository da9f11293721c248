"""The DeepMind Control Suite through the launcher (``env=dmc``), the ``sac_dmc`` preset and the Python API."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

from lit_rl import SAC
from lit_rl.core.persistence import load_algorithm
from lit_rl.envs import DMC_ID
from lit_rl.nets.extractors import NatureCNN
from tests.helpers import needs_rendering, read_summary, run_launcher
from tests.integration.test_compose import compose_train
from tests.integration.test_quiet_runs import LAUNCHER_LINES

pytest.importorskip("dm_control")
pytest.importorskip("shimmy")


def _quiet_env() -> dict[str, str]:
    """A user's environment on a headless machine: no MUJOCO_GL chosen, no display, Python's default warnings."""
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY", "WAYLAND_DISPLAY")}
    return {**env, "WANDB_MODE": "offline", "HYDRA_FULL_ERROR": "0", "PYTHONWARNINGS": "default"}


def test_state_smoke_run_completes_and_the_terminal_shows_only_lit_rl(tmp_path):
    # Run from a folder of its own, as a user would, with the default run folder: named after the task.
    cmd = [sys.executable, "-m", "lit_rl.train", "algo=sac", "env=dmc", "env.kwargs.task=cheetah-run",
           "env.kwargs.action_repeat=2", "trainer=smoke", "total_timesteps=300",
           "trainer.enable_progress_bar=false"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=tmp_path, env=_quiet_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = (tmp_path / "outputs").glob("*/*_sac_dmc-cheetah-run_s0")
    summary = read_summary(run_dir)
    assert summary["status"] == "completed" and summary["env"] == DMC_ID and summary["env_steps"] == 300
    assert summary["env_name"] == "dmc-cheetah-run"
    # trainer=smoke caps episodes at 100 agent steps: each reward is at most action_repeat = 2.
    assert 0 <= summary["final_eval_return"] <= 200 and summary["best_eval_return"] >= summary["final_eval_return"]
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    strays = [line for line in lines if not any(p.match(line) for p in LAUNCHER_LINES)]
    assert lines and not strays, strays  # no absl "settotalmass is deprecated", no GLFW display warning


@needs_rendering
def test_pixel_smoke_run_trains_a_cnn_on_stacked_frames(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(
        run_dir, "algo=sac", "algo.policy=CnnPolicy", "env=dmc", "env.kwargs.task=walker-walk", "env.kwargs.pixels=true",
        "env.kwargs.image_size=36", "env.kwargs.frame_stack=2", "env.kwargs.action_repeat=4", "trainer=smoke",
        "total_timesteps=100", "algo.learning_starts=50", "env.max_episode_steps=25", "eval.freq=100",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    assert summary["status"] == "completed" and summary["env_steps"] == 100
    assert 0 <= summary["final_eval_return"] <= 100  # 25 steps of at most 4 summed rewards
    model = load_algorithm(run_dir / "checkpoints" / "last.ckpt", device="cpu")
    assert model.observation_space.shape == (6, 36, 36) and model.observation_space.dtype == np.uint8
    assert isinstance(model.policy.actor.features_extractor, NatureCNN)
    assert model.policy.actor.features_extractor.cnn[0].in_channels == 6
    assert model.replay_buffer.observations.dtype == torch.uint8


def test_unknown_task_fails_naming_it_and_writes_no_summary(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, "algo=sac", "env=dmc", "env.kwargs.task=walker-wlak", "trainer=smoke", timeout=120)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    for words in ("env.kwargs.task='walker-wlak'", "walker-walk", "cheetah-run", "humanoid-run"):
        assert words in output, output[-3000:]
    assert not (run_dir / "summary.json").exists() and not (run_dir / "checkpoints").exists()


def test_python_api_takes_the_id_or_a_built_env():
    """SB3's constructor takes no env kwargs: the id gives the default task, a built env any other."""
    fast = {"learning_starts": 50, "batch_size": 16, "buffer_size": 500, "policy_kwargs": {"net_arch": [16]}}
    model = SAC("MlpPolicy", DMC_ID, seed=0, device="cpu", **fast)
    assert model.observation_space.shape == (17,) and model.observation_space.dtype == np.float32  # cheetah-run
    env = gym.make(DMC_ID, task="walker-walk", action_repeat=4)
    model = SAC("MlpPolicy", env, seed=0, device="cpu", **fast).learn(300)
    assert model.num_timesteps == 300 and model.observation_space.shape == (24,)
    assert len(model.ep_info_buffer) == 1 and model.ep_info_buffer[0]["l"] == 250  # ceil(1000 / 4) agent steps
    action, _ = model.predict(env.observation_space.sample(), deterministic=True)
    assert action.shape == (6,) and np.all(np.abs(action) <= 1)


def test_sac_dmc_preset_gives_pytorch_sac_values():
    """The values of denisyarats/pytorch_sac cited in conf/experiment/sac_dmc.yaml."""
    cfg = compose_train("experiment=sac_dmc", "env=dmc", "env.kwargs.task=walker-walk")
    assert cfg.algo._target_ == "lit_rl.algorithms.SAC" and cfg.env.id == DMC_ID
    assert cfg.env.kwargs.task == "walker-walk" and cfg.env.kwargs.action_repeat == 1
    assert cfg.total_timesteps == 1_000_000 and cfg.buffer.buffer_size == 1_000_000
    algo = cfg.algo
    assert (algo.learning_rate, algo.learning_starts, algo.batch_size, algo.tau, algo.gamma) == (
        1e-4, 5000, 1024, 0.005, 0.99
    )  # fmt: skip
    assert (algo.train_freq, algo.gradient_steps, algo.ent_coef, algo.target_entropy) == (1, 1, "auto_0.1", "auto")
    assert list(algo.policy_kwargs.net_arch.pi) == [1024, 1024] and list(algo.policy_kwargs.net_arch.qf) == [1024, 1024]
    smoke = compose_train("experiment=sac_dmc", "env=dmc", "trainer=smoke")
    assert smoke.total_timesteps == 300 and list(smoke.algo.policy_kwargs.net_arch.qf) == [32, 32]
