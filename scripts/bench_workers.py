"""The measurements of ``scripts/bench.py``, each run in its own process: one lit_rl, SB3 or SBX algorithm.

A worker returns one dict: env steps/s, time shares (``lit_rl.utils.measure.time_shares``),
the update's FLOPs and its share of the ``torch.mm`` bound (fp32, and bf16 at the same
shapes), peak memory, buffer bytes per transition.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import tempfile
import time
import warnings
from typing import Any

import torch

from lit_rl.utils.measure import (
    MatmulCount,
    TensorSpec,
    Timers,
    count_matmuls,
    difference,
    matmul_seconds,
    peak_memory,
    roofline,
    time_shares,
)

# The precisions a lit_rl row may ask for (the algorithms' `precision=` argument).
PRECISIONS = ("32-true", "bf16-mixed")


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


def with_dtype(count: MatmulCount, dtype: torch.dtype) -> MatmulCount:
    """``count`` with every floating-point operand of its products in ``dtype`` (same shapes and strides)."""

    def cast(a: Any) -> Any:
        return dataclasses.replace(a, dtype=dtype) if isinstance(a, TensorSpec) and a.dtype.is_floating_point else a

    calls = [dataclasses.replace(c, args=tuple(cast(a) for a in c.args)) for c in count.calls]
    return MatmulCount(count.flops, calls)


def bound_columns(count: MatmulCount, updates: Any, k: int, device: str, seconds: float, bf16: bool) -> dict[str, Any]:
    """The update against the fp32 ``torch.mm`` bound and the bf16 one, both at the update's own shapes.

    The fp32 products alternate with the update (:func:`roofline`); the bf16 ones are then timed alone.
    ``bf16``: the row computes in bf16, so its "% of compute bound" is against the bf16 bound.
    """
    fp32 = roofline(with_dtype(count, torch.float32), updates, device, seconds)
    bf16_seconds = matmul_seconds(with_dtype(count, torch.bfloat16).calls, device, seconds)
    columns = roofline_columns(fp32, k)
    nan = float("nan")
    columns |= {
        "matmul_bf16_gflops_per_s": count.matmul_flops / bf16_seconds / 1e9 if bf16_seconds > 0 else nan,
        "pct_of_fp32_bound": fp32["pct_of_bound"],
        "pct_of_bf16_bound": 100.0 * bf16_seconds / fp32["seconds"] if fp32["seconds"] > 0 else nan,
        "compute_bound": "bf16" if bf16 else "fp32",
        "matmul_dtypes": sorted({str(a.dtype) for c in count.calls for a in c.args if isinstance(a, TensorSpec)}),
    }
    if bf16:
        columns["pct_of_compute_bound"] = columns["pct_of_bf16_bound"]
    return columns


def lit_rl_bounds(model: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """FLOPs and matrix products of one cycle of lit_rl updates, then the update against the fp32 and bf16 bounds.

    FLOPs and products are counted eagerly (a dispatch mode inside a compiled graph would not see them); the
    compiled math is the same, and its update is what the bound is timed against.
    """
    k = updates_per_cycle(model)
    batches = [model.replay_buffer.sample(model.batch_size) for _ in range(k)]

    def updates() -> None:
        for batch in batches:
            model.update(batch)

    setting, model.compile_updates = model.compile_updates, False
    count = count_matmuls(updates)
    model.compile_updates = setting
    bf16 = spec.get("algo_kwargs", {}).get("precision", "32-true") != "32-true"
    return {**bound_columns(count, updates, k, spec["device"], spec["matmul_seconds"], bf16),
            "matmul_shapes": count.shapes()}  # fmt: skip


class RowSkipped(Exception):
    """A row that cannot run here (an argument the installed lit_rl does not take yet, a missing package)."""


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
    model = build_lit_rl(algo_class, spec, "MlpPolicy", seed=spec["seed"], gradient_steps=spec["gradient_steps"],
                         **spec["algo_kwargs"], **net_kwargs)  # fmt: skip
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
        if clock.end_steps == clock.start_steps:
            raise ValueError(f"steps: {steps} env steps are one Lightning batch ({model.rounds_per_batch} rounds); "
                             "a Trainer round is timed from the end of its first batch, so it needs more")  # fmt: skip
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

    bounds = lit_rl_bounds(model, spec)
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
        **bounds,
        "buffer_bytes_per_transition": model.replay_buffer.transition_nbytes(),
        "warmup_seconds": warmup_seconds,
        "torch_threads": torch.get_num_threads(),
        **peak_memory(cuda),
    }


def build_lit_rl(algo_class: Any, spec: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
    """``algo_class(*args, **kwargs)``; a precision the installed lit_rl cannot take skips the row (``RowSkipped``).

    Only a row that asks for a non-default precision is skipped this way; any other error is the bench's to report.
    """
    precision = kwargs.get("precision", "32-true")
    if precision not in PRECISIONS:
        raise ValueError(f"precision: {precision!r} is not allowed; allowed: {list(PRECISIONS)}")
    try:
        return algo_class(*args, **kwargs)
    except (TypeError, ValueError, NotImplementedError) as e:
        if precision == "32-true":
            raise
        raise RowSkipped(f"lit_rl's {algo_class.__name__} cannot run precision={precision!r} here: {e}") from e


# What a learn() row times, per library: method -> share name (lit_rl samples outside its update, SB3 and SBX
# inside train).
SB3_TIMERS = {"train": "update", "collect_rollouts": "collect", "_sample_action": "act", "dump_logs": "logging"}
LEARN_TIMERS = {
    "lit_rl": {"update": "update", "collect_rollouts": "collect", "act": "act", "dump_logs": "logging"},
    "sb3": SB3_TIMERS,
    "sbx": SB3_TIMERS,  # SBX is SB3's OffPolicyAlgorithm with a jitted train()
}

# SBX with SB3's / sb3-contrib's hyperparameters (2.9.2 defaults, the ones lit_rl's signatures copy). SBX's own
# defaults differ in places (TD3: learning rate 3e-4, nets [256, 256] where SB3's are [400, 300]), so every shared
# one is passed; `hyperparameter_differences` checks the built models side by side. JAX's BatchRenorm counts
# momentum the other way round (0.99 for torch's 0.01); its epsilon (1e-3) and r_max / d_max (3 / 5) are SB3's.
SBX_KWARGS: dict[str, dict[str, Any]] = {
    "sac": {"learning_rate": 3e-4, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 256,
            "tau": 0.005, "gamma": 0.99, "train_freq": 1, "gradient_steps": 1, "policy_delay": 1,
            "ent_coef": "auto", "target_entropy": "auto", "policy_kwargs": {"net_arch": [256, 256], "n_critics": 2}},
    "td3": {"learning_rate": 1e-3, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 256,
            "tau": 0.005, "gamma": 0.99, "train_freq": 1, "gradient_steps": 1, "policy_delay": 2,
            "target_policy_noise": 0.2, "target_noise_clip": 0.5, "action_noise": None,
            "policy_kwargs": {"net_arch": [400, 300], "n_critics": 2}},
    "crossq": {"learning_rate": 1e-3, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 256,
               "gamma": 0.99, "train_freq": 1, "gradient_steps": 1, "policy_delay": 3, "ent_coef": "auto",
               "target_entropy": "auto",
               "policy_kwargs": {"net_arch": {"pi": [256, 256], "qf": [1024, 1024]}, "n_critics": 2,
                                 "batch_norm": True, "batch_norm_actor": True, "batch_norm_momentum": 0.99,
                                 "renorm_warmup_steps": 100_000, "optimizer_kwargs": {"b1": 0.5, "b2": 0.999}}},
}  # fmt: skip


def quiet_jax(threads: int) -> None:
    """Before JAX is imported: CPU only, its C++ log below warnings, ``threads`` intra-op threads (torch's count).

    ``JAX_PLATFORMS=cpu`` also keeps away the "no CUDA-enabled jaxlib" notice of a GPU machine; a user's own
    ``XLA_FLAGS`` stay and come first. tensorflow_probability's JAX backend warns about a deprecated JAX name.
    """
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    flags = f"--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={threads}"
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()
    warnings.filterwarnings("ignore", message=r"jax\.core\..* is deprecated", category=DeprecationWarning)


def learn_model(spec: dict[str, Any]) -> Any:
    """``Algo("MlpPolicy", env_id, ...)`` of lit_rl, SB3 / sb3-contrib or SBX, with SB3's hyperparameters."""
    kwargs = {"seed": spec["seed"], "device": spec["device"], "verbose": 0}
    if spec["lib"] == "lit_rl":
        import lit_rl

        algo_class = getattr(lit_rl, {"crossq": "CrossQ", "sac": "SAC", "td3": "TD3"}[spec["algo"]])
        return build_lit_rl(algo_class, spec, "MlpPolicy", spec["env"], **kwargs, **spec.get("algo_kwargs", {}))
    if spec["lib"] == "sbx":
        quiet_jax(torch.get_num_threads())
        import sbx

        algo_class = getattr(sbx, {"crossq": "CrossQ", "sac": "SAC", "td3": "TD3"}[spec["algo"]])
        return algo_class("MlpPolicy", spec["env"], **kwargs, **SBX_KWARGS[spec["algo"]])
    if spec["algo"] == "crossq":
        from sb3_contrib import CrossQ as algo_class
    else:
        import stable_baselines3

        algo_class = getattr(stable_baselines3, spec["algo"].upper())
    return algo_class("MlpPolicy", spec["env"], **kwargs)


def dense_shapes(model: Any) -> dict[str, list[tuple[int, ...]]]:
    """(inputs, outputs) of every dense layer of an SB3 or SBX model's actor and critics (target nets left out)."""
    if hasattr(model.policy, "actor_state"):  # SBX: flax kernels are (in, out), a vmapped critic's (n, in, out)
        import jax

        def kernels(params: Any) -> list[tuple[int, ...]]:
            leaves = jax.tree_util.tree_flatten_with_path(params)[0]
            shapes = [leaf.shape for path, leaf in leaves if jax.tree_util.keystr(path).endswith("['kernel']")]
            return sorted(s[-2:] for s in shapes for _ in range(s[0] if len(s) == 3 else 1))

        return {"actor": kernels(model.policy.actor_state.params), "critic": kernels(model.policy.qf_state.params)}
    policy = model.policy
    critic = policy.critic
    return {
        part: sorted((m.in_features, m.out_features) for m in net.modules() if isinstance(m, torch.nn.Linear))
        for part, net in (("actor", policy.actor), ("critic", critic))
    }


def hyperparameters(model: Any) -> dict[str, Any]:
    """What decides an update's work, read from a built SB3 or SBX model (for the side-by-side check)."""
    out: dict[str, Any] = {name: getattr(model, name, None) for name in (
        "batch_size", "learning_starts", "buffer_size", "gamma", "tau", "gradient_steps", "policy_delay",
        "target_policy_noise", "target_noise_clip", "learning_rate")}  # fmt: skip
    out["train_freq"] = tuple(model.train_freq) if model.train_freq is not None else None
    if out["policy_delay"] is None and hasattr(model, "target_update_interval"):  # SB3's SAC: actor every update
        out["policy_delay"] = 1
    if type(model).__name__ == "CrossQ":
        del out["tau"]  # no target networks: SBX keeps an unused 0.005, sb3-contrib its base class's 1.0
    out["layers"] = dense_shapes(model)
    policy = model.policy
    if hasattr(policy, "renorm_warmup_steps"):  # SBX CrossQ (flax momentum: weight of the old average)
        out["batch_renorm"] = {"momentum": round(1.0 - policy.batch_norm_momentum, 6), "eps": 1e-3, "r_max": 3.0,
                               "d_max": 5.0, "warmup_steps": policy.renorm_warmup_steps}  # fmt: skip
        out["adam_betas"] = (policy.optimizer_kwargs.get("b1", 0.9), policy.optimizer_kwargs.get("b2", 0.999))
    else:
        from_torch = [m for m in policy.modules() if hasattr(m, "warmup_steps") and hasattr(m, "rmax")]
        if from_torch:  # sb3-contrib CrossQ's BatchRenorm layers
            m = from_torch[0]
            out["batch_renorm"] = {"momentum": round(m.momentum, 6), "eps": m.eps, "r_max": m.rmax, "d_max": m.dmax,
                                   "warmup_steps": m.warmup_steps}  # fmt: skip
        betas = policy.optimizer_kwargs.get("betas")
        if betas is not None:
            out["adam_betas"] = tuple(betas)
    return out


def hyperparameter_differences(sbx_model: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """``{name: [SB3's, SBX's]}`` for every update-deciding setting where the SBX model differs from SB3's."""
    reference = learn_model({**spec, "lib": "sb3"})
    ours, theirs = hyperparameters(reference), hyperparameters(sbx_model)
    return {k: [ours.get(k), theirs.get(k)] for k in sorted(set(ours) | set(theirs)) if ours.get(k) != theirs.get(k)}


def run_learn(spec: dict[str, Any]) -> dict[str, Any]:
    """One ``model.learn(...)`` as a user calls it, lit_rl, SB3 or SBX, timed from the end of the warm-up to the end.

    The same protocol for every library: its ``BaseCallback`` as the clock, started ``warmup`` learning steps
    after ``learning_starts`` (JIT and ``torch.compile`` warm-up excluded). lit_rl and SB3 rows also measure
    the update against the ``torch.mm`` bounds; SBX's jitted update has no torch products to count.
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
            env = model.collector.env if spec["lib"] == "lit_rl" else model.env
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
    if spec["lib"] != "lit_rl":
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
        return result | lit_rl_bounds(model, spec) | {
            "buffer_bytes_per_transition": model.replay_buffer.transition_nbytes()}
    buffer = model.replay_buffer
    arrays = [v for v in vars(buffer).values() if isinstance(v, np.ndarray)]
    result["buffer_bytes_per_transition"] = sum(a.nbytes for a in arrays) // (buffer.buffer_size * buffer.n_envs)
    if spec["lib"] == "sbx":
        import jax

        calls = difference(clock.end_timers[1], clock.start_timers[1]).get("update", 0)
        return result | {"update_ms": 1e3 * seconds["update"] / calls if calls else float("nan"),
                         "xla_flags": os.environ.get("XLA_FLAGS", ""), "jax": jax.__version__,
                         "hyperparameters_differ": hyperparameter_differences(model, spec)}  # fmt: skip
    k = updates_per_cycle(model)

    # train() samples its batches itself (about 1% of its time): its update times include that.
    def updates() -> None:
        model.train(gradient_steps=k, batch_size=model.batch_size)

    return result | bound_columns(count_matmuls(updates), updates, k, spec["device"], spec["matmul_seconds"], False)
