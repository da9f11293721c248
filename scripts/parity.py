"""Learning-parity report: ``make parity`` (``python scripts/parity.py``). A benchmark, not a test.

Trains lit_rl and the reference implementation (``sb3_contrib.CrossQ``, ``stable_baselines3.SAC`` / ``TD3``) with
the same hyperparameters and seeds, evaluates both the same way, and compares the returns at each checkpoint.
``--preset`` picks a report (``PRESETS``: ``pendulum``, ``hopper``, ``hopper_crossq``); ``make parity`` runs all.

Protocol, per algorithm, implementation and seed:

- hyperparameters: lit_rl's defaults (its constructor signature), passed explicitly to both constructors;
  on Pendulum-v1 smaller networks (``PENDULUM_NETS``) so the report fits in about an hour on 2 CPU cores,
  elsewhere the library's default networks and rl-baselines3-zoo's MuJoCo settings (``ZOO_MUJOCO``: SAC
  ``learning_starts=10000``; TD3 also lr 1e-3, batch 256, Gaussian action noise of std 0.1, [400, 300]);
  ``--compile`` runs lit_rl with its compiled gradient step (the reference runs eagerly);
- seeding by env id on both sides: ``lit_rl.X("MlpPolicy", seed=s).learn(T, env=env_id)`` and
  ``sb3.X("MlpPolicy", env_id, seed=s).learn(T)``; one run of ``max(--steps)`` env steps;
- at each checkpoint of ``--steps``, an SB3-style callback (fired after the env step, before that step's
  gradient update, on both sides) evaluates the deterministic policy for ``--episodes`` episodes on a fresh
  ``gym.make(env_id)`` reset with ``seed=1000 + s`` for its first episode only (later episodes continue that
  random stream, as SB3's ``evaluate_policy`` on a seeded VecEnv); the run's score is the mean return.
  Evaluating does not touch training: a run scored at 150, 300 and 500 steps scores the same at 500 as one
  scored at 500 only (checked bitwise for both algorithms on both sides).

Per algorithm and checkpoint it prints (and writes to ``--out`` with ``.md``) the per-seed scores of both,
median, IQM with a 95% percentile-bootstrap CI (``lit_rl.utils.stats``), the differences lit_rl - reference and a
two-sided Mann-Whitney U test. Raw per-seed results go to ``--out`` (JSON). A failing run is recorded as
failed and the rest goes on. Runs execute in ``--jobs`` worker processes (spawned, one torch thread each).

Cost: CPU seconds per 10k-step Pendulum run with the [128, 128] networks (2 seeds, busy then quiet machine):
CrossQ 105, 100 (lit_rl) / 148, 119 (sb3-contrib), SAC 89, 55 (lit_rl) / 101, 70 (SB3): 345-445 s per seed
for all four, so the default report (16 seeds, 64 runs, 2 jobs) takes 45-60 min on an idle 2-core machine
(the library-default [256, 256] networks measured 196 / 256 / 158 / 162 s, busy: about 1 h 45 min).
``--quick`` (200/400 steps, 2 seeds, tiny nets) checks the harness in about half a minute; its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import inspect
import json
import multiprocessing
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # parity_report beside this file
from parity_report import FP32, IMPLS, REFERENCE, plot, report  # noqa: E402

from lit_rl.utils.io import write_atomically  # noqa: E402

CLASS_NAMES = {"crossq": "CrossQ", "sac": "SAC", "td3": "TD3", "dqn": "DQN", "qrdqn": "QRDQN"}
COMMON = "learning_rate buffer_size learning_starts batch_size gamma train_freq gradient_steps ent_coef target_entropy"
SHARED = {  # constructor arguments both libraries take; their values come from lit_rl's signature
    "crossq": [*COMMON.split(), "policy_delay"],
    "sac": [*COMMON.split(), "tau", "target_update_interval"],
    "td3": [*COMMON.split()[:6], "tau", "policy_delay", "target_policy_noise", "target_noise_clip"],
    **{q: [*COMMON.split()[:7], "tau", "target_update_interval", "exploration_fraction", "exploration_initial_eps",
           "exploration_final_eps", "max_grad_norm"] for q in ("dqn", "qrdqn")},
}
BATCH_NORM = dict(batch_norm=True, batch_norm_momentum=0.01, batch_norm_eps=1e-3, renorm_warmup_steps=100_000)
DEFAULT_NETS = {
    "crossq": {"pi": [256, 256], "qf": [1024, 1024]},
    "sac": {"pi": [256, 256], "qf": [256, 256]},
    "td3": {"pi": [400, 300], "qf": [400, 300]},
}
PENDULUM_NETS = {a: {"pi": [128, 128], "qf": [128, 128]} for a in REFERENCE}
QUICK_NETS = {a: {"pi": [32, 32], "qf": [64, 64] if a == "crossq" else [32, 32]} for a in REFERENCE}
# rl-baselines3-zoo's MuJoCo settings (hyperparams/sac.yml, td3.yml, crossq.yml: "mujoco-defaults"), all else
# the libraries' defaults; TD3 explores with Gaussian action noise of std 0.1 ("action_noise_std", built per side).
ZOO_MUJOCO = {
    "sac": {"learning_starts": 10_000},
    "td3": {"learning_starts": 10_000, "learning_rate": 1e-3, "batch_size": 256, "action_noise_std": 0.1},
    "crossq": {"learning_starts": 5_000},
}
# Goal-conditioned envs (gymnasium-robotics' Fetch tasks): rl-baselines3-zoo hyperparams/sac.yml `FetchReach-v1`
# (commit 208b6fdf), without its VecNormalize; HER from each library ("future" goals, 4 per transition).
ZOO_FETCH = {"sac": {"learning_rate": 1e-3, "learning_starts": 1000, "batch_size": 256, "gamma": 0.95}}
FETCH_NETS = {"sac": {"pi": [64, 64], "qf": [64, 64]}}
HER_KWARGS = {"n_sampled_goal": 4, "goal_selection_strategy": "future"}
# Atari (ALE ids such as BreakoutNoFrameskip-v4): SB3's AtariWrapper + VecFrameStack(4) on the reference side,
# lit_rl's equal preprocessing (lit_rl.envs.atari) on its side, CnnPolicy. rl-baselines3-zoo's values
# (conf/experiment/dqn_atari.yaml, qrdqn_atari.yaml cite them), but a 100,000-transition buffer on both sides:
# SB3's 1M buffer needs 26-56 GB (28 GB with optimize_memory_usage), more than these machines have, for two runs
# at once. Exploration fractions are of each run's own learn() length, on both sides alike.
ZOO_ATARI = {
    "dqn": {"learning_rate": 1e-4, "buffer_size": 100_000, "learning_starts": 100_000, "batch_size": 32,
            "target_update_interval": 10_000, "train_freq": 4, "gradient_steps": 1, "exploration_fraction": 0.1,
            "exploration_final_eps": 0.1},
    "qrdqn": {"buffer_size": 100_000, "exploration_fraction": 0.005},
}  # fmt: skip
# The DeepMind Control Suite through lit_rl's wrapper (lit_rl/DMC-v0, cheetah-run by default), the same env
# object on both sides; the libraries' defaults but 5000 random steps first (pytorch_sac's num_seed_steps).
DMC = {"sac": {"learning_starts": 5_000}}


def is_goal_env(env_id: str) -> bool:
    """Dict observations with goals: MultiInputPolicy and HER on both sides."""
    return env_id.startswith("Fetch")


def is_atari(env_id: str) -> bool:
    """Frames of an Atari game: preprocessed and stacked on both sides, CnnPolicy, whole games' raw scores."""
    return env_id.endswith("NoFrameskip-v4")


