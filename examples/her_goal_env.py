"""Hindsight Experience Replay on a goal env from Python: DQN with HerReplayBuffer on lit_rl's bit-flipping task.

Each episode asks to turn a random bit vector into a random goal vector, one bit flip per step, with reward -1
until it succeeds: random play almost never succeeds with 8 or more bits, HER's relabelled goals make the task
learnable. Prints the success rate of the trained policy (``info["is_success"]`` at the end of each episode).

Run:  python examples/her_goal_env.py [--bits 8] [--timesteps 10000] [--episodes 100]
"""

import argparse

import gymnasium as gym
import numpy as np

from lit_rl import DQN, GoalSelectionStrategy, HerReplayBuffer
from lit_rl.envs import BIT_FLIPPING_ID


def success_rate(model: DQN, env: gym.Env, episodes: int) -> float:
    """The share of ``episodes`` that reach their goal with the deterministic policy."""
    successes = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=10_000 + episode)
        terminated = truncated = False
        while not (terminated or truncated):
            action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, info = env.step(int(action))
        successes.append(bool(info["is_success"]))
    return float(np.mean(successes))


def main(bits: int, timesteps: int, episodes: int, net_arch: list[int]) -> None:
    env = gym.make(BIT_FLIPPING_ID, n_bits=bits)  # Dict observations: observation, achieved_goal, desired_goal
    model = DQN(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": GoalSelectionStrategy.FUTURE},
        learning_rate=1e-3,
        learning_starts=min(1_000, timesteps // 2),
        exploration_fraction=0.3,
        target_update_interval=500,  # DQN's default, 10,000, is far too slow for this task
        policy_kwargs={"net_arch": net_arch},
        seed=0,
        verbose=0,
    )
    before = success_rate(model, gym.make(BIT_FLIPPING_ID, n_bits=bits), episodes)
    model.learn(timesteps)
    after = success_rate(model, gym.make(BIT_FLIPPING_ID, n_bits=bits), episodes)
    print(f"{bits}-bit flipping, {episodes} episodes: success rate {before:.0%} before training, "
          f"{after:.0%} after {timesteps} env steps")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bits", type=int, default=8, help="bits per vector (episode length too)")
    parser.add_argument("--timesteps", type=int, default=10_000, help="env steps to train")
    parser.add_argument("--episodes", type=int, default=100, help="evaluation episodes")
    parser.add_argument("--net-arch", type=int, nargs="+", default=[64, 64], help="hidden layer sizes")
    args = parser.parse_args()
    main(args.bits, args.timesteps, args.episodes, args.net_arch)
