"""HerReplayBuffer: relabelled rewards match compute_reward, goal strategies, episode bookkeeping."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from gymnasium import spaces

from lit_rl.buffers import HerReplayBuffer
from lit_rl.collect.collector import with_final_obs
from lit_rl.envs import BitFlippingEnv, goal_compute_reward, make_vec_env

GOAL = spaces.Box(-np.inf, np.inf, (1,), np.float32)
SPACE = spaces.Dict({"observation": GOAL, "achieved_goal": GOAL, "desired_goal": GOAL})
ACT = spaces.Discrete(2)
DESIRED = -1.0  # the stored desired goal; achieved goals are step numbers, so a relabelled goal is never -1


def reward_fn(achieved, desired, info):
    return -(np.abs(achieved - desired)[..., 0] > 0.5).astype(np.float32)


def make_buffer(size=32, n_envs=1, **kwargs) -> HerReplayBuffer:
    return HerReplayBuffer(size, SPACE, ACT, n_envs=n_envs, seed=0, compute_reward=reward_fn, **kwargs)


def add_episodes(buf, lengths, start_t=0, finish_last=True):
    """Episodes of the given lengths in env 0 (and the same in every env); step t achieves goal t + 1."""
    t = start_t
    for i, length in enumerate(lengths):
        for j in range(length):
            n = buf.n_envs

            def obs(v, n=n):
                return {k: np.full((n, 1), v, np.float32) for k in ("observation", "achieved_goal")} | {
                    "desired_goal": np.full((n, 1), DESIRED, np.float32)
                }

            done = j == length - 1 and (finish_last or i < len(lengths) - 1)
            buf.add(obs(t), obs(t + 1), np.zeros(n), np.full(n, -1.0), np.zeros(n, bool), np.full(n, done))
            t += 1
    return t


@pytest.mark.parametrize("strategy", ["future", "final", "episode"])
def test_goals_come_from_the_right_steps_of_the_same_episode(strategy):
    buf = make_buffer(goal_selection_strategy=strategy)
    add_episodes(buf, [4, 5])  # steps 0-3 (achieved 1-4) and 4-8 (achieved 5-9)
    rows = torch.tensor([0, 2, 3, 4, 6, 8]).repeat(50)
    goals = buf.sample_goals(rows, torch.zeros_like(rows))[:, 0]
    for row, goal in zip(rows.tolist(), goals.tolist(), strict=True):
        first, last = (0, 3) if row < 4 else (4, 8)
        allowed = {"future": range(row, last + 1), "final": [last], "episode": range(first, last + 1)}[strategy]
        assert goal - 1 in allowed
    # and every allowed step is drawn
    if strategy == "episode":
        assert set(goals[rows == 6].tolist()) == {5.0, 6.0, 7.0, 8.0, 9.0}


def test_relabelled_fraction_and_rewards_match_compute_reward():
    buf = make_buffer(n_sampled_goal=4)
    add_episodes(buf, [3, 6, 4])
    batch = buf.sample(200)
    assert list(buf.flattener.slices) == ["achieved_goal", "desired_goal", "observation"]  # flat columns 0, 1, 2
    desired = batch.observations[:, 1]
    assert int((desired != DESIRED).sum()) == 160  # 1 - 1 / (4 + 1) of the batch
    assert torch.equal(batch.next_observations[:, 1], desired)
    expected = reward_fn(batch.next_observations[:, 0:1].numpy(), desired[:, None].numpy(), None)
    np.testing.assert_array_equal(batch.rewards.numpy(), expected)
    assert (batch.rewards == 0).any() and (batch.rewards == -1).any()


def test_unfinished_episodes_are_not_sampled_and_overwritten_ones_drop_out():
    buf = make_buffer(size=8, n_sampled_goal=0)
    add_episodes(buf, [3, 4], finish_last=False)  # rows 0-2 finished, rows 3-6 still running
    assert buf.n_sampleable == 3
    assert set(buf.sample(100).observations[:, 2].tolist()) == {0.0, 1.0, 2.0}
    add_episodes(buf, [1, 3], start_t=7, finish_last=False)  # t=7 ends the running episode; t=8 overwrites row 0
    assert buf.ep_length[:3, 0].tolist() == [0, 0, 0]  # the first episode lost its first row: all of it drops
    assert buf.n_sampleable == int((buf.ep_length > 0).sum()) == 5
    assert set(buf.sample(100).observations[:, 2].tolist()) == {3.0, 4.0, 5.0, 6.0, 7.0}


def test_vector_env_episodes_are_tracked_per_env():
    buf = make_buffer(n_envs=3, goal_selection_strategy="final")
    add_episodes(buf, [2, 3])
    assert buf.ep_length[:5].tolist() == [[2] * 3, [2] * 3, [3] * 3, [3] * 3, [3] * 3]
    rows, envs = torch.tensor([0, 3]), torch.tensor([2, 1])
    assert buf.sample_goals(rows, envs)[:, 0].tolist() == [2.0, 5.0]


def test_bit_flipping_vector_env_relabelling_is_consistent_with_its_compute_reward():
    env = make_vec_env("lit_rl/BitFlipping-v0", n_envs=2, env_kwargs={"n_bits": 6}, seed=0)
    compute_reward = goal_compute_reward(env)
    buf = HerReplayBuffer(
        200, env.single_observation_space, env.single_action_space, n_envs=2, seed=0, compute_reward=compute_reward
    )
    obs, _ = env.reset(seed=0)
    for _ in range(60):
        next_obs, reward, terminated, truncated, infos = env.step(env.action_space.sample())
        real_next = with_final_obs(next_obs, infos.get("final_obs"), terminated | truncated)
        buf.add(obs, real_next, np.zeros(2), reward, terminated, truncated)
        obs = next_obs
    env.close()
    batch = buf.sample(512)
    achieved, desired = (
        batch.next_observations[:, buf.flattener.slices[k]].numpy() for k in ("achieved_goal", "desired_goal")
    )
    np.testing.assert_array_equal(batch.rewards.numpy(), BitFlippingEnv(6).compute_reward(achieved, desired, None))
    assert (batch.rewards == 0).sum() > 50  # relabelling creates successes that random play rarely has


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="desired_goal"):
        HerReplayBuffer(8, spaces.Dict({"observation": GOAL}), ACT, compute_reward=reward_fn)
    with pytest.raises(ValueError, match="desired_goal"):
        HerReplayBuffer(8, GOAL, ACT, compute_reward=reward_fn)
    with pytest.raises(TypeError, match="compute_reward"):
        HerReplayBuffer(8, SPACE, ACT)
    with pytest.raises(ValueError, match="goal_selection_strategy"):
        make_buffer(goal_selection_strategy="past")
    with pytest.raises(ValueError, match="n_sampled_goal"):
        make_buffer(n_sampled_goal=-1)
    with pytest.raises(ValueError, match="optimize_memory_usage"):
        make_buffer(optimize_memory_usage=True)
    env = make_vec_env("CartPole-v1")
    with pytest.raises(ValueError, match="compute_reward"):
        goal_compute_reward(env)
    env.close()


def test_bit_flipping_env_rewards_and_episode_ends():
    env = BitFlippingEnv(n_bits=4)
    obs, _ = env.reset(seed=1)
    assert not np.array_equal(obs["achieved_goal"], obs["desired_goal"])
    for i in np.flatnonzero(obs["achieved_goal"] != obs["desired_goal"])[:-1]:
        _, reward, terminated, truncated, _ = env.step(int(i))
        assert (reward, terminated, truncated) == (-1.0, False, False)
    last = int(np.flatnonzero(env.state != env.goal)[0])
    _, reward, terminated, _, info = env.step(last)
    assert (reward, terminated, info["is_success"]) == (0.0, True, True)
    env.reset(seed=2)
    env.goal = 1 - env.state  # every bit differs: flipping bit 0 back and forth never succeeds
    flags = [env.step(0)[2:4] for _ in range(4)]
    assert flags == [(False, False)] * 3 + [(False, True)]  # truncated after max_steps = n_bits


def test_compute_reward_is_reachable_from_an_async_vector_env():
    env = make_vec_env("lit_rl/BitFlipping-v0", n_envs=2, vectorization="async", env_kwargs={"n_bits": 3})
    compute_reward = goal_compute_reward(env)
    achieved, desired = np.zeros((2, 3)), np.array([[0, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(compute_reward(achieved, desired, None), [0.0, -1.0])
    env.close()


def test_truncate_last_trajectory_ends_open_episodes_as_truncations():
    """Regression: HerReplayBuffer had no truncate_last_trajectory, so load_replay_buffer never truncated."""
    buf = make_buffer(size=16, n_envs=2, n_sampled_goal=0)
    add_episodes(buf, [2, 3], finish_last=False)  # steps 0-1 finished, steps 2-4 still running in both envs
    assert buf.n_sampleable == 4
    with pytest.warns(UserWarning, match="last trajectory in the replay buffer will be truncated"):
        buf.truncate_last_trajectory()
    assert buf.ep_length[:5, 0].tolist() == [2, 2, 3, 3, 3] and buf.n_sampleable == 10
    assert buf.truncated[4].tolist() == [True, True] and buf.terminated[4].tolist() == [0.0, 0.0]  # bootstraps
    assert set(buf.sample(200).observations[:, 2].tolist()) == {0.0, 1.0, 2.0, 3.0, 4.0}
    add_episodes(buf, [2], start_t=5)  # the next step starts a new episode
    assert buf.ep_start[5:7, 0].tolist() == [5, 5] and buf.ep_length[5:7, 1].tolist() == [2, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        buf.truncate_last_trajectory()  # nothing open: no warning, no change
    assert buf.n_sampleable == 14


def test_load_replay_buffer_truncates_the_last_episode_also_when_applied_at_fit_start(tmp_path):
    """Regression: a buffer file loaded before learn() went to _pending and was never truncated."""
    from lit_rl.algorithms import DQN
    from lit_rl.core.persistence import write_model_file

    env = make_vec_env("lit_rl/BitFlipping-v0", n_envs=1, env_kwargs={"n_bits": 4}, seed=0)
    saved = HerReplayBuffer(
        400, env.single_observation_space, env.single_action_space, compute_reward=goal_compute_reward(env)
    )
    obs, _ = env.reset(seed=0)
    for _ in range(3):  # three steps of a four-step episode: unfinished
        next_obs, reward, terminated, truncated, _ = env.step(np.array([0]))
        saved.add(obs, next_obs, np.zeros(1), reward, terminated, truncated)
        obs = next_obs
    assert saved.n_sampleable == 0
    path = write_model_file({"replay_buffer": saved.state_dict()}, tmp_path / "buffer.pt")

    model = DQN(
        "MultiInputPolicy",
        learning_starts=1000,
        buffer_size=400,
        batch_size=8,
        policy_kwargs={"net_arch": [8]},
        replay_buffer_class=HerReplayBuffer,
        seed=0,
    )
    model.load_replay_buffer(path)  # no buffer yet: applied when learn() starts
    with pytest.warns(UserWarning, match="last trajectory in the replay buffer will be truncated"):
        model.learn(1, env=env)
    buf = model.replay_buffer
    assert buf.ep_length[:3, 0].tolist() == [3, 3, 3] and bool(buf.truncated[2, 0])
    assert buf.ep_start[3, 0] == 3  # the step learn() took starts a new episode
    env.close()


def test_samples_uniformly_from_more_than_2_to_the_24_transitions():
    """Regression: torch.multinomial refuses more than 2**24 categories; a 20M-transition buffer could not sample."""
    box = spaces.Box(-np.inf, np.inf, (1,), np.float32)
    space = spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
    size = 2**24 + 16
    buf = HerReplayBuffer(size, space, ACT, seed=0, compute_reward=reward_fn)
    add_episodes(buf, [2], finish_last=True)  # rows 0-1
    # Jump to the far end of the ring (rows beyond 2**24) without writing the rows in between.
    buf.pos = buf._current_ep_start[0] = size - 3
    add_episodes(buf, [3], start_t=100)  # rows size-3 .. size-1
    assert buf.n_sampleable == 5 and buf.pos == 0
    batch = buf.sample(5000)
    steps = batch.observations[:, 2].long()
    counts = torch.bincount(steps, minlength=103)[[0, 1, 100, 101, 102]]
    assert int(counts.sum()) == 5000  # only the five stored transitions
    assert (counts - 1000).abs().max() < 150  # uniform over transitions: about 1000 each (sd 28)
