"""The tables, rank tests and plots of a learning-parity report (``scripts/parity.py``).

Per algorithm and checkpoint: each seed's score of both columns, median, IQM with a 95 % percentile-bootstrap CI,
the differences and a two-sided Mann-Whitney U test; per algorithm, Holm's correction over its checkpoints.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from lit_rl.utils.stats import bootstrap_ci, holm, iqm, mann_whitney_u

IMPLS = ("lit_rl", "reference")
# lit_rl's runs of the report given to --reuse-from: fp32 runs beside a mixed-precision report, eager runs beside
# a compiled one (named by ``label`` from the report's settings).
FP32 = "lit_rl_fp32"
REFERENCE = {"crossq": "sb3_contrib.CrossQ", "sac": "stable_baselines3.SAC", "td3": "stable_baselines3.TD3",
             "dqn": "stable_baselines3.DQN", "qrdqn": "sb3_contrib.QRDQN"}  # fmt: skip


def describe(values: list[float]) -> dict[str, Any]:
    """Median, IQM and the IQM's 95% percentile-bootstrap interval."""
    ci = bootstrap_ci(values, iqm, n_resamples=2000, seed=0)
    return {"median": float(np.median(values)), "iqm": iqm(values), "iqm_ci95": ci}


def cell(run: dict | None, step: int, metric: str = "returns") -> str:
    """One seed's score, or why it has none."""
    if run is None:
        return "not run"
    value = run.get(metric, {}).get(str(step))
    return f"{value:.1f}" if value is not None else f"failed ({run.get('error', 'no result')})"


def summarize(
    runs: list[dict], algo: str, step: int, meta: dict, impls: tuple[str, str] = IMPLS, metric: str = "returns"
) -> tuple[str, dict]:
    """The markdown table of one algorithm at one checkpoint, ``impls[0]`` against ``impls[1]``, and its statistics.

    ``meta``: the report's settings (its ``seeds`` and what names the columns); ``metric``: each run's mean eval
    return (``returns``) or success rate (``success_rate``, goal-conditioned envs).
    """
    seeds = meta["seeds"]
    by_key = {(r["impl"], r["seed"]): r for r in runs if r["algo"] == algo}
    score = {key: r.get(metric, {}).get(str(step)) for key, r in by_key.items()}
    values = {i: [score[(i, s)] for s in seeds if score.get((i, s)) is not None] for i in impls}
    stats: dict[str, Any] = {"n": {i: len(values[i]) for i in impls}}
    stats |= {i: describe(values[i]) for i in impls if values[i]}
    shown = dict.fromkeys(impls, ("n/a", "n/a"))  # (median, IQM [CI]) as text
    for i in stats.keys() & set(impls):
        ci_text = "{:.1f} [{:.1f}, {:.1f}]".format(stats[i]["iqm"], *stats[i]["iqm_ci95"])
        shown[i] = (f"{stats[i]['median']:.1f}", ci_text)
    table = [[str(s), *(cell(by_key.get((i, s)), step, metric) for i in impls)] for s in seeds]
    table.append(["**n**", *(str(stats["n"][i]) for i in impls)])
    table.append(["**median**", *(shown[i][0] for i in impls)])
    table.append(["**IQM [95% CI]**", *(shown[i][1] for i in impls)])
    names = [label(algo, i, meta) for i in impls]
    lines = [f"| seed | {names[0]} | {names[1]} |", "|---|---|---|", *(f"| {' | '.join(r)} |" for r in table)]
    if all(values.values()):
        a, b = impls
        u, p = mann_whitney_u(values[a], values[b])
        diffs = {f"{k}_diff": stats[a][k] - stats[b][k] for k in ("median", "iqm")}
        stats |= diffs | {"mann_whitney_u": u, "p_value": p}
        pairs = len(values[a]) * len(values[b])
        lines.append(
            f"\n{names[0]} - {names[1]}: median {diffs['median_diff']:+.1f}, IQM {diffs['iqm_diff']:+.1f}; "
            f"Mann-Whitney U = {u:.1f} of {pairs} pairs, p = {p:.3f} (two-sided, normal approximation)"
        )
    return "\n".join(lines), stats


def label(algo: str, impl: str, meta: dict) -> str:
    """A column's name: lit_rl, the reused lit_rl runs (fp32 beside a mixed-precision report, else eager) or the
    reference class."""
    if impl == FP32:
        return "lit_rl fp32" if meta.get("precision", "32-true") != "32-true" else "lit_rl eager"
    return "lit_rl" if impl == "lit_rl" else REFERENCE[algo]


