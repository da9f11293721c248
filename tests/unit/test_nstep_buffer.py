"""NStepReplayBuffer: n-step returns against hand-computed values, episode ends, the ring's newest row."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from lit_rl.algorithms import DQN
from lit_rl.buffers import NStepReplayBuffer, ReplayBatch

OBS = spaces.Box(-np.inf, np.inf, (1,), np.float32)
ACT = spaces.Box(-1.0, 1.0, (1,), np.float32)


def add_step(buf, t, terminated=False, truncated=False):
    """Step ``t``: observation t, true next observation 100 + t, reward t + 1."""
    buf.add(
        np.array([[t]], np.float32),
        np.array([[100 + t]], np.float32),
        np.zeros((1, 1), np.float32),
        np.array([t + 1], np.float32),
        np.array([terminated]),
        np.array([truncated]),
    )


def by_row(batch: ReplayBatch) -> dict[int, tuple[float, float, float, float]]:
    """(return, terminated, discount, next obs) for every sampled start row (its observation)."""
    rows = {}
    for i, obs in enumerate(batch.observations[:, 0].tolist()):
        rows[int(obs)] = tuple(
            round(float(x[i]), 6)
            for x in (batch.rewards, batch.terminated, batch.discounts, batch.next_observations[:, 0])
        )
    return rows


def test_returns_stop_at_termination_and_truncation_by_hand():
    buf = NStepReplayBuffer(10, OBS, ACT, n_steps=3, gamma=0.5, seed=0)
    for t in range(7):
        add_step(buf, t, terminated=(t == 2), truncated=(t == 4))
    got = by_row(buf.sample(500))
    assert got == {
        0: (1 + 0.5 * 2 + 0.25 * 3, 1.0, 0.125, 102.0),  # three steps, the last one terminal
        1: (2 + 0.5 * 3, 1.0, 0.25, 102.0),  # stops after the termination at t=2
        2: (3.0, 1.0, 0.5, 102.0),
        3: (4 + 0.5 * 5, 0.0, 0.25, 104.0),  # truncated at t=4: bootstraps from its true final obs with gamma^2
        4: (5.0, 0.0, 0.5, 104.0),
        5: (6 + 0.5 * 7, 0.0, 0.25, 106.0),  # t=6 is the newest step: nothing after it yet
        6: (7.0, 0.0, 0.5, 106.0),
    }


def test_window_never_crosses_the_newest_row_after_wrap_around():
    buf = NStepReplayBuffer(4, OBS, ACT, n_steps=3, gamma=0.5, seed=0)
    for t in range(6):  # rows now hold t = 4, 5, 2, 3 (t=5 newest, t=2 oldest)
        add_step(buf, t)
    got = by_row(buf.sample(400))
    assert set(got) == {2, 3, 4, 5}
    assert got[2] == (3 + 0.5 * 4 + 0.25 * 5, 0.0, 0.125, 104.0)
    assert got[4] == (5 + 0.5 * 6, 0.0, 0.25, 105.0)
    assert got[5] == (6.0, 0.0, 0.5, 105.0)


def test_one_step_equals_plain_transitions():
    buf = NStepReplayBuffer(8, OBS, ACT, n_steps=1, gamma=0.9, seed=0)
    for t in range(5):
        add_step(buf, t, terminated=(t == 3))
    for row, (ret, term, disc, nxt) in by_row(buf.sample(200)).items():
        assert (ret, term, nxt) == (row + 1.0, float(row == 3), 100.0 + row)
        assert disc == pytest.approx(0.9)


def test_algorithm_passes_its_gamma_and_uses_batch_discounts():
    algo = DQN(gamma=0.7, replay_buffer_class=NStepReplayBuffer, replay_buffer_kwargs={"n_steps": 2})
    assert algo.buffer_algorithm_kwargs(env=None) == {"gamma": 0.7}
    batch = ReplayBatch(*(torch.zeros(2),) * 5)
    assert algo.discounts(batch) == 0.7
    discounts = torch.tensor([0.49, 0.7])
    assert algo.discounts(batch._replace(discounts=discounts)) is discounts


@pytest.mark.parametrize(("key", "value", "error"), [("n_steps", 0, ValueError), ("n_steps", 1.5, TypeError)])
def test_bad_arguments_name_the_key(key, value, error):
    with pytest.raises(error, match=key):
        NStepReplayBuffer(8, OBS, ACT, **{key: value})


@pytest.mark.parametrize("n_envs", [1, 3])
def test_partly_filled_buffer_never_reads_unwritten_rows(n_envs):
    """Regression: rows not yet written hold arbitrary memory (torch.empty); NaN * 0 = NaN leaked into returns."""
    buf = NStepReplayBuffer(16 * n_envs, OBS, ACT, n_envs=n_envs, n_steps=4, gamma=0.5, seed=0)
    for storage in (buf.rewards, buf.terminated, buf.next_observations, buf.observations):
        storage.fill_(float("nan"))
    for t in range(3):
        buf.add(
            np.full((n_envs, 1), t, np.float32),
            np.full((n_envs, 1), 100 + t, np.float32),
            np.zeros((n_envs, 1), np.float32),
            np.full(n_envs, t + 1, np.float32),
            np.zeros(n_envs, bool),
            np.zeros(n_envs, bool),
        )
    batch = buf.sample(256)
    for name, tensor in batch._asdict().items():
        assert torch.isfinite(tensor).all(), name
    got = by_row(batch)
    assert got[0] == (1 + 0.5 * 2 + 0.25 * 3, 0.0, 0.125, 102.0)  # stops at the newest row (t=2)
    assert got[2] == (3.0, 0.0, 0.5, 102.0)
