"""SAC with gSDE learns Pendulum-v1 through the Python API in 5,000 steps (slow, runs in CI).

A random policy scores about -1200 to -1500 on Pendulum-v1; a learned
swing-up about -150 to -250; the threshold -400 is far above anything without
learning. Same small, fast settings as the unstructured-noise SAC test
(``test_sac_td3_ddpg_learn.py``), with ``use_sde=True`` and SB3's gSDE defaults
(log_std_init -3, full_std, no expln, clip_mean 2, resampling at each rollout start).
"""

from __future__ import annotations

import lightning as L
import pytest
import torch

from lit_rl import SAC
from lit_rl.callbacks import evaluate_episodes
from lit_rl.envs import make_vec_env

THRESHOLD = -400.0
SEEDS = [0, 1, 2]
TOTAL_TIMESTEPS = 5000
KWARGS = {
    "batch_size": 128,
    "gamma": 0.98,
    "tau": 0.02,
    "learning_rate": 1e-3,
    "steps_per_batch": 10,
    "learning_starts": 500,
    "ent_coef": "auto_0.1",
    "policy_kwargs": {"net_arch": [64, 64]},
    "use_sde": True,
}


@pytest.fixture
def one_torch_thread():
    """Tiny networks gain nothing from intra-op threads; on two shared cores they only contend."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_sac_with_gsde_solves_pendulum(seed, one_torch_thread):
    L.seed_everything(seed, verbose=False)  # network initialisation; `seed` covers envs, buffer and noise
    model = SAC("MlpPolicy", seed=seed, **KWARGS).learn(TOTAL_TIMESTEPS, env="Pendulum-v1")
    log_std = model.actor.action_dist.log_std.detach()
    assert not torch.allclose(log_std, torch.full_like(log_std, -3.0))  # the noise scale was learned
    eval_env = make_vec_env("Pendulum-v1", 1, seed=1000 + seed)
    returns, _ = evaluate_episodes(lambda obs: model.predict(obs, deterministic=True)[0], eval_env, 10, seed=1000 + seed)
    eval_env.close()
    print(f"sac+gSDE seed {seed}: mean return {returns.mean():.1f} over 10 episodes after {TOTAL_TIMESTEPS} steps")
    assert returns.mean() > THRESHOLD, (seed, returns.mean(), returns)
