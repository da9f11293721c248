"""Atari (``env=atari``, ``lit_rl/Atari-v0``) side by side with SB3's ``AtariWrapper`` + ``VecFrameStack(4)``.

Both from the same seeds, stepped with the same random actions: observations (SB3's channels-last frames
transposed), rewards, episode ends and terminal observations are equal at every step, across lives lost and games
over; episode records (whole games, raw scores) equal SB3's ``Monitor``'s, and evaluation reports them.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from lit_rl.callbacks.evaluation import evaluate_episodes
from lit_rl.core.persistence import load_algorithm
from lit_rl.envs import ATARI_ID, make_vec_env
from lit_rl.envs.sb3_view import VecEnvView
from lit_rl.evaluation import evaluate_policy
from lit_rl.launcher.plain import config_dict
from tests.helpers import ROOT, read_csv_rows, read_summary, run_launcher
from tests.integration.test_compose import compose_train
from tests.integration.test_quiet_runs import LAUNCHER_LINES

pytest.importorskip("ale_py")
pytest.importorskip("cv2")
from stable_baselines3.common.env_util import make_atari_env  # noqa: E402  (needs ale_py and cv2)
from stable_baselines3.common.evaluation import evaluate_policy as sb3_evaluate_policy  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import VecFrameStack  # noqa: E402


def sb3_atari(game: str, n_envs: int, seed: int) -> VecFrameStack:
    """SB3's Atari env as rl-baselines3-zoo makes it: Monitor, AtariWrapper's defaults, 4 frames stacked."""
    return VecFrameStack(make_atari_env(f"{game}NoFrameskip-v4", n_envs=n_envs, seed=seed), n_stack=4)


def monitor_of(venv: VecFrameStack, i: int) -> Monitor:
    env = venv.venv.envs[i]
    while not isinstance(env, Monitor):
        env = env.env
    return env


@pytest.mark.parametrize(
    ("game", "overrides", "steps"),
    [
        ("Breakout", ["env.kwargs.game=Breakout"], 3000),
        # The launcher's other way to name a game: an ALE id with env=atari's preprocessing.
        pytest.param(
            "SpaceInvaders",
            ["env.id=SpaceInvadersNoFrameskip-v4", "env.kwargs.game=SpaceInvaders"],
            2500,
            marks=pytest.mark.slow,
        ),
    ],
)
def test_steps_equal_sb3_atari_wrapper_with_frame_stack(game, overrides, steps):
    n_envs, seed = 2, 7
    cfg = compose_train("algo=dqn", "env=atari", *overrides)
    lit = make_vec_env(cfg.env.id, n_envs, env_kwargs=config_dict(cfg.env.kwargs))
    sb3 = sb3_atari(game, n_envs, seed)
    obs, _ = lit.reset(seed=seed)
    assert lit.single_observation_space.shape == (4, 84, 84) and obs.dtype == np.uint8
    assert np.array_equal(obs, sb3.reset().transpose(0, 3, 1, 2))
    rng = np.random.default_rng(seed)
    records: list[list[tuple[float, int]]] = [[] for _ in range(n_envs)]
    lives_lost = 0
    for step in range(steps):
        actions = rng.integers(lit.single_action_space.n, size=n_envs)
        obs, rewards, terminated, truncated, infos = lit.step(actions)
        sb3_obs, sb3_rewards, dones, sb3_infos = sb3.step(actions)
        assert np.array_equal(obs, sb3_obs.transpose(0, 3, 1, 2)), f"observations differ at step {step}"
        assert np.array_equal(rewards, sb3_rewards), f"rewards differ at step {step}"
        assert np.array_equal(terminated | truncated, dones), f"episode ends differ at step {step}"
        recorded = infos.get("_episode", np.zeros(n_envs, dtype=bool))
        for i in np.flatnonzero(dones):
            info = sb3_infos[i]
            assert np.array_equal(infos["final_obs"][i], info["terminal_observation"].transpose(2, 0, 1))
            assert bool(truncated[i] and not terminated[i]) == info["TimeLimit.truncated"]
            assert recorded[i] == ("episode" in info), f"a game over at step {step} in one env only"
            if recorded[i]:  # a game over: its raw score and its length in frames, as Monitor's
                record = (float(infos["episode"]["r"][i]), int(infos["episode"]["l"][i]))
                assert record == (info["episode"]["r"], info["episode"]["l"])
                records[i].append(record)
            else:
                lives_lost += 1
        assert not (recorded & ~dones).any()
    games = sum(len(r) for r in records)
    assert games >= 2 and lives_lost >= 5, (games, lives_lost)
    for i in range(n_envs):  # every game the Monitor saw, in order
        monitor = monitor_of(sb3, i)
        assert records[i] == list(zip(monitor.get_episode_rewards(), monitor.get_episode_lengths(), strict=True))
    # Clipping reaches the agent only: SpaceInvaders' aliens are worth 5 to 30 points each.
    assert game != "SpaceInvaders" or max(r for env_records in records for r, _ in env_records) > 30
    lit.close()
    sb3.close()


class ObsHashPolicy:
    """A deterministic policy of the frames alone (their sum), so both envs get the same actions: SB3's predict."""

    def __init__(self, n_actions: int) -> None:
        self.n_actions = n_actions

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return obs.reshape(len(obs), -1).sum(axis=1, dtype=np.int64) % self.n_actions

    def predict(self, observation, state=None, episode_start=None, deterministic=True):
        frames = observation if observation.shape[1] == 4 else observation.transpose(0, 3, 1, 2)
        return self(frames), None


