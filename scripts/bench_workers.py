"""The measurements of ``scripts/bench.py``, each run in its own process: one lit_rl or one SB3 algorithm.

A worker returns one dict: env steps/s, time shares (``lit_rl.utils.measure.time_shares``),
the update's FLOPs and its share of the ``torch.mm`` bound, peak memory, buffer bytes
per transition.
"""

from __future__ import annotations

import inspect
import tempfile
import time
from typing import Any

import torch

from lit_rl.utils.measure import Timers, count_matmuls, difference, peak_memory, roofline, time_shares


def updates_per_cycle(model: Any) -> int:
    """Updates until the pattern repeats (the actor runs every ``policy_delay`` critic steps): FLOPs average over it."""
    return int(getattr(model, "policy_delay", 1))


def outside_update(shares: dict[str, float], wall: float, env_steps: int) -> dict[str, float]:
    """Milliseconds per env step spent outside the gradient update, and that share of a step."""
    share = 1.0 - shares.get("update", 0.0)
    return {"outside_update_share": share, "outside_update_ms_per_step": 1e3 * share * wall / max(env_steps, 1)}


def roofline_columns(roof: dict[str, float], k: int) -> dict[str, float]:
    """The report's columns of :func:`lit_rl.utils.measure.roofline` over ``k`` updates, per update."""
    return {
        "update_ms": 1e3 * roof["seconds"] / k,
        "update_gflop": roof["gflop"] / k,
        "update_gflops_per_s": roof["gflops_per_s"],
        "matmul_gflops_per_s": roof["mm_gflops_per_s"],
        "pct_of_compute_bound": roof["pct_of_bound"],
        "updates_counted": k,
    }


# Network-option rows (lit_rl only): "<algo>+<option>" is <algo> with that policy_kwargs.net.
NET_OPTION_ROWS: dict[str, tuple[str, dict[str, Any]]] = {
    "sac+droq": ("sac", {"dropout": 0.01, "layer_norm": True}),
    "sac+simba": ("sac", {"residual": True}),
    "crossq+weight_norm": ("crossq", {"weight_norm": True}),
    "crossq+categorical": ("crossq", {"critic_head": "categorical"}),
}


