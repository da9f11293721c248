"""Each network option (``policy_kwargs.net``) learns Pendulum-v1 within a few thousand steps (slow, runs in CI).

A random policy averages about -1200 on Pendulum-v1; -600 needs a swing-up on most
starts. Small networks and short runs (SAC settings as in test_sac_td3_ddpg_learn.py:
gamma 0.98 and tau 0.02 as in rl-baselines3-zoo's short Pendulum runs) keep the four
runs to a few minutes on two shared CPU cores.
"""

from __future__ import annotations

import lightning as L
import pytest
import torch

from lit_rl import SAC, CrossQ
from lit_rl.callbacks import evaluate_episodes
from lit_rl.envs import make_vec_env

THRESHOLD = -600.0
SEED = 0
SAC_KWARGS = {
    "batch_size": 128,
    "gamma": 0.98,
    "tau": 0.02,
    "learning_rate": 1e-3,
    "steps_per_batch": 10,
    "learning_starts": 500,
    "ent_coef": "auto_0.1",
}
CROSSQ_KWARGS = {"steps_per_batch": 10, "learning_starts": 500}
# name -> (class, total env steps, arguments, policy_kwargs.net_arch, policy_kwargs.net)
RUNS = {
    "droq": (SAC, 3000, {**SAC_KWARGS, "gradient_steps": 2}, [64, 64], {"dropout": 0.01, "layer_norm": True}),
    "simba": (SAC, 3000, SAC_KWARGS, [32, 32], {"residual": True}),
    "weight_norm": (CrossQ, 4000, CROSSQ_KWARGS, [64, 64], {"weight_norm": True}),
    # Pendulum's rewards are in [-16.3, 0]: with gamma 0.99 the Q-values lie in about [-1000, 0].
    "categorical": (CrossQ, 4000, CROSSQ_KWARGS, [64, 64],
                    {"critic_head": "categorical", "n_bins": 51, "v_min": -1000.0, "v_max": 0.0}),
}


@pytest.fixture
def one_torch_thread():
    """Tiny networks gain nothing from intra-op threads; on two shared cores they only contend."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNS))
def test_net_option_solves_pendulum(name, one_torch_thread):
    cls, total_timesteps, kwargs, net_arch, net = RUNS[name]
    L.seed_everything(SEED, verbose=False)  # network initialisation; `seed` covers envs, buffer and noise
    policy_kwargs = {"net_arch": net_arch, "net": net}
    model = cls("MlpPolicy", seed=SEED, policy_kwargs=policy_kwargs, **kwargs).learn(total_timesteps, env="Pendulum-v1")
    eval_env = make_vec_env("Pendulum-v1", 1, seed=1000 + SEED)
    returns, _ = evaluate_episodes(lambda obs: model.predict(obs, deterministic=True)[0], eval_env, 10, seed=1000 + SEED)
    eval_env.close()
    print(f"{name}: mean return {returns.mean():.1f} over 10 episodes after {total_timesteps} steps")
    assert returns.mean() > THRESHOLD, returns