def hyperparameters(algo: str, env_id: str, quick: bool) -> dict[str, Any]:
    """The constructor arguments both sides get: lit_rl's defaults (rl-zoo's on MuJoCo envs), networks per env."""
    import lit_rl

    signature = inspect.signature(getattr(lit_rl, CLASS_NAMES[algo]))
    hp = {name: signature.parameters[name].default for name in SHARED[algo]}
    if algo in ("dqn", "qrdqn"):  # NatureCNN (and sb3-contrib's 200 quantiles) on Atari frames
        hp |= ZOO_ATARI[algo]
        if quick:  # the smoke run learns from its first steps, with a small buffer
            hp |= {"learning_starts": 100, "buffer_size": 1000, "target_update_interval": 100}
        return hp
    nets = (QUICK_NETS if quick else PENDULUM_NETS if env_id == "Pendulum-v1"
            else FETCH_NETS if is_goal_env(env_id) else DEFAULT_NETS)  # fmt: skip
    hp["policy_kwargs"] = {"net_arch": nets[algo], "n_critics": 2, **(BATCH_NORM if algo == "crossq" else {})}
    if env_id != "Pendulum-v1":
        hp |= ZOO_FETCH[algo] if is_goal_env(env_id) else DMC[algo] if "DMC" in env_id else ZOO_MUJOCO[algo]
        if quick:  # the smoke run learns from its first steps
            hp["learning_starts"] = 100
    return hp


