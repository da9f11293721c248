"""Lockstep run: lit_rl against Stable-Baselines3 / sb3-contrib, update by update, on the same data.

``python scripts/lockstep.py --algo crossq --updates 2500 --plot bench/lockstep_crossq.png``

Both sides start from the reference's weights and take the same batches (real
transitions of ``--env``, Hopper-v4 by default: ``learning_starts`` random ones, then one per update from
the reference policy) with the same RNG state (``tests/reference/lockstep.py``).
Per update it records the largest difference of every group (parameters,
BatchRenorm statistics, Adam moments, entropy coefficient, losses) and the
number of ReLU inputs and critic argmins on different sides of their kink
(where 1e-7 of rounding moves a gradient by a sample's share). Free-running
(default) the records hold the accumulated drift; with ``--resync`` lit_rl gets
the reference's state before every update, so each record is one update's
error. Writes the curves (JSON), a plot (log scale) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lit_rl.utils.machine import cpu_model_and_flags  # noqa: E402
from tests.reference.lockstep import ALGOS, CROSSQ_PARITY, build, curve, groups  # noqa: E402

DEFAULTS: dict[str, dict[str, Any]] = {
    "crossq": CROSSQ_PARITY,
    "sac": {},  # Stable-Baselines3's defaults: [256, 256], lr 3e-4, batch 256, tau 0.005
    "tqc": {},
    "td3": {},
    # rl-baselines3-zoo's Atari values (hyperparams/dqn.yml, qrdqn.yml: atari), the libraries' defaults otherwise.
    "dqn": {"learning_rate": 1e-4, "batch_size": 32, "target_update_interval": 1000, "exploration_fraction": 0.1,
            "exploration_final_eps": 0.01},
    "qrdqn": {"exploration_fraction": 0.025},
}
# The task of each algorithm's lockstep run unless --env names another: DQN and QR-DQN on Atari frames.
DEFAULT_ENV = {"dqn": "lit_rl/Atari-v0", "qrdqn": "lit_rl/Atari-v0"}
TABLE_AT = (1, 10, 100, 1000, 2500)


def cpu_info() -> dict[str, Any]:
    """The CPU's model name and whether it has bf16 instructions (they change matmul kernels, not float32)."""
    model, flags = cpu_model_and_flags()
    return {"model": model, "avx512_bf16": "avx512_bf16" in flags, "amx_bf16": "amx_bf16" in flags,
            "avx512f": "avx512f" in flags, "torch_threads": torch.get_num_threads()}  # fmt: skip


def _json_number(x: float) -> float | None:
    return None if math.isnan(x) else x