def test_evaluation_reports_whole_games_with_raw_scores_as_sb3_evaluate_policy():
    seed, episodes = 3, 3
    sb3 = sb3_atari("SpaceInvaders", 1, seed)
    policy = ObsHashPolicy(sb3.action_space.n)
    expected = sb3_evaluate_policy(policy, sb3, n_eval_episodes=episodes, return_episode_rewards=True)
    lit = make_vec_env(ATARI_ID, env_kwargs={"game": "SpaceInvaders"}, record_stats=False)  # the evaluate command's
    returns, lengths = evaluate_episodes(policy, lit, episodes, seed=seed)  # the launcher's periodic evaluation
    assert (returns.tolist(), lengths.tolist()) == expected
    view = VecEnvView(make_vec_env(ATARI_ID, env_kwargs={"game": "SpaceInvaders"}))  # model.get_env()'s kind
    view.seed(seed)
    assert evaluate_policy(policy, view, n_eval_episodes=episodes, return_episode_rewards=True) == expected
    assert min(expected[1]) > 500 and max(expected[0]) > episodes * 30  # whole games in frames, raw scores


def test_bad_game_and_conflicting_id_fail_naming_the_keys():
    with pytest.raises(ValueError) as error:
        make_vec_env(ATARI_ID, env_kwargs={"game": "Breakuot"})
    for words in ("env.kwargs.game='Breakuot'", "did you mean Breakout", "SpaceInvaders", "BreakoutNoFrameskip-v4"):
        assert words in str(error.value)
    with pytest.raises(ValueError, match=r"env.id='PongNoFrameskip-v4' plays Pong but env.kwargs.game='Breakout'"):
        make_vec_env("PongNoFrameskip-v4", env_kwargs={"game": "Breakout", "noop_max": 30})
    with pytest.raises(ValueError, match=r"env.kwargs.frame_stack=0 must be an integer >= 1"):
        make_vec_env(ATARI_ID, env_kwargs={"frame_stack": 0})


def test_ale_py_is_imported_only_when_a_game_is_made():
    code = (
        "import sys, lit_rl, lit_rl.envs, lit_rl.launcher.train\n"
        "from lit_rl.envs import make_vec_env\n"
        "make_vec_env('CartPole-v1')\n"
        "assert 'ale_py' not in sys.modules\n"
        "make_vec_env('lit_rl/Atari-v0').reset(seed=0)\n"
        "assert 'ale_py' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "A.L.E" not in proc.stderr + proc.stdout and "Stella" not in proc.stderr + proc.stdout


def test_dqn_smoke_run_evaluates_whole_games_with_the_raw_score(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(
        run_dir, "algo=dqn", "algo.policy=CnnPolicy", "env=atari", "env.kwargs.game=Breakout", "trainer=smoke",
        "env.max_episode_steps=null", "buffer.buffer_size=1000", "algo.learning_starts=100", fresh=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    output = proc.stdout + proc.stderr
    assert "A.L.E" not in output and "Stella" not in output
    strays = [line for line in output.splitlines() if line.strip() and not any(p.match(line) for p in LAUNCHER_LINES)]
    assert not strays, strays
    summary = read_summary(run_dir)
    assert summary["status"] == "completed" and summary["env_steps"] == 300 and summary["env_name"] == "atari-Breakout"
    evals = [row for row in read_csv_rows(run_dir / "metrics.csv") if row.get("eval/mean_reward")]
    # The last evaluation's game replayed in SB3's env: its seed is the run's seed + the evaluations before it.
    model = load_algorithm(run_dir / "checkpoints" / "last.ckpt", device="cpu")
    sb3 = sb3_atari("Breakout", 1, seed=len(evals) - 1)
    obs, info = sb3.reset(), {}
    while "episode" not in info:
        obs, _, _, (info,) = sb3.step(model.predict(obs.transpose(0, 3, 1, 2), deterministic=True)[0])
    assert summary["final_eval_return"] == info["episode"]["r"]  # the game's score, over all its lives
    assert float(evals[-1]["eval/mean_ep_length"]) == info["episode"]["l"]  # in frames, as SB3's Monitor counts
    sb3.close()
