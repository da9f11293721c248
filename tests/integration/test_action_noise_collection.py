"""Exploration noise in the collection loop: added to policy actions only, reset per finished episode."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from lit_rl.algorithms.td3 import TD3
from lit_rl.collect.noise import ActionNoise, VectorizedActionNoise


class ConstantNoise(ActionNoise):
    """Adds ``value`` to every action; counts its calls and resets."""

    def __init__(self, value: float, dim: int) -> None:
        super().__init__()
        self.value, self.dim = value, dim
        self.calls = self.resets = 0

    def __call__(self) -> np.ndarray:
        self.calls += 1
        return np.full(self.dim, self.value, dtype=np.float32)

    def reset(self) -> None:
        self.resets += 1


def test_collection_adds_noise_to_policy_actions_and_resets_it_per_finished_episode():
    # Two envs whose episodes end at different steps: env 0 every 4 steps, env 1 every 6.
    venv = gym.vector.SyncVectorEnv(
        [lambda: gym.make("Pendulum-v1", max_episode_steps=4), lambda: gym.make("Pendulum-v1", max_episode_steps=6)],
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    model = TD3(
        learning_starts=10,
        gradient_steps=0,  # the actor stays as initialised, so its actions can be recomputed
        buffer_size=100,
        batch_size=8,
        policy_kwargs={"net_arch": [8]},
        action_noise=ConstantNoise(0.5, 1),
        seed=0,
    )
    model.learn(30, env=venv)  # 15 vector steps: 5 of warm-up (num_timesteps 0..8), then 10 policy steps

    assert isinstance(model.action_noise, VectorizedActionNoise) and model.action_noise.n_envs == 2
    env0, env1 = model.action_noise.noises
    assert env0.calls == env1.calls == 10  # no noise during the random warm-up
    # One reset at the start of learn, then one per finished episode of that env only.
    assert env0.resets == 1 + 3  # episodes ended at vector steps 4, 8, 12
    assert env1.resets == 1 + 2  # ... at 6, 12

    buffer = model.replay_buffer
    with torch.no_grad():
        policy = model.actor(buffer.observations[5:15].reshape(-1, 3)).reshape(10, 2, 1)
    np.testing.assert_allclose(buffer.actions[5:15], torch.clamp(policy + 0.5, -1.0, 1.0), atol=1e-6)
    assert not torch.allclose(buffer.actions[5:15], policy, atol=1e-3)
