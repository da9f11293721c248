"""DQN and QR-DQN learn CartPole-v1 within 20,000 env steps, on several seeds (slow).

A random policy scores about 20 on CartPole-v1 and an untrained greedy
Q-network about 10; the maximum is 500. The threshold 150 needs a policy that
balances the pole for most of an episode.

Settings: rl-baselines3-zoo's tuned CartPole DQN and QR-DQN (lr 2.3e-3, buffer 100k,
learning_starts 1000, gamma 0.99, target_update_interval 10, exploration
fraction 0.16 -> eps 0.04, one gradient step per two env steps; QR-DQN: 10 quantiles), made cheaper
for two CPU cores: 20k instead of 50k steps, a [64, 64] Q-network instead of
[256, 256], rounds of 64 env steps / 32 gradient steps instead of 256 / 128;
batch 128 instead of 64 and the learning rate decaying linearly to 0.

DQN's greedy policy on CartPole can collapse late in training on some seeds (SB3's
too), so, as rl-baselines3-zoo reports, the agent kept is the best one found by
periodic evaluation (the SB3-style ``EvalCallback``, every 2,000 steps); it is then
evaluated again on 10 fresh episodes, which must clear the threshold.
"""

from __future__ import annotations

import time

import pytest
import torch

from lit_rl import DQN, QRDQN
from lit_rl.callbacks import evaluate_episodes
from lit_rl.callbacks.sb3 import EvalCallback
from lit_rl.envs import make_vec_env

THRESHOLD = 150.0
SEEDS = [0, 1, 2]
ALGOS = {"dqn": (DQN, {}), "qrdqn": (QRDQN, {"n_quantiles": 10})}  # the class and its policy_kwargs beyond net_arch
TOTAL_TIMESTEPS = 20_000
INITIAL_LR = 2.3e-3


def linear_lr(progress_remaining: float) -> float:
    return INITIAL_LR * progress_remaining


@pytest.fixture
def one_thread():
    # Tiny networks: one intra-op thread is faster and makes the runs reproducible on any core count.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.slow
@pytest.mark.parametrize("algo", list(ALGOS))
@pytest.mark.parametrize("seed", SEEDS)
def test_dqn_solves_cartpole(algo, seed, one_thread, tmp_path):
    algo_class, policy_kwargs = ALGOS[algo]
    torch.manual_seed(seed)  # network initialisation and epsilon-greedy draws
    model = algo_class(
        "MlpPolicy",
        learning_rate=linear_lr,
        buffer_size=100_000,
        learning_starts=1_000,
        batch_size=128,
        gamma=0.99,
        target_update_interval=10,
        train_freq=64,
        gradient_steps=32,
        exploration_fraction=0.16,
        exploration_final_eps=0.04,
        policy_kwargs={"net_arch": [64, 64], **policy_kwargs},
        seed=seed,
    )
    start = time.perf_counter()
    evaluation = EvalCallback(
        "CartPole-v1", n_eval_episodes=5, eval_freq=2_000, best_model_save_path=tmp_path, verbose=0, seed=seed + 500
    )
    model.learn(TOTAL_TIMESTEPS, env="CartPole-v1", accelerator="cpu", callback=evaluation)
    train_seconds = time.perf_counter() - start
    assert TOTAL_TIMESTEPS <= model.num_timesteps < TOTAL_TIMESTEPS + 64  # a started train_freq round ends, as SB3
    assert model.exploration_rate == pytest.approx(0.04)
    model = algo_class.load(tmp_path / "best_model.zip", device="cpu")
    eval_env = make_vec_env("CartPole-v1", 1, seed=seed + 1_000)
    returns, _ = evaluate_episodes(lambda o: model.predict(o, deterministic=True)[0], eval_env, 10, seed=seed + 1_000)
    eval_env.close()
    print(
        f"{algo} seed {seed}: best model (eval means {[float(r.mean()) for r in evaluation.evaluations_results]}) "
        f"on 10 fresh episodes: {returns.tolist()} (mean {returns.mean():.1f}), training {train_seconds:.1f} s"
    )
    assert returns.mean() >= THRESHOLD, returns
