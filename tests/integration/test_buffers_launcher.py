"""Buffer kinds end to end: the launcher with buffer=nstep / her / optimize_memory_usage, and HER from Python."""

from __future__ import annotations

import pytest

from lit_rl.algorithms import DDPG, TD3, CrossQ
from lit_rl.buffers import HerReplayBuffer
from lit_rl.envs import make_vec_env
from tests.helpers import read_summary, run_launcher

RUNS = {
    "nstep-dqn-CartPole": ("buffer=nstep", "buffer.n_steps=5", "algo=dqn", "env=CartPole-v1"),
    "optimize-memory-sac-Pendulum": ("buffer.optimize_memory_usage=true", "algo=sac", "env=Pendulum-v1"),
    "her-dqn-BitFlipping": ("buffer=her", "algo=dqn", "env=BitFlipping", "env.n_envs=2"),
    "her-sac-continuous-BitFlipping": (
        "buffer=her",
        "buffer.goal_selection_strategy=final",
        "algo=sac",
        "env=BitFlipping",
        "env.kwargs.continuous=true",
    ),
}


@pytest.mark.parametrize("overrides", list(RUNS.values()), ids=list(RUNS))
def test_smoke_run_completes(tmp_path, overrides):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, "trainer=smoke", *overrides)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    assert summary["status"] == "completed" and summary["env_steps"] >= 300
    assert summary["final_eval_return"] is not None
    header = (run_dir / "metrics.csv").read_text().splitlines()[0].split(",")
    assert "train/loss" in header or "train/critic_loss" in header  # gradient steps ran on sampled batches


def test_bad_buffer_key_fails_at_composition(tmp_path):
    proc = run_launcher(tmp_path / "run", "trainer=smoke", "buffer=her", "buffer.n_steps=3")
    assert proc.returncode != 0
    assert "n_steps" in proc.stderr


@pytest.mark.parametrize("algo_class", [CrossQ, TD3, DDPG])
def test_her_with_continuous_algorithms_from_python(algo_class):
    env = make_vec_env("lit_rl/BitFlipping-v0", n_envs=2, env_kwargs={"n_bits": 5, "continuous": True}, seed=0)
    kwargs = {"policy_kwargs": {"net_arch": [16]}}
    model = algo_class(
        "MultiInputPolicy",
        learning_starts=20,
        batch_size=16,
        buffer_size=200,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"n_sampled_goal": 2, "goal_selection_strategy": "episode"},
        seed=0,
        **kwargs,
    )
    model.learn(60, env=env)
    assert model.num_timesteps >= 60 and model._n_updates > 0
    assert model.replay_buffer.n_sampleable > 0
    obs, _ = env.reset(seed=1)
    assert model.predict(obs, deterministic=True)[0].shape == (2, 5)
    env.close()
