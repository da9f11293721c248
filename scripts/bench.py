"""Training-speed benchmark: ``make bench`` (``python scripts/bench.py``).

For CrossQ, SAC and TD3 on HalfCheetah-v4 (defaults, 1 env, one gradient step
per env step) it measures, after a warm-up that is not counted:

- learning-phase env steps/s inside the Lightning Trainer (``learn()`` rounds with a CSV logger),
  and the same ``training_step`` in a bare Python loop (Lightning's overhead);
- ``learn()`` as a user calls it (``Algo("MlpPolicy", env_id).learn(n)``, its default logging), eager and
  compiled, in fp32 and bf16 (``precision="bf16-mixed"``), timed exactly as the SB3 and SBX rows beside it (the
  ``+learn`` rows): one callback as the clock for every library, started ``--warmup`` learning steps after
  ``learning_starts`` (so JIT and compile warm-up is not counted), the peers alternating in ``--repeats`` rounds;
- the update against the machine's limit: its FLOPs (``FlopCounterMode``), its
  achieved GFLOP/s, and the time the same ``torch.mm`` products take alone, in fp32
  and in bf16 ("% of compute bound": against the bf16 one for a bf16 row);
- where a step's time goes (update, replay sampling, policy inference, buffer
  writes, env stepping, the collector, logging, Lightning) and the time outside
  the update per env step;
- peak memory and replay bytes per transition;
- the same run with the compiled update (``compile=True``; CUDA graphs on a GPU);
- Stable-Baselines3 / sb3-contrib and SBX (SB3's API in JAX) in the same run, when installed;
- ``n_envs=8`` async against ``n_envs=1`` at the same gradient steps per env step
  (on a GPU: ``n_envs=16`` for every algorithm).

Every measurement runs in its own subprocess (``scripts/bench_workers.py``); a row
that cannot run here (a bf16 row before lit_rl takes ``precision=``) is skipped with
its reason. The CPU model and its bf16 flags, the tables and the speed targets
(``scripts/bench_report.py``) go to stdout,
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

from bench_report import check_targets, compare, cpu_info, failed, format_report, row_key  # noqa: E402
from bench_workers import NET_OPTION_ROWS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ALGOS = ("crossq", "sac", "td3")
RESULT_MARK = "BENCH_RESULT "


def worker(spec: dict[str, Any]) -> None:
    """Run one measurement and print its result as one JSON line."""
    from bench_workers import RowSkipped, run_learn, run_lit_rl

    try:
        result = run_learn(spec) if is_learn_row(spec) else run_lit_rl(spec)
    except RowSkipped as e:
        result = {"skipped": str(e)}
    print(RESULT_MARK + json.dumps({**spec, **result}), flush=True)


def is_learn_row(spec: dict[str, Any]) -> bool:
    """A row timed through ``learn()`` (SB3, SBX, lit_rl's ``+learn``), run in alternating rounds."""
    return spec["lib"] != "lit_rl" or bool(spec.get("learn"))


# ---------------------------------------------------------------------------------------------- orchestration
def sb3_available() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("stable_baselines3", "sb3_contrib"))


