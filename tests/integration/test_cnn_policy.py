"""CnnPolicy and image observations: uint8 in the buffer, NatureCNN on channels-first images / 255, every algorithm."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.envs import FakeImageEnv
from stable_baselines3.common.preprocessing import preprocess_obs as sb3_preprocess_obs

from lit_rl import DQN, SAC, TD3, CrossQ
from lit_rl.nets.extractors import CombinedExtractor, NatureCNN

FAST = {"learning_starts": 40, "buffer_size": 300, "batch_size": 8, "seed": 0, "device": "cpu"}


def _learn_predict_save_load(model, env, tmp_path) -> np.ndarray:
    model.learn(80)
    obs = np.stack([env.observation_space.sample() for _ in range(3)])
    actions, _ = model.predict(obs, deterministic=True)
    assert actions.shape == (3, *env.action_space.shape)
    single, _ = model.predict(obs[0], deterministic=True)
    assert np.allclose(single, actions[0], atol=1e-5)  # a batch of 1 may round differently in the convolutions
    model.save(tmp_path / "model")
    loaded = type(model).load(tmp_path / "model", device="cpu")
    assert np.array_equal(loaded.predict(obs, deterministic=True)[0], actions)
    return obs


@pytest.mark.parametrize("channel_first", [False, True])
def test_dqn_cnn_policy_on_atari_style_frames(channel_first, tmp_path):
    """(84, 84, 1) and (1, 84, 84) uint8 frames: the buffer keeps them uint8, NatureCNN sees (1, 84, 84) / 255."""
    env = FakeImageEnv(screen_height=84, screen_width=84, n_channels=1, discrete=True, channel_first=channel_first)
    model = DQN("CnnPolicy", env, **FAST)
    q_net = model.policy.q_net
    assert isinstance(q_net.features_extractor, NatureCNN) and model.policy.net_arch == []  # SB3's CNN defaults
    assert q_net.features_extractor.cnn[0].in_channels == 1
    assert model.replay_buffer.observations.dtype == torch.uint8
    obs = _learn_predict_save_load(model, env, tmp_path)
    # The network input is SB3's preprocessing of the channels-first frame.
    frames = torch.as_tensor(obs)
    first = frames if channel_first else frames.permute(0, 3, 1, 2)
    space = spaces.Box(0, 255, (1, 84, 84), np.uint8)
    expected = q_net.features_extractor(sb3_preprocess_obs(first, space))
    assert torch.allclose(q_net.extract_features(frames), expected, atol=1e-6)


@pytest.mark.parametrize("algo", [SAC, TD3, CrossQ])
def test_actor_critic_cnn_policy(algo, tmp_path):
    env = FakeImageEnv(screen_height=40, screen_width=40, n_channels=3, discrete=False)
    model = algo("CnnPolicy", env, policy_kwargs={"net_arch": [16], "features_extractor_kwargs": {"features_dim": 32}},
                 **FAST)  # fmt: skip
    assert type(model.policy).__name__.startswith("Cnn")
    for net in (model.policy.actor, model.policy.critic):
        assert isinstance(net.features_extractor, NatureCNN) and net.features_extractor.features_dim == 32
    assert model.policy.actor.features_extractor is not model.policy.critic.features_extractor
    assert model.replay_buffer.observations.dtype == torch.uint8
    _learn_predict_save_load(model, env, tmp_path)


def test_dict_with_an_image_key_gets_a_cnn_for_it(tmp_path):
    """MultiInputPolicy on {image, vector}: CombinedExtractor, a NatureCNN on the image key, flatten on the vector."""
    from tests.unit.test_observation_spaces import DummyEnv

    space = spaces.Dict({"img": spaces.Box(0, 255, (36, 36, 1), np.uint8), "vec": spaces.Box(-1, 1, (3,), np.float32)})
    env = DummyEnv(space)
    model = SAC("MultiInputPolicy", env, policy_kwargs={"net_arch": [16]}, **FAST)
    extractor = model.policy.actor.features_extractor
    assert isinstance(extractor, CombinedExtractor) and isinstance(extractor.extractors["img"], NatureCNN)
    assert extractor.features_dim == 256 + 3
    model.learn(80)
    obs, _ = env.reset(seed=0)
    assert model.predict(obs, deterministic=True)[0].shape == (2,)
    model.save(tmp_path / "model")
    loaded = SAC.load(tmp_path / "model", device="cpu")
    assert np.array_equal(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])