def run_lit_rl(spec: dict[str, Any]) -> dict[str, Any]:
    """Trainer run and bare loop of one lit_rl algorithm, alternated ``repeats`` times; medians reported."""
    import lightning as L
    from lightning.pytorch.loggers import CSVLogger

    from lit_rl import SAC, TD3, CrossQ
    from lit_rl.envs import make_vec_env

    cuda = spec["device"] == "cuda"
    algo, net = NET_OPTION_ROWS.get(spec["algo"], (spec["algo"], None))
    algo_class = {"crossq": CrossQ, "sac": SAC, "td3": TD3}[algo]
    net_kwargs = {} if net is None else {"policy_kwargs": {"net": net}}
    model = algo_class("MlpPolicy", seed=spec["seed"], gradient_steps=spec["gradient_steps"], **spec["algo_kwargs"],
                       **net_kwargs)  # fmt: skip
    env = make_vec_env(spec["env"], spec["n_envs"], spec["seed"], spec["vectorization"])
    log_dir = tempfile.mkdtemp(prefix="lit_rl_bench_")
    accelerator = "gpu" if cuda else "cpu"
    # learn() takes Lightning callbacks as `callback=` (with SB3-style ones) or, in older versions, `callbacks=`.
    callback_arg = "callback" if "callback" in inspect.signature(model.learn).parameters else "callbacks"

    def learn(steps: int, callbacks: list[L.Callback], first: bool = False) -> None:
        model.learn(steps, env=env if first else None, reset_num_timesteps=first, accelerator=accelerator,
                    logger=CSVLogger(log_dir, name="bench"), **{callback_arg: callbacks})  # fmt: skip

    # Warm-up (not counted): random steps up to learning_starts, then `warmup` learning steps.
    start = time.perf_counter()
    learn(model.learning_starts + spec["warmup"] * spec["n_envs"], [], first=True)
    warmup_seconds = time.perf_counter() - start
    timers = Timers(cuda)
    timers.wrap(model, "update")
    timers.wrap(model, "collect_rollouts", "collect")
    timers.wrap(model, "act")
    timers.wrap(model, "dump_logs", "logging")
    timers.wrap(model.collector.env, "step", "env")
    timers.wrap(model.replay_buffer, "sample")
    timers.wrap(model.replay_buffer, "add", "buffer_add")

    class BatchClock(L.Callback):
        """Wall time and env steps from the end of the first batch to the end of the last one."""

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            now = time.perf_counter()
            if batch_idx == 0:
                self.start, self.start_steps, self.start_timers = now, pl_module.num_timesteps, timers.snapshot()
            self.end, self.end_steps, self.end_timers = now, pl_module.num_timesteps, timers.snapshot()

    def trainer_round(steps: int) -> dict[str, Any]:
        clock = BatchClock()
        learn(steps, [clock])
        return {
            "wall": clock.end - clock.start,
            "env_steps": clock.end_steps - clock.start_steps,
            "seconds": difference(clock.end_timers[0], clock.start_timers[0]),
            "calls": difference(clock.end_timers[1], clock.start_timers[1]),
        }

    def bare_round(steps: int) -> dict[str, Any]:
        """The algorithm's own ``training_step`` in a plain loop, with plain torch optimizers."""
        optimizers = model.trainer.optimizers  # the same optimizer objects and states as in the Trainer
        object.__setattr__(model, "optimizers", lambda use_pl_optimizer=True: optimizers)
        object.__setattr__(model, "manual_backward", lambda loss, *args, **kwargs: loss.backward())
        try:
            model.total_timesteps = model.num_timesteps + steps
            before, start_steps, start = timers.snapshot(), model.num_timesteps, time.perf_counter()
            batch_idx = 0
            while model.num_timesteps < model.total_timesteps:
                model.training_step(batch_idx, batch_idx)
                batch_idx += 1
            timers.sync()
            wall = time.perf_counter() - start
        finally:
            del model.__dict__["optimizers"], model.__dict__["manual_backward"]
        after = timers.snapshot()
        return {
            "wall": wall,
            "env_steps": model.num_timesteps - start_steps,
            "seconds": difference(after[0], before[0]),
            "calls": difference(after[1], before[1]),
        }

    trainer_rounds, bare_rounds = [], []
    for _ in range(spec["repeats"]):
        trainer_rounds.append(trainer_round(spec["steps"]))
        bare_rounds.append(bare_round(spec["steps"]))

    def fps(r: dict[str, Any]) -> float:
        return r["env_steps"] / r["wall"]

    median_trainer = sorted(trainer_rounds, key=fps)[len(trainer_rounds) // 2]
    median_bare = sorted(bare_rounds, key=fps)[len(bare_rounds) // 2]
    fps_trainer, fps_bare = fps(median_trainer), fps(median_bare)
    shares = time_shares(median_trainer["seconds"], median_trainer["wall"])

    # FLOPs and matrix products of one cycle of updates (forward + backward of every loss), then the update and
    # the same torch.mm products timed alternately.
    k = updates_per_cycle(model)
    batches = [model.replay_buffer.sample(model.batch_size) for _ in range(k)]

    def updates() -> None:
        for batch in batches:
            model.update(batch)

    # FLOPs and products are counted eagerly (a dispatch mode inside a compiled graph would not see them);
    # the compiled math is the same, and its update is what `roofline` times.
    setting, model.compile_updates = model.compile_updates, False
    count = count_matmuls(updates)
    model.compile_updates = setting
    roof = roofline(count, updates, spec["device"], spec["matmul_seconds"])
    env.close()
    return {
        "fps": fps_trainer,
        "fps_bare": fps_bare,
        "fps_rounds": [fps(r) for r in trainer_rounds],
        "fps_bare_rounds": [fps(r) for r in bare_rounds],
        # Time a Trainer step spends beyond the same step in the bare loop.
        "lightning_overhead_pct": 100.0 * (1.0 - fps_trainer / fps_bare),
        "shares": shares,
        **outside_update(shares, median_trainer["wall"], median_trainer["env_steps"]),
        **roofline_columns(roof, k),
        "matmul_shapes": count.shapes(),
        "buffer_bytes_per_transition": model.replay_buffer.transition_nbytes(),
        "warmup_seconds": warmup_seconds,
        "torch_threads": torch.get_num_threads(),
        **peak_memory(cuda),
    }


# What a learn() row times, per library: method -> share name (lit_rl samples outside its update, SB3 inside train).
LEARN_TIMERS = {
    "lit_rl": {"update": "update", "collect_rollouts": "collect", "act": "act", "dump_logs": "logging"},
    "sb3": {"train": "update", "collect_rollouts": "collect", "_sample_action": "act", "dump_logs": "logging"},
}


def learn_model(spec: dict[str, Any]) -> Any:
    """``Algo("MlpPolicy", env_id, ...)`` of lit_rl or SB3 / sb3-contrib, with its defaults."""
    kwargs = {"seed": spec["seed"], "device": spec["device"], "verbose": 0}
    if spec["lib"] == "lit_rl":
        import lit_rl

        algo_class = getattr(lit_rl, {"crossq": "CrossQ", "sac": "SAC", "td3": "TD3"}[spec["algo"]])
        kwargs |= spec.get("algo_kwargs", {})
    elif spec["algo"] == "crossq":
        from sb3_contrib import CrossQ as algo_class
    else:
        import stable_baselines3

        algo_class = getattr(stable_baselines3, spec["algo"].upper())
    return algo_class("MlpPolicy", spec["env"], **kwargs)


def run_learn(spec: dict[str, Any]) -> dict[str, Any]:
    """One ``model.learn(...)`` as a user calls it, lit_rl or SB3, timed from the end of the warm-up to the end.

    The same protocol for both libraries (their own ``BaseCallback`` as the clock); SB3 rows also measure
    the update against the ``torch.mm`` bound (lit_rl's Trainer rows do that for lit_rl).
    """
    import numpy as np

    if spec["lib"] == "lit_rl":
        from lit_rl.callbacks.sb3 import BaseCallback
    else:
        from stable_baselines3.common.callbacks import BaseCallback
    cuda = spec["device"] == "cuda"
    model = learn_model(spec)
    timers = Timers(cuda)
    for method, name in LEARN_TIMERS[spec["lib"]].items():
        timers.wrap(model, method, name)
    warm_end = model.learning_starts + spec["warmup"]

    class StepClock(BaseCallback):
        def _on_training_start(self) -> None:  # the env and buffer exist now (lit_rl builds them in learn())
            env = model.env if spec["lib"] == "sb3" else model.collector.env
            timers.wrap(env, "step", "env")
            timers.wrap(model.replay_buffer, "sample")
            timers.wrap(model.replay_buffer, "add", "buffer_add")

        def _on_step(self) -> bool:
            now = time.perf_counter()
            if self.num_timesteps == warm_end:
                self.start, self.start_timers = now, timers.snapshot()
            self.end, self.end_steps, self.end_timers = now, self.num_timesteps, timers.snapshot()
            return True

    clock = StepClock()
    start = time.perf_counter()
    model.learn(warm_end + spec["steps"], callback=clock)
    wall, env_steps = clock.end - clock.start, clock.end_steps - warm_end
    seconds = difference(clock.end_timers[0], clock.start_timers[0])
    if spec["lib"] == "sb3":
        seconds["update"] -= seconds.get("sample", 0.0)  # SB3 samples inside train(): keep update the gradient math
    shares = time_shares(seconds, wall)
    result = {
        "fps": env_steps / wall,
        "shares": shares,
        **outside_update(shares, wall, env_steps),
        "total_seconds": time.perf_counter() - start,
        "torch_threads": torch.get_num_threads(),
        **peak_memory(cuda),
    }
    if spec["lib"] == "lit_rl":
        return result | {"buffer_bytes_per_transition": model.replay_buffer.transition_nbytes()}
    k = updates_per_cycle(model)
    # train() samples its batches itself (about 1% of its time): its update times include that.
    count = count_matmuls(lambda: model.train(gradient_steps=k, batch_size=model.batch_size))
    roof = roofline(count, lambda: model.train(gradient_steps=k, batch_size=model.batch_size), spec["device"],
                    spec["matmul_seconds"])  # fmt: skip
    buffer = model.replay_buffer
    arrays = [v for v in vars(buffer).values() if isinstance(v, np.ndarray)]
    nbytes = sum(a.nbytes for a in arrays) // (buffer.buffer_size * buffer.n_envs)
    return result | {**roofline_columns(roof, k), "buffer_bytes_per_transition": nbytes}
