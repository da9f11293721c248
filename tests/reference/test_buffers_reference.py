"""Replay buffers side by side with Stable-Baselines3 2.9.2: identical transitions into both, same answers.

n-step targets for the same sampled (row, env) indices, HER's bookkeeping, relabelling and sampling
distribution, and what ``buffer_size`` means with several envs.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import torch
from gymnasium import spaces

pytest.importorskip("stable_baselines3", minversion="2.9")
from stable_baselines3.common.buffers import NStepReplayBuffer as SB3NStepReplayBuffer  # noqa: E402
from stable_baselines3.common.buffers import ReplayBuffer as SB3ReplayBuffer  # noqa: E402
from stable_baselines3.her.her_replay_buffer import HerReplayBuffer as SB3HerReplayBuffer  # noqa: E402

from lit_rl.buffers import HerReplayBuffer, NStepReplayBuffer, ReplayBuffer  # noqa: E402
from lit_rl.collect.collector import with_final_obs  # noqa: E402
from lit_rl.envs import BitFlippingEnv, goal_compute_reward, make_vec_env  # noqa: E402

OBS = spaces.Box(-np.inf, np.inf, (2,), np.float32)
ACT = spaces.Box(-1.0, 1.0, (1,), np.float32)
N_ENVS = 3


def sb3_infos(terminated: np.ndarray, truncated: np.ndarray) -> list[dict]:
    """SB3's VecEnv convention: a time limit that coincides with a termination is a termination."""
    return [{"TimeLimit.truncated": bool(tr and not te)} for te, tr in zip(terminated, truncated, strict=True)]


def feed(lit, sb3, steps: int, seed: int = 0) -> None:
    """The same stream of random transitions, with terminations and truncations, into both buffers."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs, next_obs = rng.normal(size=(2, N_ENVS, 2)).astype(np.float32)
        action = rng.uniform(-1, 1, (N_ENVS, 1)).astype(np.float32)
        reward = rng.normal(size=N_ENVS).astype(np.float32)
        terminated, truncated = rng.random(N_ENVS) < 0.15, rng.random(N_ENVS) < 0.15
        lit.add(obs, next_obs, action, reward, terminated, truncated)
        sb3.add(obs, next_obs, action, reward, terminated | truncated, sb3_infos(terminated, truncated))


def stored_indices(sb3) -> tuple[np.ndarray, np.ndarray]:
    """Every stored (row, env) of SB3's buffer."""
    rows = np.arange(sb3.buffer_size if sb3.full else sb3.pos)
    return np.repeat(rows, sb3.n_envs), np.tile(np.arange(sb3.n_envs), len(rows))


@pytest.mark.parametrize("steps", [6, 11, 40], ids=["partly-filled", "just-wrapped", "wrapped-often"])
@pytest.mark.parametrize("n_steps", [1, 3, 5])
def test_nstep_targets_equal_sb3_for_the_same_indices(monkeypatch, steps, n_steps):
    lit = NStepReplayBuffer(10 * N_ENVS, OBS, ACT, n_envs=N_ENVS, n_steps=n_steps, gamma=0.9)
    sb3 = SB3NStepReplayBuffer(10 * N_ENVS, OBS, ACT, n_envs=N_ENVS, n_steps=n_steps, gamma=0.9)
    feed(lit, sb3, steps)
    assert (lit.pos, lit.full) == (sb3.pos, sb3.full)
    rows, envs = stored_indices(sb3)
    # SB3's _get_samples draws the env of each sample with np.random.randint: seed it to draw `envs`.
    monkeypatch.setattr(np.random, "randint", lambda low, high, size: envs.copy())
    expected = sb3._get_samples(rows.copy())
    monkeypatch.setattr(lit, "sample_indices", lambda batch_size: (torch.as_tensor(rows), torch.as_tensor(envs)))
    got = lit.sample(len(rows))

    torch.testing.assert_close(got.observations, expected.observations)
    torch.testing.assert_close(got.actions, expected.actions)
    torch.testing.assert_close(got.rewards, expected.rewards[:, 0])
    torch.testing.assert_close(got.discounts, expected.discounts[:, 0])
    torch.testing.assert_close(got.next_observations, expected.next_observations)
    torch.testing.assert_close(got.terminated, expected.dones[:, 0])
    # the stream is varied enough that the comparison covers every kind of window
    full_window = (got.discounts - 0.9**n_steps).abs() < 1e-6
    assert full_window.any() and (~full_window).any() == (n_steps > 1)
    assert (got.terminated == 1).any() and (got.terminated == 0).any()


