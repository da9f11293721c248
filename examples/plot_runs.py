"""Plot a metric of several launcher runs into one PNG, straight from each run's ``metrics.csv``.

Give run folders or sweep folders (searched for run folders); each run becomes one line, labelled by the
command-line overrides that differ between the runs. Any ``metrics.csv`` column works: ``eval/mean_reward``
(default), ``rollout/ep_rew_mean``, ``train/critic_loss``, ... For mean curves across seeds with confidence
bands and an IQM table, use ``python -m lit_rl.plot <folders> --out curves.png`` instead.

Run:  python examples/plot_runs.py sweeps/sac_pendulum_lr [more runs ...] [--metric eval/mean_reward] [--out runs.png]
"""

import argparse
import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # write files only, no window
import matplotlib.pyplot as plt  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

NOT_IN_LABEL = ("hydra.", "trainer.enable_progress_bar=")  # overrides that do not change what a run learns


def find_runs(paths: list[Path]) -> list[Path]:
    """Run folders (``metrics.csv`` beside ``.hydra/``) at or under ``paths``."""
    runs = {csv_file.parent for path in paths for csv_file in [path / "metrics.csv", *path.rglob("*/metrics.csv")]}
    return sorted(run for run in runs if (run / "metrics.csv").exists() and (run / ".hydra").is_dir())


def read_curve(run: Path, metric: str) -> tuple[list[int], list[float]]:
    """``(env steps, values)`` of ``metric`` from the run's ``metrics.csv`` (rows without it skipped)."""
    with open(run / "metrics.csv", newline="") as f:
        rows = [row for row in csv.DictReader(f) if row.get(metric)]
    return [int(float(row["step"])) for row in rows], [float(row[metric]) for row in rows]


def main(paths: list[Path], metric: str, out: Path) -> None:
    runs = find_runs(paths)
    if not runs:
        raise SystemExit(f"no run folder (metrics.csv and .hydra/) under {[str(p) for p in paths]}")
    overrides = {run: {o for o in OmegaConf.load(run / ".hydra" / "overrides.yaml") if not o.startswith(NOT_IN_LABEL)}
                 for run in runs}  # fmt: skip
    common = set.intersection(*overrides.values())
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    for run in runs:
        steps, values = read_curve(run, metric)
        if not steps:
            print(f"{run}: no {metric} values")
            continue
        label = " ".join(sorted(overrides[run] - common)) or run.name
        ax.plot(steps, values, marker="o", markersize=3, label=label)
        print(f"{label}: {metric} = {values[-1]:.2f} at env step {steps[-1]}")
    ax.set_xlabel("env steps")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    print(f"wrote {out} ({len(runs)} runs)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", type=Path, nargs="+", help="run folders or sweep folders")
    parser.add_argument("--metric", default="eval/mean_reward", help="a metrics.csv column")
    parser.add_argument("--out", type=Path, default=Path("runs.png"), help="the PNG to write")
    args = parser.parse_args()
    main(args.paths, args.metric, args.out)
