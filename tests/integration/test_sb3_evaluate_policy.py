"""lit_rl.evaluation.evaluate_policy against SB3's on identically seeded envs: the same episodes, the same numbers."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from stable_baselines3.common.evaluation import evaluate_policy as sb3_evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

from lit_rl import SAC
from lit_rl.evaluation import evaluate_policy

LIMITS = (50, 80, 120)  # one time limit per env: the envs end episodes at different steps


@pytest.fixture(scope="module")
def model():
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=100, batch_size=32, policy_kwargs={"net_arch": [16, 16]},
                seed=0, verbose=0)  # fmt: skip
    return model.learn(300)


def pendulums(seed: int, wrapper=None) -> list[gym.Env]:
    """Pendulums with the time limits of LIMITS, env i reset with ``seed + i`` (evaluation resets without a seed)."""
    envs = [gym.make("Pendulum-v1", max_episode_steps=n) for n in LIMITS]
    envs = [wrapper(e) if wrapper else e for e in envs]
    for i, env in enumerate(envs):
        env.reset(seed=seed + i)
    return envs


def dummy_vec_env(envs: list[gym.Env]) -> DummyVecEnv:
    return DummyVecEnv([lambda e=e: e for e in envs])


def assert_same_episodes(ours, theirs):
    (our_returns, our_lengths), (their_returns, their_lengths) = ours, theirs
    np.testing.assert_allclose(our_returns, their_returns, rtol=1e-6)
    assert our_lengths == [int(n) for n in their_lengths]
    assert all(type(r) is float for r in our_returns) and all(type(n) is int for n in our_lengths)


def test_a_gymnasium_env_gives_sb3s_episodes_returns_and_warning(model):
    with pytest.warns(UserWarning, match="not wrapped with a ``Monitor`` wrapper"):
        theirs = sb3_evaluate_policy(model, pendulums(3)[0], n_eval_episodes=3, return_episode_rewards=True)
    with pytest.warns(UserWarning, match="not wrapped with a ``Monitor`` wrapper"):
        ours = evaluate_policy(model, pendulums(3)[0], n_eval_episodes=3, return_episode_rewards=True)
    assert_same_episodes(ours, theirs)
    assert ours[1] == [50, 50, 50]
    with pytest.warns(UserWarning):
        mean, std = sb3_evaluate_policy(model, pendulums(3)[0], n_eval_episodes=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        our_mean, our_std = evaluate_policy(model, pendulums(3)[0], n_eval_episodes=3, warn=False)
    assert (our_mean, our_std) == pytest.approx((mean, std), rel=1e-6)
    assert (our_mean, our_std) == pytest.approx((np.mean(ours[0]), np.std(ours[0])), rel=1e-12)


def test_a_monitored_gymnasium_env_gives_monitors_records_without_a_warning(model):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        theirs = sb3_evaluate_policy(model, pendulums(4, Monitor)[1], n_eval_episodes=2, return_episode_rewards=True)
        ours = evaluate_policy(model, pendulums(4, Monitor)[1], n_eval_episodes=2, return_episode_rewards=True)
        recorded = evaluate_policy(model, pendulums(4, gym.wrappers.RecordEpisodeStatistics)[1], n_eval_episodes=2,
                                   return_episode_rewards=True)  # fmt: skip
    assert_same_episodes(ours, theirs)
    assert_same_episodes(recorded, theirs)  # gymnasium's records: the same episodes, returns unrounded
    assert ours[1] == [80, 80]


@pytest.mark.parametrize("monitored", [False, True])
def test_a_dummy_vec_env_of_three_gives_sb3s_episode_mix(model, monitored):
    """7 episodes over 3 envs: 2, 2 and 3 (SB3's (n + i) // n_envs), in the order the envs end them."""
    wrapper = Monitor if monitored else None
    with warnings.catch_warnings():
        warnings.simplefilter("error" if monitored else "ignore")
        theirs = sb3_evaluate_policy(model, dummy_vec_env(pendulums(5, wrapper)), n_eval_episodes=7,
                                     return_episode_rewards=True, warn=monitored)  # fmt: skip
        ours = evaluate_policy(model, dummy_vec_env(pendulums(5, wrapper)), n_eval_episodes=7,
                               return_episode_rewards=True, warn=monitored)  # fmt: skip
    assert_same_episodes(ours, theirs)
    # env 0 ends at 50, 100; env 1 at 80, 160; env 2 at 120, 240, 360
    assert ours[1] == [50, 80, 50, 120, 80, 120, 120]


def test_a_gymnasium_vector_env_gives_the_episodes_of_sb3_on_the_same_envs(model):
    theirs = sb3_evaluate_policy(model, VecMonitor(dummy_vec_env(pendulums(6))), n_eval_episodes=5,
                                 return_episode_rewards=True)  # fmt: skip
    vector_env = SyncVectorEnv([lambda e=e: e for e in pendulums(6)], autoreset_mode=AutoresetMode.SAME_STEP)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = evaluate_policy(model, gym.wrappers.vector.RecordEpisodeStatistics(vector_env), n_eval_episodes=5,
                               return_episode_rewards=True)  # fmt: skip
    assert_same_episodes(ours, theirs)
    next_step = SyncVectorEnv([lambda: gym.make("Pendulum-v1")], autoreset_mode=AutoresetMode.NEXT_STEP)
    with pytest.raises(ValueError, match=r"autoreset_mode=AutoresetMode\.SAME_STEP, got .*NEXT_STEP"):
        evaluate_policy(model, next_step)


def test_model_get_env_gives_sb3s_numbers_without_a_warning(model):
    env = model.get_env()
    results = []
    for evaluate in (sb3_evaluate_policy, evaluate_policy):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the view records episodes as Monitor does
            env.seed(9)
            episodes = evaluate(model, env, n_eval_episodes=3, return_episode_rewards=True)
            env.seed(9)
            results.append((episodes, evaluate(model, env, n_eval_episodes=3)))
    (theirs, (mean, std)), (ours, (our_mean, our_std)) = results
    assert_same_episodes(ours, theirs)
    assert len(ours[0]) == 3 and (our_mean, our_std) == pytest.approx((mean, std), rel=1e-6)


def test_reward_threshold_raises_sb3s_assertion(model):
    messages = []
    for evaluate in (sb3_evaluate_policy, evaluate_policy):
        with pytest.raises(AssertionError) as raised:
            evaluate(model, pendulums(7)[0], n_eval_episodes=1, reward_threshold=0.0, warn=False)
        messages.append(str(raised.value))
        mean, _ = evaluate(model, pendulums(7)[0], n_eval_episodes=1, reward_threshold=-1e6, warn=False)
        assert mean < 0.0  # Pendulum's rewards are negative: above -1e6 passes, above 0 never does
    assert messages[0] == messages[1] and messages[1].startswith("Mean reward below threshold: -")


def test_the_callback_sees_sb3s_locals_at_the_same_steps(model):
    seen = {"sb3": [], "lit_rl": []}
    keys = {}
    for name, evaluate in (("sb3", sb3_evaluate_policy), ("lit_rl", evaluate_policy)):

        def callback(local_vars, global_vars, name=name):
            keys[name] = set(local_vars)
            counts = local_vars["episode_counts"].tolist()
            seen[name].append((local_vars["i"], bool(local_vars["done"]), counts, float(local_vars["reward"])))
            assert local_vars["info"] is local_vars["infos"][local_vars["i"]]

        evaluate(model, dummy_vec_env(pendulums(8)), n_eval_episodes=4, callback=callback, warn=False)
    assert seen["lit_rl"] == seen["sb3"]
    assert len(seen["sb3"]) == 50 + 80 + 120 * 2  # 1, 1 and 2 episodes: each env until it has its share
    assert keys["sb3"] - {"Monitor"} <= keys["lit_rl"]  # SB3's imported Monitor class aside
    assert {"rewards", "dones", "infos", "episode_counts", "episode_count_targets", "model", "env"} <= keys["lit_rl"]


def test_bad_arguments_are_named(model):
    with pytest.raises(ValueError, match="n_eval_episodes=0"):
        evaluate_policy(model, pendulums(0)[0], n_eval_episodes=0)
    with pytest.raises(TypeError, match="model=str: has no predict"):
        evaluate_policy("SAC", pendulums(0)[0])
    with pytest.raises(TypeError, match="env='Pendulum-v1' is not usable"):
        evaluate_policy(model, "Pendulum-v1")


def test_it_runs_without_stable_baselines3():
    code = """
import sys, warnings
sys.modules["stable_baselines3"] = None  # any import of it fails
import gymnasium as gym
from lit_rl import SAC
from lit_rl.evaluation import evaluate_policy

model = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": [8]}, seed=0, verbose=0, learning_starts=50)
model.learn(60)
env = gym.make("Pendulum-v1", max_episode_steps=20)
rewards, lengths = evaluate_policy(model, env, n_eval_episodes=2, return_episode_rewards=True, warn=False)
view = model.get_env()
with warnings.catch_warnings():
    warnings.simplefilter("error")  # the view records episodes
    mean, std = evaluate_policy(model, view, n_eval_episodes=2)
print(lengths, [c.__name__ for c in type(view).__mro__], mean < 0)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split("\n")[-2] == "[20, 20] ['VecEnvView', 'object'] True"