def test_buffer_size_means_the_same_with_several_envs():
    lit = ReplayBuffer(10, OBS, ACT, n_envs=N_ENVS)
    sb3 = SB3ReplayBuffer(10, OBS, ACT, n_envs=N_ENVS)
    assert lit.buffer_size == sb3.buffer_size == 3  # rows: 10 // 3
    for steps in range(1, 8):  # past capacity (3 rows) twice
        feed(lit, sb3, 1, seed=steps)
        assert len(lit) == sb3.size() * N_ENVS  # SB3's size() counts rows
        assert (lit.pos, lit.full) == (sb3.pos, sb3.full)
        filled = sb3.size()  # the same rows hold the same transitions: overwriting starts at the same step
        np.testing.assert_array_equal(lit.observations[:filled].numpy(), sb3.observations[:filled])
        np.testing.assert_array_equal(lit.next_observations[:filled].numpy(), sb3.next_observations[:filled])
        np.testing.assert_array_equal(lit.rewards[:filled].numpy(), sb3.rewards[:filled])
    assert len(lit) == 9


# ---------------------------------------------------------------- HER on BitFlipping

N_BITS = 4


def her_pair(strategy: str, steps: int, buffer_size: int = 2 * 24, n_envs: int = 2, seed: int = 0):
    """lit_rl's and SB3's HerReplayBuffer fed the same BitFlipping stream (random actions, true final obs)."""
    env = make_vec_env("lit_rl/BitFlipping-v0", n_envs=n_envs, env_kwargs={"n_bits": N_BITS}, seed=seed)
    obs_space, act_space = env.single_observation_space, env.single_action_space
    lit = HerReplayBuffer(
        buffer_size,
        obs_space,
        act_space,
        n_envs=n_envs,
        seed=seed,
        compute_reward=goal_compute_reward(env),
        goal_selection_strategy=strategy,
    )
    sb3 = SB3HerReplayBuffer(
        buffer_size, obs_space, act_space, env=None, n_envs=n_envs, goal_selection_strategy=strategy
    )
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    for _ in range(steps):
        action = env.action_space.sample()
        next_obs, reward, terminated, truncated, infos = env.step(action)
        real_next = with_final_obs(next_obs, infos.get("final_obs"), terminated | truncated)
        lit.add(obs, real_next, action, reward, terminated, truncated)
        sb3.add(obs, real_next, action, reward, terminated | truncated, sb3_infos(terminated, truncated))
        obs = next_obs
    env.close()
    return lit, sb3


def goal_key(goal) -> tuple[int, ...]:
    return tuple(int(round(float(x))) for x in np.asarray(goal).reshape(-1))


def test_her_bookkeeping_and_truncation_equal_sb3():
    lit, sb3 = her_pair("future", steps=61)  # 24 rows: wrapped twice; episodes open at the end
    valid = sb3.ep_length > 0
    np.testing.assert_array_equal(lit.ep_length > 0, valid)
    np.testing.assert_array_equal(lit.ep_length[valid], sb3.ep_length[valid])
    np.testing.assert_array_equal(lit.ep_start[valid], sb3.ep_start[valid])
    assert lit.n_sampleable == valid.sum()
    np.testing.assert_array_equal(lit.terminated.numpy()[valid], (sb3.dones * (1 - sb3.timeouts))[valid])

    with pytest.warns(UserWarning, match="will be truncated"):
        sb3.truncate_last_trajectory()
    with pytest.warns(UserWarning, match="will be truncated"):
        lit.truncate_last_trajectory()
    valid = sb3.ep_length > 0
    np.testing.assert_array_equal(lit.ep_length, sb3.ep_length * valid)
    np.testing.assert_array_equal(lit.ep_start[valid], sb3.ep_start[valid])
    np.testing.assert_array_equal(lit._current_ep_start, sb3._current_ep_start)
    last = sb3.pos - 1
    np.testing.assert_array_equal(lit.truncated[last].numpy(), sb3.timeouts[last].astype(bool))
    np.testing.assert_array_equal(lit.terminated[last].numpy(), sb3.dones[last] * (1 - sb3.timeouts[last]))


