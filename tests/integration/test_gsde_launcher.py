"""gSDE end to end through ``python -m lit_rl.train``: smoke runs, resume, and bad input."""

from __future__ import annotations

import pytest
import torch

from tests.helpers import read_summary, run_launcher


@pytest.mark.parametrize("algo", ["sac", "crossq"])
def test_smoke_run_with_gsde(tmp_path, algo):
    run_dir = tmp_path / "run"
    proc = run_launcher(
        run_dir, "trainer=smoke", f"algo={algo}", "env=Pendulum-v1", "algo.use_sde=true", "algo.sde_sample_freq=4"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    assert summary["status"] == "completed" and summary["env_steps"] == 300
    assert summary["final_eval_return"] is not None
    header = (run_dir / "metrics.csv").read_text().splitlines()[0].split(",")
    assert "train/actor_loss" in header and "eval/mean_reward" in header
    # The learned gSDE noise scale is saved with the model and has moved from its initial value.
    state = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    log_std = state["policy.actor.action_dist.log_std"]
    assert log_std.shape == (32, 1) and not torch.allclose(log_std, torch.full_like(log_std, -3.0))
    assert "actor.log_std.weight" not in state  # no unstructured-noise head in gSDE mode


def test_gsde_run_resumes_from_its_checkpoint(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    common = ("trainer=smoke", "algo=crossq", "env=Pendulum-v1", "algo.use_sde=true")
    assert run_launcher(first, *common).returncode == 0
    proc = run_launcher(second, *common, "total_timesteps=500", f"ckpt_path={first}/checkpoints/last.ckpt")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_summary(second)["env_steps"] == 500


BAD_INPUTS = [
    # (overrides, words the error must contain)
    (["algo=td3", "algo.use_sde=true"], ["use_sde"]),
    (["algo=dqn", "env=CartPole-v1", "algo.use_sde=true"], ["use_sde"]),
    (["algo=sac", "algo.sde_sample_freq=0"], ["sde_sample_freq=0", "-1"]),
    (["algo=crossq", "algo.use_sde=true", "algo.policy_kwargs.clip_mean=-1"], ["clip_mean=-1"]),
]


@pytest.mark.parametrize(("overrides", "words"), BAD_INPUTS, ids=[" ".join(o) for o, _ in BAD_INPUTS])
def test_bad_gsde_input_fails_early_with_a_clear_error(tmp_path, overrides, words):
    run_dir = tmp_path / "run"
    proc = run_launcher(run_dir, "trainer=smoke", "env=Pendulum-v1", *overrides, timeout=120)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    for word in words:
        assert word in output, output[-3000:]
    assert not (run_dir / "summary.json").exists()
