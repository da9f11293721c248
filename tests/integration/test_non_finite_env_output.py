"""An env that returns NaN or inf is named where it happens (env id, env step, field, env index), before the
buffer stores it; and a batch_size over the buffer's capacity warns once, saying by how much."""

from __future__ import annotations

import logging
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

from lit_rl import SAC, TD3, NonFiniteEnvOutput
from tests.helpers import ROOT, read_summary

TINY = {"net_arch": [8]}


class NaNAt(gym.Wrapper):
    """Returns NaN in ``field`` ("obs", "reward", "final_obs" or "reset") at the env's ``at_step``-th step."""

    def __init__(self, env: gym.Env, field: str, at_step: int = 0) -> None:
        super().__init__(env)
        self.field, self.at_step, self.steps = field, at_step, 0

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        if self.field == "reset":
            obs = np.full_like(obs, np.nan)
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps == self.at_step:
            if self.field == "reward":
                reward = float("nan")
            else:
                obs = obs.copy()
                obs[1] = np.inf if self.field == "final_obs" else np.nan
            if self.field == "final_obs":
                truncated = True  # the episode ends here: the NaN is the transition's true next observation
        return obs, reward, terminated, truncated, info


def pendulum(field: str, at_step: int = 0) -> gym.Env:
    return NaNAt(gym.make("Pendulum-v1"), field, at_step)


def tiny_sac(**kwargs) -> SAC:
    return SAC("MlpPolicy", learning_starts=5, batch_size=4, buffer_size=100, policy_kwargs=TINY, **kwargs)


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("obs", r"env Pendulum-v1 returned non-finite values at env step 7: next observation: env index 0 "
                r"\(1 of 3 values: nan\)"),
        ("reward", r"env Pendulum-v1 returned non-finite values at env step 7: reward: env index 0 \(1 of 1 values: nan\)"),
        ("final_obs", r"at env step 7: next observation \(the episode's last\): env index 0 \(1 of 3 values: inf\)"),
    ],
)  # fmt: skip
def test_learn_names_the_field_the_env_step_and_the_env_and_stores_nothing_of_that_step(field, message):
    model = tiny_sac()
    with pytest.raises(NonFiniteEnvOutput, match=message) as caught:
        model.learn(50, env=pendulum(field, at_step=7))
    assert isinstance(caught.value, ValueError)
    assert "not stored in the replay buffer" in str(caught.value)
    assert len(model.replay_buffer) == 6  # the six finite steps, not the seventh
    assert np.isfinite(model.replay_buffer.observations[:6].numpy()).all()


def test_a_non_finite_reset_observation_is_named():
    model = tiny_sac()
    with pytest.raises(NonFiniteEnvOutput, match=r"env Pendulum-v1 returned a non-finite observation from reset\(\) "
                                                 r"at env step 0: env index 0 \(3 of 3 values: nan, nan, nan\)"):  # fmt: skip
        model.learn(50, env=pendulum("reset"))
    assert len(model.replay_buffer) == 0


def test_the_env_index_is_named_in_a_vector_env():
    env = gym.vector.SyncVectorEnv(
        [lambda: pendulum("obs", at_step=0), lambda: pendulum("obs", at_step=4)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    model = TD3("MlpPolicy", learning_starts=5, batch_size=4, buffer_size=100, policy_kwargs=TINY)
    # step 4 of each env: the run's env step 8 (two envs)
    with pytest.raises(
        NonFiniteEnvOutput, match=r"at env step 8: next observation: env index 1 \(1 of 3 values: nan\)\."
    ):
        model.learn(50, env=env)


def test_a_nan_after_learning_starts_is_named_not_reported_as_non_finite_training_metrics():
    model = tiny_sac(gradient_steps=2)
    with pytest.raises(NonFiniteEnvOutput, match="at env step 30: reward"):
        model.learn(100, env=pendulum("reward", at_step=30))
    assert model._n_updates > 0  # training was under way


def test_the_launcher_run_fails_naming_the_env_output_and_records_it(tmp_path):
    run_dir = tmp_path / "run"
    # The env is registered in the launcher's own process, then the launcher runs as `python -m lit_rl.train`.
    code = (
        "import sys, runpy, gymnasium as gym\n"
        "gym.register('NaNPendulum-v0', entry_point='tests.integration.test_non_finite_env_output:nan_pendulum', "
        "max_episode_steps=200)\n"
        "sys.argv = ['lit_rl.train', *sys.argv[1:]]\n"
        "runpy.run_module('lit_rl.train', run_name='__main__')\n"
    )
    overrides = ["trainer=smoke", "env=Pendulum-v1", "env.id=NaNPendulum-v0", "algo=sac", "total_timesteps=200",
                 f"hydra.run.dir={run_dir}", "trainer.enable_progress_bar=false"]  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code, *overrides], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**__import__("os").environ, "HYDRA_FULL_ERROR": "0"})  # fmt: skip
    assert proc.returncode != 0
    expected = "env NaNPendulum-v0 returned non-finite values at env step 40: next observation: env index 0"
    assert expected in proc.stderr, proc.stderr[-3000:]
    assert "non-finite training metrics" not in proc.stderr
    summary = read_summary(run_dir)
    assert summary["status"] == "failed" and "NonFiniteEnvOutput" in summary["error"], summary
    assert expected in (run_dir / "train.log").read_text()


def nan_pendulum(**kwargs) -> gym.Env:
    """The launcher test's env (an entry point gymnasium imports): NaN observation at its 40th step."""
    from gymnasium.envs.classic_control.pendulum import PendulumEnv

    return NaNAt(PendulumEnv(**kwargs), "obs", at_step=40)


def test_batch_size_over_the_buffer_warns_once_with_the_ratio_and_still_trains(caplog):
    with pytest.warns(UserWarning, match=r"batch_size=2,000 is 20x the replay buffer's 100 transitions "
                                         r"\(buffer_size=100\): each gradient step samples with replacement"):  # fmt: skip
        model = SAC(
            "MlpPolicy", "Pendulum-v1", batch_size=2_000, buffer_size=100, learning_starts=10, policy_kwargs=TINY
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once: a rebuilt buffer (set_env) says nothing more
        model.set_env(gym.make("Pendulum-v1"))
        model.learn(30)
    assert model._n_updates > 0  # SB3's semantics: it runs


def test_batch_size_warning_reaches_the_run_log_file(tmp_path):
    handler = logging.FileHandler(tmp_path / "train.log")
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)
    try:
        with pytest.warns(UserWarning, match="1.5x"):
            SAC("MlpPolicy", "Pendulum-v1", batch_size=150, buffer_size=100, policy_kwargs=TINY)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        handler.close()
    assert "batch_size=150 is 1.5x the replay buffer's 100 transitions" in (tmp_path / "train.log").read_text()


def test_batch_size_within_the_buffer_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SAC("MlpPolicy", "Pendulum-v1", batch_size=100, buffer_size=100, policy_kwargs=TINY)
