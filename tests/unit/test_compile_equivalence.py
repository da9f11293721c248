"""Compiled updates (``compile=True``, ``trainer.compile=true``) equal eager ones, with stable graphs.

For each algorithm, two copies from the same weights take N updates on the
same batches from the same torch RNG state, one eager and one compiled
(inductor, CPU): the whole gradient step as one graph (losses, gradients, Adam
steps, target updates: ``lit_rl.core.compiled_step``), and for SAC and TD3 also
the fallback that compiles each loss on its own. Parameters and buffers (BatchRenorm
statistics and step counts, targets) must agree to float tolerance: inductor
fuses and reorders float32 reductions (sums, matmul epilogues), so results
differ from eager in the last bits (~1e-7 relative per op); N Adam steps carry
that forward, divided by sqrt(v) + eps, which can scale a relative gradient
difference up to ~lr on near-zero gradients. rtol=1e-4/atol=1e-5 with lr=1e-3
is ~100x above what these runs show and ~100x below one Adam step of a
wrong update (a missed update, a wrong mode or a detached term fails it).
Compile time dominates (seconds to tens of seconds per graph on 2 cores;
inductor's on-disk cache makes reruns fast); the networks are tiny. Measured on
the shared 2-core machine: the file takes ~11 min from a cold cache under load
(CrossQ ~6.5 min of it, hence ``slow``) and ~50 s with a warm cache.
"""

from __future__ import annotations

import copy
import logging

import numpy as np
import pytest
import torch
from gymnasium import spaces

import lit_rl.core.compiled as compiled_module
from lit_rl.algorithms import DQN, QRDQN, SAC, TD3, TQC, CrossQ, sac
from lit_rl.algorithms.ddpg import DDPG
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.core.compiled import CompiledFunction, check_compile, compile_stats, compiled

OBS_SPACE = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
BOX = spaces.Box(-2.0, 2.0, shape=(2,), dtype=np.float32)
DISCRETE = spaces.Discrete(3)
BATCH, N_UPDATES = 32, 6
TINY = {"net_arch": {"pi": [16, 16], "qf": [16, 16]}}
RTOL, ATOL = 1e-4, 1e-5

# name -> (class, constructor kwargs, action space, whole-step graphs over N_UPDATES: one per combination of the
# step's flags, e.g. TD3's actor step or not)
ALGOS = {
    # Warm-up of 1 BatchRenorm training forward: later updates renormalise; policy_delay 2: a critic step follows
    # a critic step or an actor step (different BatchRenorm modes on entry).
    # Adam eps 1e-4: a Linear bias before BatchRenorm has a gradient of exactly 0 in exact arithmetic (the batch
    # mean is subtracted), ~1e-9 of rounding noise in float32; Adam's m / (sqrt(v) + 1e-8) turns that noise
    # into a +-lr step whose sign is a coin flip, in eager mode as much as compiled.
    "crossq": (CrossQ, {"policy_kwargs": {**TINY, "renorm_warmup_steps": 1, "optimizer_kwargs": {"eps": 1e-4}},
                        "policy_delay": 2}, BOX, 2),  # fmt: skip
    "sac": (SAC, {"policy_kwargs": TINY, "tau": 0.1}, BOX, 1),  # tau 0.1: targets move visibly
    "td3": (TD3, {"policy_kwargs": TINY, "policy_delay": 2, "tau": 0.1}, BOX, 2),
    "ddpg": (DDPG, {"policy_kwargs": TINY, "tau": 0.1}, BOX, 1),
    "dqn": (DQN, {"policy_kwargs": {"net_arch": [16, 16]}}, DISCRETE, 1),
    # A norm bound every step's gradients exceed: the clipping inside the graph is exercised.
    "dqn_clipped": (DQN, {"policy_kwargs": {"net_arch": [16, 16]}, "max_grad_norm": 0.01}, DISCRETE, 1),
    "tqc": (TQC, {"policy_kwargs": {**TINY, "n_quantiles": 5}, "tau": 0.1}, BOX, 1),
    "qrdqn": (QRDQN, {"policy_kwargs": {"net_arch": [16, 16], "n_quantiles": 5}}, DISCRETE, 1),
}
# Graphs when each loss is compiled on its own (the fallback where the whole step cannot be one graph).
PER_LOSS_GRAPHS = {"sac": 3, "td3": 2}


