"""Goal-conditioned robotics: gymnasium-robotics' Fetch tasks with HER from the launcher and the Python API."""

from __future__ import annotations

import math
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("gymnasium_robotics")

import lit_rl.envs.robotics  # noqa: E402,F401  (registers the Fetch ids, working with MuJoCo 4)
from lit_rl import SAC, HerReplayBuffer  # noqa: E402
from tests.helpers import ROOT, read_csv_rows, read_summary, run_launcher  # noqa: E402
from tests.integration.test_compose import compose_train  # noqa: E402
from tests.integration.test_presets import select  # noqa: E402

# 3 episodes of 50 steps; 50 env steps (and updates) after learning_starts; one evaluation at the end.
SMOKE = ("trainer=smoke", "total_timesteps=150", "env.max_episode_steps=50", "eval.freq=150", "log_freq=50")
FETCH_HER = ("env=FetchReach-v4", "buffer=her")

# (preset, env, algorithm class, {dotted key: zoo value}): rl-baselines3-zoo hyperparams/tqc.yml, commit
# 208b6fdf3a9aa24de44b2e068c6e5f6a07d97fcc, "=== HER Robotics GoalEnvs ===" (FetchReach-v1, FetchPush-v1).
HER_PRESETS = {
    "her_fetchreach": (
        "FetchReach-v4",
        {
            "total_timesteps": 20_000,
            "algo.learning_rate": 1e-3,
            "algo.learning_starts": 1000,
            "algo.batch_size": 256,
            "algo.gamma": 0.95,
            "algo.ent_coef": "auto",
            "algo.policy_kwargs.net_arch.pi": [64, 64],
            "algo.policy_kwargs.net_arch.qf": [64, 64],
            "algo.policy_kwargs.n_critics": 1,
            "buffer.buffer_size": 1_000_000,
            "buffer.n_sampled_goal": 4,
            "buffer.goal_selection_strategy": "future",
        },
    ),
    "her_fetchpush": (
        "FetchPush-v4",
        {
            "total_timesteps": 1_000_000,
            "algo.learning_rate": 1e-3,
            "algo.batch_size": 2048,
            "algo.gamma": 0.95,
            "algo.tau": 0.05,
            "algo.policy_kwargs.net_arch.pi": [512, 512, 512],
            "algo.policy_kwargs.net_arch.qf": [512, 512, 512],
            "algo.policy_kwargs.n_critics": 2,
            "buffer.buffer_size": 1_000_000,
            "buffer.n_sampled_goal": 4,
            "buffer.goal_selection_strategy": "future",
        },
    ),
}


@pytest.mark.parametrize("algo", ["sac", "tqc", "crossq"])
def test_launcher_trains_on_fetch_reach_with_her(tmp_path, algo):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, f"algo={algo}", *FETCH_HER, *SMOKE, fresh=True)  # its import-time notices
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    assert summary["status"] == "completed" and summary["env"] == "FetchReach-v4" and summary["env_steps"] == 150
    assert -50 <= summary["final_eval_return"] <= 0  # sparse reward: -1 per step until the goal is reached
    rows = [r for r in read_csv_rows(run_dir / "metrics.csv") if r.get("rollout/success_rate")]
    assert rows and all(0.0 <= float(r["rollout/success_rate"]) <= 1.0 for r in rows)
    assert max(float(r["train/n_updates"] or 0) for r in rows) >= 50  # HER batches were sampled and trained on
    output = proc.stdout + proc.stderr
    assert "AdroitHand" not in output and "Warning" not in output  # gymnasium-robotics' notice stays off screen


class EpisodeSuccesses(gym.Wrapper):
    """Records ``info["is_success"]`` at every episode end, as the env reports it."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.successes: list[bool] = []

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if terminated or truncated:
            self.successes.append(bool(info["is_success"]))
        return obs, reward, terminated, truncated, info


def test_fetch_is_success_reaches_the_success_rate():
    env = EpisodeSuccesses(gym.make("FetchReach-v4", max_episode_steps=10))
    env.unwrapped.distance_threshold = 0.2  # 20 cm instead of 5: random reaching succeeds in some episodes only
    model = SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, learning_starts=10_000,
                buffer_size=1000, policy_kwargs={"net_arch": [8]}, seed=0)  # fmt: skip
    model.learn(400)  # 40 episodes of random reaching
    assert len(env.successes) == 40 and 0 < sum(env.successes) < 40
    assert list(model.ep_success_buffer) == env.successes
    # Logged after the 40th episode (log_interval=4), over the last 100 episodes: all 40.
    assert model.logger.name_to_value["rollout/success_rate"] == pytest.approx(np.mean(env.successes))


@pytest.mark.parametrize("preset", list(HER_PRESETS))
def test_her_preset_gives_the_zoo_values(preset):
    env_id, values = HER_PRESETS[preset]
    cfg = compose_train(f"experiment={preset}", f"env={env_id}")
    assert cfg.algo._target_ == "lit_rl.algorithms.TQC" and cfg.buffer._target_ == "lit_rl.buffers.HerReplayBuffer"
    assert cfg.env.id == env_id
    for key, value in values.items():
        assert select(cfg, key) == value, key


def test_her_preset_runs_at_smoke_size(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, "experiment=her_fetchpush", "env=FetchPickAndPlace-v4", *SMOKE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    assert summary["status"] == "completed" and summary["env"] == "FetchPickAndPlace-v4"
    assert math.isfinite(summary["final_eval_return"])


def test_her_on_an_env_without_goals_names_the_env_and_what_is_needed(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, "algo=sac", "env=Pendulum-v1", "buffer=her", "trainer=smoke", timeout=120)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    for words in ["Pendulum-v1", "buffer=her", "observation", "achieved_goal", "desired_goal", "compute_reward",
                  "Box(", "FetchReach-v4", "buffer=replay"]:  # fmt: skip
        assert words in output, output[-3000:]
    assert not (run_dir / "summary.json").exists() and not (run_dir / "checkpoints").exists()


def test_her_on_a_dict_env_without_goal_keys_names_the_missing_keys():
    env = gym.vector.SyncVectorEnv(
        [lambda: gym.wrappers.TransformObservation(
            gym.make("Pendulum-v1"), lambda o: {"observation": o},
            gym.spaces.Dict({"observation": gym.make("Pendulum-v1").observation_space}),
        )],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"Pendulum-v1 has a Dict observation space without the keys "
                                         r"\['achieved_goal', 'desired_goal'\]"):  # fmt: skip
        SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, buffer_size=100)


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=180)


def test_missing_gymnasium_robotics_says_what_to_install():
    # None in sys.modules makes `import gymnasium_robotics` fail as it does where the package is not installed.
    proc = run_python(
        "import sys; sys.modules['gymnasium_robotics'] = None\n"
        "from lit_rl.envs import make_vec_env\n"
        "make_vec_env('FetchReach-v4')\n"
    )
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: env.id='FetchReach-v4' needs the package 'gymnasium-robotics'"), last
    assert "pip install gymnasium-robotics" in last and "pip install 'lit_rl[envs]'" in last


def test_fetch_works_when_the_user_imported_gymnasium_robotics_first():
    proc = run_python(
        "import gymnasium_robotics\n"  # registers the ids without lit_rl's MuJoCo 4 fix
        "from lit_rl.envs import make_vec_env\n"
        "env = make_vec_env('FetchReach-v4', n_envs=2)\n"
        "obs, _ = env.reset(seed=0)\n"
        "print(obs['desired_goal'].shape)\n"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "(2, 3)"
