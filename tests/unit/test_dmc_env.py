"""``lit_rl/DMC-v0``: the DeepMind Control Suite through shimmy, with action repeat, flat states or stacked frames."""

from __future__ import annotations

import math
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import lit_rl.envs  # noqa: F401  (registers lit_rl/DMC-v0)
from lit_rl.envs.dmc import DMC_ID, make_dmc_env
from tests.helpers import needs_rendering

pytest.importorskip("dm_control")
shimmy = pytest.importorskip("shimmy")
gym.register_envs(shimmy)


def _shimmy_env(task: str) -> gym.Env:
    return gym.make(f"dm_control/{task}-v0")


@pytest.mark.parametrize("repeat", [1, 3, 4])
def test_action_repeat_equals_stepping_the_suite_by_hand(repeat):
    """Summed rewards, observations and episode length of ``action_repeat=k`` equal k suite steps per action."""
    env, by_hand = gym.make(DMC_ID, task="cheetah-run", action_repeat=repeat), _shimmy_env("cheetah-run")
    obs, _ = env.reset(seed=3)
    hand_obs, _ = by_hand.reset(seed=3)
    assert np.array_equal(obs, spaces.flatten(by_hand.observation_space, hand_obs).astype(np.float32))
    actions = np.random.default_rng(0).uniform(-1, 1, (1000, 6))
    steps, sim_steps, done = 0, 0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(actions[steps])
        hand_reward, hand_done = 0.0, False
        for _ in range(repeat):
            hand_obs, r, hand_terminated, hand_truncated, _ = by_hand.step(actions[steps])
            hand_reward += r
            sim_steps += 1
            hand_done = hand_terminated or hand_truncated
            if hand_done:
                break
        steps += 1
        done = terminated or truncated
        assert reward == pytest.approx(hand_reward, abs=1e-12) and 0 <= reward <= repeat
        assert np.array_equal(obs, spaces.flatten(by_hand.observation_space, hand_obs).astype(np.float32))
        assert (terminated, truncated) == (hand_terminated, hand_truncated)
    # The suite's time limit: 1000 simulation steps, a truncation (bootstrap), never a termination.
    assert sim_steps == 1000 and steps == math.ceil(1000 / repeat)
    assert truncated and not terminated


def test_flat_state_observations_are_float32_vectors():
    env = gym.make(DMC_ID, task="walker-walk")
    suite_space = _shimmy_env("walker-walk").observation_space
    size = sum(int(np.prod(sub.shape)) for sub in suite_space.values())  # orientations 14, height 1, velocity 9
    assert env.observation_space == spaces.Box(-np.inf, np.inf, (size,), np.float32) and size == 24
    obs, _ = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs.shape == (24,) and env.observation_space.contains(obs)
    obs, *_ = env.step(env.action_space.sample())
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)


@needs_rendering
def test_pixel_observations_stack_channels_first_uint8_frames():
    env = gym.make(DMC_ID, task="quadruped-walk", pixels=True, image_size=40, frame_stack=3)
    assert env.observation_space == spaces.Box(0, 255, (9, 40, 40), np.uint8)
    assert env.unwrapped.render_kwargs == {"camera_id": 2, "height": 40, "width": 40}  # the papers' quadruped camera
    obs, _ = env.reset(seed=0)
    first = env.unwrapped.render().transpose(2, 0, 1)
    assert obs.dtype == np.uint8 and obs.shape == (9, 40, 40) and first.std() > 0  # a real image, not a blank one
    assert all(np.array_equal(obs[i : i + 3], first) for i in (0, 3, 6))  # the first frame fills the stack
    previous = obs
    for _ in range(2):
        obs, *_ = env.step(env.action_space.sample())
        assert np.array_equal(obs[:6], previous[3:])  # oldest frame first; each step shifts one frame in
        assert np.array_equal(obs[6:], env.unwrapped.render().transpose(2, 0, 1))
        previous = obs
    assert not np.array_equal(obs[6:], first)
    walker = make_dmc_env("walker-walk", pixels=True, image_size=36, frame_stack=1)
    assert walker.observation_space.shape == (3, 36, 36) and walker.unwrapped.render_kwargs["camera_id"] == 0


@needs_rendering
def test_pixel_episodes_keep_the_time_limit_with_action_repeat():
    env = make_dmc_env("cartpole-swingup", action_repeat=8, pixels=True, image_size=36, frame_stack=2)
    env.reset(seed=0)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        assert 0 <= reward <= 8
    assert steps == 125 and truncated and not terminated


def test_unknown_task_names_the_key_the_value_and_the_valid_tasks():
    with pytest.raises(ValueError, match=r"env\.kwargs\.task='cheeta-run'") as info:
        gym.make(DMC_ID, task="cheeta-run")
    message = str(info.value)
    assert "did you mean cheetah-run" in message
    for valid in ("walker-walk", "humanoid-run", "dog-run", "ball_in_cup-catch"):
        assert f"'{valid}'" in message
    with pytest.raises(ValueError, match=r"env\.kwargs\.task='walker'.*valid tasks"):
        make_dmc_env("walker")
    with pytest.raises(ValueError, match=r"env\.kwargs\.task=3 "):
        make_dmc_env(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"env\.kwargs\.camera_id=7: task 'walker-walk' has cameras 0 to 1"):
        make_dmc_env("walker-walk", pixels=True, camera_id=7)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [({"action_repeat": 0}, "action_repeat=0"), ({"action_repeat": 1.5}, "action_repeat=1.5"),
     ({"pixels": True, "frame_stack": 0}, "frame_stack=0"), ({"pixels": True, "image_size": -84}, "image_size=-84")],
)  # fmt: skip
def test_bad_sizes_name_their_key(kwargs, key):
    with pytest.raises(ValueError, match=rf"env\.kwargs\.{key} must be a positive integer"):
        make_dmc_env("cheetah-run", **kwargs)


def test_missing_packages_give_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "shimmy.dm_control_compatibility", None)  # what Python does for a missing module
    with pytest.raises(ImportError, match="shimmy") as info:
        make_dmc_env("cheetah-run")
    assert "pip install 'lit_rl[envs]'" in str(info.value) and 'pip install "shimmy[dm-control]"' in str(info.value)


@needs_rendering
def test_render_mode_gives_frames_of_state_envs_for_videos():
    env = gym.make(DMC_ID, task="cheetah-run", render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    frame = env.render()
    assert obs.shape == (17,) and frame.shape == (240, 320, 3) and frame.dtype == np.uint8  # dm_control's default
    with pytest.raises(ValueError, match=r"render_mode='human'.*'rgb_array'"):
        make_dmc_env("cheetah-run", render_mode="human")
