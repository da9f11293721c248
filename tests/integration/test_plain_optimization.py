"""update() calls torch's optimizers directly on plain single-device 32-bit runs, Lightning's wrappers otherwise."""

from __future__ import annotations

import lightning as L
import torch

from lit_rl import SAC


class CountBackward(L.Callback):
    """A gradient-watching callback: it needs Lightning's backward wrapper to be called."""

    def __init__(self) -> None:
        self.calls = 0

    def on_after_backward(self, trainer, pl_module) -> None:
        self.calls += 1


def small_sac() -> SAC:
    return SAC("MlpPolicy", learning_starts=20, seed=0, policy_kwargs={"net_arch": [16]})


def learn(model: SAC, callbacks: list[L.Callback]) -> None:
    # learn() takes Lightning callbacks as `callback=` (SB3-style API) or `callbacks=` (older).
    import inspect

    name = "callback" if "callback" in inspect.signature(model.learn).parameters else "callbacks"
    model.learn(60, env="Pendulum-v1", accelerator="cpu", **{name: callbacks})


def test_plain_run_uses_torch_optimizers_and_still_learns_something():
    model = small_sac()
    learn(model, [])
    assert model._plain_optimization
    optimizers = model.optimizers()
    assert all(type(opt) is torch.optim.Adam for opt in optimizers)
    assert model._n_updates == 60 - 20
    # Adam state exists for every optimized parameter: the steps really happened.
    assert all(opt.state[p]["step"] == model._n_updates for opt in optimizers[:2] for p in opt.param_groups[0]["params"])


def test_a_backward_hook_keeps_lightnings_wrappers():
    model = small_sac()
    counter = CountBackward()
    learn(model, [counter])
    assert not model._plain_optimization
    # Entropy, critic and actor losses: three backward passes per update.
    assert counter.calls == 3 * model._n_updates > 0
