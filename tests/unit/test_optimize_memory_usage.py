"""optimize_memory_usage: same transitions as the plain buffer, including episode ends, in less memory."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from lit_rl.buffers import NStepReplayBuffer, ReplayBuffer

OBS = spaces.Box(-np.inf, np.inf, (3,), np.float32)
ACT = spaces.Box(-1.0, 1.0, (2,), np.float32)


def rollout(buffers, steps, n_envs, episode_len, seed=0):
    """Feed the same autoreset-style stream to every buffer: after an episode end the next obs is a reset obs."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(n_envs, 3)).astype(np.float32)
    age = np.zeros(n_envs, int)
    for _ in range(steps):
        age += 1
        next_obs = rng.normal(size=(n_envs, 3)).astype(np.float32)  # the true next (or final) observation
        done = age >= episode_len
        terminated = done & (rng.random(n_envs) < 0.5)
        truncated = done & ~terminated
        action, reward = rng.uniform(-1, 1, (n_envs, 2)).astype(np.float32), rng.normal(size=n_envs)
        for buf in buffers:
            buf.add(obs, next_obs, action, reward, terminated, truncated)
        obs = np.where(done[:, None], rng.normal(size=(n_envs, 3)), next_obs).astype(np.float32)  # autoreset
        age[done] = 0


@pytest.mark.parametrize("steps", [7, 25, 200])  # not full, wrapped, wrapped many times
@pytest.mark.parametrize("episode_len", [1, 3])
def test_every_sampleable_transition_equals_the_plain_buffers(steps, episode_len):
    plain = ReplayBuffer(20, OBS, ACT, n_envs=2)  # 10 rows
    small = ReplayBuffer(20, OBS, ACT, n_envs=2, optimize_memory_usage=True)
    rollout([plain, small], steps, 2, episode_len)
    rows = torch.arange(10).repeat_interleave(2)
    envs = torch.arange(2).repeat(10)
    valid = rows < small.pos if not small.full else rows != small.pos  # the oldest row is not sampleable
    torch.testing.assert_close(
        small.next_observations_at(rows[valid], envs[valid]), plain.next_observations[rows[valid], envs[valid]]
    )
    torch.testing.assert_close(
        small.observations[rows[valid], envs[valid]], plain.observations[rows[valid], envs[valid]]
    )
    # sampled batches are real transitions of the plain buffer and never the overwritten oldest row
    batch = small.sample(256)
    keys = {
        tuple(o.tolist()): tuple(n.tolist())
        for o, n in zip(
            plain.observations[rows[valid], envs[valid]], plain.next_observations[rows[valid], envs[valid]], strict=True
        )
    }
    for o, n in zip(batch.observations, batch.next_observations, strict=True):
        assert keys[tuple(o.tolist())] == tuple(n.tolist())


def test_samples_equal_the_plain_buffers_before_it_is_full():
    plain = ReplayBuffer(100, OBS, ACT, n_envs=2, seed=3)
    small = ReplayBuffer(100, OBS, ACT, n_envs=2, seed=3, optimize_memory_usage=True)
    rollout([plain, small], 30, 2, episode_len=4)
    for a, b in zip(plain.sample(64), small.sample(64), strict=True):
        assert (a is None and b is None) or torch.equal(a, b)


def test_nstep_reads_next_observations_the_same_way():
    plain = NStepReplayBuffer(24, OBS, ACT, n_envs=2, seed=1, n_steps=3)
    small = NStepReplayBuffer(24, OBS, ACT, n_envs=2, seed=1, n_steps=3, optimize_memory_usage=True)
    rollout([plain, small], 9, 2, episode_len=4)
    for a, b in zip(plain.sample(64), small.sample(64), strict=True):
        torch.testing.assert_close(a, b)


def test_stores_fewer_bytes_per_transition():
    obs = spaces.Box(-np.inf, np.inf, (17,), np.float32)  # HalfCheetah
    plain = ReplayBuffer(1000, obs, spaces.Box(-1, 1, (6,), np.float32))
    small = ReplayBuffer(1000, obs, spaces.Box(-1, 1, (6,), np.float32), optimize_memory_usage=True)
    assert plain.transition_nbytes() == 2 * 68 + 24 + 9
    assert small.transition_nbytes() == 68 + 4 + 24 + 9  # one observation and a 4-byte final-observation slot


def test_bad_value_is_named():
    with pytest.raises(TypeError, match="optimize_memory_usage"):
        ReplayBuffer(10, OBS, ACT, optimize_memory_usage="yes")
    with pytest.raises(ValueError, match="buffer_size"):
        ReplayBuffer(1, OBS, ACT, optimize_memory_usage=True)


def _stored(buf):
    rows = torch.arange(buf.buffer_size).repeat_interleave(buf.n_envs)
    envs = torch.arange(buf.n_envs).repeat(buf.buffer_size)
    keep = rows < buf.pos
    return rows[keep], envs[keep]


def test_checkpoint_keeps_every_final_observation_when_the_side_store_is_as_long_as_the_buffer():
    """Regression: state_dict guessed per-row arrays by their length and cut the side store to the filled rows."""
    buf = ReplayBuffer(128, OBS, ACT, n_envs=2, seed=0, optimize_memory_usage=True)
    rng = np.random.default_rng(0)
    # Every step ends an episode in both envs: two side-store slots per row, so slots in use outnumber rows.
    while not (len(buf.final_observations) == buf.buffer_size and buf._final_next > buf.pos):
        obs, next_obs = rng.normal(size=(2, 2, 3)).astype(np.float32)
        buf.add(
            obs, next_obs, np.zeros((2, 2), np.float32), np.zeros(2), np.array([True, False]), np.array([False, True])
        )
    assert not buf.full
    restored = ReplayBuffer(128, OBS, ACT, n_envs=2, seed=5, optimize_memory_usage=True)
    restored.load_state_dict(buf.state_dict())
    rows, envs = _stored(buf)
    torch.testing.assert_close(restored.next_observations_at(rows, envs), buf.next_observations_at(rows, envs))
    for a, b in zip(buf.sample(64), restored.sample(64), strict=True):
        assert (a is None and b is None) or torch.equal(a, b)


def test_checkpoint_round_trip_after_wrapping_with_a_grown_side_store():
    buf = ReplayBuffer(20, OBS, ACT, n_envs=2, seed=1, optimize_memory_usage=True)
    rollout([buf], 57, 2, episode_len=1)
    restored = ReplayBuffer(20, OBS, ACT, n_envs=2, optimize_memory_usage=True)
    restored.load_state_dict(buf.state_dict())
    for a, b in zip(buf.sample(64), restored.sample(64), strict=True):
        assert (a is None and b is None) or torch.equal(a, b)
    rollout([buf, restored], 13, 2, episode_len=2, seed=4)  # both continue the same way
    for a, b in zip(buf.sample(64), restored.sample(64), strict=True):
        assert (a is None and b is None) or torch.equal(a, b)


def test_checkpoint_of_a_partly_filled_buffer_keeps_the_newest_rows_next_observation():
    """Regression: the state held the filled rows only, not the row after them (the newest next observation)."""
    buf = ReplayBuffer(20, OBS, ACT, n_envs=2, seed=1, optimize_memory_usage=True)
    rollout([buf], 6, 2, episode_len=100)  # no episode end: every next observation is the following row's
    restored = ReplayBuffer(20, OBS, ACT, n_envs=2, optimize_memory_usage=True)
    restored.load_state_dict(buf.state_dict())
    rows, envs = _stored(buf)
    assert torch.equal(restored.next_observations_at(rows, envs), buf.next_observations_at(rows, envs))
