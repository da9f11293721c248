"""After ``load``, ``model.replay_buffer`` is an empty buffer, as in SB3 (side by side with SB3 2.9.2)."""

from __future__ import annotations

import gymnasium as gym
import pytest
import stable_baselines3 as sb3

import lit_rl
from lit_rl.core.arguments import UnsupportedSpaceError
from lit_rl.envs import make_vec_env

TINY = {"net_arch": [8]}


@pytest.mark.parametrize("library", [sb3, lit_rl], ids=["sb3", "lit_rl"])
@pytest.mark.parametrize("with_env", [False, True], ids=["no_env", "env"])
def test_load_gives_an_empty_buffer_and_load_replay_buffer_fills_it(tmp_path, library, with_env):
    model = library.SAC("MlpPolicy", "Pendulum-v1", learning_starts=10, batch_size=8, buffer_size=200,
                        policy_kwargs=TINY, device="cpu")  # fmt: skip
    model.learn(30)
    model.save(tmp_path / "model")
    model.save_replay_buffer(tmp_path / "buffer.pkl")

    loaded = library.SAC.load(tmp_path / "model", env=gym.make("Pendulum-v1") if with_env else None, device="cpu")
    assert loaded.replay_buffer is not None and loaded.replay_buffer.size() == 0
    loaded.load_replay_buffer(tmp_path / "buffer.pkl")
    assert loaded.replay_buffer.size() == 30
    if not with_env:
        loaded.set_env(gym.make("Pendulum-v1"))
    loaded.learn(10, reset_num_timesteps=False)
    assert loaded.replay_buffer.size() == 40  # the loaded transitions kept, the new ones added


def test_a_multi_env_model_loads_with_its_number_of_envs_and_takes_its_buffer_file(tmp_path):
    model = lit_rl.SAC("MlpPolicy", make_vec_env("Pendulum-v1", 2),
                       learning_starts=10, batch_size=8, buffer_size=200, policy_kwargs=TINY)  # fmt: skip
    model.learn(20)
    model.save(tmp_path / "model")
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    loaded = lit_rl.SAC.load(tmp_path / "model", device="cpu")
    assert loaded.replay_buffer.n_envs == 2 and loaded.replay_buffer.size() == 0
    loaded.load_replay_buffer(tmp_path / "buffer.pkl")
    assert len(loaded.replay_buffer) == 20


def test_an_empty_buffer_follows_the_env_given_later(tmp_path):
    """Nothing to keep in an empty buffer: learn(env=) with another number of envs rebuilds it (a full one refuses)."""
    model = lit_rl.SAC("MlpPolicy", "Pendulum-v1", learning_starts=10, batch_size=8, policy_kwargs=TINY)
    model.save(tmp_path / "model")
    loaded = lit_rl.SAC.load(tmp_path / "model", device="cpu")
    loaded.learn(20, env=make_vec_env("Pendulum-v1", 2))
    assert loaded.replay_buffer.n_envs == 2 and len(loaded.replay_buffer) == 20
    with pytest.raises(UnsupportedSpaceError, match="the env has 1 envs, the model's replay buffer 2"):
        loaded.set_env(gym.make("Pendulum-v1"))


def test_a_her_model_loaded_without_env_has_an_empty_her_buffer_and_learns_once_given_the_env(tmp_path):
    env = gym.make("lit_rl/BitFlipping-v0", n_bits=4, continuous=True, max_steps=4)
    model = lit_rl.SAC("MultiInputPolicy", env, replay_buffer_class=lit_rl.HerReplayBuffer, learning_starts=20,
                        batch_size=8, buffer_size=100, policy_kwargs=TINY)  # fmt: skip
    model.learn(30)
    model.save(tmp_path / "model")
    loaded = lit_rl.SAC.load(tmp_path / "model", device="cpu")
    assert isinstance(loaded.replay_buffer, lit_rl.HerReplayBuffer) and loaded.replay_buffer.size() == 0
    loaded.learn(30, env=gym.make("lit_rl/BitFlipping-v0", n_bits=4, continuous=True, max_steps=4))
    assert loaded.replay_buffer.size() == 30 and loaded._n_updates > 0
