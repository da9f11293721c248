"""Packed gradient steps against separate processes: member updates per second on the same cores.

For SAC and TD3 with HalfCheetah-v4's shapes and the default [256, 256] networks, and CrossQ with its [1024, 1024]
critics (batch 256), it times (a) one process stepping a pack of P members with :mod:`lit_rl.packed` on all threads, and (b) P separate
processes, one thread each, each stepping one member with its own ``update``, all at once on the same cores.
Rows alternate within one run; the CPU model, its bf16 flags and the fp32 matmul rate measured in this run head
the table. The gradient steps only: env stepping, acting and buffer writes are not part of these figures;
``--runs`` adds whole runs (SAC, TD3) against separate lit_rl processes, ``--sbx`` also against separate SBX ones.

Member updates per second, per row; the pack eager and compiled (``compile=True``, compile time not counted).
Usage: ``python scripts/bench_packed.py [--sizes 1,4,8,16] [--algos sac,td3,crossq] [--seconds 8] [--no-compiled]
[--runs [--sbx]] [--best]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BATCH = 256
MARK = "RESULT "


def algorithm_class(algo: str) -> Any:
    import lit_rl

    return getattr(lit_rl, ALGOS[algo])


ALGOS = {"sac": "SAC", "td3": "TD3", "crossq": "CrossQ"}  # CrossQ with its paper's [1024, 1024] critics
RUN_ALGOS = ("sac", "td3")  # whole-run rows (a CrossQ run of 1000 steps per member takes minutes per process here)


def make_members(algo: str, n: int, precision: str = "32-true", compile: bool = False) -> list[Any]:
    cls = algorithm_class(algo)
    return [cls("MlpPolicy", "HalfCheetah-v4", batch_size=BATCH, buffer_size=1000, seed=i, precision=precision,
                compile=compile) for i in range(n)]  # fmt: skip


def random_batch(n: int, generator: Any) -> Any:
    import torch

    from lit_rl.buffers.replay import ReplayBatch

    def r(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator)

    return ReplayBatch(r(n, BATCH, 17), r(n, BATCH, 6).clamp(-1, 1), r(n, BATCH, 17), r(n, BATCH), r(n, BATCH) > 2)


def packed_rate(algo: str, n: int, seconds: float, compile: bool = False, precision: str = "32-true") -> float:
    """Member updates per second of a pack of ``n`` on this process's threads (compile time not counted)."""
    import torch

    from lit_rl.packed.run import pack_class

    members = make_members(algo, n, precision)
    pack = pack_class(members[0])(members, compile=compile)
    batch = random_batch(n, torch.Generator().manual_seed(0))
    batch = batch._replace(terminated=batch.terminated.float())
    for _ in range(3):  # TD3's actor step comes every second step: both kinds compiled and warm
        pack.gradient_step(batch, pack.draw_noise(batch))
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        pack.gradient_step(batch, pack.draw_noise(batch))
        steps += 1
    return n * steps / (time.perf_counter() - start)


def worker(algo: str, go: Path, seconds: float, best: bool) -> None:
    """One member's own updates in a one-thread process, started when ``go`` appears; prints its count. With
    ``best``, the member's fastest settings on this CPU (bf16, compiled update)."""
    import torch

    from tests.reference.sb3_weights import without_trainer

    torch.set_num_threads(1)
    (member,) = make_members(algo, 1, "bf16-mixed", True) if best else make_members(algo, 1)
    without_trainer(member)
    one = random_batch(1, torch.Generator().manual_seed(0))
    batch = type(one)(*(t[0].float() for t in one[:5]))
    for _ in range(3):
        member.round_gradient_step = 0
        member.update(batch)
    print("READY", flush=True)
    while not go.exists():
        time.sleep(0.01)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        member.round_gradient_step = 0
        member.update(batch)
        steps += 1
    print(MARK + json.dumps({"updates_per_s": steps / (time.perf_counter() - start)}), flush=True)


def separate_rate(algo: str, n: int, seconds: float, folder: Path, runs: bool = False, best: bool = False,
                  library: str = "lit_rl") -> float:  # fmt: skip
    """Member updates (``runs``: env steps) per second of ``n`` one-thread processes running at once (``library``
    sbx: SBX's ``learn()``, JAX on one thread)."""
    go = folder / f"go_{algo}_{n}_{time.monotonic_ns()}"
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")  # fmt: skip
    cmd = [sys.executable, __file__, "--worker", algo, "--go", str(go), "--seconds", str(seconds), "--library", library]
    cmd += (["--runs"] if runs else []) + (["--best"] if best else [])
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True) for _ in range(n)]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
    go.touch()
    total = 0.0
    for proc in procs:
        out, _ = proc.communicate()
        total += json.loads(next(line for line in out.splitlines() if line.startswith(MARK))[len(MARK):])["updates_per_s"]
    go.unlink()
    return total


