"""The pixel presets compose into their sources' values (cited in each file's header) and run at smoke size:
rl-baselines3-zoo's Atari DQN and QR-DQN, DrQ's SAC from DMC pixels."""

from __future__ import annotations

import pytest

from tests.helpers import read_summary, run_launcher
from tests.integration.test_compose import compose_train
from tests.integration.test_presets import select

PRESETS = {
    "dqn_atari": (
        ["env=atari"],
        {
            "algo._target_": "lit_rl.algorithms.DQN", "algo.policy": "CnnPolicy", "total_timesteps": 10_000_000,
            "buffer.buffer_size": 1_000_000, "algo.learning_rate": 1e-4, "algo.batch_size": 32,
            "algo.learning_starts": 100_000, "algo.target_update_interval": 10_000, "algo.train_freq": 4,
            "algo.gradient_steps": 1, "algo.exploration_fraction": 0.1, "algo.exploration_final_eps": 0.1,
            "env.kwargs.frame_stack": 4,
        },
    ),
    "qrdqn_atari": (
        ["env=atari"],
        {
            "algo._target_": "lit_rl.algorithms.QRDQN", "algo.policy": "CnnPolicy", "total_timesteps": 10_000_000,
            "buffer.buffer_size": 1_000_000, "algo.learning_rate": 5e-5, "algo.learning_starts": 100,
            "algo.target_update_interval": 10_000, "algo.exploration_fraction": 0.005,
            "algo.exploration_final_eps": 0.01, "algo.policy_kwargs.n_quantiles": 200, "env.kwargs.frame_stack": 4,
        },
    ),
    "drq_dmc": (
        ["env=dmc", "env.kwargs.pixels=true", "env.kwargs.frame_stack=3", "env.kwargs.action_repeat=8"],
        {
            "algo._target_": "lit_rl.algorithms.SAC", "algo.policy": "CnnPolicy", "algo.learning_rate": 1e-3,
            "algo.batch_size": 128, "algo.learning_starts": 1000, "algo.tau": 0.01, "algo.gamma": 0.99,
            "algo.target_update_interval": 2, "algo.ent_coef": "auto_0.1",
            "algo.policy_kwargs.net_arch.qf": [1024, 1024], "algo.policy_kwargs.features_extractor_kwargs.features_dim": 50,
            "buffer.buffer_size": 100_000, "buffer.augmentation": "random_shift", "buffer.augmentation_pad": 4,
            "eval.freq": 5000, "eval.episodes": 10,
        },
    ),
}  # fmt: skip


@pytest.mark.parametrize("preset", list(PRESETS))
def test_pixel_preset_gives_its_sources_values(preset):
    env_overrides, values = PRESETS[preset]
    cfg = compose_train(f"experiment={preset}", *env_overrides)
    for key, value in values.items():
        assert select(cfg, key) == value, key


SMOKE = {
    "dqn_atari": ["env=atari", "env.kwargs.game=Pong", "algo.learning_starts=100", "algo.batch_size=8"],
    "qrdqn_atari": ["env=atari", "env.kwargs.game=Breakout", "algo.batch_size=8", "algo.policy_kwargs.n_quantiles=8"],
}


@pytest.mark.parametrize("preset", ["dqn_atari", pytest.param("qrdqn_atari", marks=pytest.mark.slow)])
def test_atari_presets_run_at_smoke_size_with_the_frame_once_buffer(preset, tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, f"experiment={preset}", *SMOKE[preset], "trainer=smoke", "total_timesteps=200",
                        "eval.episodes=1", "env.max_episode_steps=100", timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_summary(run_dir)["status"] == "completed"
    assert "frame replay buffer (4 frames a stack, each stored once)" in (run_dir / "train.log").read_text()
