"""Reproduce the published CrossQ results: ``make reproduce`` (``python scripts/reproduce.py``).

The protocol, for a GPU machine: CrossQ with the paper's MuJoCo settings
(``experiment=crossq_mujoco``: critics [2048,2048], learning_starts 5000,
policy_delay 3, lr 1e-3; sb3-contrib's defaults narrow the critics to 1024)
on HalfCheetah-v4, Walker2d-v4, Hopper-v4 and Ant-v4, 1M env steps, 10 seeds,
evaluated every 10k steps (10 deterministic episodes), run as one Hydra
multirun of ``python -m lit_rl.train``. Then, in the output folder:

- ``learning_curves.png``: one panel per env, mean eval return across seeds
  with a 95% bootstrap band, the published figure as a dashed line;
- ``reproduce.md`` / ``reproduce.csv``: per env the IQM of the final eval
  returns [95% CI], mean ± std, the published figure and the ratio.

``--smoke`` runs a short prefix of the same protocol on a CPU in a minute or
two (``trainer=smoke``: [32,32] networks, 1000-transition buffer, 100-step
episodes; 1 seed; ``--steps``, 1000 by default): it checks the script, its
numbers mean nothing. ``--report SWEEP`` only rebuilds the plot and table of
a finished (or partly finished) sweep, e.g. one run on a cluster with
``hydra/launcher=slurm`` given after ``--``. Extra Hydra overrides after
``--`` go to every job.
"""

from __future__ import annotations

import argparse
import csv
import math
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENVS = ("HalfCheetah-v4", "Walker2d-v4", "Hopper-v4", "Ant-v4")
# Final eval return at 1M env steps, about, in the SimbaV2 authors' released CrossQ runs (10 seeds).
PUBLISHED = {"HalfCheetah-v4": 12_900.0, "Hopper-v4": 2_500.0, "Walker2d-v4": 6_300.0, "Ant-v4": 7_000.0}
PUBLISHED_SOURCE = "SimbaV2 authors' released CrossQ runs, 10 seeds, final return at 1M steps (approximate)"
TABLE_COLUMNS = ["env", "runs", "env_steps", "iqm", "iqm_ci_low", "iqm_ci_high", "mean", "std", "published", "ratio"]


def sweep_command(args: argparse.Namespace, sweep_dir: Path) -> list[str]:
    """The ``python -m lit_rl.train -m ...`` command of the protocol (or its smoke prefix)."""
    seeds = ",".join(str(s) for s in range(args.seeds))
    cmd = [sys.executable, "-m", "lit_rl.train", "-m", "algo=crossq", "experiment=crossq_mujoco", f"env={','.join(args.envs)}", f"seed={seeds}",
           f"total_timesteps={args.steps}", f"eval.freq={args.eval_freq}", f"hydra.sweep.dir={sweep_dir}",
           "trainer.enable_progress_bar=false"]  # fmt: skip
    if args.smoke:
        cmd.insert(cmd.index("experiment=crossq_mujoco") + 1, "trainer=smoke")  # after the preset: it shrinks the preset's networks and buffer
    else:
        cmd.append("eval.episodes=10")
    if args.jobs > 1:
        cmd += ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={args.jobs}"]
    return cmd + list(args.overrides)


def env_of(label: str) -> str:
    """The env id of a run's configuration label (``"<algo> <env id> <overrides>..."``)."""
    return label.split(" ")[1]


def report_rows(groups: dict) -> list[dict]:
    """Per env: the IQM of the final eval returns with its CI, mean ± std, the published figure and the ratio."""
    from lit_rl.launcher.plot import results_table

    rows = []
    for row in results_table(groups):
        env = env_of(row.pop("configuration"))
        published = PUBLISHED.get(env, math.nan)
        rows.append({"env": env, **row, "published": published, "ratio": row["iqm"] / published})
    return rows


def format_markdown(rows: list[dict], smoke: bool) -> str:
    """The comparison table as Markdown."""
    lines = [
        "| env | runs | env steps | IQM final return [95% CI] | mean ± std | published (1M steps) | IQM / published |",
        "|---|---:|---:|---|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['env']} | {r['runs']} | {r['env_steps']} | {r['iqm']:.1f} [{r['iqm_ci_low']:.1f}, "
            f"{r['iqm_ci_high']:.1f}] | {r['mean']:.1f} ± {r['std']:.1f} | {r['published']:.0f} | {r['ratio']:.2f} |"
        )
    lines.append(f"\nPublished: {PUBLISHED_SOURCE}.")
    if smoke:
        lines.append("Smoke prefix (tiny networks and step counts): checks the script; the ratios mean nothing.")
    return "\n".join(lines) + "\n"


