"""The whole gradient step as one compiled graph: losses, gradients, Adam steps and target updates.

With ``compile`` on, an algorithm's ``tensor_step`` (everything in a gradient step
but Python bookkeeping: counters, flags, gSDE resampling) runs under one
``torch.compile``. torch >= 2.13 traces ``torch.autograd.grad`` into the graph
(``torch._dynamo.config.trace_autograd_ops``); inside it an optimizer step is
:func:`minimize_in_graph`: ``autograd.grad`` of the loss for the optimizer's
parameters, then torch's functional Adam (``torch.optim.adam.adam``) on the
optimizer's own state. Inductor then fuses the backward's pointwise work, the
Adam updates and the Polyak averages into a few kernels around the matrix
products, and one Python call replaces dozens of dispatches.

The optimizers stay ordinary ``torch.optim.Adam`` objects: their state (and so
checkpoints) is the same whichever path ran, and a run can switch. The graph
gets views of them (:class:`GraphAdam`) whose learning rate is a tensor
refreshed before each call, so a schedule changes no guard. Where the graph
cannot be used, :func:`whole_step_blocker` says why and the step falls back to
compiling each loss on its own (:mod:`lit_rl.core.compiled`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
from torch.optim.adam import adam

# torch >= 2.13: Dynamo traces autograd.grad / backward into the graph when this flag is set.
TRACE_AUTOGRAD = hasattr(torch._dynamo.config, "trace_autograd_ops")
# Adam settings the functional call below reproduces exactly (the rest keep torch's own step).
_PLAIN_ADAM = {"amsgrad": False, "maximize": False, "differentiable": False, "capturable": False}


def whole_step_blocker(algo: Any, optimizers: list[torch.optim.Optimizer]) -> str | None:
    """Why ``algo``'s gradient step cannot be one compiled graph, or None when it can."""
    if not TRACE_AUTOGRAD:
        return f"torch {torch.__version__} cannot trace autograd.grad into a graph (torch >= 2.13 can)"
    if algo.device.type != "cpu":
        # Untested on GPUs so far: there the losses compile one by one, with CUDA graphs for reduce-overhead.
        return f"the whole-step graph is used on CPUs; on {algo.device} each loss is compiled"
    if algo._trainer is not None and not algo._plain_optimization:
        return "Lightning's optimizer wrappers are in use (a multi-device strategy or a hook)"
    if algo.precision == "16-mixed":
        return "16-mixed scales its losses (GradScaler), whose overflow checks skip steps outside a graph"
    for optimizer in optimizers:
        if type(optimizer) is not torch.optim.Adam:
            return f"optimizer {type(optimizer).__name__} (the graph steps torch.optim.Adam only)"
        for group in optimizer.param_groups:
            if any(group.get(k, v) != v for k, v in _PLAIN_ADAM.items()):
                return f"Adam with {', '.join(f'{k}={group[k]}' for k in _PLAIN_ADAM if group.get(k))}"
            if any(p.is_complex() or p.is_sparse for p in group["params"]):
                return "complex or sparse parameters"
    return None


@dataclass(frozen=True)
class AdamGroup:
    """One parameter group of a ``torch.optim.Adam``: its tensors (parameters, moments, step counts) and settings.

    The learning rate is a 0-d tensor (a graph input); the other settings are constants of the graph.
    """

    params: list[torch.Tensor]
    exp_avgs: list[torch.Tensor]
    exp_avg_sqs: list[torch.Tensor]
    steps: list[torch.Tensor]
    lr: torch.Tensor
    beta1: float
    beta2: float
    eps: float
    weight_decay: float
    decoupled_weight_decay: bool


@dataclass(frozen=True)
class GraphAdam:
    """A ``torch.optim.Adam`` as the whole-step graph sees it: the optimizer's own tensors, no dicts.

    Dynamo guards every value of a param-group dict it reads; the learning rate there would recompile
    the graph at each change of a schedule. This view holds only what the step reads.
    """

    groups: tuple[AdamGroup, ...]


_LR = weakref.WeakKeyDictionary[torch.optim.Optimizer, list[torch.Tensor]]()


def graph_optimizers(optimizers: list[torch.optim.Optimizer]) -> list[GraphAdam]:
    """Views of ``optimizers`` for a compiled step: Adam's state created as its first step would, rates refreshed."""
    views = []
    for optimizer in optimizers:
        rates = _LR.get(optimizer)
        if rates is None or len(rates) != len(optimizer.param_groups):
            rates = _LR[optimizer] = [torch.zeros((), dtype=torch.float32) for _ in optimizer.param_groups]
        groups = []
        for group, rate in zip(optimizer.param_groups, rates, strict=True):
            rate.fill_(group["lr"])
            states = []
            for p in group["params"]:
                if not optimizer.state.get(p):
                    # What Adam's first step creates (fused or not): a float32 step count, zeroed moments.
                    optimizer.state[p] = {
                        "step": torch.zeros((), dtype=torch.float32, device=p.device),
                        "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                        "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format),
                    }
                states.append(optimizer.state[p])
            groups.append(AdamGroup(
                params=list(group["params"]),
                exp_avgs=[s["exp_avg"] for s in states],
                exp_avg_sqs=[s["exp_avg_sq"] for s in states],
                steps=[s["step"] for s in states],
                lr=rate,
                beta1=group["betas"][0],
                beta2=group["betas"][1],
                eps=group["eps"],
                weight_decay=group["weight_decay"],
                decoupled_weight_decay=group.get("decoupled_weight_decay", False),
            ))  # fmt: skip
        views.append(GraphAdam(tuple(groups)))
    return views


def minimize_in_graph(optimizer: GraphAdam, loss: torch.Tensor, max_grad_norm: float | None) -> None:
    """One Adam step of ``optimizer`` on ``loss``, traceable into a graph (see the module docstring).

    Gradients go to the optimizer's parameters only (``.grad`` is not written), clipped to a global norm of
    ``max_grad_norm`` as ``torch.nn.utils.clip_grad_norm_`` does.
    """
    params = [p for group in optimizer.groups for p in group.params]
    grads = list(torch.autograd.grad(loss, params))
    if max_grad_norm is not None:
        norm = torch.nn.utils.get_total_norm(grads)  # clip_grad_norm_'s norm, on tensors instead of .grad
        scale = torch.clamp(max_grad_norm / (norm + 1e-6), max=1.0)
        grads = [g * scale for g in grads]
    start = 0
    with torch.no_grad():
        for group in optimizer.groups:
            group_grads = grads[start : start + len(group.params)]
            start += len(group.params)
            adam(
                group.params,
                group_grads,
                group.exp_avgs,
                group.exp_avg_sqs,
                [],
                group.steps,
                foreach=False,
                fused=False,
                amsgrad=False,
                beta1=group.beta1,
                beta2=group.beta2,
                lr=group.lr,
                weight_decay=group.weight_decay,
                eps=group.eps,
                maximize=False,
                decoupled_weight_decay=group.decoupled_weight_decay,  # torch >= 2.6 (the graph needs 2.13)
            )


def dynamo_settings() -> dict[str, Any]:
    """The Dynamo config the whole-step graph is traced under."""
    return {"trace_autograd_ops": True} if TRACE_AUTOGRAD else {}


