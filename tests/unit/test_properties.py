"""Property-based tests (hypothesis): random observations and actions, of right and wrong shapes and dtypes,
fed to ``predict`` and the replay buffer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lit_rl import DQN, SAC
from lit_rl.buffers import ReplayBuffer

OBS = spaces.Box(-5.0, 5.0, (3,), np.float32)
ACT = spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
DTYPES = st.sampled_from([np.float32, np.float64, np.int32, np.int64])
VALUES = st.floats(-1e6, 1e6, allow_nan=False, width=32)


def built(algo_class, observation_space, action_space, **kwargs):
    algo = algo_class("MlpPolicy", policy_kwargs={"net_arch": [8]}, seed=0, **kwargs)
    algo.check_spaces(observation_space, action_space)
    algo.observation_space, algo.action_space = observation_space, action_space
    algo.build_networks_for(observation_space, action_space)
    return algo


SAC_MODEL = built(SAC, OBS, ACT)
DQN_MODEL = built(DQN, OBS, spaces.Discrete(4, start=2))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 16), dtype=DTYPES, data=st.data(), deterministic=st.booleans())
def test_predict_returns_valid_actions_for_any_batch(n, dtype, data, deterministic):
    obs = data.draw(arrays(dtype, (n, 3), elements=st.integers(-100, 100) if np.issubdtype(dtype, np.integer) else VALUES))
    actions, state = SAC_MODEL.predict(obs, deterministic=deterministic)
    assert state is None and actions.shape == (n, 2) and actions.dtype == np.float32
    assert np.all(actions >= ACT.low) and np.all(actions <= ACT.high)
    discrete, _ = DQN_MODEL.predict(obs, deterministic=deterministic)
    assert discrete.shape == (n,) and all(DQN_MODEL.action_space.contains(a) for a in discrete)
    single, _ = SAC_MODEL.predict(obs[0], deterministic=True)
    assert single.shape == (2,)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple))
def test_predict_rejects_observations_of_another_shape(shape):
    if shape in {(3,)} or shape[1:] == (3,):
        return  # these are valid (one observation, or a batch of them)
    with pytest.raises(ValueError, match=r"does not fit the model's observation space"):
        SAC_MODEL.predict(np.zeros(shape, np.float32))


@settings(max_examples=40, deadline=None)
@given(n_envs=st.integers(1, 4), steps=st.integers(1, 12), dtype=DTYPES, data=st.data())
def test_buffer_stores_exactly_what_it_was_given(n_envs, steps, dtype, data):
    buffer = ReplayBuffer(8 * n_envs, OBS, ACT, n_envs=n_envs, seed=0)  # 8 rows: buffer_size counts transitions
    rows = []
    for _ in range(steps):
        obs = data.draw(arrays(dtype, (n_envs, 3), elements=st.integers(-5, 5)))
        action = data.draw(arrays(np.float32, (n_envs, 2), elements=st.floats(-1, 1, width=32)))
        reward = data.draw(arrays(np.float64, (n_envs,), elements=st.floats(-10, 10)))
        done = data.draw(arrays(np.bool_, (n_envs,)))
        buffer.add(obs, obs + 1, action, reward, done, ~done)
        rows.append((obs.astype(np.float32), action, reward.astype(np.float32), done))
    kept = rows[-8:]
    assert len(buffer) == len(kept) * n_envs
    for i, (obs, action, reward, done) in enumerate(kept):
        p = (steps - len(kept) + i) % 8
        np.testing.assert_array_equal(buffer.observations[p].numpy(), obs)
        np.testing.assert_array_equal(buffer.next_observations[p].numpy(), obs + 1)
        np.testing.assert_array_equal(buffer.actions[p].numpy(), action)
        np.testing.assert_array_equal(buffer.rewards[p].numpy(), reward)
        np.testing.assert_array_equal(buffer.terminated[p].numpy(), done.astype(np.float32))
    batch = buffer.sample(5)
    assert batch.observations.shape == (5, 3) and batch.actions.shape == (5, 2) and batch.rewards.shape == (5,)
    assert batch.observations.dtype == torch.float32


@settings(max_examples=40, deadline=None)
@given(obs_shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), n_envs=st.integers(1, 3))
def test_buffer_rejects_rows_of_another_shape(obs_shape, n_envs):
    buffer = ReplayBuffer(4, OBS, ACT, n_envs=n_envs)
    good_obs, good_action = np.zeros((n_envs, 3), np.float32), np.zeros((n_envs, 2), np.float32)
    flags = np.zeros(n_envs, bool)
    if obs_shape != (n_envs, 3):
        with pytest.raises(ValueError, match=rf"observations of shape .*allowed: \({n_envs}, 3\)"):
            buffer.add(np.zeros(obs_shape, np.float32), good_obs, good_action, np.zeros(n_envs), flags, flags)
    if obs_shape != (n_envs, 2):
        with pytest.raises(ValueError, match=rf"actions of shape .*allowed: \({n_envs}, 2\)"):
            buffer.add(good_obs, good_obs, np.zeros(obs_shape, np.float32), np.zeros(n_envs), flags, flags)
    assert len(buffer) == 0  # nothing half-written
