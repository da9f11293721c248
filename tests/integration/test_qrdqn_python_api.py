"""QRDQN through the Stable-Baselines3-style Python API and the launcher: the real collection loop, tiny runs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3.common.envs import FakeImageEnv

from lit_rl import QRDQN
from lit_rl.algorithms import load_algorithm
from lit_rl.envs import BitFlippingEnv
from lit_rl.nets.extractors import CombinedExtractor, NatureCNN
from lit_rl.policies.qrdqn import CnnPolicy, MlpPolicy, MultiInputPolicy, QRDQNPolicy, QuantileNetwork
from tests.helpers import read_summary, run_launcher

TINY = {"net_arch": [16, 16], "n_quantiles": 10}


def make_model(env="CartPole-v1", **kwargs) -> QRDQN:
    params = dict(learning_starts=50, batch_size=16, buffer_size=1_000, policy_kwargs=dict(TINY), seed=0)
    params.update(kwargs)
    return QRDQN("MlpPolicy", env, **params)


def test_learn_counts_updates_hook_calls_and_logs():
    model = make_model(train_freq=4, gradient_steps=1).learn(200)
    assert model.num_timesteps == 200 and len(model.replay_buffer) == 200
    # Rounds end at env steps 4, 8, ..., 200; updates follow the rounds that end past learning_starts=50.
    assert model._n_updates == (200 - 52) // 4 + 1
    assert model._n_calls == 200
    assert model.exploration_rate == pytest.approx(0.01)  # sb3-contrib's final epsilon, past exploration_fraction
    assert model.latest_metrics["rollout/exploration_rate"] == pytest.approx(0.01)
    assert model.latest_metrics["train/loss"] > 0.0
    assert model.quantile_net(torch.zeros(3, 4)).shape == (3, 10, 2)  # (batch, n_quantiles, n_actions)
    assert model.quantile_net is model.policy.quantile_net is model.q_net
    assert model.quantile_net_target is model.policy.quantile_net_target is model.q_net_target


def test_predict_returns_env_actions_greedy_on_the_mean_quantile():
    env = gym.make("CartPole-v1")
    model = make_model(env=env).learn(100)
    obs, _ = env.reset(seed=1)
    action = model.predict(obs, deterministic=True)[0]
    assert action.shape == () and np.issubdtype(action.dtype, np.integer) and env.action_space.contains(action)
    env.step(action)  # the env accepts it as is
    batch = np.stack([env.observation_space.sample() for _ in range(32)])
    greedy = model.predict(batch, deterministic=True)[0]
    with torch.no_grad():
        expected = model.quantile_net(torch.as_tensor(batch)).mean(dim=1).argmax(dim=1).numpy()
    np.testing.assert_array_equal(greedy, expected)
    model.exploration_rate = 1.0
    explored = model.predict(np.stack([obs] * 4), deterministic=False)[0]
    assert explored.shape == (4,) and all(env.action_space.contains(a) for a in explored)


def test_save_load_round_trip(tmp_path):
    model = make_model(exploration_final_eps=0.05, learning_rate=1e-3).learn(120)
    obs = np.stack([model.observation_space.sample() for _ in range(8)])
    actions = model.predict(obs, deterministic=True)[0]
    model.save(tmp_path / "qrdqn")
    for loaded in (QRDQN.load(tmp_path / "qrdqn.zip", device="cpu"), load_algorithm(tmp_path / "qrdqn.zip", "cpu")):
        assert type(loaded) is QRDQN and loaded.n_quantiles == 10
        assert (loaded.num_timesteps, loaded._n_calls) == (120, 120)
        assert (loaded.learning_rate, loaded.exploration_rate) == (1e-3, pytest.approx(0.05))
        for key, value in model.policy.state_dict().items():
            assert torch.equal(loaded.policy.state_dict()[key], value), key
        np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], actions)
    loaded.learn(40, env="CartPole-v1", reset_num_timesteps=False)  # continues from the file
    assert (loaded.num_timesteps, loaded._n_calls) == (160, 160)


def test_optimizer_is_adam_with_the_papers_epsilon_unless_the_policy_names_one():
    assert make_model(batch_size=64).configure_optimizers().defaults["eps"] == 0.01 / 64
    rmsprop = make_model(policy_kwargs={**TINY, "optimizer_class": torch.optim.RMSprop}).configure_optimizers()
    assert isinstance(rmsprop, torch.optim.RMSprop) and rmsprop.defaults["eps"] == 1e-8  # the class's own default
    own_eps = make_model(policy_kwargs={**TINY, "optimizer_kwargs": {"eps": 1e-5}}).configure_optimizers()
    assert own_eps.defaults["eps"] == 1e-5


def test_sb3_contrib_policy_names(tmp_path):
    assert MlpPolicy is QRDQNPolicy and MultiInputPolicy is QRDQNPolicy and issubclass(CnnPolicy, QRDQNPolicy)
    assert QRDQNPolicy.defaults["n_quantiles"] == 200 and QRDQNPolicy.default_net_arch["qf"] == [64, 64]
    model = QRDQN(CnnPolicy, FakeImageEnv(screen_height=36, screen_width=36, n_channels=1, discrete=True),
                  policy_kwargs={"n_quantiles": 8, "features_extractor_kwargs": {"features_dim": 16}},
                  learning_starts=20, buffer_size=100, batch_size=8, seed=0)  # fmt: skip
    assert isinstance(model.quantile_net, QuantileNetwork) and isinstance(
        model.quantile_net.features_extractor, NatureCNN
    )
    assert model.policy.net_arch == []  # sb3-contrib's default after NatureCNN
    model.learn(40)
    model.save(tmp_path / "cnn")  # the policy class is saved by reference: the loaded model has NatureCNN again
    frames = np.stack([model.observation_space.sample() for _ in range(4)])
    loaded = QRDQN.load(tmp_path / "cnn", device="cpu")
    assert type(loaded.policy) is CnnPolicy
    np.testing.assert_array_equal(loaded.predict(frames, deterministic=True)[0], model.predict(frames, True)[0])
    goal_env = BitFlippingEnv(n_bits=4)
    model = QRDQN("MultiInputPolicy", goal_env, policy_kwargs=dict(TINY), learning_starts=20, buffer_size=100, seed=0)
    assert isinstance(model.quantile_net.features_extractor, CombinedExtractor)
    model.learn(40)
    assert model.predict(goal_env.reset(seed=0)[0], deterministic=True)[0].shape == ()


def test_box_actions_and_bad_quantile_counts_are_rejected_by_name():
    with pytest.raises(ValueError, match=r"QRDQN does not support Box action spaces.*allowed: \['Discrete'\]"):
        make_model(env="Pendulum-v1")
    with pytest.raises(ValueError, match="n_quantiles"):
        make_model(policy_kwargs={"n_quantiles": 0})
    with pytest.raises(TypeError, match=r"QRDQN does not take \['use_sde'\]"):
        QRDQN(use_sde=True)


def test_launcher_runs_qrdqn_and_its_checkpoint_loads(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, "trainer=smoke", "algo=qrdqn", "env=CartPole-v1", "algo.policy_kwargs.n_quantiles=16")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    assert (summary["status"], summary["algo"], summary["env_steps"]) == ("completed", "qrdqn", 300)
    assert summary["final_eval_return"] is not None
    assert "train/loss" in (run_dir / "metrics.csv").read_text().splitlines()[0].split(",")
    model = QRDQN.load(run_dir / "checkpoints" / "last.ckpt", device="cpu")
    assert model.n_quantiles == 16 and model.policy.net_arch == [32, 32]  # trainer=smoke's qf
    assert model.exploration_rate == pytest.approx(0.01) and model.num_timesteps == 300
