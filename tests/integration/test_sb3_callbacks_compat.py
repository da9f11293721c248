"""SB3 callbacks: self.logger in callbacks, CheckpointCallback's files, EvalCallback(warn=), locals, episode stops."""

from __future__ import annotations

import csv
import warnings

import gymnasium as gym
import numpy as np
import pytest
import stable_baselines3 as sb3
from lightning.pytorch.loggers import CSVLogger
from stable_baselines3.common.callbacks import CheckpointCallback as SB3CheckpointCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from lit_rl import DQN, TD3
from lit_rl.callbacks.sb3 import (
    BaseCallback,
    CheckpointCallback,
    EvalCallback,
    LogEveryNTimesteps,
    StopTrainingOnMaxEpisodes,
)


def small(**overrides):
    kwargs = {
        "learning_starts": 20,
        "batch_size": 16,
        "buffer_size": 500,
        "seed": 0,
        "policy_kwargs": {"net_arch": [16]},
    }
    return {**kwargs, **overrides}


def csv_rows(logger: CSVLogger) -> list[dict[str, str]]:
    with open(f"{logger.log_dir}/metrics.csv") as f:
        return list(csv.DictReader(f))


class RecordingCallback(BaseCallback):
    """The common SB3 pattern: record custom values from inside a callback."""

    def _on_step(self) -> bool:
        self.logger.record("custom/n_calls", self.n_calls)
        self.logger.record_mean("custom/mean_reward", float(np.mean(self.locals["rewards"])))
        self.logger.record("custom/not_in_csv", 1.0, exclude="csv")
        self.logger.record("custom/text", "not a number")  # kept in name_to_value, never written
        if self.n_calls == 5:
            self.seen_at_5 = dict(self.logger.name_to_value)
            self.log_dir = self.logger.log_dir  # Lightning's logger attributes stay reachable
            self.logger.dump(step=12345)
        return True


def test_records_from_a_callback_reach_the_lightning_logger(tmp_path):
    logger = CSVLogger(tmp_path, name="run")
    callback = RecordingCallback()
    model = TD3("MlpPolicy", "Pendulum-v1", **small()).learn(60, callback=callback, logger=logger, log_every_n_steps=25)
    assert callback.seen_at_5["custom/n_calls"] == 5 and callback.seen_at_5["custom/text"] == "not a number"
    assert callback.log_dir == logger.log_dir
    rows = csv_rows(logger)
    explicit = [r for r in rows if r["step"] == "12345"]
    assert len(explicit) == 1 and float(explicit[0]["custom/n_calls"]) == 5
    # Later records join the algorithm's own rows (every 25 env steps and at the end): the last value wins.
    periodic = [r for r in rows if r.get("train/n_updates")]
    assert [int(r["step"]) for r in periodic] == [25, 50, 60]
    assert [float(r["custom/n_calls"]) for r in periodic] == [25, 50, 60]
    assert all(r["custom/mean_reward"] for r in periodic)
    assert all(not r.get("custom/not_in_csv") and not r.get("custom/text") for r in rows)
    # SB3's test_run reads the last training values after learn()
    assert model.logger.name_to_value["train/n_updates"] == model._n_updates > 0


def test_record_mean_matches_stable_baselines3_logger():
    from stable_baselines3.common.logger import Logger

    ours, ref = TD3("MlpPolicy", **small()).logger, Logger(folder=None, output_formats=[])
    for value in (1.0, 2.0, 6.0, None):
        ours.record_mean("x", value)
        ref.record_mean("x", value)
    ours.record("y", 3)
    ref.record("y", 3)
    assert ours.name_to_value == ref.name_to_value and ours.name_to_count == ref.name_to_count


