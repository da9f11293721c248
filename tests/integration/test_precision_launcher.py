"""``trainer.precision`` in the launcher: the algorithm's mixed precision, compiled as one graph; bad values refused."""

from __future__ import annotations

import re

from tests.helpers import read_summary, run_launcher

SMALL = ["trainer=smoke", "env=Pendulum-v1", "total_timesteps=300", "eval.freq=300", "eval.episodes=1"]


def test_bf16_mixed_with_compile_runs_the_whole_step_graph_and_evaluates(tmp_path):
    proc = run_launcher(tmp_path, *SMALL, "algo=sac", "trainer.precision=bf16-mixed", "trainer.compile=true")
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (tmp_path / "train.log").read_text() if (tmp_path / "train.log").exists() else proc.stderr + proc.stdout
    assert "precision=bf16-mixed" in log
    assert "each loss on its own" not in log  # the per-loss fallback would say why here
    summary = read_summary(tmp_path)
    assert summary["env_steps"] == 300 and summary["final_eval_return"] is not None


def test_a_precision_the_algorithms_do_not_offer_is_refused_before_any_env_is_built(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, *SMALL, "algo=td3", "trainer.precision=bf16-true")
    assert proc.returncode != 0
    allowed = "allowed: ['32-true', 'bf16-mixed', '16-mixed', 'auto']"
    assert f"trainer.precision='bf16-true' is not allowed; {allowed}" in proc.stderr
    assert "Traceback" not in proc.stderr and "File " not in proc.stderr
    assert not run_dir.exists()  # refused before Hydra made the run folder


def test_auto_precision_says_what_it_chose_for_the_device(tmp_path):
    proc = run_launcher(tmp_path, *SMALL, "algo=crossq", "trainer.precision=auto")
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (tmp_path / "train.log").read_text()
    assert re.search(r"precision=auto \((32-true|bf16-mixed) on cpu\)", log), log[:2000]
    assert read_summary(tmp_path)["env_steps"] == 300
