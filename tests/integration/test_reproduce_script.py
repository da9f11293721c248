"""scripts/reproduce.py: the published CrossQ protocol's command, and its smoke prefix end to end."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys

import pytest

from lit_rl.launcher.run_records import find_runs
from tests.helpers import ROOT

SCRIPT = ROOT / "scripts" / "reproduce.py"
ENVS = ["HalfCheetah-v4", "Walker2d-v4", "Hopper-v4", "Ant-v4"]


def load_reproduce():
    spec = importlib.util.spec_from_file_location("reproduce", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_protocol_is_crossq_on_four_envs_1m_steps_10_seeds_eval_every_10k(tmp_path):
    reproduce = load_reproduce()
    cmd = reproduce.sweep_command(reproduce.parse_args(["--jobs", "4", "--", "trainer=gpu"]), tmp_path)
    assert cmd[1:4] == ["-m", "lit_rl.train", "-m"]
    for override in ("algo=crossq", "experiment=crossq_mujoco", f"env={','.join(ENVS)}", "seed=0,1,2,3,4,5,6,7,8,9", "total_timesteps=1000000",
                     "eval.freq=10000", "eval.episodes=10", f"hydra.sweep.dir={tmp_path}", "hydra/launcher=joblib",
                     "hydra.launcher.n_jobs=4", "trainer=gpu"):  # fmt: skip
        assert override in cmd
    assert "trainer=smoke" not in cmd
    assert reproduce.PUBLISHED == {"HalfCheetah-v4": 12900, "Hopper-v4": 2500, "Walker2d-v4": 6300, "Ant-v4": 7000}


def test_bad_options_are_refused_naming_them(capsys):
    reproduce = load_reproduce()
    for argv, message in ((["--envs", "Humanoid-v4"], "--envs: ['Humanoid-v4'] not allowed"),
                          (["--seeds", "0"], "--seeds=0 is not allowed; allowed: >= 1")):  # fmt: skip
        with pytest.raises(SystemExit):
            reproduce.parse_args(argv)
        assert message in capsys.readouterr().err


def test_smoke_prefix_runs_end_to_end_and_writes_plot_and_table(tmp_path):
    out = tmp_path / "repro"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--steps", "400", "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "experiment=crossq_mujoco trainer=smoke" in proc.stdout and "total_timesteps=400" in proc.stdout
    with open(out / "reproduce.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["env"] for r in rows] == ENVS
    for r in rows:
        assert r["runs"] == "1" and r["env_steps"] == "400"
        assert float(r["ratio"]) == pytest.approx(float(r["iqm"]) / float(r["published"]))
    assert {r["env"]: float(r["published"]) for r in rows}["Ant-v4"] == 7000
    markdown = (out / "reproduce.md").read_text()
    table_envs = [line.split(" | ")[0][2:] for line in markdown.splitlines() if line.startswith("| ")][1:]
    assert table_envs == ENVS and "SimbaV2" in markdown and "Smoke prefix" in markdown
    png = (out / "learning_curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    # One job per env in the sweep folder, each with 4 evaluations (every 100 steps).
    runs = find_runs([out / "sweep"])
    assert sorted(r.label.split()[1] for r in runs) == sorted(ENVS)
    assert all(list(r.steps) == [100, 200, 300, 400] for r in runs)
    # The report can be rebuilt from the sweep folder alone.
    rebuilt = subprocess.run([sys.executable, str(SCRIPT), "--report", str(out / "sweep"), "--out", str(tmp_path / "again")],
                             capture_output=True, text=True, cwd=ROOT, timeout=300)  # fmt: skip
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (tmp_path / "again" / "reproduce.csv").read_text().splitlines()[1:] == (
        out / "reproduce.csv"
    ).read_text().splitlines()[1:]
