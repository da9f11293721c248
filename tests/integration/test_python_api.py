"""The Stable-Baselines3-style Python API: learn() on ids, Envs and VectorEnvs; predict()."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from lit_rl import CrossQ

TINY = {"net_arch": {"pi": [16, 16], "qf": [16, 16]}}


def make_model(**kwargs) -> CrossQ:
    return CrossQ("MlpPolicy", learning_starts=50, batch_size=16, buffer_size=1000, policy_kwargs=TINY, seed=0, **kwargs)


def test_learn_on_an_env_id_then_continue():
    model = make_model().learn(120, env="Pendulum-v1")
    assert model.num_timesteps == 120 and len(model.replay_buffer) == 120
    n_updates = model._n_updates
    assert n_updates == 120 - 50  # one update per step after learning_starts (the 50th step is still warm-up)
    model.learn(30, reset_num_timesteps=False)
    assert model.num_timesteps == 150 and len(model.replay_buffer) == 150 and model._n_updates == n_updates + 30


def test_learn_on_a_gymnasium_env_and_predict_single_and_batched():
    env = gym.make("Pendulum-v1")
    model = make_model().learn(80, env=env)
    obs = env.observation_space.sample()
    action = model.predict(obs, deterministic=True)[0]
    assert action.shape == (1,) and env.action_space.contains(action)
    np.testing.assert_array_equal(action, model.predict(obs, deterministic=True)[0])
    batch = np.stack([env.observation_space.sample() for _ in range(5)])
    actions = model.predict(batch)[0]
    assert actions.shape == (5, 1) and np.all(np.abs(actions) <= 2.0)


def test_learn_on_a_vector_env_with_gradient_steps_minus_one():
    venv = gym.make_vec("Pendulum-v1", num_envs=2, vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
    model = make_model(gradient_steps=-1).learn(100, env=venv)
    assert model.num_timesteps == 100 and len(model.replay_buffer) == 100
    # Each round collects 2 transitions and then does 2 updates once past learning_starts.
    assert model._n_updates == 100 - 50


def test_learn_rejects_next_step_autoreset_vector_envs():
    venv = gym.make_vec("Pendulum-v1", num_envs=2)
    with pytest.raises(ValueError, match="SAME_STEP"):
        make_model().learn(10, env=venv)


def test_learn_without_an_env_is_a_type_error():
    with pytest.raises(TypeError, match="needs an env"):
        make_model().learn(10)


def test_crossq_rejects_discrete_actions_before_any_step():
    with pytest.raises(ValueError, match="Discrete"):
        make_model().learn(10, env="CartPole-v1")


@pytest.mark.parametrize("make_env", [lambda: "Pendulum-v1", lambda: gym.make("Pendulum-v1")], ids=["id", "env_object"])
def test_learn_with_a_seed_is_reproducible_for_ids_and_env_objects(make_env):
    """Warm-up actions come from the env's action space: it must follow the model's seed however the env is given."""

    def run() -> dict:
        model = make_model().learn(80, env=make_env())
        return {k: v.clone() for k, v in model.state_dict().items()}

    first, second = run(), run()
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name