def sbx_available() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("sbx", "jax", "stable_baselines3"))


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def plan(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The measurements: lit_rl, SB3 and SBX (when installed) per algorithm and device, plus the n_envs rows.

    Per algorithm: lit_rl's Trainer rows (eager, compiled), then the learn() peers that run in alternating
    rounds: SB3, SBX (CPU), lit_rl eager, lit_rl compiled, then the same two in bf16.
    """
    devices = (["cpu", "cuda"] if cuda_available() else ["cpu"]) if args.devices == "auto" else args.devices.split(",")
    with_sb3 = not args.no_sb3 and sb3_available()
    if not args.no_sb3 and not with_sb3:
        print("stable-baselines3 / sb3-contrib not installed: SB3 rows skipped (pip install -e '.[bench]')")
    with_sbx = not args.no_sbx and sbx_available()
    if not args.no_sbx and not with_sbx:
        print("sbx-rl (JAX) not installed: SBX rows skipped (pip install -e '.[bench]')")
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
            setting = "reduce-overhead" if device == "cuda" else True  # CUDA graphs on a GPU
            specs.append({**one, **lit})
            if args.compiled:  # the same run with trainer.compile
                specs.append(
                    {**one, **lit, "compiled": True, "algo_kwargs": {**lit["algo_kwargs"], "compile": setting}}
                )
            # The learn() peers, one after the other in each round (run_rounds).
            if with_sb3:
                specs.append({**one, "lib": "sb3"})
            if with_sbx and device == "cpu":  # the installed jaxlib is the CPU one
                specs.append({**one, "lib": "sbx"})
            if args.learn:  # the path users call: Algo("MlpPolicy", env_id).learn(...), as the peers next to it
                for precision in ("32-true", "bf16-mixed") if args.bf16 else ("32-true",):
                    for compiled in (False, True) if args.compiled else (False,):
                        kwargs = {**lit["algo_kwargs"], **({"compile": setting} if compiled else {}),
                                  **({"precision": precision} if precision != "32-true" else {})}  # fmt: skip
                        flags = {"compiled": compiled, "bf16": precision == "bf16-mixed"}
                        specs.append({**one, **lit, "learn": True, "algo_kwargs": kwargs,
                                      **{k: True for k, v in flags.items() if v}})  # fmt: skip
        for row in [n for n in args.nets.split(",") if n] if device == "cpu" else []:
            if row not in NET_OPTION_ROWS:
                raise ValueError(f"--nets: {row!r} is not allowed; allowed: {list(NET_OPTION_ROWS)}")
            steps = args.crossq_steps if NET_OPTION_ROWS[row][0] == "crossq" else args.steps
            specs.append({**base, **lit, "algo": row, "device": device, "steps": steps})
        # Many envs at the same gradient steps per env step (1): n envs -> n gradient steps per vector step.
        # The CPU row checks async envs pay off; on a GPU every algorithm gets an n_envs=16 row.
        n = args.gpu_vec_envs if device == "cuda" else args.vec_envs
        # --quick: n times the steps, so that a Trainer round still spans more than one Lightning batch.
        steps = args.steps * n if args.quick else args.steps
        for algo in algos if device == "cuda" else [args.vec_algo] if args.vec_algo else []:
            specs.append({**base, **lit, "algo": algo, "device": device, "steps": steps, "n_envs": n,
                          "warmup": max(args.warmup // n, 1), "vectorization": "async", "gradient_steps": n})  # fmt: skip
    return specs


def schedule(specs: list[dict[str, Any]], repeats: int) -> list[tuple[int, int]]:
    """``(spec index, round)`` in run order: a Trainer row once (it alternates its own rounds inside), each run of
    consecutive learn() rows (one algorithm's peers) ``repeats`` times in turn, so a shared host's load swings
    reach every peer alike."""
    order: list[tuple[int, int]] = []
    block: list[int] = []
    for i, spec in enumerate([*specs, None]):
        if spec is not None and is_learn_row(spec):
            block.append(i)
            continue
        order += [(j, r) for r in range(repeats) for j in block]
        block = []
        if spec is not None:
            order.append((i, 0))
    return order


def merge_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One row from a learn() row's rounds: the median round's figures, every round's env steps/s."""
    measured = [r for r in rounds if failed(r) is None]
    if not measured:
        return rounds[0]
    median = sorted(measured, key=lambda r: r["fps"])[len(measured) // 2]
    return {**median, "fps_rounds": [r["fps"] for r in measured]}


def run_rounds(specs: list[dict[str, Any]], repeats: int, timeout: float) -> list[dict[str, Any]]:
    """Run every spec in :func:`schedule`'s order, printing progress; a row that fails or is skipped runs once."""
    rounds: list[list[dict[str, Any]]] = [[] for _ in specs]
    order = schedule(specs, repeats)
    for n, (i, r) in enumerate(order, 1):
        if rounds[i] and failed(rounds[i][-1]) is not None:
            continue
        spec = specs[i]
        label = f" (round {r + 1}/{repeats})" if is_learn_row(spec) and repeats > 1 else ""
        print(f"[{n}/{len(order)}] {row_key(spec)}{label} ...", flush=True)
        rounds[i].append(run_spec(spec, timeout))
        res = rounds[i][-1]
        status = (f"SKIPPED {res['skipped']}" if res.get("skipped") else f"ERROR {res['error']}" if "error" in res
                  else f"{res['fps']:.1f} env steps/s")  # fmt: skip
        print("    " + status, flush=True)
    return [merge_rounds(r) if is_learn_row(s) else r[0] for s, r in zip(specs, rounds, strict=True)]


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
    p.add_argument("--warmup", type=int, default=300,
                   help="learning-phase env steps before timing (uncounted: JIT and compile happen here)")  # fmt: skip
    p.add_argument("--steps", type=int, default=1000, help="timed env steps per round (SAC, TD3, n_envs run)")
    p.add_argument("--crossq-steps", type=int, default=250, help="timed env steps per round for CrossQ (slow on CPU)")
    p.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="alternating Trainer/bare rounds, and rounds of the alternating learn() peers; medians are reported "
        "(a shared host's load swings single rounds)",
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
    p.add_argument("--no-sbx", action="store_true", help="skip SBX (SB3's API in JAX) even when installed")
    p.add_argument("--no-bf16", dest="bf16", action="store_false",
                   help="skip lit_rl's bf16 learn() rows (precision='bf16-mixed', eager and compiled)")  # fmt: skip
    p.add_argument("--no-learn", dest="learn", action="store_false",
                   help="skip lit_rl's learn() rows (its SB3-API path, fp32 and bf16, timed as SB3's)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per measurement before it is abandoned")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "latest.json")
    p.add_argument("--compare", type=Path, default=None, help="an earlier --out file to compare env steps/s with")
    p.add_argument("--quick", action="store_true", help="tiny counts: checks the harness, measures nothing useful")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        # CrossQ too gets more steps than learn()'s 16 rounds per Lightning batch: a Trainer round times 2+ batches.
        args.warmup, args.steps, args.crossq_steps, args.repeats, args.matmul_seconds = 10, 40, 40, 1, 0.2
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

    specs, cpu = plan(args), cpu_info()
    start = time.perf_counter()
    results = run_rounds(specs, args.repeats, args.timeout)
    targets = check_targets(results, cpu)
    report = {
        "meta": {
            "commit": git_commit(),
            "cpu": cpu,
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
    print(format_report(results, targets, cpu))
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
