"""``torch.compile`` for the update (``trainer.compile``, ``compile=``): the whole gradient step, or its losses.

:func:`run_update` runs an algorithm's ``tensor_step`` as one compiled graph where
:mod:`lit_rl.core.compiled_step` allows it (CPU, torch >= 2.13, Adam); else
each loss is compiled on its own, as follows. An algorithm calls
``compiled(self, critic_loss)(...)`` where it would call
``critic_loss(...)``: with compilation off that is ``critic_loss`` itself; on,
a :class:`CompiledFunction` kept per algorithm and function. Each function is
compiled on its own (``isolate_recompiles``), so graphs stay small and a mode
toggle in one loss never invalidates another's guards. What would otherwise
change guards between calls is done outside the graph:

- ``requires_grad`` flips (:func:`lit_rl.core.gradients.frozen` does
  nothing while compiling; the wrapper freezes the module before the call);
- BatchRenorm train/eval modes: each loss sets the modes it needs; the wrapper
  first restores the modes every module had at the function's first call, so
  the entry state (which depends on whether the previous step was an actor
  step) is always the one the graph was traced with.

Random ops run as in eager mode (``fallback_random``): the same seed draws the
same noise, compiled or not. In the per-loss mode optimizer steps stay eager (fused Adam).

On CPU, boolean masks are recomputed in the backward instead of saved by the
forward (:class:`RecomputeMasks`): inductor's C++ store of a bool tensor is ~15x
slower than eager's, and it made compiled SAC slower than eager.
"""

from __future__ import annotations

import inspect
import logging
import warnings
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.utils._pytree import tree_map
from torch.utils.checkpoint import CheckpointPolicy

from lit_rl.core.compiled_step import dynamo_settings, graph_optimizers, whole_step_blocker
from lit_rl.core.precision import matmul_precision

if TYPE_CHECKING:  # checked against the installed torch (>= 2.6)
    from torch._inductor.custom_graph_pass import CustomGraphPass
else:
    try:
        from torch._inductor.custom_graph_pass import CustomGraphPass
    except ImportError:  # torch < 2.6: a joint pass is any callable (and has no cache key)
        CustomGraphPass = object

log = logging.getLogger("lit_rl.train")

_ISOLATE = "isolate_recompiles" in inspect.signature(torch.compile).parameters

# Per algorithm (weakly held: compiled functions never travel in checkpoints, copies or pickles).
_COMPILED: weakref.WeakKeyDictionary[Any, dict[Any, CompiledFunction | None]] = weakref.WeakKeyDictionary()


def check_compile(value: Any, key: str = "compile") -> bool | str:
    """The ``compile`` setting, or a ValueError naming ``key``, the value and what is allowed."""
    if isinstance(value, bool) or value in ("default", "reduce-overhead"):
        return value
    raise ValueError(f"{key}={value!r} is not allowed; allowed: false, true, 'default' or 'reduce-overhead'")


class RecomputeMasks(CustomGraphPass):
    """Joint-graph pass: pointwise ops that produce bool tensors are recomputed in the backward, never saved.

    The min-cut partitioner saves the cheapest tensors for the backward, and a bool mask (1 byte per element)
    beats the float it is computed from: for a ReLU whose output the backward does not need otherwise (the
    frozen critic of an actor loss) it saves ``relu(x) <= 0``. Inductor's CPU kernels are slow to write bool
    (and uint8) tensors (torch 2.13 on this AVX-512 CPU, vectorised or not: 1.3-1.8 ms for 2x256x256 against
    0.05-0.1 ms eager), so those stores were most of compiled SAC's extra time. Recomputing
    a comparison from a saved float costs one fused load in the backward kernel; the values are identical.
    """

    def __call__(self, graph: torch.fx.Graph) -> None:
        # Inputs the forward updates in place (BatchRenorm statistics and step counts): the backward would
        # read them updated, so nothing computed from them is recomputed (CrossQ's `steps > warmup`).
        mutated = {n.args[0] for n in graph.nodes if n.target is torch.ops.aten.copy_.default
                   and n.args[0].op == "placeholder"}  # fmt: skip
        reads_mutated: dict[torch.fx.Node, bool] = {}
        for node in graph.nodes:  # topological order: inputs first
            reads_mutated[node] = node in mutated or any(reads_mutated[i] for i in node.all_input_nodes)
            val = node.meta.get("val")
            if (node.op == "call_function" and isinstance(val, torch.Tensor) and val.dtype == torch.bool
                    and torch.Tag.pointwise in getattr(node.target, "tags", ()) and not reads_mutated[node]):  # fmt: skip
                node.meta["recompute"] = CheckpointPolicy.MUST_RECOMPUTE

    def uuid(self) -> str:  # inductor's graph cache keys on it
        return "lit_rl.compiled.RecomputeMasks.v2"


