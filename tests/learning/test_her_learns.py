"""HER makes DQN solve 10-bit flipping within 3,000 env steps, where plain DQN fails (slow).

Bit flipping (HER paper): the reward is -1 until all 10 bits equal a random
goal, episodes last 10 steps. Random play and plain DQN almost never see a
success (measured: about 1% of episodes), so there is nothing to learn from;
HER relabels goals with achieved ones, and the greedy policy then reaches the
goal in most episodes (measured 0.88 to 0.91 success on three seeds).

Settings, chosen to be cheap: a [64] Q-network, one gradient step per env
step on batches of 64, gamma 0.95, a target network copied every 250 steps,
epsilon decaying to 0.05 over the first 20% of the run, 4 relabelled goals
per real one ("future"), 50 env steps per Lightning batch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lit_rl import DQN
from lit_rl.buffers import HerReplayBuffer
from lit_rl.envs import BIT_FLIPPING_ID, make_vec_env

N_BITS = 10
TOTAL_TIMESTEPS = 3_000
SEEDS = [0, 1, 2]
HER_MIN_SUCCESS = 0.6
PLAIN_MAX_SUCCESS = 0.15


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def success_rate(model: DQN, seed: int, episodes: int = 100) -> float:
    """Fraction of greedy episodes that reach the goal (terminated before the step limit)."""
    env = make_vec_env(BIT_FLIPPING_ID, n_envs=4, env_kwargs={"n_bits": N_BITS}, seed=seed)
    obs, _ = env.reset(seed=seed)
    outcomes: list[bool] = []
    while len(outcomes) < episodes:
        obs, _, terminated, truncated, _ = env.step(model.predict(obs, deterministic=True)[0])
        outcomes.extend(bool(terminated[i]) for i in np.flatnonzero(terminated | truncated))
    env.close()
    return float(np.mean(outcomes[:episodes]))


def train(seed: int, her: bool) -> DQN:
    torch.manual_seed(seed)
    model = DQN(
        "MultiInputPolicy",
        learning_rate=1e-3,
        buffer_size=TOTAL_TIMESTEPS,
        learning_starts=10 * N_BITS,
        batch_size=64,
        gamma=0.95,
        train_freq=1,
        gradient_steps=1,
        target_update_interval=250,
        exploration_fraction=0.2,
        exploration_final_eps=0.05,
        replay_buffer_class=HerReplayBuffer if her else None,
        replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"} if her else None,
        policy_kwargs={"net_arch": [64]},
        steps_per_batch=50,
        seed=seed,
    )
    env = make_vec_env(BIT_FLIPPING_ID, env_kwargs={"n_bits": N_BITS}, seed=seed)
    model.learn(TOTAL_TIMESTEPS, env=env)
    env.close()
    return model


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_dqn_with_her_solves_bit_flipping(seed, one_thread):
    rate = success_rate(train(seed, her=True), seed=100 + seed)
    print(f"DQN+HER, {N_BITS} bits, seed {seed}: success rate {rate:.2f} over 100 greedy episodes")
    assert rate >= HER_MIN_SUCCESS


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_plain_dqn_fails_at_bit_flipping(seed, one_thread):
    rate = success_rate(train(seed, her=False), seed=100 + seed)
    print(f"plain DQN, {N_BITS} bits, seed {seed}: success rate {rate:.2f} over 100 greedy episodes")
    assert rate <= PLAIN_MAX_SUCCESS
