"""SB3's save/load/parameters/env semantics, as SB3's own tests use them (tests/test_save_load.py, test_run.py)."""

from __future__ import annotations

import io
from copy import deepcopy

import gymnasium as gym
import numpy as np
import pytest
import torch

from lit_rl import DQN, SAC, TD3

TINY = {"net_arch": [16]}


@pytest.fixture(scope="module")
def sac():
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=50, batch_size=16, policy_kwargs=TINY, seed=0)
    return model.learn(120)


def test_save_adds_zip_and_exclude_include_follow_sb3(tmp_path):
    model = TD3("MlpPolicy", "Pendulum-v1", policy_kwargs=TINY, verbose=2)
    written = model.save(tmp_path / "test_save", exclude=["verbose"])
    assert written == tmp_path / "test_save.zip" and written.is_file()
    assert TD3.load(tmp_path / "test_save").verbose == 0  # excluded: the constructor's default
    model.verbose = 2  # a value set after construction is what gets saved
    model.save(tmp_path / "test_save", exclude=["verbose"], include=["verbose"])
    loaded = TD3.load(str(tmp_path / "test_save.zip"), custom_objects={"learning_rate": 2e-5, "dummy": 1.0})
    assert loaded.verbose == 2 and loaded.learning_rate == 2e-5 and not hasattr(loaded, "dummy")


def test_load_refuses_other_policy_kwargs_and_takes_env_and_file_objects(sac, tmp_path):
    buffer = io.BytesIO()
    sac.save(buffer)
    buffer.seek(0)
    env = gym.make("Pendulum-v1")
    loaded = SAC.load(buffer, env=env, device="cpu")
    assert loaded.get_env() is not None and loaded.get_env().observation_space == env.observation_space
    obs = np.zeros(3, dtype=np.float32)
    assert np.array_equal(loaded.predict(obs, deterministic=True)[0], sac.predict(obs, deterministic=True)[0])
    sac.save(tmp_path / "m.zip")
    with pytest.raises(ValueError, match="policy_kwargs"):
        SAC.load(tmp_path / "m.zip", policy_kwargs={"net_arch": [32]})


def test_set_parameters_rejects_unknown_and_missing_objects_as_sb3(sac):
    original = deepcopy(sac.get_parameters())
    assert len(original) > 1  # the policy and the optimizers
    invalid = {**deepcopy(original), "I_should_not_be_a_valid_object": "x"}
    for exact in (True, False):
        with pytest.raises(ValueError, match="I_should_not_be_a_valid_object"):
            sac.set_parameters(invalid, exact_match=exact)
    with pytest.raises(ValueError, match="missing"):
        sac.set_parameters(dict(list(original.items())[:-1]), exact_match=True)
    with pytest.raises(RuntimeError):  # torch: a tensor missing inside the policy's state dict
        sac.set_parameters({k: dict(list(v.items())[:-1]) for k, v in original.items()}, exact_match=True)
    float_keys = [k for k, v in original["policy"].items() if v.is_floating_point()]
    changed = {k: torch.rand_like(original["policy"][k]) for k in float_keys[:-1]}
    sac.set_parameters({"policy": changed}, exact_match=False)
    now = sac.get_parameters()["policy"]
    assert all(torch.equal(now[k], changed[k]) for k in changed)
    assert torch.equal(now[float_keys[-1]], original["policy"][float_keys[-1]])
    sac.set_parameters(original)


def test_set_env_checks_spaces_and_resets_the_next_learn(sac):
    with pytest.raises(ValueError, match="observation space"):
        sac.set_env(gym.make("MountainCarContinuous-v0"))
    sac.set_env(gym.make("Pendulum-v1"))
    assert sac.collector.last_obs is None
    sac.learn(20, reset_num_timesteps=False)
    assert sac.num_timesteps == 140


def test_tau_zero_freezes_the_targets():
    model = SAC("MlpPolicy", "Pendulum-v1", tau=0.0, learning_starts=20, batch_size=8, policy_kwargs=TINY, seed=1)
    before = deepcopy(model.policy.critic_target.state_dict())
    model.learn(60)
    after = model.policy.critic_target.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not all(torch.equal(a, b) for a, b in zip(before.values(), model.policy.critic.state_dict().values(), strict=True))


@pytest.mark.parametrize("train_freq", ["4", ("1", "episode"), "non_sense", (1, "close")])
def test_bad_train_freq_raises_value_error_as_sb3(train_freq):
    with pytest.raises(ValueError, match="train_freq"):
        SAC("MlpPolicy", "Pendulum-v1", policy_kwargs=TINY, train_freq=train_freq)


def test_batch_size_larger_than_buffer_size_samples_with_replacement():
    # SB3's semantics (it runs), but unlike SB3 it says so
    with pytest.warns(UserWarning, match=r"batch_size=64 is 2\.0x the replay buffer's 32 transitions"):
        model = DQN("MlpPolicy", "CartPole-v1", buffer_size=32, batch_size=64, learning_starts=10,
                    policy_kwargs={"net_arch": [8]})  # fmt: skip
    model.learn(50)
    assert len(model.replay_buffer) <= 32 and model._n_updates > 0


