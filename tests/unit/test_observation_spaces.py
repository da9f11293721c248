"""Discrete, MultiDiscrete and MultiBinary observations: SB3's preprocessing, raw storage, every algorithm end to end."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.envs import IdentityEnv
from stable_baselines3.common.preprocessing import preprocess_obs as sb3_preprocess_obs
from stable_baselines3.common.torch_layers import CombinedExtractor as SB3CombinedExtractor
from stable_baselines3.common.vec_env import VecTransposeImage

from lit_rl import DDPG, DQN, SAC, TD3, CrossQ
from lit_rl.buffers.observations import DictObservationFlattener
from lit_rl.buffers.replay import ReplayBuffer
from lit_rl.nets.preprocessing import channels_first_space, preprocess_obs
from lit_rl.policies import SACPolicy
from lit_rl.policies.features import ObservationEncoder

SPACES = {
    "discrete": spaces.Discrete(5),
    "multi_discrete": spaces.MultiDiscrete([4, 3]),
    "multi_binary": spaces.MultiBinary(8),
    "multi_binary_2d": spaces.MultiBinary((3, 2)),
}


class DummyEnv(gym.Env):
    """SB3's test_spaces env: random observations of ``observation_space``, a Box action, 10-step episodes."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space | None = None) -> None:
        self.observation_space = observation_space
        self.action_space = action_space or spaces.Box(-1, 1, (2,), np.float32)
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        self.steps = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.steps += 1
        return self.observation_space.sample(), 0.0, False, self.steps >= 10, {}


def sample_batch(space: spaces.Space, n: int, seed: int = 0) -> np.ndarray:
    space.seed(seed)
    return np.stack([space.sample() for _ in range(n)])


@pytest.mark.parametrize("name", sorted(SPACES))
def test_preprocessing_equals_sb3(name):
    """Side by side: lit_rl's preprocess_obs, flattened, equals SB3's on the same raw batch."""
    space = SPACES[name]
    raw = torch.as_tensor(sample_batch(space, 16))
    ours = preprocess_obs(raw, space)
    theirs = sb3_preprocess_obs(raw, space)
    assert ours.dtype == theirs.dtype == torch.float32
    assert torch.equal(ours.flatten(1), theirs.flatten(1))


def test_dict_observation_vector_equals_sb3_combined_extractor():
    """Dict keys of every kind: the stored vector (the networks' features) equals SB3's CombinedExtractor output."""
    space = spaces.Dict({"box": spaces.Box(-2, 2, (3,), np.float32), **SPACES})
    obs = {key: sample_batch(sub, 16, seed=i) for i, (key, sub) in enumerate(space.spaces.items())}
    ours = torch.as_tensor(DictObservationFlattener(space).flatten(obs))
    theirs = SB3CombinedExtractor(space)(sb3_preprocess_obs({k: torch.as_tensor(v) for k, v in obs.items()}, space))
    assert torch.equal(ours, theirs)
    policy = SACPolicy(space, spaces.Box(-1, 1, (2,)), net_arch=[8])
    assert policy.actor.features_are_observations  # no extractor work: the stored vector is the features
    assert policy.actor.extract_features(ours) is ours


def test_channel_last_images_are_transposed_as_sb3_vec_transpose_image():
    """SB3 wraps (H, W, C) image envs in VecTransposeImage; lit_rl's networks transpose the stored frames instead."""
    space = spaces.Box(0, 255, (6, 5, 3), np.uint8)
    frames = sample_batch(space, 4)
    encoder = ObservationEncoder(space, normalize_images=True)
    theirs = sb3_preprocess_obs(torch.as_tensor(VecTransposeImage.transpose_image(frames)), channels_first_space(space))
    assert channels_first_space(space).shape == (3, 6, 5)
    assert torch.equal(encoder(torch.as_tensor(frames)), theirs)


def test_discrete_start_is_subtracted():
    space = spaces.Discrete(3, start=-1)
    assert torch.equal(preprocess_obs(torch.tensor([-1, 1]), space), torch.tensor([[1.0, 0, 0], [0, 0, 1.0]]))


