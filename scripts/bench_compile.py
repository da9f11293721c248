"""Eager vs compiled (``compile=True``) update and acting time per algorithm, on HalfCheetah-v4-shaped batches.

Default networks of each algorithm (CrossQ: critic [1024, 1024], actor [256, 256]; SAC/TD3/DDPG: [256, 256];
DQN: [64, 64] with 6 discrete actions and its batch of 32), observations of 17, actions of 6, batch 256.
Both variants live in one process and are timed in alternating rounds (the order flips every round), so a
load from other processes slows both alike; compile warm-up is timed separately and excluded. Wall time and
process CPU time per update are both reported: on a loaded machine wall time is mostly waiting for a core,
CPU time is not. Figures on a shared machine are noisy: compare the medians, and the spread between rounds.

    OMP_NUM_THREADS=2 .venv/bin/python scripts/bench_compile.py              # all five
    .venv/bin/python scripts/bench_compile.py --algos sac td3 --rounds 7 --updates 20 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lit_rl.algorithms import DDPG, DQN, SAC, TD3, CrossQ  # noqa: E402
from lit_rl.buffers.replay import ReplayBatch  # noqa: E402
from lit_rl.core.compiled import compile_stats  # noqa: E402

OBS_DIM, ACT_DIM = 17, 6
ALGOS = {"crossq": CrossQ, "sac": SAC, "td3": TD3, "ddpg": DDPG, "dqn": DQN}


def make_algo(name: str, compile_updates: bool) -> Any:
    """The algorithm with its default networks, optimizers wired without a Trainer."""
    cls = ALGOS[name]
    torch.manual_seed(0)
    action_space = spaces.Discrete(ACT_DIM) if name == "dqn" else spaces.Box(-1.0, 1.0, (ACT_DIM,), np.float32)
    algo = cls(buffer_size=1_000, compile=compile_updates)
    algo.build_networks(spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32), action_space)
    opts = algo.configure_optimizers()
    algo.optimizers = lambda: opts  # what Lightning's plain path hands the algorithm
    algo.manual_backward = lambda loss: loss.backward()
    return algo


def make_batches(algo: Any, n: int) -> list[ReplayBatch]:
    g = torch.Generator().manual_seed(1)
    size = algo.batch_size
    discrete = isinstance(algo, DQN)
    return [
        ReplayBatch(
            observations=torch.randn(size, OBS_DIM, generator=g),
            actions=torch.randint(0, ACT_DIM, (size,), generator=g) if discrete
            else torch.rand(size, ACT_DIM, generator=g) * 2 - 1,
            next_observations=torch.randn(size, OBS_DIM, generator=g),
            rewards=torch.randn(size, generator=g),
            terminated=(torch.rand(size, generator=g) < 0.01).float(),
        )
        for _ in range(n)
    ]  # fmt: skip


def updates(algo: Any, batches: list[ReplayBatch], n: int) -> tuple[float, float]:
    """Wall and process CPU seconds for ``n`` gradient steps (cycling through ``batches``).

    CPU time leaves out the time spent waiting for a core, which dominates wall time on a loaded machine.
    """
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        algo.gradient_step(batches[i % len(batches)])
    return time.perf_counter() - start, time.process_time() - cpu


@torch.no_grad()
def acts(algo: Any, obs: torch.Tensor, n: int) -> float:
    """Seconds for ``n`` calls of the acting function on one env's observation (collection)."""
    start = time.perf_counter()
    for _ in range(n):
        algo.policy_action(obs, False)
    return time.perf_counter() - start


def bench(name: str, rounds: int, n_updates: int, n_acts: int) -> dict[str, Any]:
    eager, fast = make_algo(name, False), make_algo(name, True)
    batches = make_batches(eager, 8)
    obs = torch.randn(1, OBS_DIM)
    warmup = 2 * max(getattr(eager, "policy_delay", 1), 1) + 2  # every loss function called at least twice
    start = time.perf_counter()
    updates(fast, batches, warmup)
    acts(fast, obs, 3)
    compile_s = time.perf_counter() - start
    updates(eager, batches, warmup)
    acts(eager, obs, 3)
    graphs_after_warmup = compile_stats(fast)["graphs"]

    times: dict[str, list[float]] = {k: [] for k in ("eager", "compiled", "eager_cpu", "compiled_cpu", "eager_act",
                                                       "compiled_act")}  # fmt: skip
    for r in range(rounds):
        order = [("eager", eager), ("compiled", fast)]
        for label, algo in order if r % 2 == 0 else order[::-1]:
            wall, cpu = updates(algo, batches, n_updates)
            times[label].append(wall / n_updates * 1e3)
            times[f"{label}_cpu"].append(cpu / n_updates * 1e3)
            times[f"{label}_act"].append(acts(algo, obs, n_acts) / n_acts * 1e6)
    stats = compile_stats(fast)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "algo": name,
        "eager_ms": med["eager"],
        "compiled_ms": med["compiled"],
        "speedup": med["eager"] / med["compiled"],
        "eager_cpu_ms": med["eager_cpu"],
        "compiled_cpu_ms": med["compiled_cpu"],
        "cpu_speedup": med["eager_cpu"] / med["compiled_cpu"],
        "eager_spread_ms": [min(times["eager"]), max(times["eager"])],
        "compiled_spread_ms": [min(times["compiled"]), max(times["compiled"])],
        "eager_act_us": med["eager_act"],
        "compiled_act_us": med["compiled_act"],
        "act_speedup": med["eager_act"] / med["compiled_act"],
        "compile_warmup_s": compile_s,
        "graphs": stats["graphs"],
        "recompilations": stats["recompilations"],
        "graphs_after_warmup": graphs_after_warmup,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| algo | eager ms/update | compiled ms/update | speedup | CPU ms eager / compiled | CPU speedup "
        "| eager act us | compiled act us | act speedup | compile warm-up s | graphs | recompilations |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['algo']} | {r['eager_ms']:.2f} ({r['eager_spread_ms'][0]:.2f}-{r['eager_spread_ms'][1]:.2f}) "
            f"| {r['compiled_ms']:.2f} ({r['compiled_spread_ms'][0]:.2f}-{r['compiled_spread_ms'][1]:.2f}) "
            f"| {r['speedup']:.2f}x | {r['eager_cpu_ms']:.2f} / {r['compiled_cpu_ms']:.2f} | {r['cpu_speedup']:.2f}x "
            f"| {r['eager_act_us']:.0f} | {r['compiled_act_us']:.0f} | {r['act_speedup']:.2f}x "
            f"| {r['compile_warmup_s']:.0f} | {r['graphs']} | {r['recompilations']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--algos", nargs="+", default=list(ALGOS), choices=list(ALGOS))
    p.add_argument("--rounds", type=int, default=5, help="alternating timing rounds per variant")
    p.add_argument("--updates", type=int, default=10, help="gradient steps per round")
    p.add_argument("--acts", type=int, default=200, help="acting calls per round")
    p.add_argument("--json", type=Path, help="also write the rows here")
    args = p.parse_args(argv)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, obs {OBS_DIM}, act {ACT_DIM}; "
          f"medians of {args.rounds} alternating rounds (min-max); noisy on a shared machine", flush=True)  # fmt: skip
    rows = []
    for name in args.algos:
        rows.append(bench(name, args.rounds, args.updates, args.acts))
        print(f"{name}: {json.dumps(rows[-1])}", flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