def run_member(algo: str, seed: int, precision: str = "32-true", library: str = "lit_rl") -> Any:
    if library == "sbx":
        import sbx

        return getattr(sbx, ALGOS[algo])("MlpPolicy", "HalfCheetah-v4", seed=seed, learning_starts=RUN_STARTS,
                                         buffer_size=RUN_STEPS)  # fmt: skip
    cls = algorithm_class(algo)
    return cls("MlpPolicy", "HalfCheetah-v4", seed=seed, learning_starts=RUN_STARTS, buffer_size=RUN_STEPS,
               precision=precision)  # fmt: skip


RUN_STEPS, RUN_STARTS = 1500, 500  # env steps per member in the whole-run rows; the clock starts at learning_starts
WARM_ROUNDS = 3  # rounds of gradient steps left out of the whole-run clock (the compiled pack compiles in the first)


def packed_run_rate(algo: str, n: int, precision: str = "32-true", compile: bool = False,
                    batched_acting: bool = True) -> tuple[float, float, float]:  # fmt: skip
    """Total env steps/s of ``learn_packed`` with ``n`` members after its first rounds (threads, one process), and
    the shares of that time spent in the packed rounds of gradient steps and in the batched rollout actions (the
    rest: env steps, buffer writes and Lightning's loop, each member in its thread, and the threads' meeting).
    ``batched_acting=False``: each member acts alone in its thread, as before rollout actions were packed."""
    import lit_rl.packed.run as packed_run
    from lit_rl.packed import learn_packed

    rounds: list[tuple[float, float]] = []
    acting: list[tuple[float, float]] = []
    packed_round, act, add = packed_run.packed_round, packed_run.PackRun.act, packed_run.PackRun.add

    def add_acting_alone(self: Any, index: int, member: Any) -> Any:
        generator = add(self, index, member)
        del member.rollout_act  # the member's own act, in its own thread
        return generator

    def timed_round(*args: Any, **kwargs: Any) -> None:
        start = time.perf_counter()
        packed_round(*args, **kwargs)
        rounds.append((start, time.perf_counter()))

    def timed_act(self: Any, indices: list[int]) -> None:
        start = time.perf_counter()
        act(self, indices)
        acting.append((start, time.perf_counter()))

    packed_run.packed_round = timed_round  # type: ignore[assignment]
    packed_run.PackRun.act = timed_act  # type: ignore[method-assign]
    if not batched_acting:
        packed_run.PackRun.add = add_acting_alone  # type: ignore[method-assign]
    try:
        learn_packed([run_member(algo, i, precision) for i in range(n)], RUN_STEPS, compile=compile)
        end = time.perf_counter()
    finally:
        packed_run.packed_round = packed_round  # type: ignore[assignment]
        packed_run.PackRun.act, packed_run.PackRun.add = act, add  # type: ignore[method-assign]
    timed = rounds[WARM_ROUNDS:]
    begin = rounds[WARM_ROUNDS - 1][1]
    wall = end - begin
    acted = sum(b - a for a, b in acting if a >= begin)
    return n * len(timed) / wall, sum(b - a for a, b in timed) / wall, acted / wall


def run_worker(algo: str, go: Path, library: str = "lit_rl") -> None:
    """One member's ``learn()`` (lit_rl's, or SBX's) in a one-thread process from learning_starts on; prints its env
    steps/s."""
    import torch

    torch.set_num_threads(1)
    member = run_member(algo, 0, library=library)
    member.learn(RUN_STARTS + WARM_ROUNDS)
    print("READY", flush=True)
    while not go.exists():
        time.sleep(0.01)
    start = time.perf_counter()
    member.learn(RUN_STEPS - RUN_STARTS - WARM_ROUNDS, reset_num_timesteps=False)
    rate = (RUN_STEPS - RUN_STARTS - WARM_ROUNDS) / (time.perf_counter() - start)
    print(MARK + json.dumps({"updates_per_s": rate}), flush=True)