def make_algo(cls, kwargs: dict, action_space: spaces.Space, compile_updates: bool):
    torch.manual_seed(0)
    algo = cls(learning_rate=1e-3, batch_size=BATCH, buffer_size=1_000, compile=compile_updates, **kwargs)
    algo.build_networks(OBS_SPACE, action_space)
    opts = algo.configure_optimizers()
    # Lightning plumbing that needs a Trainer; the algorithm itself is untouched.
    algo.optimizers = lambda: opts
    algo.manual_backward = lambda loss: loss.backward()
    return algo


def make_batch(seed: int, action_space: spaces.Space) -> ReplayBatch:
    g = torch.Generator().manual_seed(seed)
    if isinstance(action_space, spaces.Discrete):
        actions = torch.randint(0, int(action_space.n), (BATCH,), generator=g)
    else:
        actions = torch.rand(BATCH, action_space.shape[0], generator=g) * 2 - 1
    return ReplayBatch(
        observations=torch.rand(BATCH, 3, generator=g) * 2 - 1,
        actions=actions,
        next_observations=torch.rand(BATCH, 3, generator=g) * 2 - 1,
        rewards=torch.randn(BATCH, generator=g),
        terminated=(torch.rand(BATCH, generator=g) < 0.2).float(),
    )


def run_updates(algo, action_space: spaces.Space) -> list[dict[str, torch.Tensor]]:
    metrics = []
    for i in range(N_UPDATES):
        torch.manual_seed(100 + i)  # the same RNG state for both copies before every update
        metrics.append({k: v.detach().clone() for k, v in algo.gradient_step(make_batch(i, action_space)).items()})
    return metrics


def optimizers(algo) -> list[torch.optim.Optimizer]:
    opts = algo.optimizers()
    return list(opts) if isinstance(opts, (list, tuple)) else [opts]  # DQN has one (Lightning hands it alone)


def assert_same_training_state(eager, fast) -> None:
    """Parameters, buffers and Adam states of two copies agree to the float tolerance above."""
    fast_state = fast.state_dict()
    for key, value in eager.state_dict().items():
        torch.testing.assert_close(fast_state[key], value, rtol=RTOL, atol=ATOL, msg=lambda m, k=key: f"{k}: {m}")
    for i, (e_opt, f_opt) in enumerate(zip(optimizers(eager), optimizers(fast), strict=True)):
        e_state, f_state = e_opt.state_dict()["state"], f_opt.state_dict()["state"]
        assert e_state.keys() == f_state.keys() and e_state, i
        for p, moments in e_state.items():
            assert moments.keys() == f_state[p].keys(), (i, p)
            for name, value in moments.items():
                torch.testing.assert_close(f_state[p][name], value, rtol=RTOL, atol=ATOL,
                                           msg=lambda m, k=(i, p, name): f"optimizer state {k}: {m}")  # fmt: skip


def assert_same_metrics(eager_metrics: list[dict], fast_metrics: list[dict]) -> None:
    for step, (e, f) in enumerate(zip(eager_metrics, fast_metrics, strict=True)):
        assert e.keys() == f.keys(), step
        for key in e:
            torch.testing.assert_close(f[key], e[key], rtol=RTOL, atol=ATOL, msg=lambda m, k=key: f"{k}: {m}")