@pytest.mark.parametrize(
    ("space", "dtype"),
    [(SPACES["discrete"], torch.int64), (SPACES["multi_discrete"], torch.int64), (SPACES["multi_binary_2d"], torch.int8),
     (spaces.Box(0, 255, (4, 4, 1), np.uint8), torch.uint8)],
)  # fmt: skip
def test_buffer_stores_raw_observations(space, dtype):
    buffer = ReplayBuffer(10, space, spaces.Box(-1, 1, (2,)), n_envs=2)
    obs = sample_batch(space, 2)
    buffer.add(obs, obs, np.zeros((2, 2)), np.zeros(2), np.zeros(2), np.zeros(2, dtype=bool))
    assert buffer.observations.dtype == dtype
    batch = buffer.sample(4)
    assert batch.observations.dtype == dtype and tuple(batch.observations.shape[1:]) == tuple(space.shape)


def _check_learn_predict_save_load(model, env, tmp_path) -> None:
    model.learn(120)
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(np.asarray(action, dtype=env.action_space.dtype))
    batch = sample_batch(env.observation_space, 4, seed=2)
    actions, _ = model.predict(batch, deterministic=True)
    assert actions.shape == (4, *env.action_space.shape)
    model.save(tmp_path / "model")
    loaded = type(model).load(tmp_path / "model", device="cpu")
    assert np.array_equal(loaded.predict(batch, deterministic=True)[0], actions)


SMALL = {"net_arch": [16, 16]}


@pytest.mark.parametrize("algo", [SAC, TD3, DDPG, CrossQ])
@pytest.mark.parametrize("name", ["discrete", "multi_discrete", "multi_binary_2d"])
def test_actor_critic_algorithms_learn_on_discrete_observations(algo, name, tmp_path):
    env = DummyEnv(SPACES[name])
    model = algo("MlpPolicy", env, learning_starts=60, buffer_size=500, batch_size=16, seed=0, device="cpu",
                 policy_kwargs=SMALL)  # fmt: skip
    assert model.replay_buffer.observations.dtype != torch.float32  # raw values, preprocessed by the networks
    _check_learn_predict_save_load(model, env, tmp_path)


@pytest.mark.parametrize("name", ["discrete", "multi_discrete", "multi_binary"])
def test_dqn_learns_on_discrete_observations(name, tmp_path):
    env = IdentityEnv(5) if name == "discrete" else DummyEnv(SPACES[name], spaces.Discrete(4))
    model = DQN("MlpPolicy", env, learning_starts=60, buffer_size=500, batch_size=16, seed=0, device="cpu",
                policy_kwargs=SMALL)  # fmt: skip
    _check_learn_predict_save_load(model, env, tmp_path)


def test_dqn_learns_identity_from_one_hot_observations():
    """IdentityEnv(4): reward 1 for repeating the observed state; a one-hot input makes it learnable at once."""
    env = IdentityEnv(4)
    model = DQN("MlpPolicy", env, learning_starts=100, learning_rate=5e-3, target_update_interval=50,
                exploration_fraction=0.3, train_freq=1, batch_size=32, seed=0, device="cpu")  # fmt: skip
    model.learn(800)
    assert np.array_equal(model.predict(np.arange(4), deterministic=True)[0], np.arange(4))


def test_dict_with_multi_discrete_key(tmp_path):
    space = spaces.Dict({"vec": spaces.Box(-1, 1, (2,), np.float32), "md": spaces.MultiDiscrete([3, 2])})
    env = DummyEnv(space)
    model = SAC("MultiInputPolicy", env, learning_starts=60, buffer_size=500, batch_size=16, seed=0, device="cpu",
                policy_kwargs=SMALL)  # fmt: skip
    model.learn(100)
    obs, _ = env.reset(seed=0)
    assert model.predict(obs)[0].shape == (2,)


def test_unsupported_observation_space_names_it():
    env = DummyEnv(spaces.Tuple([spaces.Discrete(2), spaces.Discrete(3)]))
    with pytest.raises(ValueError, match=r"Tuple observations .*allowed: \['Box', 'Discrete', 'MultiDiscrete'"):
        SAC("MlpPolicy", env, device="cpu")