def test_get_env_returns_the_users_sb3_vec_env_itself():
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env("Pendulum-v1", n_envs=2)
    model = SAC("MlpPolicy", venv, learning_starts=50, policy_kwargs=TINY)
    assert model.get_env() is venv


def test_n_steps_with_a_users_buffer_class_warns_and_builds_the_class_as_given():
    from lit_rl.buffers import ReplayBuffer

    with pytest.warns(UserWarning, match="n_steps=3"):
        model = SAC("MlpPolicy", "Pendulum-v1", n_steps=3, buffer_size=200, replay_buffer_class=ReplayBuffer,
                    policy_kwargs=TINY)  # fmt: skip
    assert type(model.replay_buffer) is ReplayBuffer


def test_unsupported_action_space_raises_what_sb3_code_catches():
    for error in (ValueError, AssertionError):
        with pytest.raises(error, match="Discrete action spaces"):
            SAC("MlpPolicy", "CartPole-v1", policy_kwargs=TINY)


def test_handle_timeout_termination_false_stores_time_limits_as_terminations():
    env = gym.wrappers.TimeLimit(gym.make("Pendulum-v1").unwrapped, 20)
    model = SAC("MlpPolicy", env, learning_starts=100, policy_kwargs=TINY,
                replay_buffer_kwargs={"handle_timeout_termination": False})  # fmt: skip
    model.learn(40)
    assert model.replay_buffer.terminated[:40, 0].sum() == 2  # steps 20 and 40 end by the time limit


def test_dqn_warns_in_sb3s_words_when_n_envs_exceeds_the_target_interval():
    from stable_baselines3.common.env_util import make_vec_env

    with pytest.warns(UserWarning, match="The number of environments used is greater"):
        DQN("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2), buffer_size=100, target_update_interval=1)


def test_get_env_speaks_sb3s_vec_env_api_on_the_training_env():
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecEnv

    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=50, policy_kwargs=TINY, seed=0).learn(60)
    env = model.get_env()
    assert isinstance(env, VecEnv) and env is model.get_env()
    obs = env.reset()
    assert obs.shape == (1, 3)
    for _ in range(200):  # Pendulum's time limit ends the episode: SB3's terminal_observation and truncation flag
        obs, rewards, dones, infos = env.step(model.predict(obs)[0])
        if dones[0]:
            break
    assert dones[0] and infos[0]["TimeLimit.truncated"] and infos[0]["terminal_observation"].shape == (3,)
    mean, _ = evaluate_policy(model, env, n_eval_episodes=1, warn=False)
    assert mean < 0  # Pendulum's returns are negative
    model.set_env(env, force_reset=False)  # the same env: the current episode goes on
    model.learn(10, reset_num_timesteps=False)
    assert model.num_timesteps == 70


def test_load_replay_buffer_after_the_user_dropped_it_puts_it_back_now(sac, tmp_path):
    stored = sac.replay_buffer.observations[: sac.replay_buffer.pos].clone()
    sac.save_replay_buffer(tmp_path / "buffer.pkl")
    sac.replay_buffer = None  # as SB3's test_save_load_replay_buffer does
    sac.load_replay_buffer(tmp_path / "buffer.pkl")
    assert sac.replay_buffer.device.type == "cpu"
    assert torch.equal(sac.replay_buffer.observations[: sac.replay_buffer.pos], stored)


def test_policies_predict_in_env_scale_and_know_their_device(sac):
    policy = sac.policy
    assert policy.device == torch.device("cpu") and policy.actor.device == torch.device("cpu")
    assert policy.squash_output and policy.actor.squash_output and not policy.critic.squash_output
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], dtype=np.float32)
    actions, state = policy.predict(obs, deterministic=True)
    assert state is None and actions.shape == (2, 1) and np.all(np.abs(actions) <= 2.0)  # Pendulum's bounds
    assert np.allclose(actions, sac.predict(obs, deterministic=True)[0])
    single, _ = policy.predict(obs[0], deterministic=True)
    assert single.shape == (1,) and np.allclose(single, actions[0])


def test_set_env_and_load_follow_sb3s_test_set_env(tmp_path):
    from stable_baselines3.common.vec_env import DummyVecEnv

    env = DummyVecEnv([lambda: gym.make("Pendulum-v1")])
    model = TD3("MlpPolicy", env, policy_kwargs=TINY, learning_starts=50, train_freq=4).learn(64)
    with pytest.raises(AssertionError, match="2 envs"):  # SB3 asserts the same number of envs
        model.set_env(DummyVecEnv([lambda: gym.make("Pendulum-v1") for _ in range(2)]))
    model.set_env(model.get_env(), force_reset=False)
    assert model._last_obs is not None
    model.save(tmp_path / "m.zip")
    loaded = TD3.load(tmp_path / "m.zip", env=model.get_env(), force_reset=False)
    assert np.array_equal(loaded._last_obs, model._last_obs)  # the episode goes on where the env is
    loaded.learn(64, reset_num_timesteps=False)
    assert loaded.num_timesteps == 128
    assert TD3.load(tmp_path / "m.zip", env=model.get_env())._last_obs is None  # force_reset: a new episode