# CrossQ's BatchRenorm graphs are the largest: minutes to compile from a cold inductor cache on 2 loaded cores
# (seconds once cached); `make test` runs it, `make test-fast` (-m "not slow") skips it.
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "crossq" else n for n in ALGOS])
def test_compiled_updates_equal_eager_ones_without_recompiling(name):
    cls, kwargs, action_space, graphs = ALGOS[name]
    eager = make_algo(cls, kwargs, action_space, compile_updates=False)
    fast = make_algo(cls, kwargs, action_space, compile_updates=True)
    for key, value in eager.state_dict().items():  # the same starting weights
        assert torch.equal(value, fast.state_dict()[key]), key

    eager_metrics, fast_metrics = run_updates(eager, action_space), run_updates(fast, action_space)

    assert_same_training_state(eager, fast)
    assert_same_metrics(eager_metrics, fast_metrics)
    if name == "crossq":  # every BatchRenorm layer renormalised at least once (N / 2 actor, N critic forwards)
        steps = {k: int(v) for k, v in fast.state_dict().items() if k.endswith(".steps")}
        assert steps and min(steps.values()) >= 3, steps
    # Stable graphs: the whole step is one graph per flag combination, none compiled again after its first call.
    assert compile_stats(fast) == {"functions": graphs, "graphs": graphs, "recompilations": 0}
    assert compile_stats(eager) == {"functions": 0, "graphs": 0, "recompilations": 0}
    # The moments and step counts are where torch.optim.Adam keeps them: an eager step continues from them.
    assert all(isinstance(opt, torch.optim.Adam) and opt.state for opt in optimizers(fast))


@pytest.mark.parametrize("name", list(PER_LOSS_GRAPHS))
def test_the_per_loss_fallback_equals_eager(name, monkeypatch):
    # Where the step cannot be one graph (another optimizer, Lightning's wrappers, a GPU, older torch).
    monkeypatch.setattr(compiled_module, "whole_step_blocker", lambda algo, optimizers: "a test says so")
    cls, kwargs, action_space, _ = ALGOS[name]
    eager = make_algo(cls, kwargs, action_space, compile_updates=False)
    fast = make_algo(cls, kwargs, action_space, compile_updates=True)
    eager_metrics, fast_metrics = run_updates(eager, action_space), run_updates(fast, action_space)
    assert_same_training_state(eager, fast)
    assert_same_metrics(eager_metrics, fast_metrics)
    n = PER_LOSS_GRAPHS[name]
    assert compile_stats(fast) == {"functions": n, "graphs": n, "recompilations": 0}


def test_a_learning_rate_schedule_changes_no_guard_of_the_whole_step():
    cls, kwargs, action_space, _ = ALGOS["sac"]
    eager = make_algo(cls, kwargs, action_space, compile_updates=False)
    fast = make_algo(cls, kwargs, action_space, compile_updates=True)
    for i in range(N_UPDATES):
        for algo in (eager, fast):  # what update_learning_rate does with a schedule, every step
            for opt in optimizers(algo):
                for group in opt.param_groups:
                    group["lr"] = 1e-3 * (1 - i / N_UPDATES)
            torch.manual_seed(100 + i)
            algo.gradient_step(make_batch(i, action_space))
    assert_same_training_state(eager, fast)
    assert compile_stats(fast) == {"functions": 1, "graphs": 1, "recompilations": 0}


def test_the_whole_step_falls_back_for_an_optimizer_it_cannot_step():
    cls, kwargs, action_space, _ = ALGOS["sac"]
    algo = make_algo(cls, {**kwargs, "policy_kwargs": {**TINY, "optimizer_class": torch.optim.RMSprop}},
                     action_space, compile_updates=True)  # fmt: skip
    opts = algo.optimizers()
    assert compiled_module.whole_step_blocker(algo, opts) == "optimizer RMSprop (the graph steps torch.optim.Adam only)"
    amsgrad = make_algo(cls, {**kwargs, "policy_kwargs": {**TINY, "optimizer_kwargs": {"amsgrad": True}}},
                        action_space, compile_updates=True)  # fmt: skip
    assert compiled_module.whole_step_blocker(amsgrad, amsgrad.optimizers()) == "Adam with amsgrad=True"
    algo.gradient_step(make_batch(0, action_space))
    assert compile_stats(algo)["functions"] == PER_LOSS_GRAPHS["sac"]  # each loss compiled, RMSprop stepped eagerly


def test_compiled_actor_loss_sends_no_gradient_to_the_frozen_critic():
    cls, kwargs, action_space, _ = ALGOS["sac"]
    algo = make_algo(cls, kwargs, action_space, compile_updates=True)
    policy, obs = algo.policy, make_batch(0, action_space).observations
    actions, log_prob = policy.actor.action_log_prob(obs)
    loss, _ = compiled(algo, sac.actor_loss, frozen=policy.critic)(policy, obs, actions, log_prob, torch.tensor(0.1))
    loss.backward()
    assert all(p.grad is None and p.requires_grad for p in policy.critic.parameters())
    assert all(p.grad is not None for p in policy.actor.parameters())


