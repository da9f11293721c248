#!/usr/bin/env python
"""DQN on Atari through ``learn()``: lit_rl against Stable-Baselines3 (part of ``make bench``).

rl-baselines3-zoo's Atari DQN values (``experiment=dqn_atari``: CnnPolicy, a 1,000,000-transition buffer, batch
32, one update every 4 env steps) on ``BreakoutNoFrameskip-v4``: SB3 with its ``AtariWrapper`` and
``VecFrameStack(4)``, lit_rl with ``lit_rl/Atari-v0`` (the same frames) and its frame-once buffer, in fp32 and
in bf16 (``precision="bf16-mixed"``). ``learning_starts`` is lowered so that the timed steps learn. Each row runs
in its own process, rows alternate over ``--repeats`` rounds, and each reports:

- env steps/s of ``learn()`` over ``--steps`` env steps after ``--warmup`` learning steps (medians of the rounds);
- ms per update (``model.train(gradient_steps=n, batch_size=32)`` on the filled buffer);
- the process's peak memory (RSS), and the replay buffer's bytes per transition: lit_rl's as allocated, SB3's
  as its arrays are sized (numpy commits their pages only as they are written, so a short run's RSS hides them).

Prints the CPU model and its bf16 flags; writes ``--out`` (JSON). Target: lit_rl >= 1.5x SB3's env steps/s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARK = "BENCH_ATARI "
ROWS = ("sb3", "lit_rl", "lit_rl bf16")
ZOO = {"learning_rate": 1e-4, "batch_size": 32, "target_update_interval": 10_000, "train_freq": 4,
       "gradient_steps": 1, "exploration_fraction": 0.1, "exploration_final_eps": 0.1}  # fmt: skip


def build(row: str, args: argparse.Namespace) -> tuple[Any, int]:
    """The model of ``row`` and its replay bytes per transition."""
    common = {**ZOO, "buffer_size": args.buffer_size, "learning_starts": args.learning_starts, "seed": 0}
    if row == "sb3":
        import ale_py
        import gymnasium as gym
        from stable_baselines3 import DQN
        from stable_baselines3.common.env_util import make_atari_env
        from stable_baselines3.common.vec_env import VecFrameStack

        gym.register_envs(ale_py)  # the NoFrameskip-v4 ids
        env = VecFrameStack(make_atari_env(f"{args.game}NoFrameskip-v4", n_envs=1, seed=0), n_stack=4)
        model = DQN("CnnPolicy", env, device="cpu", **common)
        buffer = model.replay_buffer
        per = (buffer.observations.nbytes + buffer.next_observations.nbytes + buffer.actions.nbytes
               + buffer.rewards.nbytes + buffer.dones.nbytes + buffer.timeouts.nbytes) // buffer.buffer_size  # fmt: skip
        return model, per
    import gymnasium as gym

    import lit_rl
    from lit_rl import DQN

    assert lit_rl.envs.ATARI_ID
    precision = {"precision": "bf16-mixed"} if row.endswith("bf16") else {}
    model = DQN("CnnPolicy", gym.make("lit_rl/Atari-v0", game=args.game), device="cpu", **common, **precision)
    return model, model.replay_buffer.transition_nbytes()


def measure(row: str, args: argparse.Namespace) -> dict[str, Any]:
    """One round of ``row``: env steps/s of the timed learn(), ms per update, peak RSS."""
    import torch

    torch.manual_seed(0)
    model, per_transition = build(row, args)
    model.learn(args.learning_starts + args.warmup)
    start = time.perf_counter()
    model.learn(args.steps, reset_num_timesteps=False)
    fps = args.steps / (time.perf_counter() - start)
    start = time.perf_counter()
    model.train(gradient_steps=args.updates, batch_size=32)
    update_ms = 1e3 * (time.perf_counter() - start) / args.updates
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return {"row": row, "env_steps_per_s": fps, "update_ms": update_ms, "peak_rss_gib": rss_gib,
            "replay_bytes_per_transition": per_transition, "replay_gib_at_buffer_size": per_transition * args.buffer_size / 2**30}  # fmt: skip


def run_row(row: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", row, *sys.argv[1:]]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        return {"row": row, "error": (proc.stderr or proc.stdout)[-1500:]}
    return json.loads(lines[-1][len(MARK) :])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--game", default="Breakout")
    p.add_argument("--steps", type=int, default=2000, help="timed env steps per round")
    p.add_argument("--warmup", type=int, default=400, help="learning env steps before the clock starts")
    p.add_argument("--learning-starts", type=int, default=1000)
    p.add_argument("--updates", type=int, default=200, help="updates timed for ms per update")
    p.add_argument("--buffer-size", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--rows", default=",".join(ROWS), help=f"from {','.join(ROWS)}")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch threads of each row")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "atari.json")
    p.add_argument("--quick", action="store_true", help="tiny counts: checks the harness, measures nothing useful")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.warmup, args.learning_starts, args.updates, args.repeats = 100, 20, 100, 5, 1
        args.buffer_size = min(args.buffer_size, 10_000)
    if args.worker:
        print(MARK + json.dumps(measure(args.worker, args)), flush=True)
        return 0
    rows = [r for r in args.rows.split(",") if r]
    if unknown := sorted(set(rows) - set(ROWS)):
        p.error(f"--rows has unknown rows {unknown}; allowed: {list(ROWS)}")

    sys.path.insert(0, str(ROOT))
    from lit_rl.utils.machine import BF16_FLAGS, cpu_model_and_flags

    model, flags = cpu_model_and_flags()
    bf16 = ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in BF16_FLAGS)
    print(f"DQN on {args.game} (rl-baselines3-zoo values, buffer {args.buffer_size:,}): {model} "
          f"({os.cpu_count()} CPUs; {bf16}); {args.repeats} rounds of {args.steps} env steps")  # fmt: skip
    rounds: dict[str, list[dict[str, Any]]] = {r: [] for r in rows}
    for _ in range(args.repeats):
        for row in rows:  # alternating: a shared host's load swings reach every row alike
            rounds[row].append(run_row(row, args))
    results = []
    for row, got in rounds.items():
        ok = [g for g in got if "error" not in g]
        if not ok:
            results.append({"row": row, "error": got[-1]["error"]})
            continue
        med = {k: statistics.median(g[k] for g in ok) for k in ("env_steps_per_s", "update_ms", "peak_rss_gib")}
        results.append({**ok[0], **med, "rounds": len(ok)})
    sb3 = next((r["env_steps_per_s"] for r in results if r["row"] == "sb3" and "error" not in r), None)
    lines = ["| row | env steps/s | x SB3 | ms per update | peak RSS (GiB) | replay bytes per transition | replay at buffer size (GiB) |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in results:
        if "error" in r:
            lines.append(f"| {r['row']} | failed: {r['error'].strip().splitlines()[-1][:80]} | | | | | |")
            continue
        ratio = f"{r['env_steps_per_s'] / sb3:.2f}" if sb3 else "-"
        lines.append(f"| {r['row']} | {r['env_steps_per_s']:.1f} | {ratio} | {r['update_ms']:.2f} | "
                     f"{r['peak_rss_gib']:.2f} | {r['replay_bytes_per_transition']:,} | "
                     f"{r['replay_gib_at_buffer_size']:.1f} |")  # fmt: skip
    print("\n".join(lines))
    lit = max(
        (r["env_steps_per_s"] for r in results if r["row"].startswith("lit_rl") and "error" not in r), default=None
    )
    if sb3 and lit:
        verdict = "met" if lit >= 1.5 * sb3 else "NOT met"
        print(f"target lit_rl >= 1.5x SB3 env steps/s: {verdict} ({lit / sb3:.2f}x, best lit_rl row)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = {"date": datetime.now().isoformat(timespec="seconds"), "cpu": model, "flags": sorted(flags),
              "args": {k: str(v) for k, v in vars(args).items()}, "results": results}  # fmt: skip
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
