"""SAC from pixels with DrQ's augmentation on a DeepMind Control Suite task: seeds trained through the launcher,
scored against a uniform random policy under the same evaluation.

``python scripts/pixel_learning.py [--task cartpole-swingup] [--action-repeat 8] [--seeds 3] [--steps 5000]``

Each seed is one launcher run, ``python -m lit_rl.train experiment=drq_dmc env=dmc env.kwargs.task=<task>
env.kwargs.pixels=true env.kwargs.frame_stack=3 env.kwargs.action_repeat=<r> total_timesteps=<steps>
eval.freq=<eval_every> eval.episodes=10 seed=<s>``, in ``<root>/seed_<s>``. Resumable: a finished seed is kept, an
unfinished one continues from its ``last.ckpt`` (``resume=<folder>``), exactly. Seeds run ``--jobs`` at a time,
one torch thread each.

The random policy draws uniform actions for ``--random-episodes`` episodes of the same task and action repeat,
evaluated by the same ``evaluate_policy``; it runs without rendering, since its return does not depend on what it
sees. The test, stated before the runs: every seed's last evaluation return (the mean of 10 episodes) is above the
random policy's mean return plus 3 standard errors of a 10-episode mean (3 std / sqrt(10)), which a 10-episode
evaluation of the random policy exceeds about once in a thousand. The report also gives the stricter bar of 3 standard
deviations of a single episode.

Writes ``--out`` (JSON: per seed the evaluation returns by agent step, the random policy's returns, the verdict) and
the same with ``.md`` (a table, with date, commit and CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
THRESHOLD_STDS = 3.0
EVAL_EPISODES = 10  # each seed's evaluation (eval.episodes)


def run_command(args: argparse.Namespace, seed: int, folder: Path) -> list[str] | None:
    """The launcher command that trains (or continues) ``seed`` in ``folder``; None when it has finished."""
    summary = folder / "summary.json"
    if summary.is_file() and json.loads(summary.read_text()).get("status") == "completed":
        return None
    where = [f"resume={folder}"] if (folder / "checkpoints" / "last.ckpt").is_file() else [f"hydra.run.dir={folder}"]
    return [sys.executable, "-m", "lit_rl.train", "experiment=drq_dmc", "env=dmc", f"env.kwargs.task={args.task}",
            "env.kwargs.pixels=true", "env.kwargs.frame_stack=3", f"env.kwargs.action_repeat={args.action_repeat}",
            f"total_timesteps={args.steps}", f"eval.freq={args.eval_every}", f"eval.episodes={EVAL_EPISODES}", f"seed={seed}",
            "trainer.enable_progress_bar=false", *where]  # fmt: skip


def train_seeds(args: argparse.Namespace) -> None:
    """Every unfinished seed's launcher run, ``--jobs`` at a time; a failed run is reported, the others go on."""
    todo = [(s, args.root / f"seed_{s}") for s in range(args.seeds)]
    todo = [(s, f, c) for s, f in todo if (c := run_command(args, s, f)) is not None]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    running: list[tuple[int, subprocess.Popen[bytes], float]] = []
    while todo or running:
        while todo and len(running) < args.jobs:
            seed, folder, command = todo.pop(0)
            folder.parent.mkdir(parents=True, exist_ok=True)
            log = (args.root / f"seed_{seed}.log").open("ab")
            print(f"seed {seed}: {' '.join(command[2:])}", flush=True)
            running.append((seed, subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log), time.time()))
        time.sleep(5)
        for seed, process, start in list(running):
            if process.poll() is not None:
                running.remove((seed, process, start))
                status = "done" if process.returncode == 0 else f"failed (exit {process.returncode}, see its log)"
                print(f"seed {seed}: {status} after {(time.time() - start) / 60:.1f} min", flush=True)


def eval_returns(folder: Path) -> dict[int, float]:
    """A run's evaluation returns by env step, from its ``metrics.csv``."""
    import csv

    path = folder / "metrics.csv"
    if not path.is_file():
        return {}
    with path.open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("eval/mean_reward")]
    return {int(float(r["step"])): float(r["eval/mean_reward"]) for r in rows}


