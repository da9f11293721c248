"""A custom Stable-Baselines3-style callback: log your own metric with ``self.logger.record`` and stop training
on a condition of your own.

The callback logs each finished episode's mean absolute action as ``custom/mean_abs_action`` (a column of the
CSV log, next to lit_rl's own metrics) and stops training once the last ``--window`` episodes average a return of
at least ``--stop-return`` (Pendulum-v1 counts as solved around -200).

Run:  python examples/custom_callback.py [--timesteps 30000] [--stop-return -200] [--out custom_callback]
"""

import argparse
import csv
from pathlib import Path

import numpy as np

from lit_rl import SAC
from lit_rl.callbacks.sb3 import BaseCallback


class ActionLoggingStop(BaseCallback):
    """Log ``custom/mean_abs_action`` per episode; stop once the recent episodes' mean return reaches a threshold."""

    def __init__(self, stop_return: float, window: int = 5, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.stop_return, self.window = stop_return, window
        self.episode_returns: list[float] = []
        self.abs_actions: list[float] = []

    def _on_step(self) -> bool:
        # self.locals holds the step just taken: actions, new_obs, rewards, dones, infos (SB3's names).
        self.abs_actions.append(float(np.abs(self.locals["actions"]).mean()))
        for info in self.locals["infos"]:
            if "episode" in info:  # an episode ended: its return and length are in info["episode"]
                self.episode_returns.append(float(info["episode"]["r"]))
                self.logger.record("custom/mean_abs_action", float(np.mean(self.abs_actions)))
                self.abs_actions = []
        recent = self.episode_returns[-self.window :]
        if len(recent) == self.window and np.mean(recent) >= self.stop_return:
            print(f"stopped at env step {self.num_timesteps}: last {self.window} episodes' mean return "
                  f"{np.mean(recent):.1f} >= {self.stop_return}")  # fmt: skip
            return False  # False stops training, as in SB3
        return True


def main(timesteps: int, stop_return: float, window: int, out: Path, net_arch: list[int]) -> None:
    model = SAC("MlpPolicy", "Pendulum-v1", policy_kwargs={"net_arch": net_arch}, seed=0, verbose=0)
    callback = ActionLoggingStop(stop_return, window)
    # logger=True: a CSV log in <out>/SAC/version_<n>/metrics.csv; a row every 200 env steps (one Pendulum episode)
    model.learn(timesteps, callback=callback, logger=True, default_root_dir=out, log_every_n_steps=200)
    print(f"trained {model.num_timesteps} env steps, {len(callback.episode_returns)} episodes")

    metrics = sorted(out.glob("SAC/version_*/metrics.csv"))[-1]
    with open(metrics, newline="") as f:
        rows = [row for row in csv.DictReader(f) if row.get("custom/mean_abs_action")]
    print(f"custom/mean_abs_action in {metrics}:")
    for row in rows:
        print(f"  step {row['step']:>6}: {float(row['custom/mean_abs_action']):.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=30_000, help="most env steps to train")
    parser.add_argument("--stop-return", type=float, default=-200.0, help="stop at this mean episode return")
    parser.add_argument("--window", type=int, default=5, help="episodes in the mean")
    parser.add_argument("--out", type=Path, default=Path("custom_callback"), help="folder for the CSV log")
    parser.add_argument("--net-arch", type=int, nargs="+", default=[256, 256], help="hidden layer sizes")
    args = parser.parse_args()
    main(args.timesteps, args.stop_return, args.window, args.out, args.net_arch)
