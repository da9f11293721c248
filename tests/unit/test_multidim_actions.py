"""Multi-dimensional Box actions (shape (2, 2)): flat inside (networks, buffer), the env's shape outside, as SB3."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from lit_rl import DDPG, SAC, TD3, CrossQ
from lit_rl.envs.actions import scale_action

ACTION_SHAPE = (2, 2)


class MatrixActionEnv(gym.Env):
    """An env whose actions are 2x2 matrices in [-2, 2]; it records every action it receives."""

    observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = spaces.Box(-2.0, 2.0, ACTION_SHAPE, np.float32)

    def __init__(self) -> None:
        self.received: list[np.ndarray] = []

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 3).astype(np.float32), {}

    def step(self, action):
        if np.shape(action) != ACTION_SHAPE:
            raise AssertionError(f"the env got an action of shape {np.shape(action)}")
        self.received.append(np.array(action))
        self.t += 1
        obs = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        return obs, -float(np.square(action).sum()), False, self.t >= 10, {}


def tiny(cls, env, **kwargs):
    return cls("MlpPolicy", env, learning_starts=20, batch_size=8, buffer_size=500, seed=0,
               policy_kwargs={"net_arch": [16]}, **kwargs)  # fmt: skip


@pytest.mark.parametrize("cls", [SAC, TD3, DDPG, CrossQ])
def test_predict_returns_the_action_space_shape(cls):
    model = tiny(cls, MatrixActionEnv())
    single, _ = model.predict(np.zeros(3, np.float32), deterministic=True)
    batch, _ = model.predict(np.zeros((5, 3), np.float32))
    assert single.shape == ACTION_SHAPE and batch.shape == (5, *ACTION_SHAPE)
    assert model.action_space.contains(single)
    assert all(model.action_space.contains(a) for a in batch)


@pytest.mark.parametrize("cls", [SAC, TD3])
def test_training_steps_the_env_with_matrices_and_stores_flat_actions(cls):
    env = MatrixActionEnv()
    model = tiny(cls, env).learn(50)  # 20 random warm-up steps, then 30 policy steps with updates
    assert model.num_timesteps == 50 and len(env.received) == 50
    buffer = model.replay_buffer
    stored = buffer.actions[: buffer.pos, 0].cpu().numpy()
    # SB3's buffer layout: (rows, n_envs, prod(shape)), in [-1, 1]; what the env got, scaled and flattened.
    assert stored.shape == (50, 4)
    expected = scale_action(env.action_space, np.stack(env.received)).reshape(50, 4)
    np.testing.assert_allclose(stored, expected, atol=1e-6)


def test_buffer_layout_matches_stable_baselines3():
    from stable_baselines3 import TD3 as SB3TD3

    ours, ref = tiny(TD3, MatrixActionEnv()), tiny(SB3TD3, MatrixActionEnv(), device="cpu")
    assert ours.replay_buffer.actions.shape[1:] == ref.replay_buffer.actions.shape[1:] == (1, 4)
    assert ref.predict(np.zeros(3, np.float32))[0].shape == ours.predict(np.zeros(3, np.float32))[0].shape
