"""scripts/bench.py: a real (tiny) benchmark run writes a complete JSON report; targets and comparisons."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_bench(tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "bench.json"
    cmd = [sys.executable, str(SCRIPT), "--env", "Pendulum-v1", "--algos", "sac", "--warmup", "5", "--steps", "30"]
    cmd += ["--matmul-seconds", "0.05", "--out", str(out), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lit_rl/sac/cpu/n_envs=1" in proc.stdout
    return json.loads(out.read_text()), proc.stdout


def test_bench_measures_trainer_and_bare_loop_and_n_envs(tmp_path):
    report, stdout = run_bench(tmp_path, "--no-sb3", "--vec-envs", "2", "--steps-per-batch", "2")
    rows = {(r["lib"], r["n_envs"]): r for r in report["results"]}
    assert set(rows) == {("lit_rl", 1), ("lit_rl", 2)}
    single = rows[("lit_rl", 1)]
    assert "error" not in single
    assert single["fps"] > 0 and single["fps_bare"] > 0
    assert single["algo_kwargs"] == {"steps_per_batch": 2}
    # The timed parts plus the framework remainder account for the Trainer's wall time.
    assert sum(single["shares"].values()) == pytest.approx(1.0, abs=0.02)
    assert single["shares"]["update"] > 0 and single["shares"]["env"] > 0
    assert single["buffer_bytes_per_transition"] == 3 * 4 * 2 + 1 * 4 + 4 + 4 + 1  # Pendulum: obs 3, action 1
    assert single["update_gflop"] > 0 and single["matmul_gflops_per_s"] > 0
    assert single["peak_rss_mib"] > 0
    assert rows[("lit_rl", 2)]["vectorization"] == "async" and rows[("lit_rl", 2)]["gradient_steps"] == 2
    assert any("n_envs=2 async" in t["target"] for t in report["targets"])
    assert report["meta"]["commit"]
    # A second run compares itself with the first.
    again, stdout = run_bench(tmp_path, "--no-sb3", "--vec-algo", "", "--compare", str(tmp_path / "bench.json"))
    assert "against" in stdout and "lit_rl/sac/cpu/n_envs=1" in stdout.split("against")[1]


def test_bench_measures_stable_baselines3_when_installed(tmp_path):
    pytest.importorskip("stable_baselines3")
    report, _ = run_bench(tmp_path, "--vec-algo", "")
    sb3 = next(r for r in report["results"] if r["lib"] == "sb3")
    assert "error" not in sb3 and sb3["fps"] > 0
    # SB3 keeps Pendulum's float32 observations as float32: 3*4*2 + 4 + 3 * 4 (reward, done, timeout).
    assert sb3["buffer_bytes_per_transition"] == 40
    assert any(t["target"].startswith("sac/cpu: >= 2.0x SB3") for t in report["targets"])


def test_targets_and_time_shares_from_results():
    bench = load_bench()
    shares = bench.time_shares({"collect": 3.0, "act": 1.0, "buffer_add": 0.5, "update": 5.0, "sample": 0.5}, 10.0)
    assert shares == pytest.approx(
        {"update": 0.5, "sample": 0.05, "act": 0.1, "buffer_add": 0.05, "env": 0.15, "framework": 0.15}
    )
    common = {"algo": "sac", "device": "cpu", "n_envs": 1}
    results = [
        {
            **common,
            "lib": "lit_rl",
            "fps": 60.0,
            "lightning_overhead_pct": 1.0,
            "shares": {"framework": 0.015},
            "buffer_bytes_per_transition": 169,
        },
        {**common, "lib": "sb3", "fps": 28.0, "buffer_bytes_per_transition": 308},
        {**common, "lib": "lit_rl", "n_envs": 8, "vectorization": "async", "fps": 50.0},
        {**common, "lib": "sb3", "algo": "td3", "error": "exit 1"},
    ]
    checks = {t["target"]: t["passed"] for t in bench.check_targets(results)}
    assert checks == {
        "sac/cpu: framework share (Lightning + logging) < 2.0% (Trainer/bare: 1.0%)": True,
        "sac/cpu: >= 2.0x SB3 env steps/s": True,
        "sac: buffer bytes/transition <= SB3 (308)": True,
        "sac/cpu: n_envs=8 async faster than n_envs=1": False,
    }


def test_bad_counts_are_refused_naming_the_option():
    bench = load_bench()
    with pytest.raises(ValueError, match="--steps=0"):
        bench.parse_args(["--steps", "0"])
    with pytest.raises(ValueError, match="--algos: 'ppo'"):
        bench.plan(bench.parse_args(["--algos", "ppo", "--no-sb3"]))