def report(runs: list[dict], meta: dict) -> tuple[str, dict]:
    """Markdown for every algorithm and checkpoint, and the statistics by ``algo/step``."""
    parts = [
        f"# Learning parity on {meta['env']}: lit_rl vs Stable-Baselines3 / sb3-contrib\n",
        f"{len(meta['seeds'])} seeds, {meta['episodes']} deterministic eval episodes per checkpoint "
        f"(eval env seeded 1000 + seed); {commits(runs, meta)}"
        f"{'; lit_rl with its compiled gradient step (compile=True)' if meta.get('compile') else ''}"
        f"{precision_note(meta)}.\n",
    ]
    finished = sum(r["impl"] != FP32 for r in runs)  # reused runs are not this report's
    partial = finished < meta.get("runs_expected", finished)
    if partial:
        parts.append(f"**Partial report: {finished} of {meta['runs_expected']} runs finished.** The tests below are "
                     "interim; the verdict waits for every run (`--resume` continues the report).\n")
    stats: dict[str, Any] = {}
    for algo in meta["algos"]:
        nets = meta["hyperparameters"][algo].get("policy_kwargs", {}).get("net_arch")
        arch = f"actor {nets['pi']}, 2 critics {nets['qf']}" if nets else "NatureCNN"
        for step in meta["steps"]:
            metric = meta.get("metric", "returns")
            table, stats[f"{algo}/{step}"] = summarize(runs, algo, step, meta, metric=metric)
            if metric != "returns":
                table = f"{metric.replace('_', ' ')} (the mean return's table follows)\n\n{table}\n\n" + summarize(
                    runs, algo, step, meta)[0]
            if any(r["impl"] == FP32 for r in runs):  # reused lit_rl runs: also against them
                fp32_table, stats[f"{algo}/{step}/fp32"] = summarize(runs, algo, step, meta, ("lit_rl", FP32))
                table += "\n\n" + fp32_table
            hp = meta["hyperparameters"][algo]
            noise = f", action noise std {hp['action_noise_std']}" if "action_noise_std" in hp else ""
            parts.append(
                f"## {algo} at {step} env steps ({arch}; lr {hp['learning_rate']}, "
                f"batch {hp['batch_size']}, learning_starts {hp['learning_starts']}{noise})\n\n{table}\n"
            )
        parts.append(("Interim, " if partial else "") + holm_summary(stats, algo, meta))
    return "\n".join(parts), stats


def holm_summary(stats: dict[str, Any], algo: str, meta: dict) -> str:
    """The rank tests of one algorithm's checkpoints with Holm's correction for their number (alpha 0.05)."""
    lines, steps = [], meta["steps"]
    for suffix, what in (("", "against the reference"), ("/fp32", f"against {label(algo, FP32, meta)}")):
        keys = [f"{algo}/{step}{suffix}" for step in steps if "p_value" in stats.get(f"{algo}/{step}{suffix}", {})]
        if not keys:
            continue
        adjusted = holm([stats[k]["p_value"] for k in keys])
        for key, p in zip(keys, adjusted, strict=True):
            stats[key]["p_holm"] = p
        shown = ", ".join(f"{k.split('/')[1]}: {p:.3f}" for k, p in zip(keys, adjusted, strict=True))
        verdict = "none rejected" if min(adjusted) > 0.05 else "REJECTED at " + ", ".join(
            k.split("/")[1] for k, p in zip(keys, adjusted, strict=True) if p <= 0.05)
        lines.append(f"{algo} {what}: Holm-adjusted p over {len(keys)} checkpoints ({shown}); {verdict} at 0.05.")
    return "\n".join(lines) + "\n"


def commits(runs: list[dict], meta: dict) -> str:
    """The commits whose code made the runs (a resumed report can hold several), with their run counts."""
    counts = Counter(run.get("commit", meta["commit"]) for run in runs)
    if len(counts) <= 1:
        return f"commit {next(iter(counts), meta['commit'])}"
    return "commits " + ", ".join(f"{c} ({n} run{'' if n == 1 else 's'})" for c, n in counts.items())


def precision_note(meta: dict) -> str:
    """How lit_rl's runs differ from fp32, and where the reference runs come from."""
    note = ""
    if meta.get("precision", "32-true") != "32-true":
        note += f"; lit_rl in {meta['precision']} (the reference in fp32)"
    if meta.get("reuse_from"):
        note += f"; reference runs (and fp32 lit_rl runs, `lit_rl fp32`) from {meta['reuse_from']}"
    return note


def plot(runs: list[dict], meta: dict, out: Path) -> None:
    """Both libraries' eval curves per algorithm (mean across seeds, 95% bootstrap band) into ``out`` (PNG)."""
    from lit_rl.launcher.plot import plot_learning_curves
    from lit_rl.launcher.run_records import RunRecord

    groups: dict[str, list[RunRecord]] = {}
    for run in runs:
        if run["status"] != "completed":
            continue
        name = label(run["algo"], run["impl"], meta)
        if run["impl"] == "lit_rl" and meta.get("precision", "32-true") != "32-true":
            name += f" {meta['precision']}"
        label_text = f"{run['algo']} {meta['env']} {name}"
        scores = run.get(meta.get("metric", "returns"), {})  # success rates for goal-conditioned reports
        steps = sorted(int(k) for k in scores)
        returns = np.array([scores[str(k)] for k in steps])
        groups.setdefault(label_text, []).append(RunRecord(out, label_text, run["seed"], np.array(steps), returns))
    if groups:
        metric = meta.get("metric", "returns")
        plot_learning_curves(dict(sorted(groups.items())), out,
                             ylabel="evaluation return" if metric == "returns" else metric.replace("_", " "))
