"""Measuring training speed: method timers, time shares, peak memory, and an update's FLOPs against ``torch.mm``.

The roofline of an update: :func:`count_matmuls` runs it once under torch's
``FlopCounterMode`` and records every matrix product (op, shapes, strides);
:func:`roofline` replays exactly those products with random data, on the
same device and torch threads, alternating with the update itself. The
products' time is the update's compute bound; the update's time against it
is its "% of compute bound". Used by ``scripts/bench.py``; imports nothing
of lit_rl.
"""

from __future__ import annotations

import resource
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

aten = torch.ops.aten
MATMUL_OPS = (aten.mm, aten.addmm, aten.bmm, aten.baddbmm)


class Timers:
    """Accumulated seconds and call counts of wrapped methods (CUDA-synchronised when ``cuda``)."""

    def __init__(self, cuda: bool = False) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.sync: Callable[[], None] = torch.cuda.synchronize if cuda else (lambda: None)

    def wrap(self, obj: Any, method: str, name: str | None = None) -> None:
        """Replace ``obj.method`` by a timed version (an instance attribute; the class is untouched)."""
        name = name or method
        inner = getattr(obj, method)
        seconds, calls, sync = self.seconds, self.calls, self.sync

        def timed(*args: Any, **kwargs: Any) -> Any:
            sync()
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                sync()
                seconds[name] += time.perf_counter() - start
                calls[name] += 1

        # nn.Module.__setattr__ would refuse or register a plain function; the instance dict takes it.
        object.__setattr__(obj, method, timed)

    def snapshot(self) -> tuple[dict[str, float], dict[str, int]]:
        """``(seconds, calls)`` so far, copied."""
        return dict(self.seconds), dict(self.calls)