def test_cpu_graphs_recompute_bool_masks_instead_of_storing_them():
    # The frozen critic's ReLUs: without RecomputeMasks the forward saves `relu(x) <= 0` as a bool tensor for the
    # backward, and inductor's CPU store of bool tensors is ~15x slower than eager's (compiled SAC was slower).
    from torch._inductor.utils import run_and_get_code

    cls, kwargs, action_space, _ = ALGOS["sac"]
    algo = make_algo(cls, kwargs, action_space, compile_updates=True)
    policy, obs = algo.policy, make_batch(0, action_space).observations
    actions, log_prob = (x.detach().requires_grad_() for x in policy.actor.action_log_prob(obs))

    def step():
        loss, _ = compiled(algo, sac.actor_loss, frozen=policy.critic)(policy, obs, actions, log_prob, torch.tensor(0.1))
        loss.backward()

    with torch._inductor.config.patch(fx_graph_cache=False):  # the code is captured when it is generated
        _, code = run_and_get_code(step)
    assert len(code) == 2 and "threshold_backward" in code[1]  # forward and backward, ReLU masks in the backward
    assert not any("torch.bool)" in c for c in code), "a bool buffer is allocated"
    assert actions.grad is not None and all(p.grad is None for p in policy.critic.parameters())


def test_a_mask_read_from_an_input_updated_in_place_is_not_recomputed():
    # As CrossQ's BatchRenorm `steps > warmup`: recomputed in the backward, it would read the updated step count.
    def loss(x: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        y = torch.where(steps > 1, x * 2, x * 3)
        steps.add_(1)
        return y.sum()

    x, steps = torch.ones(8, requires_grad=True), torch.tensor(1)
    CompiledFunction(loss, torch.nn.Module())(x, steps).backward()
    assert steps.item() == 2 and torch.equal(x.grad, torch.full((8,), 3.0))  # the branch taken in the forward


def test_a_changed_guard_is_counted_as_a_recompilation():
    cls, kwargs, action_space, _ = ALGOS["dqn"]
    algo = make_algo(cls, kwargs, action_space, compile_updates=True)
    act = compiled(algo, algo.q_net, key="act")
    with torch.no_grad():
        act(torch.zeros(1, 3))
        act(torch.zeros(1, 3))
        act(torch.zeros(4, 3))  # a new batch size: the graph is specialised to shapes
    assert compile_stats(algo) == {"functions": 1, "graphs": 2, "recompilations": 1}


def test_compile_setting_is_checked_and_kept_out_of_the_hyperparameters():
    with pytest.raises(ValueError, match=r"compile='yes' is not allowed; allowed: false, true"):
        SAC(compile="yes")
    with pytest.raises(ValueError, match=r"trainer.compile=1 is not allowed"):
        check_compile(1, "trainer.compile")
    assert check_compile("reduce-overhead") == "reduce-overhead"
    model = SAC(compile=True)
    assert model.compile_updates is True and "compile" not in model.hparams
    model.configure_run(10, compile=False)
    assert model.compile_updates is False
    assert compiled(model, len) is len  # off: the function itself
    assert copy.deepcopy(SAC(compile=True)).compile_updates is True


def test_learn_with_compile_on_reports_its_graphs(caplog):
    model = SAC("MlpPolicy", "Pendulum-v1", learning_starts=50, batch_size=BATCH, policy_kwargs=TINY, seed=0,
                compile=True)  # fmt: skip
    with caplog.at_level(logging.INFO, logger="lit_rl.train"):
        model.learn(120)
    stats = compile_stats(model)
    # the whole gradient step (one graph); acting stays eager on a CPU (compiled only on a GPU)
    assert stats == {"functions": 1, "graphs": 1, "recompilations": 0}
    assert "compiled update: 1 graphs, 0 recompilations" in caplog.text
    assert compiled(model, model.policy, acting=True) is model.policy
    assert np.isfinite(model.predict(np.zeros(3, dtype=np.float32))[0]).all()
