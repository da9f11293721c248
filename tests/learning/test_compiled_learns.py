"""The compiled update (``trainer.compile=true`` / ``compile=True``) learns as the eager one does (slow, runs in CI).

Same runs and thresholds as ``test_crossq_learns.py`` and ``test_sac_td3_ddpg_learn.py`` (a random policy scores
about -1200 to -1500 on Pendulum-v1; -400 is far above anything without learning), with every loss and the acting
network under ``torch.compile``; the run must also report no recompilation after the first steps.
"""

from __future__ import annotations

import lightning as L
import pytest
import torch

from lit_rl import SAC
from lit_rl.callbacks import evaluate_policy
from lit_rl.core.compiled import compile_stats
from lit_rl.envs import make_vec_env
from tests.helpers import read_summary, run_launcher
from tests.learning.test_sac_td3_ddpg_learn import RUNS, THRESHOLD


@pytest.mark.slow
def test_compiled_crossq_solves_pendulum_through_the_launcher(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_launcher(
        run_dir, "algo=crossq", "env=Pendulum-v1", "seed=0", "total_timesteps=4000", "trainer.compile=true",
        "algo.policy_kwargs.net_arch.pi=[128,128]", "algo.policy_kwargs.net_arch.qf=[128,128]",
        "eval.freq=1000", "eval.episodes=10", timeout=None,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (run_dir / "train.log").read_text()
    assert "compiled update:" in log and " 0 recompilations" in log, log[-2000:]
    summary = read_summary(run_dir)
    print(f"compiled crossq seed 0: final eval return {summary['final_eval_return']:.1f}")
    assert summary["final_eval_return"] > THRESHOLD


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_compiled_sac_solves_pendulum(seed):
    _, total_timesteps, kwargs = RUNS["sac"]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny networks: as the eager learning test
    try:
        L.seed_everything(seed, verbose=False)
        model = SAC("MlpPolicy", seed=seed, compile=True, **kwargs).learn(total_timesteps, env="Pendulum-v1")
    finally:
        torch.set_num_threads(threads)
    assert compile_stats(model)["recompilations"] == 0
    eval_env = make_vec_env("Pendulum-v1", 1, seed=1000 + seed)
    returns, _ = evaluate_policy(lambda obs: model.predict(obs, deterministic=True)[0], eval_env, 10, seed=1000 + seed)
    eval_env.close()
    print(f"compiled sac seed {seed}: mean return {returns.mean():.1f} over 10 episodes after {total_timesteps} steps")
    assert returns.mean() > THRESHOLD, returns
