"""Every script of ``examples/`` runs at a smoke size and produces what it says: files, printed results, exit 0.

Each runs as a user runs it, in a subprocess (working folder: the test's tmp dir; the custom-env command from
the repository root, as its README says) with warnings shown (``PYTHONWARNINGS=default``), and its terminal
output may hold no Python warning: a user sees only the example's and lit_rl's own lines.
"""

from __future__ import annotations

import csv
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import ROOT, read_csv_rows, read_summary, run_launcher

EXAMPLES = ROOT / "examples"
TINY_NET = ["--net-arch", "32", "32"]
LAUNCHER_SMOKE = [
    "trainer=smoke",
    "eval.episodes=1",
    "algo.policy_kwargs.net_arch.pi=[32,32]",
    "algo.policy_kwargs.net_arch.qf=[32,32]",
]
WARNING_LINE = re.compile(r"\b\w*Warning\b")  # UserWarning, DeprecationWarning, ... in a printed warning


def run_example(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python <args>`` in ``cwd``; asserts exit status 0 and no Python warning in its output."""
    # A newcomer's shell: no rendering backend chosen (lit_rl chooses one at import).
    user_env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM")}
    full_env = dict(user_env, WANDB_MODE="offline", PYTHONWARNINGS="default", **(env or {}))
    result = subprocess.run([sys.executable, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert not [line for line in output.splitlines() if WARNING_LINE.search(line)], output
    return result


def number_after(text: str, label: str) -> float:
    """The number printed right after ``label`` in ``text``."""
    match = re.search(re.escape(label) + r"\s*(-?\d+(?:\.\d+)?)", text)
    assert match, f"{label!r} not in output:\n{text}"
    return float(match.group(1))


def test_sb3_migrated_trains_saves_loads_and_evaluates(tmp_path):
    out = run_example(
        tmp_path, str(EXAMPLES / "sb3_migrated.py"), "--timesteps", "400", "--out", "sac", "--eval-episodes", "2",
        *TINY_NET,
    ).stdout  # fmt: skip
    sac = tmp_path / "sac"
    assert (sac / "sac_pendulum.zip").is_file()
    assert (sac / "best_model" / "best_model.zip").is_file()
    # CheckpointCallback every 400 // 4 env steps, EvalCallback every 400 // 10
    assert sorted(p.name for p in (sac / "checkpoints").iterdir()) == [
        f"rl_model_{n}_steps.zip" for n in (100, 200, 300, 400)
    ]
    evaluations = np.load(sac / "eval" / "evaluations.npz")
    assert evaluations["timesteps"].tolist() == list(range(40, 401, 40))
    assert number_after(out, "best mean eval return during training:") == pytest.approx(
        evaluations["results"].mean(axis=1).max(), abs=0.051
    )
    assert -2000 < number_after(out, "loaded model: mean return") < 0  # Pendulum's returns over 200 steps
    assert "over 2 episodes" in out
    action = float(re.search(r"action for observation .*: \[\s*(-?[\d.]+)\]", out).group(1))
    assert -2.0 <= action <= 2.0  # Pendulum's torque range


def test_packed_seeds_trains_evaluates_and_saves_every_member(tmp_path):
    out = run_example(
        tmp_path, str(EXAMPLES / "packed_seeds.py"), "--seeds", "2", "--learning-rates", "3e-4", "1e-3",
        "--timesteps", "300", "--out", "packed", *TINY_NET,
    ).stdout  # fmt: skip
    saved = sorted(p.name for p in (tmp_path / "packed").iterdir())
    assert saved == ["sac_seed0_lr0.0003.zip", "sac_seed0_lr0.001.zip", "sac_seed1_lr0.0003.zip",
                     "sac_seed1_lr0.001.zip"]  # fmt: skip
    rows = re.findall(r"^\| (\d) \| ([\d.e-]+) \| (-?[\d.]+) \+- ", out, flags=re.MULTILINE)
    assert [(s, lr) for s, lr, _ in rows] == [("0", "0.0003"), ("0", "0.001"), ("1", "0.0003"), ("1", "0.001")]
    assert all(-2000 < float(mean) < 0 for _, _, mean in rows)  # Pendulum's returns over 200 steps


def test_custom_callback_logs_its_metric_and_stops_training(tmp_path):
    out = run_example(
        tmp_path, str(EXAMPLES / "custom_callback.py"), "--timesteps", "1000", "--stop-return", "-100000",
        "--window", "2", "--out", "cc", *TINY_NET,
    ).stdout  # fmt: skip
    # Any return passes the threshold: training stops when the second 200-step episode ends, not at 1000.
    assert "stopped at env step 400" in out
    assert "trained 400 env steps, 2 episodes" in out
    rows = [
        r for r in read_csv_rows(tmp_path / "cc" / "SAC" / "version_0" / "metrics.csv") if r["custom/mean_abs_action"]
    ]
    assert [int(r["step"]) for r in rows] == [200, 400]
    values = [float(r["custom/mean_abs_action"]) for r in rows]
    assert all(0.0 < v <= 2.0 for v in values)  # |torque| averaged over an episode
    for row, value in zip(rows, values, strict=True):
        assert f"step {row['step']:>6}: {value:.3f}" in out


def readme_command(path: Path) -> list[str]:
    """The one command of the ```bash block of ``path``, ``\\`` continuations joined."""
    block = re.search(r"^```bash\n(.*?)^```", path.read_text(), flags=re.S | re.M).group(1)
    return shlex.split(re.sub(r"\\\n\s*", " ", block))


def test_custom_env_runs_with_the_launcher_as_its_readme_says(tmp_path):
    words = readme_command(EXAMPLES / "custom_env" / "README.md")
    env_vars = dict(w.split("=", 1) for w in words if re.match(r"^[A-Z_]+=", w))
    command = [w for w in words if not re.match(r"^[A-Z_]+=", w)]
    assert command[:3] == ["python", "-m", "lit_rl.train"]
    run_dir = tmp_path / "run"
    overrides = [a for a in command[3:] if not a.startswith("total_timesteps=")]
    run_example(
        ROOT, "-m", "lit_rl.train", *overrides, *LAUNCHER_SMOKE, "total_timesteps=300",
        f"hydra.run.dir={run_dir}", "trainer.enable_progress_bar=false", env=env_vars,
    )  # fmt: skip
    summary = read_summary(run_dir)
    assert summary["status"] == "completed" and summary["env_steps"] == 300
    assert summary["env"] == "my_env:PointTarget-v0"
    # PointTarget's reward is minus a distance (at most 2 * sqrt(2)), episodes at most 100 steps (smoke: 100)
    assert -100 * 2 * np.sqrt(2) <= summary["final_eval_return"] <= 0
    assert (run_dir / "checkpoints" / "best.ckpt").is_file()


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, str]:
    """The sweep of ``sweep_and_summary.py`` at smoke size: its folder and printed output."""
    cwd = tmp_path_factory.mktemp("sweep")
    out = run_example(
        cwd, str(EXAMPLES / "sweep_and_summary.py"), "--timesteps", "200", "--out", "sweep", *LAUNCHER_SMOKE
    ).stdout
    return cwd / "sweep", out


def test_sweep_and_summary_runs_the_sweep_and_picks_the_best_learning_rate(sweep):
    sweep_dir, out = sweep
    jobs = read_csv_rows(sweep_dir / "sweep_summary.csv")
    assert [j["status"] for j in jobs] == ["completed"] * 4
    swept = sorted(o for j in jobs for o in j["overrides"].split() if o.startswith(("seed=", "algo.learning_rate=")))
    assert swept == sorted(["seed=0", "seed=1"] * 2 + ["algo.learning_rate=0.0003", "algo.learning_rate=0.001"] * 2)
    assert "4 jobs, 4 completed, 0 not completed." in out  # sweep_summary.md, printed
    # The best configuration: the highest mean over seeds of the jobs' own final returns (summary.json).
    finals: dict[str, list[float]] = {}
    for job_dir in sorted(p for p in sweep_dir.iterdir() if p.is_dir()):
        overrides = (job_dir / ".hydra" / "overrides.yaml").read_text()
        rate = re.search(r"algo\.learning_rate=([\d.e-]+)", overrides).group(1)
        finals.setdefault(rate, []).append(read_summary(job_dir)["final_eval_return"])
    best_rate, best_mean = max(((r, float(np.mean(v))) for r, v in finals.items()), key=lambda item: item[1])
    assert f"best: algo.learning_rate={best_rate} " in out
    assert number_after(out, "(mean final eval return") == pytest.approx(best_mean, abs=0.051)


def test_her_goal_env_prints_success_rates(tmp_path):
    out = run_example(
        tmp_path, str(EXAMPLES / "her_goal_env.py"), "--bits", "4", "--timesteps", "300", "--episodes", "5", *TINY_NET
    ).stdout
    match = re.search(
        r"4-bit flipping, 5 episodes: success rate (\d+)% before training, (\d+)% after 300 env steps", out
    )
    assert match, out
    # 5 episodes: each rate is a multiple of 20%
    assert all(int(rate) in (0, 20, 40, 60, 80, 100) for rate in match.groups())


def test_load_checkpoint_reproduces_the_launcher_evaluation(tmp_path):
    run_dir = tmp_path / "run"
    launched = run_launcher(run_dir, "algo=sac", "env=Pendulum-v1", *LAUNCHER_SMOKE, "total_timesteps=300")
    assert launched.returncode == 0, launched.stderr
    # Smoke evaluations at env steps 200 and 300 reset with seeds 0 and 1; last.ckpt is the model of the second.
    out = run_example(
        tmp_path, str(EXAMPLES / "load_checkpoint.py"), "--run", "run", "--checkpoint", "last", "--episodes", "1",
        "--seed", "1",
    ).stdout  # fmt: skip
    assert "loaded SAC from run/checkpoints/last.ckpt (trained 300 env steps)" in out
    assert number_after(out, "Pendulum-v1: mean return") == pytest.approx(
        read_summary(run_dir)["final_eval_return"], abs=0.051
    )
    assert "mean length 100 over 1 episodes" in out  # the run's env.max_episode_steps (trainer=smoke)


def test_plot_runs_writes_a_png_of_the_sweep(sweep, tmp_path):
    sweep_dir, _ = sweep
    out = run_example(tmp_path, str(EXAMPLES / "plot_runs.py"), str(sweep_dir), "--out", "plots/runs.png").stdout
    png = tmp_path / "plots" / "runs.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote plots/runs.png (4 runs)" in out
    # One line per job, labelled by what differs between them, ending at the job's final evaluation.
    for job_dir in sorted(p for p in sweep_dir.iterdir() if p.is_dir()):
        with open(job_dir / "metrics.csv", newline="") as f:
            final = [float(r["eval/mean_reward"]) for r in csv.DictReader(f) if r["eval/mean_reward"]][-1]
        assert f"eval/mean_reward = {final:.2f} at env step 200" in out
    assert len(re.findall(r"^algo\.learning_rate=\S+ seed=\d: eval/mean_reward", out, flags=re.M)) == 4
