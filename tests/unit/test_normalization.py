"""Normalisation inside the model equals Stable-Baselines3's VecNormalize on the same stream, side by side."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.running_mean_std import RunningMeanStd as SB3RunningMeanStd
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lit_rl.algorithms import SAC
from lit_rl.buffers import DictObservationFlattener, NStepReplayBuffer, ReplayBuffer
from lit_rl.nets.normalization import Normalization, check_normalize_kwargs


class ReplayVecEnv(VecEnv):
    """An SB3 VecEnv that plays back a recorded stream: reset observations, then (obs, rewards, dones) per step."""

    def __init__(self, observation_space: spaces.Space, reset_obs, steps) -> None:
        n_envs = len(steps[0][1])
        super().__init__(n_envs, observation_space, spaces.Box(-1.0, 1.0, (1,), np.float32))
        self.reset_obs, self.steps, self.t = reset_obs, steps, 0

    def reset(self):
        return self.reset_obs

    def step_async(self, actions) -> None:
        pass

    def step_wait(self):
        obs, rewards, dones = self.steps[self.t]
        self.t += 1
        return obs, rewards, dones, [{} for _ in range(self.num_envs)]

    def close(self) -> None:
        pass

    def get_attr(self, attr_name, indices=None):
        return [None] * self.num_envs

    def set_attr(self, attr_name, value, indices=None) -> None:
        pass

    def env_method(self, method_name, *args, indices=None, **kwargs):
        return [None] * self.num_envs

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * self.num_envs


def random_stream(space: spaces.Space, n_envs: int, n_steps: int, seed: int = 0):
    """Observations from ``space`` (Box parts scaled far from N(0, 1)), rewards, and episode ends every few steps."""
    rng = np.random.default_rng(seed)

    def obs():
        if isinstance(space, spaces.Dict):
            return {k: _draw(rng, sub, n_envs) for k, sub in space.spaces.items()}
        return _draw(rng, space, n_envs)

    steps = [(obs(), rng.normal(-3.0, 5.0, n_envs), rng.random(n_envs) < 0.15) for _ in range(n_steps)]
    return obs(), steps


def _draw(rng, space, n_envs):
    if isinstance(space, spaces.Box):
        return (rng.normal(2.0, 7.0, (n_envs, *space.shape)) * np.arange(1, space.shape[-1] + 1)).astype(np.float32)
    return np.stack([space.sample() for _ in range(n_envs)])


def feed_both(space, normalizer: Normalization, reset_obs, steps, **vec_kwargs) -> VecNormalize:
    """The same stream into lit_rl's Normalization and into SB3's VecNormalize (over a replaying VecEnv)."""
    vec = VecNormalize(ReplayVecEnv(space, reset_obs, steps), **vec_kwargs)
    vec.reset()
    normalizer.observe_reset(reset_obs)
    for obs, rewards, dones in steps:
        vec.step(np.zeros((vec.num_envs, 1)))
        normalizer.observe_step(obs, rewards, dones)
    return vec


def assert_stats_equal(ours, sb3: SB3RunningMeanStd) -> None:
    # SB3 takes the moments of float32 observations in float32, lit_rl in float64: float32 rounding apart.
    np.testing.assert_allclose(ours.mean.numpy(), sb3.mean, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ours.var.numpy(), sb3.var, rtol=1e-6, atol=1e-9)
    assert ours.count.item() == pytest.approx(sb3.count, rel=1e-15)


@pytest.mark.parametrize("n_envs", [1, 4])
def test_box_statistics_and_normalised_values_equal_vecnormalize(n_envs):
    space = spaces.Box(-np.inf, np.inf, (3,), np.float32)
    reset_obs, steps = random_stream(space, n_envs, 60)
    settings = {"gamma": 0.95, "clip_obs": 1.5, "clip_reward": 0.3, "epsilon": 1e-6}
    ours = Normalization(space, True, True, **settings)
    vec = feed_both(space, ours, reset_obs, steps, **settings)
    assert any(dones.any() for _, _, dones in steps)  # returns were reset at episode ends
    assert_stats_equal(ours.obs_stats["obs"], vec.obs_rms)
    assert_stats_equal(ours.ret_stats, vec.ret_rms)
    np.testing.assert_allclose(ours.returns.numpy(), vec.returns, rtol=1e-12)
    # Normalising raw data (as a sampled batch) gives SB3's values, clipping included, bit for bit.
    raw = np.concatenate([obs for obs, _, _ in steps[:10]])
    normalised = ours.normalize_obs(torch.as_tensor(raw)).numpy()
    np.testing.assert_allclose(normalised, vec.normalize_obs(raw), rtol=1e-5, atol=1e-6)
    # With SB3's statistics copied in, the normalised values are SB3's bit for bit (same float64 formula).
    ours.obs_stats["obs"].mean.copy_(torch.as_tensor(vec.obs_rms.mean))
    ours.obs_stats["obs"].var.copy_(torch.as_tensor(vec.obs_rms.var))
    ours.ret_stats.var.copy_(torch.as_tensor(vec.ret_rms.var))
    np.testing.assert_array_equal(ours.normalize_obs(torch.as_tensor(raw)).numpy(), vec.normalize_obs(raw))
    rewards = np.concatenate([r for _, r, _ in steps[:10]]).astype(np.float32)  # the buffer stores float32
    np.testing.assert_array_equal(ours.normalize_reward(torch.as_tensor(rewards)).numpy(), vec.normalize_reward(rewards))
    assert (np.abs(vec.normalize_reward(rewards)) == np.float32(0.3)).any() and (np.abs(vec.normalize_obs(raw)) == 1.5).any()


def test_dict_statistics_per_key_equal_vecnormalize_and_other_keys_pass():
    space = spaces.Dict({"pos": spaces.Box(-np.inf, np.inf, (2, 2)), "vel": spaces.Box(-np.inf, np.inf, (3,)),
                         "mode": spaces.Discrete(3)})  # fmt: skip
    reset_obs, steps = random_stream(space, 3, 40)
    flattener = DictObservationFlattener(space)
    ours = Normalization(space, True, False, gamma=0.99, key_slices=flattener.slices)
    vec = feed_both(space, ours, reset_obs, steps, norm_reward=False, norm_obs_keys=["pos", "vel"])
    assert set(ours.obs_stats) == {"key_pos", "key_vel"}  # the one-hot key has no statistic
    assert_stats_equal(ours.obs_stats["key_pos"], vec.obs_rms["pos"])
    assert_stats_equal(ours.obs_stats["key_vel"], vec.obs_rms["vel"])
    obs = steps[5][0]
    flat = ours.normalize_obs(torch.as_tensor(flattener.flatten(obs))).numpy()
    np.testing.assert_allclose(flat, flattener.flatten(vec.normalize_obs(obs)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(flat[:, flattener.slices["mode"]], np.eye(3)[obs["mode"]])  # one-hot unchanged


def test_goal_keys_share_one_statistic_of_both_keys():
    goal = spaces.Box(-np.inf, np.inf, (2,))
    space = spaces.Dict({"observation": spaces.Box(-np.inf, np.inf, (3,)), "achieved_goal": goal, "desired_goal": goal})
    reset_obs, steps = random_stream(space, 2, 30)
    flattener = DictObservationFlattener(space)
    ours = Normalization(space, True, False, gamma=0.99, key_slices=flattener.slices)
    vec = feed_both(space, ours, reset_obs, steps, norm_reward=False)
    assert set(ours.obs_stats) == {"goal", "key_observation"}
    assert_stats_equal(ours.obs_stats["key_observation"], vec.obs_rms["observation"])
    shared = SB3RunningMeanStd(shape=(2,))
    for obs in [reset_obs] + [s[0] for s in steps]:
        shared.update(np.concatenate([obs["achieved_goal"], obs["desired_goal"]]))
    assert_stats_equal(ours.obs_stats["goal"], shared)
    # A desired goal equal to an achieved goal (what HER's relabelling writes) normalises to the same numbers.
    flat = torch.as_tensor(flattener.flatten(steps[3][0]))
    flat[:, flattener.slices["desired_goal"]] = flat[:, flattener.slices["achieved_goal"]]
    normalised = ours.normalize_obs(flat)
    torch.testing.assert_close(normalised[:, flattener.slices["desired_goal"]],
                               normalised[:, flattener.slices["achieved_goal"]], rtol=0, atol=0)  # fmt: skip


def test_frozen_statistics_do_not_update_but_returns_still_reset():
    space = spaces.Box(-np.inf, np.inf, (3,), np.float32)
    reset_obs, steps = random_stream(space, 2, 20)
    ours = Normalization(space, True, True, gamma=0.99, training=False)
    before = {k: v.clone() for k, v in ours.state_dict().items() if k != "returns"}
    feed_both(space, ours, reset_obs, steps)
    for name, value in before.items():
        assert torch.equal(ours.state_dict()[name], value), name


@pytest.mark.parametrize("buffer_class", [ReplayBuffer, NStepReplayBuffer])
def test_buffer_holds_raw_data_and_normalises_samples_as_sb3(buffer_class):
    space = spaces.Box(-np.inf, np.inf, (3,), np.float32)
    reset_obs, steps = random_stream(space, 2, 30)
    ours = Normalization(space, True, True, gamma=0.9, clip_reward=0.5)  # clipping each step's reward matters
    vec = feed_both(space, ours, reset_obs, steps, gamma=0.9, clip_reward=0.5)
    kwargs = {"n_steps": 3, "gamma": 0.9} if buffer_class is NStepReplayBuffer else {}
    buf = buffer_class(100, space, spaces.Box(-1, 1, (1,)), n_envs=2, seed=0, **kwargs)
    obs = reset_obs
    for next_obs, rewards, dones in steps:
        buf.add(obs, next_obs, np.zeros((2, 1)), rewards, dones, np.zeros(2, bool))
        obs = next_obs
    np.testing.assert_array_equal(buf.observations[1:30].numpy(), np.stack([s[0] for s in steps[:-1]]))  # raw
    np.testing.assert_array_equal(buf.rewards[:30].numpy(), np.stack([s[1] for s in steps]).astype(np.float32))
    buf.generator.manual_seed(1)
    normalised = buf.sample(64, env=ours)
    # SB3's way: every stored observation and reward normalised by VecNormalize, then sampled (n-step: summed).
    raw_obs, raw_rewards = buf.observations.clone(), buf.rewards.clone()
    buf.observations = torch.as_tensor(vec.normalize_obs(raw_obs.numpy()))
    buf.next_observations = torch.as_tensor(vec.normalize_obs(buf.next_observations.numpy()))
    buf.rewards = torch.as_tensor(vec.normalize_reward(raw_rewards.numpy()))
    buf.generator.manual_seed(1)
    expected = buf.sample(64)
    for field in ("observations", "next_observations", "rewards"):
        np.testing.assert_allclose(getattr(normalised, field).numpy(), getattr(expected, field).numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=field)  # fmt: skip
    assert (expected.rewards.abs() < 0.5 * (1 + 0.9 + 0.81) + 1e-6).all()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"normalize_obs": "yes"}, TypeError, "normalize_obs='yes'"),
        ({"normalize_reward": 1}, TypeError, "normalize_reward=1"),
        ({"normalize_kwargs": {"clip_obs": -1.0}}, ValueError, r"normalize_kwargs.clip_obs=-1.0 .*allowed: \(0.0, inf\]"),
        ({"normalize_kwargs": {"epsilon": 0}}, ValueError, "normalize_kwargs.epsilon=0"),
        ({"normalize_kwargs": {"gamma": 1.5}}, ValueError, "normalize_kwargs.gamma=1.5"),
        ({"normalize_kwargs": {"clip": 5}}, ValueError, r"unknown keys \['clip'\]; allowed: \['clip_obs'"),
        ({"normalize_kwargs": [1]}, TypeError, "normalize_kwargs=\\[1\\] must be a dict"),
    ],
)
def test_bad_settings_fail_naming_the_key(kwargs, error, match):
    with pytest.raises(error, match=match):
        SAC("MlpPolicy", **kwargs)


def test_unsupported_observation_spaces_fail_naming_the_setting():
    with pytest.raises(ValueError, match="normalize_obs=True needs a Box or Dict observation space; got Discrete"):
        Normalization(spaces.Discrete(4), True, False, gamma=0.99)
    with pytest.raises(ValueError, match="normalize_obs=True with image observations"):
        Normalization(spaces.Box(0, 255, (3, 8, 8), np.uint8), True, False, gamma=0.99)
    binary = spaces.Dict({"a": spaces.MultiBinary(3)})
    with pytest.raises(ValueError, match="needs a Box key"):
        Normalization(binary, True, False, gamma=0.99, key_slices=DictObservationFlattener(binary).slices)
    Normalization(spaces.Discrete(4), False, True, gamma=0.99)  # rewards only: any observation space


def test_default_settings_are_vecnormalize_defaults():
    settings = check_normalize_kwargs(None)
    vec = VecNormalize(ReplayVecEnv(spaces.Box(-1, 1, (1,)), np.zeros((1, 1)), [(None, np.zeros(1), None)]))
    assert (settings["clip_obs"], settings["clip_reward"], settings["epsilon"]) == (vec.clip_obs, vec.clip_reward,
                                                                                    vec.epsilon)  # fmt: skip
    assert settings["training"] is vec.training and settings["gamma"] is None  # None: the algorithm's gamma
