"""TQC learns Pendulum-v1 within 5,000 steps, on two seeds (slow, runs in CI).

A random policy scores about -1200 to -1500 on Pendulum-v1; a learned swing-up
scores above -250. The threshold -400 is far above anything without learning.
Small networks (64, 64) and 10 quantiles keep both runs at about 80 s of CPU together.
"""

from __future__ import annotations

import csv

import pytest

from tests.helpers import read_summary, run_launcher

THRESHOLD = -400.0
SEEDS = [0, 1]


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_tqc_small_networks_solve_pendulum(tmp_path, seed):
    run_dir = tmp_path / f"seed{seed}"
    proc = run_launcher(
        run_dir,
        "algo=tqc",
        "env=Pendulum-v1",
        f"seed={seed}",
        "total_timesteps=5000",
        "algo.learning_rate=1e-3",
        "algo.policy_kwargs.net_arch.pi=[64,64]",
        "algo.policy_kwargs.net_arch.qf=[64,64]",
        "algo.policy_kwargs.n_quantiles=10",
        "eval.freq=1000",
        "eval.episodes=10",
        timeout=None,  # CI's own limit applies; a wall-clock limit here only fails loaded machines
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    with open(run_dir / "metrics.csv") as f:
        curve = [
            (int(r["step"]), round(float(r["eval/mean_reward"]), 1)) for r in csv.DictReader(f) if r["eval/mean_reward"]
        ]
    print(f"seed {seed}: eval curve {curve}, learning-phase fps {summary['learning_phase_fps']:.1f}")
    assert summary["final_eval_return"] > THRESHOLD, curve
