"""Several seeds and learning rates of SAC trained together as one pack, then each member evaluated and saved as
a model of its own.

Run:  python examples/packed_seeds.py [--seeds 4] [--learning-rates 3e-4 1e-3] [--timesteps 20000] [--out packed]
"""

import argparse
import itertools
from pathlib import Path

import gymnasium as gym

from lit_rl import SAC, Pack
from lit_rl.evaluation import evaluate_policy


def main(seeds: int, learning_rates: list[float], timesteps: int, out: Path, net_arch: list[int]) -> None:
    grid = list(itertools.product(range(seeds), learning_rates))
    pack = Pack(SAC, "MlpPolicy", "Pendulum-v1", seed=[s for s, _ in grid], learning_rate=[lr for _, lr in grid],
                policy_kwargs={"net_arch": net_arch}, learning_starts=min(1000, timesteps // 2))  # fmt: skip
    pack.learn(timesteps)
    out.mkdir(parents=True, exist_ok=True)
    print("| seed | learning rate | mean return | saved |")
    print("|---|---|---|---|")
    for model in pack:
        env = gym.wrappers.RecordEpisodeStatistics(gym.make("Pendulum-v1"))  # each episode's return, as Monitor's
        mean, std = evaluate_policy(model, env, n_eval_episodes=5)
        path = out / f"sac_seed{model.seed}_lr{model.learning_rate:g}.zip"
        model.save(path)
        print(f"| {model.seed} | {model.learning_rate:g} | {mean:.1f} +- {std:.1f} | {path} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4, help="seeds 0 .. N-1 for every learning rate")
    parser.add_argument("--learning-rates", type=float, nargs="+", default=[3e-4, 1e-3])
    parser.add_argument("--timesteps", type=int, default=20_000, help="env steps per member")
    parser.add_argument("--out", type=Path, default=Path("packed"), help="folder for the members' model files")
    parser.add_argument("--net-arch", type=int, nargs="+", default=[256, 256], help="hidden layer sizes")
    args = parser.parse_args()
    main(args.seeds, args.learning_rates, args.timesteps, args.out, args.net_arch)