@pytest.mark.parametrize("cls, env_id", [(SAC, "Pendulum-v1"), (TD3, "Pendulum-v1"), (DQN, "CartPole-v1")])
def test_policies_and_their_networks_save_load_and_predict_as_sb3s(cls, env_id, tmp_path):
    model = cls("MlpPolicy", env_id, learning_starts=50, policy_kwargs={"net_arch": [16]}, seed=0).learn(80)
    obs = model.get_env().reset()
    policy = model.policy
    network = policy.actor if cls is not DQN else policy.q_net
    expected, _ = policy.predict(obs, deterministic=True)
    assert np.array_equal(network.predict(obs, deterministic=True)[0], expected)  # the actor alone acts alike
    policy.save(tmp_path / "policy.pkl")
    network.save(tmp_path / "network.pkl")
    assert np.array_equal(type(policy).load(tmp_path / "policy.pkl").predict(obs, deterministic=True)[0], expected)
    assert np.array_equal(type(network).load(tmp_path / "network.pkl").predict(obs, deterministic=True)[0], expected)
    single, _ = model.predict(obs[0], deterministic=True)
    assert isinstance(single, np.ndarray)  # also for one discrete action (a 0-d array), as SB3


def test_sb3_train_method_runs_updates_now_with_lr_schedule_and_tau():
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=100, policy_kwargs=TINY, seed=0).learn(10)  # no updates
    critic, target = deepcopy(model.critic.state_dict()), deepcopy(model.critic_target.state_dict())
    model.tau = 0.0
    model.train(gradient_steps=1, batch_size=8)  # SB3's train(): the critic moves, a frozen target does not
    assert any(not torch.equal(critic[k], v) for k, v in model.critic.state_dict().items())
    assert all(torch.equal(target[k], v) for k, v in model.critic_target.state_dict().items())
    critic = deepcopy(model.critic.state_dict())
    model.lr_schedule, model.tau = (lambda _: 0.0), 0.01
    model.train(gradient_steps=1)
    assert all(torch.equal(critic[k], v) for k, v in model.critic.state_dict().items())  # lr 0: no change
    assert any(not torch.equal(target[k], v) for k, v in model.critic_target.state_dict().items())  # Polyak moved
    assert model.train(False) is model and not model.policy.training  # nn.Module.train(mode) still works


def test_sb3_seeding_attributes_and_memory_saving_buffer_on_a_new_learn():
    from lit_rl.collect.noise import NormalActionNoise

    runs = []
    for _ in range(2):  # numpy-drawn action noise follows the model's seed too (SB3's set_random_seed)
        noise = NormalActionNoise(np.zeros(1), 0.1 * np.ones(1))
        model = SAC("MlpPolicy", "Pendulum-v1", seed=3, action_noise=noise, learning_starts=50, policy_kwargs=TINY)
        runs.append(model.learn(80).replay_buffer.actions[:80].clone())
    assert torch.equal(runs[0], runs[1])
    assert model.log_ent_coef is not None and model.ent_coef_tensor is None
    fixed = SAC("MlpPolicy", "Pendulum-v1", ent_coef=0.01, policy_kwargs=TINY)
    assert fixed.log_ent_coef is None and float(fixed.ent_coef_tensor) == pytest.approx(0.01)
    model = DQN("MlpPolicy", "CartPole-v1", buffer_size=100, optimize_memory_usage=True,
                replay_buffer_kwargs={"handle_timeout_termination": False}, learning_starts=10,
                policy_kwargs={"net_arch": [8]}, seed=0)  # fmt: skip
    model.learn(30)
    last = model.replay_buffer.pos - 1
    assert model.replay_buffer.terminated[last, 0] == 0.0
    with pytest.warns(UserWarning, match="The last trajectory in the replay buffer will be truncated"):
        model.learn(30)  # reset_num_timesteps=True: a new episode starts, the stored one ends
    assert model.replay_buffer.terminated[last, 0] == 1.0
    model._on_step()  # SB3's name of the per-env-step hook (DQN's target update and schedule)


def test_model_env_is_sb3s_vec_env_and_collect_rollouts_takes_it(sac):
    env = sac.env
    assert env is sac.get_env() and env.observation_space == sac.observation_space and env.num_envs == 1
    steps = sac.num_timesteps
    sac.collect_rollouts(sac.env, train_freq=5, learning_starts=0)  # SB3's call with model.env: the training env
    assert sac.num_timesteps == steps + 5
