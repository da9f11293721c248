"""End to end through ``python -m lit_rl.train``: smoke runs and bad input."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from tests.helpers import CONF, read_summary, run_launcher

ENVS = sorted(p.stem for p in (CONF / "env").glob("*.yaml"))
ALGOS = sorted(p.stem for p in (CONF / "algo").glob("*.yaml"))
DISCRETE_ENVS = {"CartPole-v1", "LunarLander-v3", "BitFlipping", "atari"}  # BitFlipping: test_buffers_launcher.py; atari: test_atari_env.py
DISCRETE_ALGOS = {"dqn", "qrdqn"}
# CrossQ on every env; every other algorithm on one classic and one MuJoCo env of its kind.
PAIRS = sorted(
    {("crossq", e) for e in ENVS if e not in DISCRETE_ENVS}
    | {(a, e) for a in ALGOS if a not in DISCRETE_ALGOS for e in ("Pendulum-v1", "HalfCheetah-v4")}
    | {(a, "CartPole-v1") for a in ALGOS if a in DISCRETE_ALGOS}
)


@pytest.mark.parametrize(("algo", "env"), PAIRS, ids=[f"{a}-{e}" for a, e in PAIRS])
def test_smoke_run_writes_a_complete_run_folder(tmp_path, algo, env):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, "trainer=smoke", f"algo={algo}", f"env={env}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    assert summary["status"] == "completed"
    env_id = OmegaConf.load(CONF / "env" / f"{env}.yaml").id  # dmc.yaml: lit_rl/DMC-v0
    assert (summary["algo"], summary["env"], summary["seed"]) == (algo, env_id, 0)
    assert summary["env_steps"] == 300
    assert summary["final_eval_return"] is not None and summary["best_eval_return"] >= summary["final_eval_return"]
    assert summary["learning_phase_fps"] > 0
    assert (run_dir / ".hydra" / "config.yaml").exists()
    assert (run_dir / "checkpoints" / "last.ckpt").exists() and (run_dir / "checkpoints" / "best.ckpt").exists()
    header = (run_dir / "metrics.csv").read_text().splitlines()[0].split(",")
    expected = ["rollout/ep_rew_mean", "time/fps", "eval/mean_reward", "eval/std_reward"]
    expected += ["train/loss"] if algo in DISCRETE_ALGOS else ["train/critic_loss", "train/actor_loss"]
    expected += ["train/ent_coef"] if algo in {"crossq", "sac"} else []
    for key in expected:
        assert key in header


def test_vectorized_async_envs_and_tensorboard(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(
        run_dir,
        "trainer=smoke",
        "env=Pendulum-v1",
        "env.n_envs=2",
        "env.vectorization=async",
        "logger=[csv,tensorboard]",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    assert summary["env_steps"] >= 300  # two envs step together: the budget may be passed by one step
    assert list((run_dir / "tensorboard").rglob("events.out.tfevents*"))


def test_wandb_runs_offline_without_an_account(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, "trainer=smoke", "env=Pendulum-v1", "logger=wandb", "logger.wandb.mode=auto")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list((run_dir / "wandb").glob("offline-run-*"))


def test_main_returns_the_final_eval_return_to_sweepers(tmp_path):
    # A multirun's job return values are what Hydra sweepers optimise; check train() returns the summary value.
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, "trainer=smoke", "env=Pendulum-v1", "seed=5")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_summary(run_dir)["seed"] == 5


def test_summary_is_valid_json_with_learning_phase_speed(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, "trainer=smoke", "env=Pendulum-v1", "total_timesteps=400")
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((run_dir / "summary.json").read_text())
    assert data["env_steps"] == 400 and data["wall_seconds"] > 0


def test_ckpt_path_continues_the_step_count(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert run_launcher(first, "trainer=smoke", "env=Pendulum-v1").returncode == 0
    proc = run_launcher(
        second, "trainer=smoke", "env=Pendulum-v1", "total_timesteps=500", f"ckpt_path={first}/checkpoints/last.ckpt"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_summary(second)["env_steps"] == 500  # 300 restored + 200 new, not 500 new


def test_ckpt_path_past_the_budget_is_a_clear_error(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert run_launcher(first, "trainer=smoke", "env=Pendulum-v1").returncode == 0
    proc = run_launcher(
        second, "trainer=smoke", "env=Pendulum-v1", "total_timesteps=200", f"ckpt_path={first}/checkpoints/last.ckpt"
    )
    assert proc.returncode != 0 and "total_timesteps=200 is already reached" in proc.stderr
    assert not (second / "summary.json").exists()
