"""SAC, TD3 and DDPG learn Pendulum-v1 through the Python API within a few thousand steps (slow, runs in CI).

A random policy scores about -1200 to -1500 on Pendulum-v1; a learned
swing-up scores about -150 to -250. The threshold -400 is far above anything
without learning. The hyperparameters below are tuned for speed on two CPU
cores (small networks, gamma 0.98 and tau 0.02 as in rl-baselines3-zoo's
short Pendulum runs); the algorithms' own defaults are Stable-Baselines3's.
"""

from __future__ import annotations

import lightning as L
import pytest
import torch

from lit_rl import DDPG, SAC, TD3
from lit_rl.callbacks import evaluate_episodes
from lit_rl.envs import make_vec_env
from tests.helpers import ci_cases

THRESHOLD = -400.0
SEEDS = [0, 1, 2]
COMMON = {
    "batch_size": 128,
    "gamma": 0.98,
    "tau": 0.02,
    "learning_rate": 1e-3,
    "steps_per_batch": 10,
    "policy_kwargs": {"net_arch": [64, 64]},
}
DETERMINISTIC_EXPLORATION = {"learning_starts": 1000, "action_noise": "normal", "action_noise_std": 0.1}
# name -> (class, total env steps, arguments)
RUNS = {
    "sac": (SAC, 3000, {**COMMON, "learning_starts": 500, "ent_coef": "auto_0.1"}),
    "td3": (TD3, 6000, {**COMMON, **DETERMINISTIC_EXPLORATION}),
    "ddpg": (DDPG, 5000, {**COMMON, **DETERMINISTIC_EXPLORATION}),
}


@pytest.fixture
def one_torch_thread():
    """Tiny networks gain nothing from intra-op threads; on two shared cores they only contend."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.parametrize("seed", ci_cases(SEEDS, in_ci=[0]))  # CI: each algorithm on one seed
@pytest.mark.parametrize("name", list(RUNS))
def test_solves_pendulum(name, seed, one_torch_thread):
    cls, total_timesteps, kwargs = RUNS[name]
    L.seed_everything(seed, verbose=False)  # network initialisation; `seed` covers envs, buffer and noise
    model = cls("MlpPolicy", seed=seed, **kwargs).learn(total_timesteps, env="Pendulum-v1")
    eval_env = make_vec_env("Pendulum-v1", 1, seed=1000 + seed)
    returns, _ = evaluate_episodes(lambda obs: model.predict(obs, deterministic=True)[0], eval_env, 10, seed=1000 + seed)
    eval_env.close()
    print(f"{name} seed {seed}: mean return {returns.mean():.1f} over 10 episodes after {total_timesteps} steps")
    assert returns.mean() > THRESHOLD, returns
