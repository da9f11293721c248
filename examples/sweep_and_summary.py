"""A Hydra multirun sweep of the launcher (seeds x learning rates), then its summary tables.

Runs ``python -m lit_rl.train -m seed=0,1 algo.learning_rate=3e-4,1e-3 ...`` (one run folder per job under
``--out``), then reads the tables the sweep leaves at its root: ``sweep_summary.md`` (one row per job and one per
configuration across seeds; rebuilt any time by ``python -m lit_rl.sweep_summary <out>``) and ``sweep_seeds.csv``,
from which it picks the best learning rate. Extra arguments are passed to the launcher as overrides.

Run:  python examples/sweep_and_summary.py [--timesteps 10000] [--out sweeps/sac_pendulum_lr] [key=value ...]
"""

import argparse
import csv
import subprocess
import sys
from pathlib import Path


def main(timesteps: int, seeds: str, learning_rates: str, out: Path, overrides: list[str]) -> None:
    command = [
        sys.executable, "-m", "lit_rl.train", "-m",
        "algo=sac", "env=Pendulum-v1", f"seed={seeds}", f"algo.learning_rate={learning_rates}",
        f"total_timesteps={timesteps}", f"eval.freq={max(timesteps // 5, 1)}", "eval.episodes=5",
        f"hydra.sweep.dir={out}", "trainer.enable_progress_bar=false", *overrides,
    ]  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    log_file = out / "launcher_output.log"
    print(f"running {len(seeds.split(',')) * len(learning_rates.split(','))} jobs; launcher output in {log_file}")
    with open(log_file, "w") as log:
        finished = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
    if not (out / "sweep_summary.md").exists():
        sys.exit(f"the sweep wrote no summary (exit status {finished.returncode}); see {log_file}")
    print((out / "sweep_summary.md").read_text())

    with open(out / "sweep_seeds.csv", newline="") as f:
        configs = [row for row in csv.DictReader(f) if row["final_mean"]]
    best = max(configs, key=lambda row: float(row["final_mean"]))
    print(f"best: {best['config']} (mean final eval return {float(best['final_mean']):.1f} over seeds {best['seeds']})")
    sys.exit(finished.returncode)  # 1 if a job failed (the tables list it with its error)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=10_000, help="env steps per job")
    parser.add_argument("--seeds", default="0,1", help="comma-separated seeds")
    parser.add_argument("--learning-rates", default="3e-4,1e-3", help="comma-separated learning rates")
    parser.add_argument("--out", type=Path, default=Path("sweeps/sac_pendulum_lr"), help="the sweep folder")
    parser.add_argument("overrides", nargs="*", help="more launcher overrides, e.g. trainer=smoke")
    args = parser.parse_args()
    main(args.timesteps, args.seeds, args.learning_rates, args.out, args.overrides)
