"""The algorithm's optimizer calls: building them from the policy's ``optimizer_class``, one optimizer step
(zero_grad -> backward -> clip -> step), torch's optimizers and ``backward`` directly where Lightning's
wrappers add nothing, and the learning-rate schedule."""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
from lightning.pytorch.plugins.precision import Precision
from lightning.pytorch.strategies import SingleDeviceStrategy

from lit_rl.core.compiled_step import minimize_in_graph
from lit_rl.core.host import AlgorithmHost
from lit_rl.core.optimizers import make_optimizer
from lit_rl.data.trainer_fields import trainer_callbacks

# Hooks that Lightning's optimizer and backward wrappers call; overriding one needs the wrappers.
WRAPPER_HOOKS = ("on_before_backward", "on_after_backward", "on_before_optimizer_step")


def lightning_wrappers_needed(trainer: L.Trainer, module: L.LightningModule) -> bool:
    """True unless the run is on one device, in plain 32-bit precision, with no wrapper hook overridden.

    Then ``LightningOptimizer.step`` and ``manual_backward`` only call empty
    hooks and count ``trainer.global_step`` (which nothing here reads), at
    tens of microseconds per call: a few percent of a small update on a CPU.
    Mixed precision (gradient scaling), multi-device strategies and
    gradient-watching callbacks keep Lightning's path.
    """
    if type(trainer.precision_plugin) is not Precision or not isinstance(trainer.strategy, SingleDeviceStrategy):
        return True
    if trainer.max_steps != -1:  # counts optimizer steps through the wrappers
        return True
    for hook in WRAPPER_HOOKS:
        if getattr(type(module), hook) is not getattr(L.LightningModule, hook):
            return True
        if any(getattr(type(cb), hook) is not getattr(L.Callback, hook) for cb in trainer_callbacks(trainer)):
            return True
    return False


class OptimizerCalls(AlgorithmHost):
    """Mixin of :class:`~lit_rl.core.off_policy.OffPolicyAlgorithm` (methods only): ``optimizers()``,
    ``manual_backward``, learning-rate schedules (a callable of the progress remaining, as SB3).

    ``_plain_optimization`` (set in ``on_train_start``) says whether Lightning's wrappers can be skipped."""

    def optimizers(self, use_pl_optimizer: bool = True):
        """The optimizers; the plain torch ones when Lightning's wrappers would add nothing but cost."""
        if self._plain_optimization and self._trainer is not None:
            optimizers = self._trainer.optimizers
            return optimizers[0] if len(optimizers) == 1 else optimizers
        return super().optimizers(use_pl_optimizer)

    def manual_backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """``loss.backward()``; through Lightning's strategy unless the plain path applies."""
        if self._plain_optimization and self._trainer is not None:
            loss.backward(*args, **kwargs)
        else:
            super().manual_backward(loss, *args, **kwargs)

    # Replaces Lightning's hook (manual optimization never calls it) with the updates' own step: another signature.
    def optimizer_step(  # type: ignore[override]  # the updates' step, not Lightning's (unused) hook
        self, optimizer: Any, loss: torch.Tensor, max_grad_norm: float | None = None
    ) -> None:
        """Minimise ``loss`` by one step of ``optimizer``, clipping its parameters' global gradient norm if given."""
        if torch.compiler.is_compiling():  # traced into the whole-step graph (compiled_step.py)
            minimize_in_graph(optimizer, loss, max_grad_norm)
            return
        optimizer.zero_grad(set_to_none=True)

        def clip() -> None:
            if max_grad_norm is not None:
                params = [p for group in optimizer.param_groups for p in group["params"]]
                torch.nn.utils.clip_grad_norm_(params, max_grad_norm)

        if self.precision == "16-mixed":  # fp16 gradients underflow: scaled losses (core/precision.py)
            self.loss_scaling.step(optimizer, loss, self.manual_backward, clip, self.device)
            return
        self.manual_backward(loss)
        clip()
        optimizer.step()

    def policy_optimizer(self, params: Any, **defaults: Any) -> torch.optim.Optimizer:
        """The policy's ``optimizer_class`` at the initial learning rate; ``optimizer_kwargs`` override ``defaults``."""
        kwargs = {**defaults, **self.policy.optimizer_kwargs}
        return make_optimizer(self.policy.optimizer_class, params, self.initial_learning_rate(), kwargs)

    def actor_critic_optimizers(self, batch_norm_betas: bool = False) -> list[torch.optim.Optimizer]:
        """The actor's and the critic's optimizers. ``batch_norm_betas`` gives an Adam/AdamW betas (0.5, 0.999),
        CrossQ's for BatchRenorm networks (the paper, sb3-contrib), unless ``optimizer_kwargs`` set them."""
        adam = self.policy.optimizer_class in (torch.optim.Adam, torch.optim.AdamW)
        defaults = {"betas": (0.5, 0.999)} if batch_norm_betas and adam else {}
        return [
            self.policy_optimizer(self.policy.actor.parameters(), **defaults),
            self.policy_optimizer(self.policy.critic.parameters(), **defaults),
        ]

    def progress_remaining(self) -> float:
        """1 at the start of the run, 0 at ``total_timesteps`` (SB3's schedule argument)."""
        return 1.0 - self.num_timesteps / max(self.total_timesteps, 1)

    def update_learning_rate(self) -> None:
        """Apply a learning-rate schedule (a callable of progress remaining) to every optimizer."""
        if not callable(self.learning_rate):
            return
        lr = self.learning_rate(self.progress_remaining())
        for opt in self.trainer.optimizers:
            for group in opt.param_groups:
                group["lr"] = lr

    def initial_learning_rate(self) -> float:
        """The learning rate the optimizers start with."""
        return self.learning_rate(1.0) if callable(self.learning_rate) else self.learning_rate