def matmul_gflops() -> float:
    import torch

    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * 1024**3 / statistics.median(times) / 1e9


def plot(result: dict[str, Any], path: Path) -> None:
    """Member updates/s (and whole runs' env steps/s) against pack size, per algorithm, beside separate processes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    algos = sorted({r["algo"] for r in result["rows"] if "separate" in r})
    fig, axes = plt.subplots(1, len(algos) + bool(result["runs"]), figsize=(5 * (len(algos) + 1), 4), squeeze=False)
    for ax, algo in zip(axes[0], algos, strict=False):
        rows = [r for r in result["rows"] if r["algo"] == algo and "separate" in r]
        sizes = [r["members"] for r in rows]
        ax.plot(sizes, [r["separate"] for r in rows], "k--o", label="separate processes (fp32)")
        for key in [k for k in rows[0] if k.startswith("packed ")]:
            ax.plot(sizes, [r[key] for r in rows], "-o", label=key.replace("packed", "pack,"))
        best = [r for r in result["rows"] if r["algo"] == algo and "separate bf16 compiled" in r]
        if best:
            ax.axhline(best[0]["separate bf16 compiled"], color="grey", linestyle=":", label="separate, bf16 compiled")
        ax.set(title=f"{algo.upper()} gradient steps", xlabel="members", ylabel="member updates / s", xscale="log")
        ax.set_xticks(sizes, [str(s) for s in sizes])
        ax.minorticks_off()
        ax.legend(fontsize=7)
    if result["runs"]:
        ax = axes[0][-1]
        ax.set_xscale("log")
        for algo in sorted({r["algo"] for r in result["runs"]}):
            rows = [r for r in result["runs"] if r["algo"] == algo]
            sizes = [r["members"] for r in rows]
            ax.plot(sizes, [r["separate"] for r in rows], "--o", label=f"{algo.upper()} separate processes")
            ax.plot(sizes, [r["packed"] for r in rows], "-o", label=f"{algo.upper()} learn_packed")
            if all("separate sbx" in r for r in rows):
                ax.plot(sizes, [r["separate sbx"] for r in rows], ":^", label=f"{algo.upper()} separate SBX processes")
            if all("packed bf16 compiled" in r for r in rows):
                ax.plot(sizes, [r["packed bf16 compiled"] for r in rows], "-s",
                        label=f"{algo.upper()} learn_packed, bf16 compiled")  # fmt: skip
            ax.set_xticks(sizes, [str(s) for s in sizes])
            ax.minorticks_off()
        ax.set(title="whole runs (HalfCheetah-v4)", xlabel="members", ylabel="total env steps / s")
        ax.legend(fontsize=7)
    fig.suptitle(result["head"], fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1,4,8,16", help="pack sizes (members)")
    p.add_argument("--algos", default="sac,td3", help="from sac, td3, crossq (crossq: gradient-step rows only)")
    p.add_argument("--sbx", action="store_true", help="whole runs also as separate SBX processes (--runs)")
    p.add_argument("--library", default="lit_rl", help=argparse.SUPPRESS)
    p.add_argument("--seconds", type=float, default=8.0, help="timed seconds per row")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "packed.json")
    p.add_argument("--no-compiled", dest="compiled", action="store_false", help="skip the compiled pack rows")
    p.add_argument("--runs", action="store_true", help="also whole runs: env steps/s of learn_packed")
    p.add_argument("--runs-only", action="store_true", help="whole runs only (no gradient-step rows)")
    p.add_argument("--best", action="store_true", help="separate processes also in bf16, compiled (2 processes)")
    p.add_argument("--plot", type=Path, help="PNG: throughput against pack size (or --replot a JSON)")
    p.add_argument("--replot", type=Path, help="only draw --plot from this earlier JSON")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--go", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        if args.runs:
            run_worker(args.worker, args.go, args.library)
        else:
            worker(args.worker, args.go, args.seconds, args.best)
        return 0
    if args.replot:
        if args.plot is None:
            p.error("--replot needs --plot (the PNG to write)")
        plot(json.loads(args.replot.read_text()), args.plot)
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s]
    algos = [a for a in args.algos.split(",") if a]
    if bad := [s for s in sizes if s < 1]:
        p.error(f"--sizes has {bad}; allowed: pack sizes >= 1")
    if unknown := sorted(set(algos) - set(ALGOS)):
        p.error(f"--algos has unknown {unknown}; allowed: {sorted(ALGOS)}")
    import torch

    from lit_rl.utils.machine import BF16_FLAGS, cpu_model_and_flags

    model, flags = cpu_model_and_flags()
    bf16 = ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in BF16_FLAGS)
    gflops = matmul_gflops()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    head = (f"{datetime.now():%Y-%m-%d %H:%M}, commit {commit.stdout.strip() or 'unknown'}, {model} "
            f"({os.cpu_count()} CPUs, torch {torch.get_num_threads()} threads; {bf16}); fp32 matmul {gflops:.0f} GFLOP/s")  # fmt: skip
    print(head, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    variants = [("eager", False, "32-true"), ("compiled", True, "32-true"), ("bf16 eager", False, "bf16-mixed"),
                ("bf16 compiled", True, "bf16-mixed")]  # fmt: skip
    variants = [v for v in variants if args.compiled or not v[1]]
    args.runs = args.runs or args.runs_only
    if not args.runs_only:
        print(f"| algo | members | separate processes | {' | '.join('pack, ' + v[0] for v in variants)} | best / "
              "separate |")  # fmt: skip
        print("|---|---|---|" + "---|" * len(variants) + "---|")
    for algo in [] if args.runs_only else algos:
        for n in sizes:
            separate = separate_rate(algo, n, args.seconds, args.out.parent)
            packed = {name: packed_rate(algo, n, args.seconds, compile, precision) for name, compile, precision in variants}
            rows.append({"algo": algo, "members": n, "separate": round(separate, 1)}
                        | {f"packed {k}": round(v, 1) for k, v in packed.items()})  # fmt: skip
            cells = " | ".join(f"{v:.1f}" for v in packed.values())
            print(f"| {algo} | {n} | {separate:.1f} | {cells} | {max(packed.values()) / separate:.2f}x |", flush=True)
    if args.best:
        print("\nSeparate processes at their fastest (bf16, compiled update), as many as cores; member updates/s:")
        for algo in algos:
            best = separate_rate(algo, os.cpu_count() or 1, args.seconds, args.out.parent, best=True)
            rows.append({"algo": algo, "members": os.cpu_count(), "separate bf16 compiled": round(best, 1)})
            print(f"| {algo} | {os.cpu_count()} processes | {best:.1f} |", flush=True)
    run_rows = []
    if args.runs:
        print(f"\nWhole runs, HalfCheetah-v4, {RUN_STEPS - RUN_STARTS} env steps per member after learning_starts; "
              "total env steps/s:")  # fmt: skip
        sbx_head = " separate SBX processes | bf16 packed / SBX |" if args.sbx else ""
        print("| algo | members | separate processes | learn_packed | packed / separate | learn_packed bf16 compiled "
              f"| packed / separate | share in packed rounds | share in batched acting | bf16 compiled, each member "
              f"acting alone |{sbx_head}")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|---|" + "---|---|" * args.sbx)
        for algo in [a for a in algos if a in RUN_ALGOS]:
            for n in sizes:
                separate = separate_rate(algo, n, args.seconds, args.out.parent, runs=True)
                packed, _, _ = packed_run_rate(algo, n)
                fast, share, acting = packed_run_rate(algo, n, "bf16-mixed", compile=True)
                alone, _, _ = packed_run_rate(algo, n, "bf16-mixed", compile=True, batched_acting=False)
                row = {"algo": algo, "members": n, "separate": round(separate, 1), "packed": round(packed, 1),
                       "packed bf16 compiled": round(fast, 1), "round share": round(share, 2),
                       "acting share": round(acting, 2), "packed bf16 compiled, acting alone": round(alone, 1)}  # fmt: skip
                line = (f"| {algo} | {n} | {separate:.1f} | {packed:.1f} | {packed / separate:.2f}x | {fast:.1f} | "
                        f"{fast / separate:.2f}x | {share:.0%} | {acting:.0%} | {alone:.1f} |")  # fmt: skip
                if args.sbx:
                    row["separate sbx"] = sbx = round(separate_rate(algo, n, args.seconds, args.out.parent, runs=True,
                                                                    library="sbx"), 1)  # fmt: skip
                    line += f" {sbx:.1f} | {fast / sbx:.2f}x |"
                run_rows.append(row)
                print(line, flush=True)
    result = {"head": head, "matmul_gflops": gflops, "rows": rows, "runs": run_rows}
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    if args.plot:
        plot(result, args.plot)
        print(f"plot: {args.plot}")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