def plot_panels(groups: dict, out: Path) -> None:
    """One panel per env: mean eval return across seeds, 95% bootstrap band, the published figure dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lit_rl.launcher.plot import curve_band

    n = len(groups)
    cols = min(n, 2)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.5 * rows), squeeze=False, layout="constrained")
    for ax, (label, runs) in zip(axes.flat, groups.items(), strict=False):
        env = env_of(label)
        steps, mean, low, high = curve_band(runs)
        (line,) = ax.plot(steps, mean, label=f"lit_rl CrossQ (n={len(runs)})")
        ax.fill_between(steps, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
        if env in PUBLISHED:
            ax.axhline(PUBLISHED[env], color="black", linestyle="--", linewidth=1, label="published, 1M steps")
        ax.set_title(env)
        ax.set_xlabel("env steps")
        ax.set_ylabel("evaluation return")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.savefig(out)
    plt.close(fig)


def write_report(sweep_dir: Path, out_dir: Path, smoke: bool) -> list[dict]:
    """Plot and table of every run under ``sweep_dir``, written into ``out_dir``; returns the table rows."""
    from lit_rl.launcher.run_records import find_runs, group_runs

    runs = find_runs([sweep_dir])
    if not runs:
        raise SystemExit(f"no finished evaluation under {sweep_dir}: nothing to report")
    order = {env: i for i, env in enumerate(ENVS)}
    groups = dict(sorted(group_runs(runs).items(), key=lambda item: order.get(env_of(item[0]), len(ENVS))))
    labels = {env_of(label) for label in groups}
    if len(labels) != len(groups):
        raise SystemExit(f"runs under {sweep_dir} differ in more than the env and the seed: {sorted(groups)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    plot_panels(groups, out_dir / "learning_curves.png")
    rows = report_rows(groups)
    markdown = format_markdown(rows, smoke)
    (out_dir / "reproduce.md").write_text(markdown)
    with open(out_dir / "reproduce.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=TABLE_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    sys.stdout.write(markdown)
    print(f"wrote {out_dir / 'learning_curves.png'}, {out_dir / 'reproduce.md'}, {out_dir / 'reproduce.csv'}")
    return rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--smoke", action="store_true", help="a short CPU prefix: trainer=smoke, 1 seed, --steps 1000")
    p.add_argument("--steps", type=int, default=None, help="env steps per run (default 1000000; --smoke: 1000)")
    p.add_argument("--seeds", type=int, default=None, help="seeds 0..N-1 per env (default 10; --smoke: 1)")
    p.add_argument("--eval-freq", type=int, default=None, help="env steps between evaluations (default 10000)")
    p.add_argument("--envs", default=",".join(ENVS), help=f"comma-separated subset of {','.join(ENVS)}")
    p.add_argument("--jobs", type=int, default=1, help="parallel jobs (hydra/launcher=joblib) when > 1")
    p.add_argument("--out", type=Path, default=None, help="output folder (default outputs/reproduce/<date>_<time>)")
    p.add_argument("--report", type=Path, default=None, help="only rebuild plot and table of this sweep folder")
    p.add_argument("--dry-run", action="store_true", help="print the sweep command, run nothing")
    p.add_argument("overrides", nargs="*", help="Hydra overrides for every job (after --)")
    args = p.parse_args(argv)
    args.steps = args.steps if args.steps is not None else (1_000 if args.smoke else 1_000_000)
    args.seeds = args.seeds if args.seeds is not None else (1 if args.smoke else 10)
    args.eval_freq = (
        args.eval_freq if args.eval_freq is not None else (max(args.steps // 4, 1) if args.smoke else 10_000)
    )
    for name in ("steps", "seeds", "eval_freq", "jobs"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')}={getattr(args, name)} is not allowed; allowed: >= 1")
    args.envs = args.envs.split(",")
    unknown = [e for e in args.envs if e not in ENVS]
    if unknown:
        p.error(f"--envs: {unknown} not allowed; allowed: {list(ENVS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report is not None:
        write_report(args.report, args.out or args.report, args.smoke)
        return 0
    out = (
        args.out
        or ROOT / "outputs" / "reproduce" / (("smoke_" if args.smoke else "") + time.strftime("%Y-%m-%d_%H-%M-%S"))
    ).resolve()
    sweep_dir = out / "sweep"
    cmd = sweep_command(args, sweep_dir)
    print("$ python " + " ".join(cmd[1:]), flush=True)
    if args.dry_run:
        return 0
    # The sweep exits non-zero when a job failed; the report still shows the jobs that finished.
    code = subprocess.run(cmd, cwd=ROOT).returncode
    write_report(sweep_dir, out, args.smoke)
    if code:
        print(f"the sweep exited with status {code}: see {sweep_dir}/sweep_summary.md", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