def action_noise(impl: str, env_id: str, std: float | None) -> Any:
    """Gaussian exploration noise of ``std`` per action dimension, as the library's own class (None: none)."""
    if std is None:
        return None
    import gymnasium as gym

    if impl == "lit_rl":
        from lit_rl.noise import NormalActionNoise
    else:
        from stable_baselines3.common.noise import NormalActionNoise
    env = gym.make(env_id)
    dim = int(np.prod(env.action_space.shape))
    env.close()
    return NormalActionNoise(np.zeros(dim), std * np.ones(dim))


def evaluate(model: Any, env_id: str, seed: int, episodes: int) -> tuple[list[float], list[float]]:
    """Returns of ``episodes`` deterministic episodes on ``gym.make(env_id)``, reset with ``seed=1000 + seed`` once,
    and their successes (``info["is_success"]`` at the episode's end; empty for envs without it). Atari: whole
    games' raw scores (all lives, unclipped), as SB3's Monitor records them, on lit_rl's preprocessed frames."""
    import gymnasium as gym
    import torch

    if is_atari(env_id):
        from lit_rl.envs import make_vec_env
        from lit_rl.envs.atari import ATARI_ID
        from lit_rl.evaluation import evaluate_policy

        vec_env = make_vec_env(ATARI_ID, 1, seed=1000 + seed, env_kwargs={"game": env_id})
        vec_env.reset(seed=1000 + seed)
        with torch.no_grad():
            scores, _ = evaluate_policy(model, vec_env, n_eval_episodes=episodes, return_episode_rewards=True)
        vec_env.close()
        return [float(s) for s in scores], []
    env, returns, successes, total = gym.make(env_id), [], [], 0.0
    obs, _ = env.reset(seed=1000 + seed)
    with torch.no_grad():
        while len(returns) < episodes:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            if terminated or truncated:
                returns.append(total)
                if "is_success" in info:
                    successes.append(float(info["is_success"]))
                total = 0.0
                obs, _ = env.reset()
    env.close()
    return returns, successes


