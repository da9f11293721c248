"""DQN through the Stable-Baselines3-style Python API: the real collection loop, tiny runs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from lit_rl import DQN

TINY = {"net_arch": [16, 16]}


def make_model(**kwargs) -> DQN:
    params = dict(learning_starts=50, batch_size=16, buffer_size=1_000, policy_kwargs=TINY, seed=0)
    params.update(kwargs)
    return DQN("MlpPolicy", **params)


def test_learn_counts_updates_hook_calls_and_logs():
    model = make_model(train_freq=4, gradient_steps=1, exploration_fraction=0.5).learn(200, env="CartPole-v1")
    assert model.num_timesteps == 200 and len(model.replay_buffer) == 200
    # Rounds end at env steps 4, 8, ..., 200; updates follow the rounds that end past learning_starts=50.
    assert model._n_updates == (200 - 52) // 4 + 1
    assert model._n_calls == 200
    assert model.exploration_rate == pytest.approx(0.05)  # past exploration_fraction
    assert model.latest_metrics["rollout/exploration_rate"] == pytest.approx(0.05)
    assert model.latest_metrics["train/loss"] > 0.0
    assert model.replay_buffer.actions.dtype.is_floating_point is False


def test_predict_returns_env_actions_of_the_discrete_space():
    env = gym.make("CartPole-v1")
    model = make_model().learn(100, env=env)
    obs, _ = env.reset(seed=1)
    action = model.predict(obs, deterministic=True)[0]
    assert action.shape == () and np.issubdtype(action.dtype, np.integer) and env.action_space.contains(action)
    env.step(action)  # the env accepts it as is
    actions = model.predict(np.stack([obs] * 4), deterministic=False)[0]
    assert actions.shape == (4,) and all(env.action_space.contains(a) for a in actions)


def test_vector_env_counts_target_updates_in_vector_steps():
    venv = gym.make_vec(
        "CartPole-v1",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
    )
    model = make_model(train_freq=2).learn(100, env=venv)
    assert model.num_timesteps == 100 and model._n_calls == 50


def test_dqn_rejects_box_actions_before_any_step():
    model = make_model()
    with pytest.raises(ValueError, match=r"DQN does not support Box action spaces.*allowed: \['Discrete'\]"):
        model.learn(10, env="Pendulum-v1")
    assert model.num_timesteps == 0
