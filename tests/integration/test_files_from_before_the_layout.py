"""Model files and a launcher checkpoint written by lit_rl before the package layout (commit a86ae95's code, in
tests/fixtures/before_layout/) still load, and the checkpoint resumes to the same result that code reached."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from lit_rl import DQN, SAC
from tests.helpers import read_summary, run_launcher

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "before_layout"


def test_model_files_load_and_act_as_before():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # nothing in them names a moved module
        sac, dqn = SAC.load(FIXTURES / "sac_pendulum.zip"), DQN.load(FIXTURES / "dqn_cartpole.zip")
    action, _ = sac.predict(np.zeros(3, dtype=np.float32), deterministic=True)
    assert action.tolist() == [np.float32(-0.13917696475982666)]  # what the old code predicted
    assert (sac.num_timesteps, dqn.num_timesteps, dqn.exploration_rate) == (300, 200, 1.0)
    assert sac.replay_buffer is not None and sac.replay_buffer.size() == 0


def test_a_launcher_checkpoint_resumes_to_the_result_the_old_code_reached(tmp_path):
    run_dir = tmp_path / "run"
    ckpt = FIXTURES / "sac_pendulum_launcher_last.ckpt"
    proc = run_launcher(run_dir, "trainer=smoke", "algo=sac", "env=Pendulum-v1", f"ckpt_path={ckpt}",
                        "total_timesteps=500")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = read_summary(run_dir)
    # The old code, resumed from this checkpoint to 500 env steps: final eval return -798.766390378298 and
    # parameters summing to 157.13322070098297. Exact resume restores RNGs, env, buffer and optimizers, so on the
    # CPU that wrote these numbers the result is bitwise equal; another CPU model's matmul kernels round
    # differently (seen: -798.766391151151), hence a float32-rounding tolerance, far below any change of behaviour.
    assert summary["status"] == "completed"
    assert summary["final_eval_return"] == pytest.approx(-798.766390378298, rel=1e-6, abs=0)
    state = torch.load(run_dir / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    assert float(sum(v.double().sum() for v in state.values() if v.is_floating_point())) == pytest.approx(
        157.13322070098297, rel=1e-6, abs=0
    )