def init_worker() -> None:
    """One torch thread, quiet Lightning; imports done here so that run times exclude them."""
    import logging
    import warnings

    import sb3_contrib  # noqa: F401
    import stable_baselines3  # noqa: F401
    import torch

    import lit_rl.callbacks.sb3  # noqa: F401

    try:  # ALE ids (BreakoutNoFrameskip-v4, ...) for the reference side's gym.make, ALE's banner silenced
        from lit_rl.envs.atari import _import_ale_and_cv2

        _import_ale_and_cv2()
    except ImportError:  # ale-py not installed: only the Atari presets need it
        pass
    try:  # Fetch ids for both sides' gym.make, with MuJoCo 4's joint-type fix
        from lit_rl.envs.robotics import import_gymnasium_robotics

        import_gymnasium_robotics()
    except ImportError:  # gymnasium-robotics not installed: only its presets need it
        pass

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """Train one (algo, impl, seed) and evaluate it at each checkpoint; never raises."""
    algo, impl, seed, env_id = job["algo"], job["impl"], job["seed"], job["env"]
    pending, scores, successes = sorted(job["steps"]), {}, {}
    result = {k: job[k] for k in ("algo", "impl", "seed")} | {"status": "completed", "episode_returns": scores}
    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        hp = dict(job["hp"])
        if "action_noise_std" in hp:
            hp["action_noise"] = action_noise(impl, env_id, hp.pop("action_noise_std"))
        policy = "MultiInputPolicy" if is_goal_env(env_id) else "CnnPolicy" if is_atari(env_id) else "MlpPolicy"
        if is_goal_env(env_id):
            if impl == "lit_rl":
                from lit_rl.buffers import HerReplayBuffer
            else:
                from stable_baselines3 import HerReplayBuffer
            hp |= {"replay_buffer_class": HerReplayBuffer, "replay_buffer_kwargs": dict(HER_KWARGS)}
        if impl == "lit_rl":
            import lit_rl
            from lit_rl.callbacks.sb3 import BaseCallback

            # Run settings of lit_rl's alone (the reference is eager fp32).
            settings = {"compile": bool(job.get("compile")), "precision": job.get("precision", "32-true")}
            model = getattr(lit_rl, CLASS_NAMES[algo])(policy, seed=seed, **hp, **settings)
        else:
            import importlib

            from stable_baselines3.common.callbacks import BaseCallback

            module, name = REFERENCE[algo].rsplit(".", 1)
            env: Any = env_id
            if is_atari(env_id):
                from stable_baselines3.common.env_util import make_atari_env
                from stable_baselines3.common.vec_env import VecFrameStack

                env = VecFrameStack(make_atari_env(env_id, n_envs=1, seed=seed), n_stack=4)
            model = getattr(importlib.import_module(module), name)(policy, env, seed=seed, **hp)

        class CheckpointEvaluation(BaseCallback):
            def _on_step(self) -> bool:
                while pending and self.num_timesteps >= pending[0]:
                    step = str(pending.pop(0))
                    scores[step], success = evaluate(self.model, env_id, seed, job["episodes"])
                    if success:
                        successes[step] = float(np.mean(success))
                return True

        learn_env = {"env": env_id} if impl == "lit_rl" else {}
        if impl == "lit_rl" and is_atari(env_id):  # lit_rl's preprocessing of the game, equal to the reference's
            from lit_rl.envs import make_vec_env
            from lit_rl.envs.atari import ATARI_ID

            learn_env = {"env": make_vec_env(ATARI_ID, 1, seed=seed, env_kwargs={"game": env_id})}
        model.learn(max(job["steps"]), callback=CheckpointEvaluation(), **learn_env)
        if pending:
            raise RuntimeError(f"training stopped at {model.num_timesteps} env steps, before checkpoints {pending}")
    except Exception as err:  # one failing seed must not stop the report
        result |= {"status": "failed", "error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()}
    result["returns"] = {step: float(np.mean(r)) for step, r in scores.items()}
    if successes:
        result["success_rate"] = successes
    result["wall_s"] = round(time.perf_counter() - start, 1)
    result["cpu_s"] = round(time.process_time() - cpu_start, 1)  # the load-independent cost
    return result


STEPS_15K = ",".join(str(k * 1000) for k in range(1, 16))
# The reports `make parity` runs (each resumable): its settings, defaults of the options below.
PRESETS: dict[str, dict[str, Any]] = {
    "pendulum": {"algos": "crossq,sac", "env": "Pendulum-v1", "seeds": "16", "steps": "5000,10000"},
    "hopper": {"algos": "sac,td3", "env": "Hopper-v4", "seeds": "6", "steps": "5000,10000,15000,20000,25000,30000"},
    "hopper_crossq": {"algos": "crossq", "env": "Hopper-v4", "seeds": "6", "steps": "2500,5000,7500,10000",
                      "compile": True, "out": ROOT / "bench" / "parity_hopper_crossq.json"},
    # bf16 against fp32 and the reference: lit_rl's bf16 runs; the fp32 and reference runs of the fp32 report.
    "hopper_bf16": {"algos": "sac", "env": "Hopper-v4", "seeds": "6", "steps": "5000,10000,15000,20000,25000,30000",
                    "precision": "bf16-mixed", "reuse_from": ROOT / "bench" / "parity_hopper.json",
                    "out": ROOT / "bench" / "parity_hopper_bf16.json"},
    # CrossQ in sb3-contrib's default regime, evaluated every 1000 steps: 12 eager seeds against 12 of sb3-contrib,
    # then 6 compiled seeds against those (the reference runs reused). About 8 CPU-hours together.
    "hopper_crossq_15k": {"algos": "crossq", "env": "Hopper-v4", "seeds": "12", "steps": STEPS_15K,
                          "out": ROOT / "bench" / "parity_hopper_crossq_15k.json"},
    "hopper_crossq_15k_compiled": {"algos": "crossq", "env": "Hopper-v4", "seeds": "6", "steps": STEPS_15K,
                                   "compile": True, "reuse_from": ROOT / "bench" / "parity_hopper_crossq_15k.json",
                                   "out": ROOT / "bench" / "parity_hopper_crossq_15k_compiled.json"},
    "halfcheetah_crossq": {"algos": "crossq", "env": "HalfCheetah-v4", "seeds": "6", "compile": True,
                           "steps": ",".join(str(k * 1000) for k in range(1, 21)),
                           "out": ROOT / "bench" / "parity_halfcheetah_crossq.json"},
    "pendulum_bf16": {"algos": "crossq,sac", "env": "Pendulum-v1", "seeds": "16", "steps": "5000,10000",
                      "precision": "bf16-mixed", "reuse_from": ROOT / "bench" / "parity.json",
                      "out": ROOT / "bench" / "parity_pendulum_bf16.json"},
    # HER on gymnasium-robotics' FetchReach (rl-zoo's 20k-step budget), scored by success rate.
    "fetchreach_her": {"algos": "sac", "env": "FetchReach-v4", "seeds": "4", "steps": "2500,5000,10000,15000,20000",
                       "metric": "success_rate", "out": ROOT / "bench" / "parity_fetchreach_her.json"},
    # The DeepMind Control Suite's cheetah-run (1000-step episodes: 5 per checkpoint).
    "dmc_sac": {"algos": "sac", "env": "lit_rl/DMC-v0", "seeds": "6", "steps": "5000,10000,15000,20000",
                "episodes": 5, "out": ROOT / "bench" / "parity_dmc_cheetah_run.json"},
    # Breakout with rl-zoo's Atari values (ZOO_ATARI), 500k agent steps, 5 whole games per checkpoint: DQN against
    # SB3 on 3 seeds, QR-DQN against sb3-contrib on 5. Breakout's random policy scores about 1.7.
    "breakout_dqn": {"algos": "dqn", "env": "BreakoutNoFrameskip-v4", "seeds": "3", "episodes": 5,
                     "steps": ",".join(str(k * 100_000) for k in range(1, 6)),
                     "out": ROOT / "bench" / "parity_breakout_dqn.json"},
    "breakout_qrdqn": {"algos": "qrdqn", "env": "BreakoutNoFrameskip-v4", "seeds": "5", "episodes": 5,
                       "steps": ",".join(str(k * 100_000) for k in range(1, 6)),
                       "out": ROOT / "bench" / "parity_breakout_qrdqn.json"},
}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", choices=list(PRESETS), default="pendulum",
                        help="a report's settings (the options below override them): %(choices)s")  # fmt: skip
    parser.add_argument("--algos", help="comma-separated: crossq, sac, td3, dqn, qrdqn")
    parser.add_argument("--seeds", help="a count N (seeds 0..N-1) or a comma-separated list")
    parser.add_argument("--steps", help="checkpoints in env steps; the run lasts the largest")
    parser.add_argument("--env")
    parser.add_argument("--episodes", type=int, default=None, help="eval episodes per checkpoint (default 10)")
    parser.add_argument("--metric", choices=("returns", "success_rate"), default=None,
                        help="what the tables compare (default returns)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel, one torch thread each")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON, markdown (.md) and plot (.png) beside; default bench/parity.json on Pendulum-v1, "
                        "else bench/parity_<env>.json")  # fmt: skip
    parser.add_argument("--compile", action="store_true", default=None,
                        help="lit_rl with its compiled gradient step (compile=True)")  # fmt: skip
    parser.add_argument("--precision", choices=("32-true", "bf16-mixed", "16-mixed"),
                        help="lit_rl's precision (the reference runs in fp32)")  # fmt: skip
    parser.add_argument("--reuse-from", type=Path, default=None,
                        help="take the reference runs (and lit_rl's, as `lit_rl fp32`) of this fp32 report with "
                        "the same settings instead of running them")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="200/400 steps, 2 seeds, 2 episodes, tiny nets (smoke)")
    parser.add_argument(
        "--resume", action="store_true", help="keep the completed runs of --out (same settings) and run the rest"
    )
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: the tables and plot of the runs --out holds so far (a partial report "
                        "says how many of its runs are in)")  # fmt: skip
    args = parser.parse_args(argv)
    for key, value in PRESETS[args.preset].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.compile = bool(args.compile)
    args.episodes = args.episodes or 10
    args.metric = args.metric or "returns"
    args.precision = args.precision or "32-true"
    if args.quick:
        args.seeds, args.steps, args.episodes = "2", "200,400", 2
    args.algos = [a for a in args.algos.split(",") if a]
    if not args.algos or set(args.algos) - set(REFERENCE):
        parser.error(f"--algos {args.algos}: allowed {sorted(REFERENCE)}")
    args.seeds = [int(s) for s in args.seeds.split(",")] if "," in args.seeds else list(range(int(args.seeds)))
    args.steps = sorted({int(s) for s in args.steps.split(",")})
    if args.out is None:
        name = "parity" if args.env == "Pendulum-v1" else f"parity_{args.env.split('-')[0].lower()}"
        args.out = ROOT / "bench" / f"{name}.json"
    if not args.seeds or min(args.steps) < 1 or args.episodes < 1 or args.jobs < 1:
        parser.error("--seeds, --steps, --episodes and --jobs need positive values")
    return args