def summary(records: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    """Curves per group (``rel`` and ``abs``), flips per update, and the run's settings."""
    names = groups(records)
    out = dict(meta)
    out["updates"] = [r["update"] for r in records]
    for kind in ("rel", "abs"):
        out[kind] = {g: [_json_number(x) for x in curve(records, g, kind)] for g in names}
    if records and "flips" in records[0]:
        out["flips"] = {k: [r["flips"][k] for r in records] for k in records[0]["flips"]}
    return out


def table(result: dict[str, Any]) -> str:
    """Max relative difference per group at updates 1, 10, 100, 1000, 2500 (those the run reached)."""
    updates = result["updates"]
    at = [u for u in TABLE_AT if u <= len(updates)] + ([len(updates)] if len(updates) not in TABLE_AT else [])
    # Updates where no ReLU input or critic argmin changed sides: there only rounding separates the two.
    calm = [not any(f[i] for f in result["flips"].values()) for i in range(len(updates))] if "flips" in result else None
    header = f"{'group':28s}" + "".join(f"{'@' + str(u):>10s}" for u in at) + f"{'max':>10s}"
    lines = [header + (f"{'max, no flip':>14s}" if calm else "")]
    for g, values in result["rel"].items():
        cells = []
        for u in at:
            v = values[u - 1]
            if v is None:  # not computed on that update (e.g. an actor loss on a critic-only step): the last one
                v = next((x for x in reversed(values[:u]) if x is not None), None)
            cells.append(f"{v:10.1e}" if v is not None else f"{'-':>10s}")
        finite = [x for x in values if x is not None]
        row = f"{g:28s}" + "".join(cells) + (f"{max(finite):10.1e}" if finite else f"{'-':>10s}")
        if calm:
            quiet = [x for x, ok in zip(values, calm, strict=True) if ok and x is not None]
            row += f"{max(quiet):14.1e}" if quiet else f"{'-':>14s}"
        lines.append(row)
    if "flips" in result:
        for k, counts in result["flips"].items():
            c = np.cumsum(counts)
            lines.append(f"{'flips.' + k + ' (cumulative)':28s}" + "".join(f"{int(c[u - 1]):10d}" for u in at))
        first = next((u for u, n in zip(updates, result["flips"]["relu"], strict=True) if n), None)
        lines.append(f"first update with a ReLU flip: {first}; updates with any flip: {calm.count(False)}")
    return "\n".join(lines)


def plot(result: dict[str, Any], path: Path) -> None:
    """Relative difference per group (log scale) and, below, the flips per update."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 8), sharex=True, height_ratios=(3, 1))
    x = np.array(result["updates"])
    for g, values in result["rel"].items():
        y = np.array([np.nan if v is None else v for v in values], dtype=float)
        if np.nanmax(np.nan_to_num(y, nan=0.0)) <= 0:
            continue  # exactly equal throughout (step counters): nothing to draw on a log scale
        keep = y > 0  # exact agreement (and steps without the value) cannot sit on a log scale
        style = "--" if g.startswith("loss.") else ("-." if "exp_avg" in g else "-")
        top.plot(x[keep], y[keep], style, lw=0.8, label=g)
    top.axhline(1e-3, color="k", lw=0.6, ls=":", label="tests/reference/test_lockstep.py TOL")
    top.set_yscale("log")
    top.set_ylabel("max |lit_rl - ref| / max |ref|")
    mode = "resynchronised every update" if result["resync"] else "free-running"
    extra = (", compiled" if result["compile"] else "") + (
        f", lit_rl {result['precision']}" if result.get("precision", "32-true") != "32-true" else "")
    top.set_title(f"lockstep {result['algo']} on {result['env']} ({mode}{extra})")
    top.legend(fontsize=7, ncol=3)
    top.grid(True, which="major", alpha=0.3)
    if "flips" in result:
        for k, counts in result["flips"].items():
            bottom.plot(x, np.maximum(np.array(counts, dtype=float), 0.5), lw=0.8, label=f"{k} flips")
        bottom.set_yscale("log")
        bottom.set_ylim(bottom=0.5)
        bottom.set_ylabel("flips / update")
        bottom.legend(fontsize=7)
    bottom.set_xlabel("update (log scale: the first updates decide where the runs part)")
    bottom.set_xscale("log")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", choices=sorted(ALGOS), default="crossq")
    parser.add_argument("--env", help="gymnasium id (default: Hopper-v4; lit_rl/Atari-v0, Breakout, for DQN and QR-DQN)")
    parser.add_argument("--updates", type=int, default=2500)
    parser.add_argument("--learning-starts", type=int, default=5000)
    parser.add_argument("--collect", choices=("reference", "random"), default="reference")
    parser.add_argument("--compile", action="store_true", help="lit_rl's compiled update (compile=True)")
    parser.add_argument("--resync", action="store_true", help="give lit_rl the reference's state every update")
    parser.add_argument("--precision", default="32-true", choices=("32-true", "bf16-mixed", "16-mixed"),
                        help="lit_rl's precision (the reference's is fp32)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: reproducible across loads)")
    parser.add_argument("--out", type=Path, help="JSON (default bench/lockstep_<algo>[_<task>][_resync][_compiled].json)")
    parser.add_argument("--plot", type=Path, help="PNG of the curves")
    parser.add_argument("--from-json", type=Path, help="no run: the table and --plot of an earlier --out")
    args = parser.parse_args(argv)
    if args.from_json:
        result = json.loads(args.from_json.read_text())
        print(table(result))
        if args.plot:
            plot(result, args.plot)
        return result
    if args.updates < 1:
        parser.error(f"--updates={args.updates} is not allowed; allowed: >= 1")
    torch.set_num_threads(args.threads)
    args.env = args.env or DEFAULT_ENV.get(args.algo, "Hopper-v4")
    # Hopper-v4, the parity runs' task, keeps the short names; other tasks add theirs (lockstep_sac_ant_resync).
    suffix = "" if args.env == "Hopper-v4" else "_" + args.env.split("/")[-1].split("-")[0].lower()
    suffix += ("_resync" if args.resync else "") + ("_compiled" if args.compile else "")
    suffix += "" if args.precision == "32-true" else "_" + args.precision.split("-")[0]
    out = args.out or ROOT / "bench" / f"lockstep_{args.algo}{suffix}.json"
    cpu = cpu_info()
    print(f"CPU: {cpu['model']}  avx512_bf16={cpu['avx512_bf16']}  amx_bf16={cpu['amx_bf16']}  "
          f"torch {torch.__version__}, {cpu['torch_threads']} thread(s)", flush=True)  # fmt: skip

    started = time.perf_counter()
    state = build(args.algo, args.env, DEFAULTS[args.algo], compile=args.compile,
                  learning_starts=args.learning_starts, n_updates=args.updates, collect=args.collect,
                  seed=args.seed, resync=args.resync, precision=args.precision)  # fmt: skip
    built = time.perf_counter()

    def progress(record: dict[str, Any]) -> None:
        u = record["update"]
        if u in TABLE_AT or u % 250 == 0:
            worst = max(record["rel"].items(), key=lambda kv: kv[1])
            print(f"update {u}: {time.perf_counter() - built:.0f} s, worst {worst[0]} {worst[1]:.1e}, "
                  f"flips {record.get('flips')}", flush=True)  # fmt: skip

    records = state.run(args.updates, on_record=progress)
    elapsed = time.perf_counter() - built
    meta = {"algo": args.algo, "env": args.env, "compile": args.compile, "resync": args.resync,
            "precision": args.precision,
            "collect": args.collect, "learning_starts": args.learning_starts, "seed": args.seed,
            "hyperparameters": DEFAULTS[args.algo], "cpu": cpu, "torch": torch.__version__,
            "build_s": round(built - started, 1), "run_s": round(elapsed, 1),
            "s_per_update": round(elapsed / args.updates, 4)}  # fmt: skip
    result = summary(records, meta)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result))
    print(table(result))
    print(f"{args.updates} updates in {elapsed:.0f} s ({elapsed / args.updates:.3f} s/update); wrote {out}")
    if args.plot:
        plot(result, args.plot)
        print(f"plot: {args.plot}")
    return result


if __name__ == "__main__":
    main()
