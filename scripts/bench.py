"""Training-speed benchmark: ``make bench`` (``python scripts/bench.py``).

For CrossQ, SAC and TD3 on HalfCheetah-v4 (defaults, 1 env, one gradient step
per env step) it measures, after a warm-up that is not counted:

- learning-phase env steps/s inside the Lightning Trainer (``learn()`` rounds with a CSV logger),
  and the same ``training_step`` in a bare Python loop (Lightning's overhead);
- ``learn()`` as a user calls it (``Algo("MlpPolicy", env_id).learn(n)``, its default logging), timed
  exactly as the SB3 row beside it (the ``+learn`` rows);
- the update against the machine's limit: its FLOPs (``FlopCounterMode``), its
  achieved GFLOP/s, and the time the same ``torch.mm`` products take alone
  ("% of compute bound");
- where a step's time goes (update, replay sampling, policy inference, buffer
  writes, env stepping, the collector, logging, Lightning) and the time outside
  the update per env step;
- peak memory and replay bytes per transition;
- the same run with the compiled update (``compile=True``; CUDA graphs on a GPU);
- Stable-Baselines3 / sb3-contrib in the same run, when installed;
- ``n_envs=8`` async against ``n_envs=1`` at the same gradient steps per env step
  (on a GPU: ``n_envs=16`` for every algorithm).

Every measurement runs in its own subprocess (``scripts/bench_workers.py``);
the tables and the speed targets (``scripts/bench_report.py``) go to stdout,
everything to ``--out`` (JSON). ``--compare old.json`` prints the speed ratio
to an earlier run; ``--quick`` checks the harness in about a minute (its
numbers are not benchmarks). The measuring code is ``lit_rl/utils/measure.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench_* modules beside this file

from bench_report import check_targets, compare, format_report, row_key  # noqa: E402
from bench_workers import NET_OPTION_ROWS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ALGOS = ("crossq", "sac", "td3")
RESULT_MARK = "BENCH_RESULT "


def worker(spec: dict[str, Any]) -> None:
    """Run one measurement and print its result as one JSON line."""
    from bench_workers import run_learn, run_lit_rl

    result = run_learn(spec) if spec["lib"] == "sb3" or spec.get("learn") else run_lit_rl(spec)
    print(RESULT_MARK + json.dumps({**spec, **result}), flush=True)


# ---------------------------------------------------------------------------------------------- orchestration
def sb3_available() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("stable_baselines3", "sb3_contrib"))


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def plan(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The measurements: lit_rl and (when installed) SB3 per algorithm and device, plus the n_envs rows."""
    devices = (["cpu", "cuda"] if cuda_available() else ["cpu"]) if args.devices == "auto" else args.devices.split(",")
    with_sb3 = not args.no_sb3 and sb3_available()
    if not args.no_sb3 and not with_sb3:
        print("stable-baselines3 / sb3-contrib not installed: SB3 rows skipped (pip install -e '.[bench]')")
    algos = args.algos.split(",")
    for option, algo in [("--algos", a) for a in algos] + ([("--vec-algo", args.vec_algo)] if args.vec_algo else []):
        if algo not in ALGOS:
            raise ValueError(f"{option}: {algo!r} is not allowed; allowed: {list(ALGOS)}")
    base = {"env": args.env, "seed": args.seed, "warmup": args.warmup, "repeats": args.repeats,
            "matmul_seconds": args.matmul_seconds, "n_envs": 1}  # fmt: skip
    # None: the algorithm's default (what `learn()` and `python -m lit_rl.train` use).
    lit = {"lib": "lit_rl", "vectorization": "sync", "gradient_steps": 1,
           "algo_kwargs": {} if args.steps_per_batch is None else {"steps_per_batch": args.steps_per_batch}}  # fmt: skip
    specs = []
    for device in devices:
        for algo in algos:
            one = {
                **base,
                "algo": algo,
                "device": device,
                "steps": args.crossq_steps if algo == "crossq" else args.steps,
            }
            specs.append({**one, **lit})
            if args.compiled:  # the same run with trainer.compile (CUDA graphs on a GPU)
                setting = "reduce-overhead" if device == "cuda" else True
                specs.append(
                    {**one, **lit, "compiled": True, "algo_kwargs": {**lit["algo_kwargs"], "compile": setting}}
                )
            if args.learn:  # the path users call: Algo("MlpPolicy", env_id).learn(...), as the SB3 row next to it
                specs.append({**one, **lit, "learn": True})
            if with_sb3:
                specs.append({**one, "lib": "sb3"})
        for row in [n for n in args.nets.split(",") if n] if device == "cpu" else []:
            if row not in NET_OPTION_ROWS:
                raise ValueError(f"--nets: {row!r} is not allowed; allowed: {list(NET_OPTION_ROWS)}")
            steps = args.crossq_steps if NET_OPTION_ROWS[row][0] == "crossq" else args.steps
            specs.append({**base, **lit, "algo": row, "device": device, "steps": steps})
        # Many envs at the same gradient steps per env step (1): n envs -> n gradient steps per vector step.
        # The CPU row checks async envs pay off; on a GPU every algorithm gets an n_envs=16 row.
        n = args.gpu_vec_envs if device == "cuda" else args.vec_envs
        for algo in algos if device == "cuda" else [args.vec_algo] if args.vec_algo else []:
            specs.append({**base, **lit, "algo": algo, "device": device, "steps": args.steps, "n_envs": n,
                          "warmup": max(args.warmup // n, 1), "vectorization": "async", "gradient_steps": n})  # fmt: skip
    return specs


def run_spec(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter; return its result (or the error)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {**spec, "error": f"timed out after {timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK) :])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
    return {**spec, "error": f"exit {proc.returncode}: " + " | ".join(tail)}


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=ROOT
        )
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if out.returncode == 0 else None
    except OSError:
        return None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--algos", default=",".join(ALGOS), help="comma-separated subset of crossq,sac,td3")
    p.add_argument("--env", default="HalfCheetah-v4")
    p.add_argument("--devices", default="auto", help="'auto' (cpu, and cuda when present) or e.g. 'cpu' / 'cpu,cuda'")
    p.add_argument("--warmup", type=int, default=200, help="learning-phase env steps before timing (not counted)")
    p.add_argument("--steps", type=int, default=1000, help="timed env steps per round (SAC, TD3, n_envs run)")
    p.add_argument("--crossq-steps", type=int, default=250, help="timed env steps per round for CrossQ (slow on CPU)")
    p.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="alternating Trainer/bare rounds; medians are reported (a shared host's load swings single rounds)",
    )
    p.add_argument(
        "--steps-per-batch",
        type=int,
        default=None,
        help="lit_rl collect/update rounds per Lightning batch (default: algo's)",
    )
    p.add_argument("--nets", default=",".join(NET_OPTION_ROWS),
                   help="network-option rows on the CPU (policy_kwargs.net, lit_rl only); '' to skip")  # fmt: skip
    p.add_argument("--vec-algo", default="sac", help="algorithm of the n_envs comparison ('' to skip)")
    p.add_argument("--vec-envs", type=int, default=8, help="envs of the CPU n_envs row")
    p.add_argument("--gpu-vec-envs", type=int, default=16, help="envs of the GPU n_envs rows (every algorithm)")
    p.add_argument("--matmul-seconds", type=float, default=2.0, help="seconds replaying the update's torch.mm products")
    p.add_argument(
        "--no-compiled",
        dest="compiled",
        action="store_false",
        help="skip the compiled rows (lit_rl with compile=True; 'reduce-overhead' on a GPU)",
    )
    p.add_argument("--no-sb3", action="store_true", help="skip Stable-Baselines3 even when installed")
    p.add_argument("--no-learn", dest="learn", action="store_false",
                   help="skip the learn() rows (lit_rl's SB3-API path, timed as the SB3 rows)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per measurement before it is abandoned")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "latest.json")
    p.add_argument("--compare", type=Path, default=None, help="an earlier --out file to compare env steps/s with")
    p.add_argument("--quick", action="store_true", help="tiny counts: checks the harness, measures nothing useful")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.warmup, args.steps, args.crossq_steps, args.repeats, args.matmul_seconds = 10, 40, 8, 1, 0.2
    for name in ("warmup", "steps", "crossq_steps", "repeats", "vec_envs", "gpu_vec_envs", "steps_per_batch"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')}={getattr(args, name)} must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        worker(json.loads(args.worker))
        return 0
    import torch

    specs = plan(args)
    results, start = [], time.perf_counter()
    for i, spec in enumerate(specs, 1):
        print(f"[{i}/{len(specs)}] {row_key(spec)} ...", flush=True)
        results.append(run_spec(spec, args.timeout))
        r = results[-1]
        print("    " + (f"ERROR {r['error']}" if "error" in r else f"{r['fps']:.1f} env steps/s"), flush=True)
    targets = check_targets(results)
    report = {
        "meta": {
            "commit": git_commit(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cpu_count": os.cpu_count(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "quick": args.quick,
            "args": {k: str(v) for k, v in vars(args).items() if k != "worker"},
            "wall_seconds": round(time.perf_counter() - start, 1),
        },
        "results": results,
        "targets": targets,
    }
    print()
    print(format_report(results, targets))
    if args.compare is not None:
        print(compare(results, args.compare))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(f".{args.out.name}.tmp")
    tmp.write_text(json.dumps(report, indent=2, default=str) + "\n")
    os.replace(tmp, args.out)
    print(f"\nwrote {args.out} ({report['meta']['wall_seconds']} s)")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
