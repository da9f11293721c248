"""Normalisation through learn(): statistics from the collected stream (equal to SB3's VecNormalize on it),
raw data in the buffer, normalised batches and actions, frozen in predict, carried by save/load."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecNormalize

from lit_rl.algorithms import SAC
from lit_rl.buffers import HerReplayBuffer
from lit_rl.envs import make_vec_env
from tests.unit.test_normalization import ReplayVecEnv, assert_stats_equal

TINY = {"net_arch": [16]}


def record_stream(model) -> tuple[list, list]:
    """Wrap the model's normalisation hooks so the (reset, step) stream it sees is kept."""
    resets, steps = [], []
    observe_reset, observe_step = model.normalizer.observe_reset, model.collector.observe

    def on_reset(obs):
        resets.append(obs.copy())
        observe_reset(obs)

    def on_step(obs, rewards, dones):
        steps.append((obs.copy(), rewards.copy(), dones.copy()))
        observe_step(obs, rewards, dones)

    model.normalizer.observe_reset, model.collector.observe = on_reset, on_step
    return resets, steps


def test_learn_on_pendulum_statistics_buffer_batches_predict_save_load(tmp_path):
    env = make_vec_env("Pendulum-v1", 2, max_episode_steps=40)  # episode ends inside the run
    model = SAC("MlpPolicy", env, normalize_obs=True, normalize_reward=True, learning_starts=60, batch_size=32,
                gamma=0.97, policy_kwargs=TINY, seed=0, device="cpu")  # fmt: skip
    resets, steps = record_stream(model)
    model.learn(200)
    assert len(resets) == 1 and len(steps) == 100 and any(d.any() for _, _, d in steps)

    # The statistics are VecNormalize's on the same stream (reward scale with the algorithm's gamma).
    vec = VecNormalize(ReplayVecEnv(model.observation_space, resets[0], steps), gamma=0.97)
    vec.reset()
    for _ in steps:
        vec.step(np.zeros((2, 1)))
    assert_stats_equal(model.normalizer.obs_stats["obs"], vec.obs_rms)
    assert_stats_equal(model.normalizer.ret_stats, vec.ret_rms)

    # The buffer holds the raw observations and rewards as collected.
    buf = model.replay_buffer
    np.testing.assert_array_equal(buf.observations[0].numpy(), resets[0])
    np.testing.assert_array_equal(buf.observations[1:100].numpy(), np.stack([s[0] for s in steps[:-1]]))
    np.testing.assert_array_equal(buf.rewards[:100].numpy(), np.stack([s[1] for s in steps]).astype(np.float32))

    # Batches the updates see are normalised with the current statistics (SB3's sample(env=vec_normalize)).
    state = buf.generator.get_state()
    raw = buf.sample(64)
    buf.generator.set_state(state)
    batch = buf.sample(64, env=model.normalizer)
    np.testing.assert_allclose(batch.observations.numpy(), vec.normalize_obs(raw.observations.numpy()), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(batch.rewards.numpy(), vec.normalize_reward(raw.rewards.numpy()), rtol=1e-5, atol=1e-6)

    # predict acts on normalised observations and never updates the statistics.
    stats = {k: v.clone() for k, v in model.normalizer.state_dict().items()}
    obs = np.random.default_rng(0).normal(0, 3, (8, 3)).astype(np.float32)
    actions, _ = model.predict(obs, deterministic=True)
    expected = model.policy(model.normalizer.normalize_obs(torch.as_tensor(obs)), True).detach().numpy()
    np.testing.assert_allclose(actions, 2.0 * np.clip(expected, -1, 1), rtol=1e-6)  # Pendulum's actions in [-2, 2]
    for name, value in model.normalizer.state_dict().items():
        assert torch.equal(value, stats[name]), name

    # A saved and loaded model has the statistics and predicts identically; its settings are kept.
    model.save(tmp_path / "sac")
    loaded = SAC.load(tmp_path / "sac", device="cpu")
    for name, value in model.normalizer.state_dict().items():
        assert torch.equal(loaded.normalizer.state_dict()[name], value), name
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], actions)
    assert (loaded.normalizer.gamma, loaded.normalizer.clip_obs) == (0.97, 10.0)
    with pytest.raises(ValueError, match="normalize_obs=False differs from the saved True"):  # never dropped
        SAC.load(tmp_path / "sac", device="cpu", normalize_obs=False)
    plain = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs=TINY, device="cpu")
    with pytest.raises(RuntimeError, match="normalizer.obs_stats.obs.mean"):
        plain.set_parameters({"policy": model.get_parameters()["policy"]})


class PointGoalEnv(gym.Env):
    """Move a point in the plane towards a goal: Box goal keys (the HER layout), reward -1 until within 0.5."""

    def __init__(self) -> None:
        box = spaces.Box(-10.0, 10.0, (2,), np.float32)
        self.observation_space = spaces.Dict({"observation": spaces.Box(-10.0, 10.0, (3,), np.float32),
                                              "achieved_goal": box, "desired_goal": box})  # fmt: skip
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": np.append(self.pos, 5.0).astype(np.float32), "achieved_goal": self.pos.copy(),
                "desired_goal": self.goal.copy()}  # fmt: skip

    def reset(self, *, seed: int | None = None, options: Any = None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-3, 3, 2).astype(np.float32)
        self.goal = self.np_random.uniform(4, 8, 2).astype(np.float32)
        return self._obs(), {}

    def step(self, action):
        self.pos = np.clip(self.pos + np.asarray(action, np.float32), -10, 10).astype(np.float32)
        reward = float(self.compute_reward(self.pos, self.goal, None))
        return self._obs(), reward, reward == 0.0, False, {}

    def compute_reward(self, achieved_goal, desired_goal, info):
        return -(np.linalg.norm(np.asarray(achieved_goal) - desired_goal, axis=-1) > 0.5).astype(np.float32)


def test_learn_on_a_dict_goal_env_with_her_relabels_raw_goals_and_shares_goal_statistics(tmp_path):
    env = gym.wrappers.TimeLimit(PointGoalEnv(), 10)
    model = SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, normalize_obs=True,
                normalize_reward=True, learning_starts=40, batch_size=32, policy_kwargs=TINY, seed=0,
                device="cpu")  # fmt: skip
    model.learn(120)
    norm, buf = model.normalizer, model.replay_buffer
    assert set(norm.obs_stats) == {"goal", "key_observation"} and norm.obs_stats["goal"].count > 2 * 120
    # Stored goals are raw (the env's desired goals lie in [4, 8]); relabelled rewards come from raw goals.
    desired = buf.observations[: buf.pos, 0, buf.desired_slice]
    assert ((desired >= 4) & (desired <= 8)).all()
    batch = buf.sample(64)
    recomputed = PointGoalEnv().compute_reward(batch.next_observations[:, buf.achieved_slice].numpy(),
                                               batch.next_observations[:, buf.desired_slice].numpy(), None)  # fmt: skip
    np.testing.assert_array_equal(batch.rewards.numpy(), recomputed)
    normalised = buf.sample(64, env=norm)
    assert normalised.observations.abs().max() <= 10.0 and normalised.observations[:, 2].std() > 0.1

    model.save(tmp_path / "her")
    loaded = SAC.load(tmp_path / "her", device="cpu")
    obs = PointGoalEnv().reset(seed=3)[0]
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])
