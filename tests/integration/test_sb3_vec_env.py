"""Stable-Baselines3 VecEnvs (DummyVecEnv, SubprocVecEnv, make_vec_env, VecNormalize) as training and eval envs."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
import stable_baselines3 as sb3
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecFrameStack, VecNormalize

import lit_rl
from lit_rl.callbacks.sb3 import EvalCallback
from lit_rl.envs.make import as_vector_env
from lit_rl.envs.sb3_vec_env import SB3VecEnvAdapter, is_sb3_vec_env, sb3_vec_normalize


def small(**overrides):
    """Fresh keyword arguments each time: SB3 writes into the policy_kwargs dict it is given."""
    kwargs = {
        "learning_starts": 20,
        "batch_size": 16,
        "buffer_size": 1000,
        "seed": 0,
        "policy_kwargs": {"net_arch": [16]},
    }
    return {**kwargs, **overrides}


def pendulum_venv(max_steps: int = 7, n: int = 2) -> DummyVecEnv:
    return DummyVecEnv([lambda: gym.make("Pendulum-v1", max_episode_steps=max_steps)] * n)


def test_sac_stores_the_same_transitions_as_stable_baselines3():
    """Same seed, same DummyVecEnv of 2 envs with a 7-step limit: the same warm-up transitions, time-limit ends too."""
    kwargs = small(learning_starts=1000, seed=3)
    ref = sb3.SAC("MlpPolicy", pendulum_venv(), device="cpu", **small(learning_starts=1000, seed=3)).learn(40)
    ours = lit_rl.SAC("MlpPolicy", pendulum_venv(), **kwargs).learn(40)
    rb, lb = ref.replay_buffer, ours.replay_buffer
    n = rb.pos
    assert n == lb.pos == 20
    for name in ("observations", "next_observations", "actions", "rewards"):
        expected = getattr(rb, name)[:n]
        got = getattr(lb, name)[:n].cpu().numpy().reshape(expected.shape)
        # SB3 steps the env with unscale(scale(a)), lit_rl with a: float32 rounding apart
        np.testing.assert_allclose(got, expected, atol=1e-5, err_msg=name)
    timeouts = rb.timeouts[:n].astype(bool)
    assert timeouts.sum() == 4  # steps 7 and 14 of both envs: next_observations above hold terminal_observation
    np.testing.assert_array_equal(lb.truncated[:n].cpu().numpy(), timeouts)
    np.testing.assert_array_equal(lb.terminated[:n].cpu().numpy(), rb.dones[:n] * (1 - rb.timeouts[:n]))


def test_adapter_steps_like_a_same_step_gymnasium_vector_env():
    """CartPole ends by termination and by a 15-step limit; both vector envs fed the same actions agree exactly."""

    def make():
        return gym.make("CartPole-v1", max_episode_steps=15)

    adapter = SB3VecEnvAdapter(DummyVecEnv([make] * 3))
    reference = gym.vector.SyncVectorEnv([make] * 3, autoreset_mode=AutoresetMode.SAME_STEP)
    obs_a, _ = adapter.reset(seed=5)
    obs_r, _ = reference.reset(seed=5)
    np.testing.assert_array_equal(obs_a, obs_r)
    actions = np.random.default_rng(0).integers(0, 2, size=(60, 3))
    seen = {"terminated": 0, "truncated": 0}
    for action in actions:
        out_a, out_r = adapter.step(action), reference.step(action)
        for got, expected in zip(out_a[:3], out_r[:3], strict=True):
            np.testing.assert_array_equal(got, expected)
        # SB3 keeps TimeLimit.truncated only when not also terminated (terminated wins, no bootstrap)
        np.testing.assert_array_equal(out_a[3], out_r[3] & ~out_r[2])
        terminated, truncated, info_a, info_r = out_a[2], out_a[3], out_a[4], out_r[4]
        seen["terminated"] += int(terminated.sum())
        seen["truncated"] += int(truncated.sum())
        for i in np.flatnonzero(terminated | truncated):
            np.testing.assert_array_equal(info_a["final_obs"][i], info_r["final_obs"][i])
            assert info_a["_final_obs"][i] and info_a["_final_info"][i]
        assert ("final_obs" in info_a) == ("final_obs" in info_r)
    assert seen["terminated"] > 0 and seen["truncated"] > 0


def test_is_success_and_monitor_episodes_reach_the_model():
    """make_vec_env's Monitor records are the episode statistics; is_success fills ep_success_buffer."""

    class SuccessWrapper(gym.Wrapper):
        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                info["is_success"] = True
            return obs, reward, terminated, truncated, info

    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=0, env_kwargs={"max_episode_steps": 10},
                        wrapper_class=SuccessWrapper)  # fmt: skip
    wrapped = as_vector_env(venv)
    assert isinstance(wrapped, SB3VecEnvAdapter) and wrapped.has_monitor  # no second episode counter on top
    model = lit_rl.TD3("MlpPolicy", venv, **small()).learn(40)
    assert list(model.ep_lengths) == [10, 10, 10, 10]
    assert list(model.ep_success_buffer) == [True] * 4


