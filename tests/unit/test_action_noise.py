"""Exploration noise: the processes, their seeding and resets, per-env copies."""

from __future__ import annotations

import numpy as np
import pytest

from lit_rl.algorithms.td3 import TD3
from lit_rl.collect.noise import (
    NormalActionNoise,
    OrnsteinUhlenbeckActionNoise,
    VectorizedActionNoise,
    make_action_noise,
)


def lag1_autocorrelation(x: np.ndarray) -> float:
    x = x - x.mean()
    return float((x[:-1] * x[1:]).mean() / x.var())


def test_normal_noise_has_the_requested_mean_and_std_and_is_seeded():
    mean, sigma = np.array([0.0, 1.0]), np.array([0.1, 0.5])
    noise = NormalActionNoise(mean, sigma, seed=0)
    samples = np.stack([noise() for _ in range(20_000)])
    assert samples.shape == (20_000, 2) and samples.dtype == np.float32
    np.testing.assert_allclose(samples.mean(0), mean, atol=0.02)
    np.testing.assert_allclose(samples.std(0), sigma, rtol=0.03)
    assert abs(lag1_autocorrelation(samples[:, 1])) < 0.03  # independent draws
    again = NormalActionNoise(mean, sigma, seed=0)
    assert np.array_equal(np.stack([again() for _ in range(5)]), samples[:5])
    other = NormalActionNoise(mean, sigma, seed=1)
    assert not np.array_equal(np.stack([other() for _ in range(5)]), samples[:5])


def test_ornstein_uhlenbeck_is_mean_reverting_and_correlated():
    # Without diffusion the process decays geometrically towards the mean: x <- x + theta * (mu - x) * dt.
    decay = OrnsteinUhlenbeckActionNoise(np.array([1.0]), np.array([0.0]), theta=0.15, dt=1e-2, initial_noise=[5.0])
    xs = np.array([decay()[0] for _ in range(1000)])
    np.testing.assert_allclose(xs[0], 1.0 + 4.0 * (1 - 0.15e-2), rtol=1e-6)
    np.testing.assert_allclose(xs[-1], 1.0 + 4.0 * (1 - 0.15e-2) ** 1000, rtol=1e-4)
    assert np.all(np.diff(xs) < 0)

    # With diffusion, consecutive samples are strongly correlated (unlike Gaussian noise), around the mean.
    ou = OrnsteinUhlenbeckActionNoise(np.zeros(1), np.full(1, 0.3), theta=5.0, dt=1e-2, seed=0)
    samples = np.array([ou()[0] for _ in range(20_000)])
    assert lag1_autocorrelation(samples) > 0.9
    assert abs(samples.mean()) < 0.05
    # Stationary std of the discretised process: sigma * sqrt(dt / (1 - (1 - theta * dt)^2)).
    np.testing.assert_allclose(samples.std(), 0.3 * np.sqrt(1e-2 / (1 - (1 - 5e-2) ** 2)), rtol=0.15)


def test_ornstein_uhlenbeck_reset_restores_the_initial_state():
    initial = np.array([0.7, -0.2])
    ou = OrnsteinUhlenbeckActionNoise(np.zeros(2), np.full(2, 0.5), initial_noise=initial, seed=0)
    np.testing.assert_array_equal(ou.noise_prev, initial)
    for _ in range(100):
        ou()
    assert not np.allclose(ou.noise_prev, initial)
    ou.reset()
    np.testing.assert_array_equal(ou.noise_prev, initial)
    ou.noise_prev += 1.0  # the stored initial value must not alias the state
    ou.reset()
    np.testing.assert_array_equal(ou.noise_prev, initial)
    zero_start = OrnsteinUhlenbeckActionNoise(np.zeros(2), np.full(2, 0.5), seed=0)
    zero_start()
    zero_start.reset()
    np.testing.assert_array_equal(zero_start.noise_prev, np.zeros(2))


def test_vectorized_noise_resets_only_the_given_envs():
    base = OrnsteinUhlenbeckActionNoise(np.zeros(2), np.full(2, 0.5), seed=0)
    noise = VectorizedActionNoise(base, n_envs=3)
    samples = np.stack([noise() for _ in range(50)])
    assert samples.shape == (50, 3, 2)
    # Each env has its own random stream: the copies do not draw the same noise.
    assert not np.allclose(samples[:, 0], samples[:, 1]) and not np.allclose(samples[:, 1], samples[:, 2])
    states = [n.noise_prev.copy() for n in noise.noises]
    assert all(np.any(s != 0) for s in states)

    noise.reset([1])
    np.testing.assert_array_equal(noise.noises[1].noise_prev, np.zeros(2))
    np.testing.assert_array_equal(noise.noises[0].noise_prev, states[0])
    np.testing.assert_array_equal(noise.noises[2].noise_prev, states[2])
    noise.reset()
    assert all(np.array_equal(n.noise_prev, np.zeros(2)) for n in noise.noises)

    # Reproducible from the base noise's seed.
    twin = VectorizedActionNoise(OrnsteinUhlenbeckActionNoise(np.zeros(2), np.full(2, 0.5), seed=0), n_envs=3)
    np.testing.assert_array_equal(np.stack([twin() for _ in range(50)]), samples)
    with pytest.raises(ValueError, match="n_envs"):
        VectorizedActionNoise(base, n_envs=0)


def test_named_noises_and_bad_names():
    assert isinstance(make_action_noise("normal", 3, 0.1, seed=0), NormalActionNoise)
    ou = make_action_noise("ornstein-uhlenbeck", 3, 0.2, seed=0)
    assert isinstance(ou, OrnsteinUhlenbeckActionNoise) and ou().shape == (3,)
    with pytest.raises(ValueError, match=r"action_noise='gaussian'.*'normal', 'ornstein-uhlenbeck'"):
        make_action_noise("gaussian", 3, 0.1)
    with pytest.raises(ValueError, match="action_noise"):
        TD3(action_noise="ou")
    with pytest.raises(ValueError, match="action_noise_std"):
        TD3(action_noise="normal", action_noise_std=-1.0)