def test_checkpoint_callback_writes_sb3_file_names_and_vecnormalize(tmp_path):
    """SB3's test_checkpoint_additional_info, side by side: the same files, loadable by each library."""

    def env():
        return VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]))

    options = {"save_freq": 200, "save_replay_buffer": True, "save_vecnormalize": True}
    ref_callback = SB3CheckpointCallback(save_path=tmp_path / "sb3", **options)
    sb3.DQN("MlpPolicy", env(), learning_starts=100, buffer_size=500, seed=0).learn(200, callback=ref_callback)
    ours = DQN("MlpPolicy", env(), **small(learning_starts=100))
    ours.learn(200, callback=CheckpointCallback(save_path=tmp_path / "ours", **options))
    names = sorted(p.name for p in (tmp_path / "ours").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "sb3").iterdir())
    assert names == [
        "rl_model_200_steps.zip",
        "rl_model_replay_buffer_200_steps.pkl",
        "rl_model_vecnormalize_200_steps.pkl",
    ]
    model = DQN.load(tmp_path / "ours" / "rl_model_200_steps.zip", device="cpu")
    model.load_replay_buffer(tmp_path / "ours" / "rl_model_replay_buffer_200_steps.pkl")
    stats_file = str(tmp_path / "ours" / "rl_model_vecnormalize_200_steps.pkl")
    stats = VecNormalize.load(stats_file, DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    assert model.num_timesteps == 200 and stats.obs_rms.count > 200


def test_eval_callback_warns_only_without_monitor_unless_warn_false():
    bare = DummyVecEnv([lambda: gym.make("Pendulum-v1")])
    model = TD3("MlpPolicy", "Pendulum-v1", **small())
    with pytest.warns(UserWarning, match="not wrapped with a ``Monitor`` wrapper"):
        EvalCallback(bare, eval_freq=1000).init_callback(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        EvalCallback(DummyVecEnv([lambda: gym.make("Pendulum-v1")]), eval_freq=1000, warn=False).init_callback(model)
        EvalCallback(make_vec_env("Pendulum-v1", n_envs=1), eval_freq=1000).init_callback(model)


def test_stop_on_max_episodes_and_log_every_n_timesteps(tmp_path):
    logger = CSVLogger(tmp_path, name="run")
    venv = make_vec_env("Pendulum-v1", n_envs=2, seed=0, env_kwargs={"max_episode_steps": 10})
    stop = StopTrainingOnMaxEpisodes(max_episodes=2)
    model = TD3("MlpPolicy", venv, **small()).learn(1000, callback=[stop, LogEveryNTimesteps(n_steps=8)], logger=logger)
    assert model.num_timesteps == 40 and stop.n_episodes == 4  # two 10-step episodes per env
    steps = sorted({int(r["step"]) for r in csv_rows(logger) if r.get("time/fps")})
    assert steps[:4] == [8, 16, 24, 32]


class AlternatingSuccess(gym.Wrapper):
    """Every other episode reports info["is_success"]=True at its last step."""

    episodes = 0

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info["is_success"] = AlternatingSuccess.episodes % 2 == 0
            AlternatingSuccess.episodes += 1
        return obs, reward, terminated, truncated, info


def test_eval_callback_records_is_success_as_sb3(tmp_path):
    AlternatingSuccess.episodes = 0
    eval_env = AlternatingSuccess(gym.make("Pendulum-v1", max_episode_steps=5))
    logger = CSVLogger(tmp_path, name="run")
    callback = EvalCallback(eval_env, n_eval_episodes=4, eval_freq=30, log_path=tmp_path, verbose=0)
    TD3("MlpPolicy", "Pendulum-v1", **small()).learn(30, callback=callback, logger=logger)
    assert callback._is_success_buffer == [True, False, True, False]
    assert np.load(tmp_path / "evaluations.npz")["successes"].tolist() == [[True, False, True, False]]
    row = next(r for r in csv_rows(logger) if r.get("eval/success_rate"))
    assert float(row["eval/success_rate"]) == 0.5 and float(row["eval/mean_ep_length"]) == 5


class EpisodeInfoCallback(BaseCallback):
    """The usual SB3 pattern: read episode ends from self.locals["infos"] (a list of per-env dicts)."""

    def _init_callback(self) -> None:
        self.ends = []

    def _on_step(self) -> bool:
        for done, info in zip(self.locals["dones"], self.locals["infos"], strict=True):
            if done:
                self.ends.append((self.num_timesteps, sorted(info), info["TimeLimit.truncated"],
                                  float(info["episode"]["r"]), int(info["episode"]["l"]),
                                  info["terminal_observation"].copy()))  # fmt: skip
        return True


def test_callback_locals_infos_are_sb3s_per_env_dicts_side_by_side():
    from stable_baselines3.common.callbacks import BaseCallback as SB3BaseCallback

    class SB3EpisodeInfoCallback(SB3BaseCallback):
        _init_callback = EpisodeInfoCallback._init_callback
        _on_step = EpisodeInfoCallback._on_step

    kwargs = {"learning_starts": 1000, "seed": 0, "policy_kwargs": {"net_arch": [8]}}
    ours, ref = EpisodeInfoCallback(), SB3EpisodeInfoCallback()
    TD3("MlpPolicy", gym.make("Pendulum-v1", max_episode_steps=10), **kwargs).learn(30, callback=ours)
    sb3.TD3("MlpPolicy", gym.make("Pendulum-v1", max_episode_steps=10), device="cpu", **kwargs).learn(30, callback=ref)
    assert [e[:3] + (e[4],) for e in ours.ends] == [e[:3] + (e[4],) for e in ref.ends]
    assert [e[1] for e in ours.ends] == [["TimeLimit.truncated", "episode", "terminal_observation"]] * 3
    # same seed, same warm-up actions: the same episodes (SB3 steps with unscale(scale(a)), hence the tolerance)
    np.testing.assert_allclose([e[3] for e in ours.ends], [e[3] for e in ref.ends], rtol=1e-4)
    np.testing.assert_allclose(np.stack([e[5] for e in ours.ends]), np.stack([e[5] for e in ref.ends]), atol=1e-5)
