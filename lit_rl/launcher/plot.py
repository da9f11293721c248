"""Learning curves and a results table: ``python -m lit_rl.plot <run or sweep folders...> [--out FILE]``.

Runs are grouped by configuration (algo, env and command-line overrides, not
the seed). The figure shows, per configuration, the mean evaluation return
against env steps across seeds with a shaded 95% bootstrap confidence band;
the table gives the IQM of the final evaluation returns with its 95%
bootstrap confidence interval, printed and written beside the figure as
``.md`` and ``.csv``.
"""

from __future__ import annotations

import argparse
import csv
import sys
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on clusters
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from lit_rl.launcher.run_records import RunRecord, find_runs, group_runs  # noqa: E402
from lit_rl.utils.stats import bootstrap_ci, iqm  # noqa: E402

TABLE_COLUMNS = ["configuration", "runs", "env_steps", "iqm", "iqm_ci_low", "iqm_ci_high", "mean", "std"]


def curve_band(
    runs: list[RunRecord], n_resamples: int = 1000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(steps, mean, low, high)`` across runs at every evaluation step any run has.

    Each step uses the runs that evaluated there, so a shorter run ends its
    contribution early instead of truncating the others.
    """
    steps = np.unique(np.concatenate([r.steps for r in runs]))
    mean, low, high = (np.empty(steps.size) for _ in range(3))
    for i, step in enumerate(steps):
        values = np.array([r.returns[r.steps == step][-1] for r in runs if (r.steps == step).any()])
        mean[i] = values.mean()
        low[i], high[i] = bootstrap_ci(values, np.mean, n_resamples=n_resamples, seed=seed)
    return steps, mean, low, high


def results_table(groups: dict[str, list[RunRecord]], n_resamples: int = 10_000, seed: int = 0) -> list[dict]:
    """One row per configuration: IQM of the runs' final eval returns with its bootstrap CI, mean and std."""
    rows = []
    for label, runs in groups.items():
        finals = np.array([r.final_return for r in runs])
        low, high = bootstrap_ci(finals, iqm, n_resamples=n_resamples, seed=seed)
        rows.append(
            {
                "configuration": label,
                "runs": len(runs),
                "env_steps": int(max(r.steps[-1] for r in runs)),
                "iqm": iqm(finals),
                "iqm_ci_low": low,
                "iqm_ci_high": high,
                "mean": float(finals.mean()),
                "std": float(finals.std()),
            }
        )
    return rows


def format_markdown(rows: list[dict]) -> str:
    """The results table as Markdown."""
    lines = [
        "| configuration | runs | env steps | IQM final return [95% CI] | mean ± std |",
        "|---|---:|---:|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['configuration']} | {r['runs']} | {r['env_steps']} | "
            f"{r['iqm']:.1f} [{r['iqm_ci_low']:.1f}, {r['iqm_ci_high']:.1f}] | {r['mean']:.1f} ± {r['std']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def legend_labels(labels: list[str]) -> tuple[list[str], list[str]]:
    """``(short labels, shared overrides)``: overrides every configuration has move out of the legend.

    A label is ``"<algo> <env> <override> ..."``; algo and env always stay.
    """
    tokens = [label.split(" ") for label in labels]
    shared = sorted(set.intersection(*(set(t[2:]) for t in tokens))) if tokens else []
    short = [" ".join(t[:2] + [o for o in t[2:] if o not in shared]) for t in tokens]
    return short, shared


def plot_learning_curves(
    groups: dict[str, list[RunRecord]], out: Path, size: tuple[float, float] = (8.0, 5.0), dpi: int = 100,
    ylabel: str = "evaluation return",
) -> None:
    """Write the learning-curve PNG (``size`` inches at ``dpi``: exactly that many pixels)."""
    fig, ax = plt.subplots(figsize=size, dpi=dpi, layout="constrained")
    short, shared = legend_labels(list(groups))
    for label, runs in zip(short, groups.values(), strict=True):
        steps, mean, low, high = curve_band(runs)
        (line,) = ax.plot(steps, mean, label=textwrap.fill(f"{label} (n={len(runs)})", 70))
        ax.fill_between(steps, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel("env steps")
    ax.set_ylabel(ylabel)
    title = "mean across seeds, shaded: 95% bootstrap CI" + (f"; all: {' '.join(shared)}" if shared else "")
    ax.set_title(textwrap.fill(title, int(12 * size[0])), fontsize="small")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)  # no bbox_inches="tight": it would change the pixel size
    plt.close(fig)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="python -m lit_rl.plot", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="run folders or sweep folders (searched recursively)")
    parser.add_argument("--out", type=Path, help="PNG file (default: <first folder>/learning_curves.png)")
    parser.add_argument("--metric", default="eval/mean_reward", help="metrics.csv column to plot")
    parser.add_argument("--size", type=float, nargs=2, default=(8.0, 5.0), metavar=("W", "H"), help="inches")
    parser.add_argument("--dpi", type=int, default=100)
    args = parser.parse_args(argv)
    try:
        runs = find_runs(args.paths, args.metric)
    except (FileNotFoundError, ValueError) as err:
        parser.error(str(err))
    if not runs:
        parser.error(f"no run folder with {args.metric} (metrics.csv beside .hydra/config.yaml) under {args.paths}")
    out = args.out or Path(args.paths[0]) / "learning_curves.png"
    if out.suffix.lower() != ".png":
        parser.error(f"--out={str(out)!r} must end in .png")
    groups = group_runs(runs)
    ylabel = "evaluation return" if args.metric == "eval/mean_reward" else args.metric
    plot_learning_curves(groups, out, tuple(args.size), args.dpi, ylabel)
    rows = results_table(groups)
    markdown = format_markdown(rows)
    out.with_suffix(".md").write_text(markdown)
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=TABLE_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    sys.stdout.write(markdown)
    print(f"wrote {out}, {out.with_suffix('.md')}, {out.with_suffix('.csv')} ({len(runs)} runs, {len(groups)} configs)")
    return rows


if __name__ == "__main__":
    main()