def difference(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    """``after - before`` per key of ``after`` (two :meth:`Timers.snapshot` halves)."""
    return {k: after.get(k, 0) - before.get(k, 0) for k in after}


SHARE_PARTS = ("update", "sample", "act", "buffer_add", "env", "collect_other", "logging", "lightning")


def time_shares(seconds: dict[str, float], total: float) -> dict[str, float]:
    """Split ``total`` wall seconds into the shares of :data:`SHARE_PARTS`.

    ``collect`` (a whole rollout) contains ``act``, ``buffer_add`` and
    ``env`` (vector-env steps); ``collect_other`` is the rest of it (the
    collector's own Python). When ``env`` is not timed, it is all of that
    rest. ``lightning`` is the time outside every timed method: Lightning's
    loop and the algorithm's bookkeeping around the timed calls.
    """
    collect = seconds.get("collect", 0.0)
    act, add = seconds.get("act", 0.0), seconds.get("buffer_add", 0.0)
    env = seconds["env"] if "env" in seconds else max(collect - act - add, 0.0)
    parts = {
        "update": seconds.get("update", 0.0),
        "sample": seconds.get("sample", 0.0),
        "act": act,
        "buffer_add": add,
        "env": env,
        "collect_other": max(collect - act - add - env, 0.0),
        "logging": seconds.get("logging", 0.0),
    }
    parts["lightning"] = max(total - sum(parts.values()), 0.0)
    return {k: v / total for k, v in parts.items()} if total > 0 else dict.fromkeys(parts, float("nan"))


def peak_memory(cuda: bool = False) -> dict[str, float]:
    """Peak resident memory of this process (MiB) and, when ``cuda``, peak allocated GPU memory (MiB)."""
    out = {"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}  # KiB on Linux
    if cuda:
        out["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
    return out


@dataclass
class MatmulCall:
    """One recorded matrix product: the op, its arguments (tensors as ``(shape, stride, dtype)``), its FLOPs."""

    op: Any
    args: tuple
    kwargs: dict
    flops: int


@dataclass
class MatmulCount:
    """What :func:`count_matmuls` saw: all FLOPs (torch's counter) and the matrix products among them."""

    flops: int
    calls: list[MatmulCall] = field(default_factory=list)

    @property
    def matmul_flops(self) -> int:
        return sum(c.flops for c in self.calls)

    def shapes(self) -> list[str]:
        """Distinct products as ``"op AxB @ BxC"`` strings, with their counts (for reports)."""
        counts: dict[str, int] = defaultdict(int)
        for c in self.calls:
            operands = c.args[1:3] if c.op.overloadpacket in (aten.addmm, aten.baddbmm) else c.args[:2]
            dims = " @ ".join("x".join(map(str, a.shape)) for a in operands)
            counts[f"{c.op.__name__.split('.')[0]} {dims}"] += 1
        return [f"{n}x {k}" for k, n in counts.items()]


@dataclass(frozen=True)
class TensorSpec:
    """Shape, stride and dtype of a recorded argument: enough to rebuild one with the same memory layout."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype


def matmul_flops(op: Any, args: tuple) -> int:
    """FLOPs of one mm/addmm/bmm/baddbmm call (2 per multiply-add, as torch's counter)."""
    a, b = (args[1], args[2]) if op.overloadpacket in (aten.addmm, aten.baddbmm) else (args[0], args[1])
    batch = a.shape[0] if a.dim() == 3 else 1
    return 2 * batch * a.shape[-2] * a.shape[-1] * b.shape[-1]


class _MatmulRecorder(TorchDispatchMode):
    """Records every matrix product that reaches the dispatcher."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[MatmulCall] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.overloadpacket in MATMUL_OPS and "out" not in kwargs:
            spec = tuple(
                TensorSpec(tuple(a.shape), tuple(a.stride()), a.dtype) if isinstance(a, torch.Tensor) else a
                for a in args
            )
            self.calls.append(MatmulCall(func, spec, dict(kwargs), matmul_flops(func, args)))
        return func(*args, **kwargs)


def count_matmuls(fn: Callable[[], Any]) -> MatmulCount:
    """Run ``fn()`` once; return its FLOPs (``FlopCounterMode``) and the matrix products it made."""
    recorder = _MatmulRecorder()
    with FlopCounterMode(display=False) as counter, recorder:
        fn()
    return MatmulCount(counter.get_total_flops(), recorder.calls)


def _random_like(spec: TensorSpec, device: str | torch.device) -> torch.Tensor:
    """A tensor of ``spec``'s shape and strides (broadcast and transposed layouts included) with random values."""
    size = 1 + sum((n - 1) * s for n, s in zip(spec.shape, spec.stride, strict=True) if n > 0)
    base = torch.randn(size, device=device).to(spec.dtype)
    return base.as_strided(spec.shape, spec.stride)


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _replay(calls: list[MatmulCall], device: str | torch.device) -> Callable[[], None]:
    """A function that runs ``calls`` once on random tensors of their shapes and strides."""
    replay = [
        (c.op, tuple(_random_like(a, device) if isinstance(a, TensorSpec) else a for a in c.args), c.kwargs)
        for c in calls
    ]

    def one_pass() -> None:
        for op, args, kwargs in replay:
            op(*args, **kwargs)

    return one_pass


def _timed(fn: Callable[[], Any], sync: Callable[[], None]) -> float:
    sync()
    start = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - start


def matmul_seconds(calls: list[MatmulCall], device: str | torch.device, seconds: float = 1.0) -> float:
    """Seconds one pass over ``calls`` takes when replayed on random data (median of passes for ``seconds``)."""
    if not calls:
        return 0.0
    one_pass = _replay(calls, device)
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    one_pass()  # first-call costs (allocator, kernels) are not the machine's rate
    passes: list[float] = []
    deadline = time.perf_counter() + seconds
    while not passes or time.perf_counter() < deadline:
        passes.append(_timed(one_pass, sync))
    # The median: a shared machine's interruptions inflate single passes, and the fastest one would flatter.
    return _median(passes)


def roofline(
    count: MatmulCount, updates: Callable[[], Any], device: str | torch.device, seconds: float = 1.0
) -> dict[str, float]:
    """The update's achieved GFLOP/s and its share of the ``torch.mm`` bound.

    ``updates()`` runs what ``count`` counted (one or several updates). It
    and the replay of ``count``'s matrix products are timed alternately for
    ``seconds``, so a load that comes and goes on a shared machine slows
    both alike; medians are reported.
    """
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)
    one_pass = _replay(count.calls, device) if count.calls else (lambda: None)
    updates()  # warm: first-call costs are not the machine's rate
    one_pass()
    update_times: list[float] = []
    mm_times: list[float] = []
    deadline = time.perf_counter() + seconds
    while not update_times or time.perf_counter() < deadline:
        update_times.append(_timed(updates, sync))
        mm_times.append(_timed(one_pass, sync))
    update_s, bound = _median(update_times), (_median(mm_times) if count.calls else 0.0)
    nan = float("nan")
    return {
        "gflop": count.flops / 1e9,
        "matmul_gflop": count.matmul_flops / 1e9,
        "seconds": update_s,
        "mm_seconds": bound,
        "gflops_per_s": count.flops / update_s / 1e9 if update_s > 0 else nan,
        "mm_gflops_per_s": count.matmul_flops / bound / 1e9 if bound > 0 else nan,
        "pct_of_bound": 100.0 * bound / update_s if update_s > 0 else nan,
    }