def write_text(path: Path, text: str) -> None:
    """``text`` into ``path`` atomically (a kill mid-write keeps the previous file)."""
    write_atomically(path, lambda tmp: tmp.write_text(text))


def previous_runs(path: Path, meta: dict) -> list[dict]:
    """The completed runs of an earlier report at ``path`` made with the same settings (else an error)."""
    if not path.is_file():
        return []
    earlier = json.loads(path.read_text())
    keys = ("env", "steps", "episodes", "hyperparameters", "compile", "precision")
    defaults = {"compile": False, "precision": "32-true"}  # reports from before these options
    if any(earlier["meta"].get(k, defaults.get(k)) != meta.get(k, defaults.get(k)) for k in keys):
        raise SystemExit(f"--resume: {path} was made with other settings ({', '.join(keys)}); use another --out")
    return [with_commit(r, earlier["meta"]) for r in earlier["runs"] if r["status"] == "completed"]


def with_commit(run: dict, meta: dict) -> dict:
    """``run`` with the commit that made it (runs of reports from before per-run commits: the report's)."""
    return run if "commit" in run else run | {"commit": meta.get("commit", "unknown")}


def reused_runs(path: Path, meta: dict) -> list[dict]:
    """The reference runs of an fp32 report with the same env, checkpoints, episodes and hyperparameters, and its
    lit_rl runs as ``lit_rl_fp32`` (the seeds and algorithms of ``meta``)."""
    if not path.is_file():
        raise SystemExit(f"--reuse-from {path}: no such report; run the fp32 / eager report first")
    earlier = json.loads(path.read_text())
    keys = ("env", "steps", "episodes")
    mismatched = [k for k in keys if earlier["meta"].get(k) != meta.get(k)]
    mismatched += [f"hyperparameters of {a}" for a in meta["algos"]
                   if earlier["meta"]["hyperparameters"].get(a) != meta["hyperparameters"][a]]  # fmt: skip
    mismatched += [
        k for k in ("compile", "precision") if earlier["meta"].get(k) not in (None, False, "32-true")
    ]
    if mismatched:
        raise SystemExit(f"--reuse-from {path}: made with other settings ({', '.join(mismatched)})")
    wanted = {(a, s) for a in meta["algos"] for s in meta["seeds"]}
    runs = [r for r in earlier["runs"] if r["status"] == "completed" and (r["algo"], r["seed"]) in wanted]
    return [with_commit(r, earlier["meta"]) | ({} if r["impl"] == "reference" else {"impl": FP32}) for r in runs]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    meta = {k: v for k, v in vars(args).items() if k != "out"} | {"commit": commit.stdout.strip() or "unknown"}
    if args.reuse_from:
        args.reuse_from = args.reuse_from.resolve()
    meta["reuse_from"] = str(args.reuse_from.relative_to(ROOT)) if args.reuse_from else None
    meta |= {"argv": sys.argv, "hyperparameters": {a: hyperparameters(a, args.env, args.quick) for a in args.algos}}
    common = {"env": args.env, "steps": args.steps, "episodes": args.episodes, "compile": args.compile,
              "precision": args.precision}  # fmt: skip
    jobs = [
        common | {"algo": a, "impl": i, "seed": s, "hp": meta["hyperparameters"][a]}
        for s in args.seeds
        for a in args.algos
        for i in IMPLS
    ]
    meta["runs_expected"] = len(jobs)
    if args.report_only and not args.out.is_file():
        raise SystemExit(f"--report-only: {args.out} does not exist; run the report (--resume) first")
    runs = previous_runs(args.out, meta) if args.resume or args.report_only else []
    if args.reuse_from:
        reused = reused_runs(args.reuse_from, meta)
        runs = [r for r in runs if r["impl"] == "lit_rl"] + reused
    if args.report_only:
        return write_report(runs, meta, args.out)
    done = {(r["algo"], r["impl"], r["seed"]) for r in runs}
    jobs = [job for job in jobs if (job["algo"], job["impl"], job["seed"]) not in done]
    print(f"{len(jobs)} runs of {max(args.steps)} env steps on {args.env}, {args.jobs} at a time", flush=True)
    kept = [r for r in runs if r["impl"] == "lit_rl" or not args.reuse_from]
    if kept:
        print(f"kept {len(kept)} completed runs of {args.out}", flush=True)
    if len(runs) > len(kept):
        print(f"reused {len(runs) - len(kept)} runs of {args.reuse_from}", flush=True)
    start = time.perf_counter()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("spawn")
    with futures.ProcessPoolExecutor(args.jobs, mp_context=context, initializer=init_worker) as pool:
        pending = {pool.submit(run_one, job): job for job in jobs}
        finished = 0  # of this invocation's jobs (runs also holds kept and reused ones)
        for future in futures.as_completed(pending):
            job = pending[future]
            try:
                run = future.result()
            except Exception as err:  # the worker process itself died
                run = {k: job[k] for k in ("algo", "impl", "seed")}
                run |= {"status": "failed", "returns": {}, "error": f"{type(err).__name__}: {err}"}
            runs.append(run | {"commit": meta["commit"]})
            scores = ", ".join(f"{k} steps: {v:.1f}" for k, v in run["returns"].items())
            took = f"{run['wall_s']:.0f} s, cpu {run['cpu_s']:.0f} s" if "wall_s" in run else "no time"
            finished += 1
            print(f"[{finished}/{len(jobs)}] {run['algo']} {run['impl']} seed {run['seed']}: {run['status']} ", end="")
            print(f"({took}) {scores} {run.get('error', '')}", flush=True)
            # After every run, so a killed report keeps what it measured (--resume continues it).
            write_text(args.out, json.dumps({"meta": meta, "runs": runs}, indent=1) + "\n")
    meta["wall_s"] = round(time.perf_counter() - start, 1)
    return write_report(runs, meta, args.out)


def write_report(runs: list[dict], meta: dict, out: Path) -> int:
    """The report of ``runs``: JSON (runs and statistics) at ``out``, markdown and plot beside it; 1 if a run
    failed."""
    runs.sort(key=lambda r: (r["algo"], r["impl"], r["seed"]))
    markdown, stats = report(runs, meta)
    print("\n" + markdown)
    write_text(out, json.dumps({"meta": meta, "stats": stats, "runs": runs}, indent=1) + "\n")
    write_text(out.with_suffix(".md"), markdown)
    plot(runs, meta, out.with_suffix(".png"))
    took = f" ({meta['wall_s']:.0f} s)" if "wall_s" in meta else ""
    print(f"wrote {out}, its .md and .png{took}")
    return 1 if any(r["status"] != "completed" for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