def test_vec_normalize_wrapped_training_and_eval_env(tmp_path):
    venv = VecNormalize(pendulum_venv(max_steps=10), norm_reward=True)
    eval_env = VecNormalize(pendulum_venv(max_steps=10, n=1), training=False, norm_reward=False)
    callback = EvalCallback(eval_env, n_eval_episodes=2, eval_freq=10, verbose=0, warn=False)
    model = lit_rl.TD3("MlpPolicy", venv, **small()).learn(60, callback=callback)
    assert model.num_timesteps == 60 and len(callback.evaluations_results) == 3
    assert venv.obs_rms.count > 60  # VecNormalize saw every step (and the resets)
    assert sb3_vec_normalize(model._learn_datamodule.train_env) is venv
    # SB3's EvalCallback syncs the normalisation statistics into the eval env
    np.testing.assert_allclose(eval_env.obs_rms.mean, venv.obs_rms.mean)


def test_subproc_vec_env_and_a_frame_stack_wrapper():
    venv = SubprocVecEnv([lambda: gym.make("Pendulum-v1", max_episode_steps=10)] * 2)
    model = lit_rl.SAC("MlpPolicy", **small()).learn(40, env=VecFrameStack(venv, n_stack=2))
    assert model.observation_space.shape == (6,)
    assert len(model.ep_returns) == 4
    model._learn_datamodule.close()


def test_dqn_learns_from_make_vec_env_cartpole_and_finishes_its_round_as_sb3():
    model = lit_rl.DQN("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), **small()).learn(100)
    ref = sb3.DQN("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), device="cpu", **small()).learn(100)
    # train_freq=4 vector steps of 2 envs: the round started at 96 ends at 104, past total_timesteps
    assert model.num_timesteps == ref.num_timesteps == 104 and len(model.ep_returns) > 0


def test_detection_needs_no_sb3_import_and_refuses_other_objects():
    assert not is_sb3_vec_env(gym.make("Pendulum-v1"))
    with pytest.raises(TypeError, match="stable_baselines3 VecEnv"):
        as_vector_env(object())


class ResetWithoutOptionsEnv(gym.Env):
    """An env written for SB3's DummyVecEnv, which passes reset options only when there are some."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, seed=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {}


def test_an_env_whose_reset_takes_no_options_trains_as_in_sb3():
    model = lit_rl.TD3("MlpPolicy", ResetWithoutOptionsEnv(), **small()).learn(30)
    assert model.num_timesteps == 30
    with pytest.raises(ValueError, match="takes no options"):
        as_vector_env(ResetWithoutOptionsEnv()).reset(options={"x": 1})


def test_lit_rl_does_not_import_stable_baselines3():
    """SB3 is an optional reference dependency: the adapter detects its VecEnvs without importing it."""
    import subprocess
    import sys

    code = "import sys, lit_rl, lit_rl.envs, lit_rl.callbacks.sb3; print('stable_baselines3' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_get_env_is_monitor_wrapped_for_sb3s_evaluate_policy_which_counts_the_episodes_returns():
    """SB3's evaluate_policy on model.get_env() takes its Monitor path without a warning; the episode records it
    reads are Monitor's and give the returns lit_rl's own evaluation gives on the same seeded env."""
    from stable_baselines3.common.evaluation import evaluate_policy as sb3_evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    from lit_rl.callbacks import evaluate_episodes

    model = lit_rl.SAC("MlpPolicy", "Pendulum-v1", **small()).learn(40)
    env = model.get_env()
    assert env.env_is_wrapped(Monitor) == [True] and env.env_is_wrapped(Monitor, indices=0) == [True]
    assert env.env_is_wrapped(gym.wrappers.ClipAction) == [False]  # a wrapper that is not there
    assert env.env_is_wrapped(gym.wrappers.TimeLimit) == [True]  # one that is

    obs, rewards, length = env.reset(), 0.0, 0
    while True:  # one episode by hand: its last info holds Monitor's record of it
        obs, reward, dones, infos = env.step(model.predict(obs, deterministic=True)[0])
        rewards, length = rewards + float(reward[0]), length + 1
        if dones[0]:
            break
    episode = infos[0]["episode"]
    assert set(episode) == {"r", "l", "t"} and type(episode["r"]) is float and type(episode["l"]) is int
    assert episode["l"] == length == 200 and episode["r"] == pytest.approx(rewards, rel=1e-6)

    for agent in (model.policy, model):
        env.seed(7)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "Evaluation environment is not wrapped with a Monitor wrapper" fails
            returns, lengths = sb3_evaluate_policy(agent, env, n_eval_episodes=3, return_episode_rewards=True)
        ours, our_lengths = evaluate_episodes(
            lambda o: model.predict(o, deterministic=True)[0], as_vector_env("Pendulum-v1"), 3, seed=7
        )
        assert lengths == our_lengths.tolist() == [200, 200, 200]
        np.testing.assert_allclose(returns, ours, rtol=1e-6)
        assert len(set(returns)) == 3  # three different episodes, not one counted thrice