def random_returns(args: argparse.Namespace) -> list[float]:
    """A uniform random policy's returns over ``--random-episodes`` episodes of the task, as evaluation scores them."""
    from lit_rl.envs import make_vec_env
    from lit_rl.evaluation import evaluate_policy

    env = make_vec_env("lit_rl/DMC-v0", 1, seed=args.random_seed,
                       env_kwargs={"task": args.task, "action_repeat": args.action_repeat})  # fmt: skip

    class UniformRandom:
        def predict(self, observation: Any, state: Any = None, episode_start: Any = None,
                    deterministic: bool = False) -> tuple[np.ndarray, None]:  # fmt: skip
            return env.action_space.sample(), None

    env.reset(seed=args.random_seed)
    returns, _ = evaluate_policy(UniformRandom(), env, n_eval_episodes=args.random_episodes,
                                 return_episode_rewards=True)  # type: ignore[misc]  # fmt: skip
    return [float(r) for r in returns]


def report(args: argparse.Namespace) -> bool:
    """Write the JSON and markdown report; True when every seed passed the test."""
    from lit_rl.utils.machine import BF16_FLAGS, cpu_model_and_flags

    seeds = {s: eval_returns(args.root / f"seed_{s}") for s in range(args.seeds)}
    randoms = random_returns(args)
    threshold = float(np.mean(randoms) + THRESHOLD_STDS * np.std(randoms) / np.sqrt(EVAL_EPISODES))
    strict = float(np.mean(randoms) + THRESHOLD_STDS * np.std(randoms))
    finals = {s: r[max(r)] if r else None for s, r in seeds.items()}
    passed = all(f is not None and f > threshold for f in finals.values())
    above_strict = all(f is not None and f > strict for f in finals.values())
    model, flags = cpu_model_and_flags()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    head = (f"{datetime.now():%Y-%m-%d %H:%M}, commit {commit.stdout.strip() or 'unknown'}, {model} ("
            + ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in BF16_FLAGS) + ")")  # fmt: skip
    result = {"head": head, "task": args.task, "action_repeat": args.action_repeat, "steps": args.steps,
              "seeds": {str(s): r for s, r in seeds.items()}, "random_returns": randoms,
              "threshold": threshold, "passed": passed, "strict_threshold": strict,
              "above_strict": above_strict}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    steps = sorted({k for r in seeds.values() for k in r})
    lines = [f"SAC + DrQ random shift from pixels, dmc {args.task} (action repeat {args.action_repeat}); {head}", "",
             "| seed | " + " | ".join(f"step {k}" for k in steps) + " |", "|---|" + "---|" * len(steps)]  # fmt: skip
    lines += [f"| {s} | " + " | ".join(f"{r[k]:.1f}" if k in r else "" for k in steps) + " |" for s, r in seeds.items()]
    lines += ["", f"Uniform random policy: {np.mean(randoms):.1f} +- {np.std(randoms):.1f} (std) over {len(randoms)} "
              f"episodes. Threshold, mean + {THRESHOLD_STDS:g} standard errors of a {EVAL_EPISODES}-episode mean: "
              f"{threshold:.1f}; every seed's last evaluation above it: {'yes' if passed else 'no'}. Above mean + "
              f"{THRESHOLD_STDS:g} std of one episode ({strict:.1f}): {'yes' if above_strict else 'no'}."]  # fmt: skip
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return passed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="cartpole-swingup", help="a dm_control task, domain-task")
    p.add_argument("--action-repeat", type=int, default=8, help="DrQ's per task (cartpole 8)")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1")
    p.add_argument("--steps", type=int, default=5000, help="agent steps per seed (env frames: action repeat x this)")
    p.add_argument("--eval-every", type=int, default=1000, help="agent steps between evaluations")
    p.add_argument("--jobs", type=int, default=2, help="seeds trained at once")
    p.add_argument("--random-episodes", type=int, default=50)
    p.add_argument("--random-seed", type=int, default=1000)
    p.add_argument("--root", type=Path, help="the runs' folder (default: outputs/drq_<task>)")
    p.add_argument("--out", type=Path, help="the report (default: bench/pixel_learning_<task>.json)")
    p.add_argument("--report-only", action="store_true", help="train nothing: report the runs there are")
    args = p.parse_args(argv)
    if args.seeds < 1 or args.steps < 1 or args.jobs < 1 or args.eval_every < 1:
        p.error("--seeds, --steps, --jobs and --eval-every must be >= 1")
    args.root = args.root or ROOT / "outputs" / f"drq_{args.task}"
    args.out = args.out or ROOT / "bench" / f"pixel_learning_{args.task}.json"
    if not args.report_only:
        train_seeds(args)
    return 0 if report(args) else 1


if __name__ == "__main__":
    sys.exit(main())