def chi_square_bound(df: int, z: float = 4.5) -> float:
    """Upper quantile of chi-square(df) for a standard-normal z (Wilson-Hilferty); z=4.5: p about 3e-6."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def test_her_samples_transitions_with_sb3s_distribution():
    lit, sb3 = her_pair("future", steps=61)
    # SB3: np.random.choice(np.flatnonzero(ep_length > 0)), uniform over sampleable transitions.
    support = np.flatnonzero(sb3.ep_length > 0)
    n = 40_000
    row, env = lit.sample_indices(n)
    counts = np.bincount((row * lit.n_envs + env).numpy(), minlength=sb3.ep_length.size)
    assert set(np.flatnonzero(counts)) == set(support)
    expected = n / len(support)
    chi2 = float(((counts[support] - expected) ** 2 / expected).sum())
    assert chi2 < chi_square_bound(len(support) - 1), chi2


@pytest.mark.parametrize("strategy", ["future", "final", "episode"])
def test_her_goals_and_relabelled_rewards_match_sb3(strategy):
    lit, sb3 = her_pair(strategy, steps=61)
    rows, envs = np.nonzero(sb3.ep_length > 0)
    draws = 300
    rows_rep, envs_rep = np.repeat(rows, draws), np.repeat(envs, draws)
    np.random.seed(0)
    sb3_goals = sb3._sample_goals(rows_rep, envs_rep)
    lit_goals = lit.sample_goals(torch.as_tensor(rows_rep), torch.as_tensor(envs_rep)).numpy()

    achieved = sb3.next_observations["achieved_goal"]
    worst = 0.0
    for i, (r, e) in enumerate(zip(rows, envs, strict=True)):
        start, length = sb3.ep_start[r, e], sb3.ep_length[r, e]
        current = (r - start) % sb3.buffer_size
        steps = {"future": range(current, length), "final": [length - 1], "episode": range(length)}[strategy]
        allowed = {goal_key(achieved[(start + s) % sb3.buffer_size, e]) for s in steps}
        block = slice(i * draws, (i + 1) * draws)
        lit_counts = Counter(goal_key(g) for g in lit_goals[block])
        sb3_counts = Counter(goal_key(g) for g in sb3_goals[block])
        assert set(lit_counts) <= allowed and set(sb3_counts) <= allowed
        for goal in allowed:  # same frequencies within sampling noise (two samples of `draws` each)
            p_lit, p_sb3 = lit_counts[goal] / draws, sb3_counts[goal] / draws
            p = (p_lit + p_sb3) / 2
            sd = math.sqrt(max(p * (1 - p), 1e-12) * 2 / draws)
            worst = max(worst, abs(p_lit - p_sb3) / sd if sd > 1e-6 else 0.0)
            assert abs(p_lit - p_sb3) <= 5 * sd + 1e-9, (strategy, r, e, goal, p_lit, p_sb3)

    batch = lit.sample(1000)
    next_achieved = batch.next_observations[:, lit.flattener.slices["achieved_goal"]].numpy()
    desired = batch.observations[:, lit.flattener.slices["desired_goal"]].numpy()
    np.testing.assert_array_equal(batch.next_observations[:, lit.flattener.slices["desired_goal"]].numpy(), desired)
    np.testing.assert_array_equal(
        batch.rewards.numpy(), BitFlippingEnv(N_BITS).compute_reward(next_achieved, desired, None)
    )
    assert int(lit.her_ratio * 1000) == 800
