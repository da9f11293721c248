"""What a user's terminal shows: only lit_rl's own lines, from ``learn()`` at any verbosity and from the launcher.

Runs are real subprocesses with ``-W default`` (the warnings a user's ``python`` shows; pytest's
own warning filters would hide deprecations), and every line of stdout and stderr must match one
of lit_rl's line patterns.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

# SB3's log table: dashes, a tag row, an indented key row.
TABLE_LINE = re.compile(r"^(-{10,}|\| [a-z_]+/ +\| +\||\| {4}[a-z_]+ +\| \S+ *\|)$")
# What lit_rl itself writes from learn(): SB3's construction lines and the table.
LEARN_LINES = (
    re.compile(r"^Using (cpu|cuda(:\d+)?) device$"),
    re.compile(r"^Creating environment from the given name 'Pendulum-v1'$"),
    TABLE_LINE,
)
# The launcher's console: the job logging format with lit_rl's loggers only.
LAUNCHER_LINES = (re.compile(r"^\[[\d\- :,]+\]\[lit_rl(\.[\w.]+)?\]\[(INFO|WARNING)\] - "),)

LEARN_SCRIPT = """
import sys
from lit_rl import SAC

model = SAC("MlpPolicy", "Pendulum-v1", verbose=int(sys.argv[1]), learning_starts=100, seed=0,
            policy_kwargs=dict(net_arch=[16]), device="cpu")
model.learn(800, log_interval=2)
"""


def user_env(tmp_path: Path, fake_srun: bool) -> dict[str, str]:
    """The environment of a user's shell, outside any SLURM job; ``fake_srun`` puts an ``srun`` first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PYTHONWARNINGS"))}
    env.update(WANDB_MODE="offline", OMP_NUM_THREADS="1")
    if fake_srun:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        srun = bin_dir / "srun"
        srun.write_text("#!/bin/sh\nexit 0\n")
        srun.chmod(0o755)
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def foreign_lines(text: str, allowed: tuple[re.Pattern[str], ...]) -> list[str]:
    """The non-empty lines of ``text`` that no pattern of ``allowed`` matches: lines lit_rl did not write."""
    return [line for line in text.splitlines() if line.strip() and not any(p.search(line) for p in allowed)]


def run_learn(tmp_path: Path, verbose: int, fake_srun: bool = False) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-W", "default", "-c", LEARN_SCRIPT, str(verbose)]
    env = user_env(tmp_path, fake_srun)
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def table_rows(stdout: str) -> list[dict[str, str]]:
    """SB3's tables in ``stdout`` as ``{"tag/key": value}`` dicts, one per table."""
    tables, tag, current = [], "", None
    for line in stdout.splitlines():
        if line.startswith("---"):
            if current:  # a closing line
                tables.append(current)
                current = None
            else:
                current = {}
            continue
        if current is None or not line.startswith("|"):
            continue
        key, value = (cell.strip() for cell in line.strip("|").split("|"))
        if key.endswith("/"):
            tag = key
        else:
            current[tag + key] = value
    return tables


def test_learn_at_verbose_0_prints_nothing(tmp_path):
    proc = run_learn(tmp_path, verbose=0)
    assert proc.stdout == "" and proc.stderr == ""


MUJOCO_SCRIPT = """
import logging
import lit_rl

records = []
logging.getLogger("lit_rl").addHandler(type("H", (logging.Handler,), {"emit": lambda self, r: records.append(r)})())
logging.getLogger("lit_rl").setLevel(logging.DEBUG)
for env_id in ("HalfCheetah-v4", "Hopper-v4"):
    model = lit_rl.TD3("MlpPolicy", env_id, learning_starts=20, batch_size=8, policy_kwargs=dict(net_arch=[8]))
    model.learn(30)
print("lit_rl log:", sorted({r.getMessage().split(":")[0] for r in records if "MuJoCo" in r.getMessage()}))
"""


def test_mujoco_v4_envs_print_no_deprecation_notices(tmp_path):
    # gymnasium's "HalfCheetah-v4 is out of date" and MuJoCo's C-level "WARNING: compiler attribute 'settotalmass'
    # is deprecated" (printed by MuJoCo >= 3.3 while loading the v4 XML) are not the user's run's business.
    cmd = [sys.executable, "-W", "default", "-c", MUJOCO_SCRIPT]
    proc = subprocess.run(cmd, cwd=tmp_path, env=user_env(tmp_path, False), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr == ""
    # MuJoCo's notice is in lit_rl's debug log instead (Hopper's XML has no such attribute).
    assert proc.stdout.splitlines() == ["lit_rl log: ['MuJoCo (env HalfCheetah-v4)']"]


@pytest.mark.parametrize("verbose", [1, 2])
def test_learn_verbose_prints_sb3_lines_and_nothing_else(tmp_path, verbose):
    proc = run_learn(tmp_path, verbose)
    assert foreign_lines(proc.stdout + proc.stderr, LEARN_LINES) == []
    assert proc.stderr == ""
    assert proc.stdout.splitlines()[:2] == [
        "Using cpu device",
        "Creating environment from the given name 'Pendulum-v1'",
    ]
    tables = table_rows(proc.stdout)
    # Pendulum's episodes are 200 steps: 4 episodes in 800 steps, a table every 2 (SB3's log_interval).
    assert [t["time/episodes"] for t in tables] == ["2", "4"]
    assert [t["time/total_timesteps"] for t in tables] == ["400", "800"]
    expected = {"rollout/ep_len_mean", "rollout/ep_rew_mean", "time/fps", "time/time_elapsed", "train/actor_loss",
                "train/critic_loss", "train/ent_coef", "train/ent_coef_loss", "train/learning_rate", "train/n_updates"}  # fmt: skip
    assert expected <= set(tables[0])
    assert tables[0]["rollout/ep_len_mean"] == "200" and tables[0]["train/learning_rate"] == "0.0003"


def test_learn_with_srun_on_path_prints_no_slurm_hint(tmp_path):
    proc = run_learn(tmp_path, verbose=1, fake_srun=True)
    assert "srun" not in proc.stdout + proc.stderr
    assert foreign_lines(proc.stdout + proc.stderr, LEARN_LINES) == []


def run_smoke_launcher(tmp_path: Path, fake_srun: bool = False) -> tuple[subprocess.CompletedProcess, Path]:
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-W", "default", "-m", "lit_rl.train", "trainer=smoke", "algo=sac", "env=Pendulum-v1",
           f"hydra.run.dir={run_dir}", "trainer.enable_progress_bar=false"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, env=user_env(tmp_path, fake_srun), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, run_dir


@pytest.mark.parametrize("fake_srun", [False, True], ids=["plain", "srun-on-path"])
def test_launcher_console_shows_only_lit_rl_lines(tmp_path, fake_srun):
    proc, run_dir = run_smoke_launcher(tmp_path, fake_srun)
    console = proc.stdout + proc.stderr
    assert foreign_lines(console, LAUNCHER_LINES) == []
    assert "Run completed" in console and "srun" not in console
    log = (run_dir / "train.log").read_text()
    assert "GPU available: False" in log  # Lightning's device lines are kept, in the run's log only
    assert "Tip:" not in log and "srun" not in log