# Inductor settings for graphs whose inputs are all on the CPU (the CUDA path keeps inductor's defaults).
CPU_CONFIG: dict[str, Any] = {"joint_custom_post_pass": RecomputeMasks()}


class CompiledFunction:
    """``fn`` under ``torch.compile`` (inductor), counting the graphs it compiled and the recompilations.

    A recompilation is a graph compiled on any call after the first (a guard
    failed: a new shape, mode or flag); graphs from the first call (several
    only if the function has graph breaks) are not.
    """

    def __init__(
        self, fn: Callable, owner: nn.Module, cuda_graphs: bool = False, dynamo: dict[str, Any] | None = None
    ) -> None:
        self.fn, self.owner, self.cuda_graphs = fn, owner, cuda_graphs
        self.dynamo = dynamo or {}  # Dynamo config while tracing (read on every call: a guard may fail later)
        self.calls = self.graphs = self.recompilations = 0
        self._modes: list[tuple[nn.Module, bool]] | None = None
        name = getattr(fn, "__qualname__", type(fn).__name__)
        self.name = f"{getattr(fn, '__module__', '')}.{name}".lstrip(".")
        # Same draws as eager mode from the same RNG state; CUDA graphs only when asked for (reduce-overhead).
        self.config: dict[str, Any] = {"fallback_random": True, "triton.cudagraphs": cuda_graphs}
        # Own cache entries per function and model (torch >= 2.13); older torch shares them per code object.
        # Any: torch.compile's stubs do not declare isolate_recompiles, so it is passed only where its signature has it.
        isolate: dict[str, Any] = {"isolate_recompiles": True} if _ISOLATE else {}
        self._compiled = torch.compile(fn, backend=self._backend, dynamic=False, **isolate)

    def _backend(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable:
        from torch._inductor.compile_fx import compile_fx

        self.graphs += 1
        if self.calls > 1:
            self.recompilations += 1
            log.debug("compiled update: %s recompiled (call %d)", self.name, self.calls)
        config = self.config
        if all(x.device.type == "cpu" for x in example_inputs if isinstance(x, torch.Tensor)):
            config = {**config, **CPU_CONFIG}
        compiled = compile_fx(gm, example_inputs, config_patches=config)
        if not callable(compiled):  # AOT modes return files or weights; these config patches never select them
            raise TypeError(f"compile_fx returned {type(compiled).__name__}, not a compiled function")
        return compiled

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.call_frozen(None, *args, **kwargs)

    def call_frozen(self, frozen: nn.Module | None, *args: Any, **kwargs: Any) -> Any:
        """The compiled call with ``frozen``'s parameters excluded from gradients for its duration."""
        self.calls += 1
        if self._modes is None:
            self._modes = [(m, m.training) for m in self.owner.modules()]
        else:
            for module, training in self._modes:  # the entry modes the graph was traced with
                if module.training != training:
                    module.training = training
        if frozen is not None:
            frozen.requires_grad_(False)
        try:
            if self.dynamo:
                with torch._dynamo.config.patch(**self.dynamo):
                    out = self._compiled(*args, **kwargs)
            else:
                out = self._compiled(*args, **kwargs)
        finally:
            if frozen is not None:
                frozen.requires_grad_(True)
        if self.cuda_graphs:  # a CUDA graph's outputs are overwritten by its next replay; metrics live longer
            out = tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, out)
        return out


def compiled(
    algo: Any, fn: Callable, frozen: nn.Module | None = None, key: Any = None, acting: bool = False
) -> Callable:
    """``fn`` itself, or its compiled version when ``algo`` compiles its updates (``algo.compile_updates``).

    ``frozen``: a module whose parameters get no gradients in the call
    (what :func:`~lit_rl.core.gradients.frozen` does inside ``fn`` in eager mode).
    ``key`` separates compilations of one ``fn`` (e.g. acting stochastically or deterministically).
    ``acting``: the acting network, compiled on a GPU only: on a CPU the per-call cost of a compiled
    function (guards, wrappers) exceeds a one-observation forward (measured: SAC 83 vs 54 us, TD3 82 vs 43 us).
    """
    if torch.compiler.is_compiling():  # inside the whole-step graph (run_update): traced as part of it
        return fn
    setting = getattr(algo, "compile_updates", False)
    if setting is False or (acting and algo.device.type == "cpu"):
        return fn
    functions = _COMPILED.setdefault(algo, {})
    entry = functions.get((fn, key))
    if entry is None:
        owner = algo.policy if getattr(algo, "policy", None) is not None else algo
        entry = functions[(fn, key)] = CompiledFunction(fn, owner, cuda_graphs=_cuda_graphs(algo, setting))
    return entry if frozen is None else lambda *args, **kwargs: entry.call_frozen(frozen, *args, **kwargs)


def run_update(algo: Any, tensor_step: Callable[..., dict[str, torch.Tensor]], *args: Any) -> dict[str, torch.Tensor]:
    """``tensor_step(algo, optimizers, *args)``: one compiled graph when ``algo`` compiles and the step allows it.

    ``tensor_step`` is the algorithm's gradient step without its Python bookkeeping (an unbound method: the
    compiled function is kept per class function, not per bound-method object). When the whole step
    cannot be one graph (:func:`~lit_rl.core.compiled_step.whole_step_blocker`), it runs as it is and
    compiles its losses one by one; the reason is logged once per algorithm.
    """
    with matmul_precision(algo.precision, algo.device):  # the matrix products in bf16/fp16 for mixed precision
        return _run_update(algo, tensor_step, *args)


def _run_update(algo: Any, tensor_step: Callable[..., dict[str, torch.Tensor]], *args: Any) -> dict[str, torch.Tensor]:
    optimizers = algo.optimizers()
    optimizers = list(optimizers) if isinstance(optimizers, (list, tuple)) else [optimizers]
    if getattr(algo, "compile_updates", False) is not False:
        functions = _COMPILED.setdefault(algo, {})
        blocker = whole_step_blocker(algo, optimizers)
        if blocker is None:
            # One compiled function per combination of flags (TD3's actor step or not): each its own graph.
            key = (tensor_step, "whole_step", tuple(a for a in args if isinstance(a, bool)))
            entry = functions.get(key)
            if entry is None:
                entry = functions[key] = CompiledFunction(tensor_step, algo.policy, dynamo=dynamo_settings())
            return entry(algo, graph_optimizers(optimizers), *args)
        if (tensor_step, "blocked") not in functions:
            log.info("compiled update: each loss on its own (%s)", blocker)
            functions[(tensor_step, "blocked")] = None  # a marker: logged once
    return tensor_step(algo, optimizers, *args)


def _cuda_graphs(algo: Any, setting: bool | str) -> bool:
    if setting != "reduce-overhead":
        return False
    if algo.device.type != "cuda":
        warnings.warn(f"compile='reduce-overhead' uses CUDA graphs, which need a CUDA device; the model is on "
                      f"{algo.device}: compiling without them", stacklevel=3)  # fmt: skip
        return False
    return True


def compile_stats(algo: Any) -> dict[str, int]:
    """Graphs compiled and recompilations so far, over all of ``algo``'s compiled functions."""
    functions = [f for f in _COMPILED.get(algo, {}).values() if f is not None]
    return {
        "functions": len(functions),
        "graphs": sum(f.graphs for f in functions),
        "recompilations": sum(f.recompilations for f in functions),
    }


def report_compilation(algo: Any) -> None:
    """At the end of a fit: "compiled update: N graphs, M recompilations" in the log and the logged metrics."""
    if getattr(algo, "compile_updates", False) is False:
        return
    stats = compile_stats(algo)
    log.info("compiled update: %d graphs, %d recompilations (%d functions)", stats["graphs"],
             stats["recompilations"], stats["functions"])  # fmt: skip
    for name in ("graphs", "recompilations"):
        algo.record(f"compile/{name}", torch.tensor(float(stats[name])))
