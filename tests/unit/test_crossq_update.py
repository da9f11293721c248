"""One CrossQ gradient step, without a Trainer."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from gymnasium import spaces

from lit_rl.algorithms import crossq
from lit_rl.algorithms.crossq import CrossQ
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.nets.batch_renorm import BatchRenorm
from tests.helpers import without_trainer

OBS_SPACE = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
ACT_SPACE = spaces.Box(-2.0, 2.0, shape=(1,), dtype=np.float32)
BATCH = 32


def make_algo(policy_delay: int = 1, renorm_warmup_steps: int = 100_000, gamma: float = 0.99) -> CrossQ:
    torch.manual_seed(0)
    algo = CrossQ(
        policy_kwargs=dict(net_arch=dict(pi=[16, 16], qf=[16, 16]), renorm_warmup_steps=renorm_warmup_steps),
        policy_delay=policy_delay,
        batch_size=BATCH,
        buffer_size=1_000,
        gamma=gamma,
    )
    return without_trainer(algo, OBS_SPACE, ACT_SPACE)


def make_batch(seed: int = 1) -> ReplayBatch:
    g = torch.Generator().manual_seed(seed)
    return ReplayBatch(
        observations=torch.rand(BATCH, 3, generator=g) * 2 - 1,
        actions=torch.rand(BATCH, 1, generator=g) * 2 - 1,
        next_observations=torch.rand(BATCH, 3, generator=g) * 2 - 1,
        rewards=torch.randn(BATCH, generator=g),
        terminated=(torch.rand(BATCH, generator=g) < 0.2).float(),
    )


def bn_layers(module: torch.nn.Module) -> list[BatchRenorm]:
    return [m for m in module.modules() if isinstance(m, BatchRenorm)]


def snapshot(algo: CrossQ) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in algo.state_dict().items()}


def changed(before: torch.Tensor, after: torch.Tensor) -> bool:
    return not torch.equal(before, after)


def test_networks_are_built_and_optimizers_hold_every_parameter():
    algo = make_algo()
    assert len(bn_layers(algo.actor)) == 3  # before each hidden linear and after the last hidden layer
    assert len(bn_layers(algo.critic)) == 3
    opts = algo._test_opts
    assert len(opts) == 3  # actor, critic, learned entropy coefficient
    held = {id(p) for opt in opts for group in opt.param_groups for p in group["params"]}
    assert held == {id(p) for p in algo.parameters()}
    assert {id(p) for p in opts[0].param_groups[0]["params"]} == {id(p) for p in algo.actor.parameters()}
    assert {id(p) for p in opts[1].param_groups[0]["params"]} == {id(p) for p in algo.critic.parameters()}
    assert {id(p) for p in opts[2].param_groups[0]["params"]} == {id(algo.entropy.log_ent_coef)}


@pytest.mark.parametrize("renorm_warmup_steps", [100_000, 0])
def test_one_update_changes_every_optimized_parameter(renorm_warmup_steps):
    algo = make_algo(policy_delay=1, renorm_warmup_steps=renorm_warmup_steps)
    n_critics = algo.critic.n_critics
    assert n_critics == 2
    before = snapshot(algo)
    actor_steps = [int(m.steps) for m in bn_layers(algo.actor)]
    critic_steps = [int(m.steps) for m in bn_layers(algo.critic)]

    algo.update(make_batch())
    after = snapshot(algo)

    # Actor parameters.
    for name, _ in algo.actor.named_parameters():
        key = f"policy.actor.{name}"
        assert changed(before[key], after[key]), f"{key} did not change"
    # Critic parameters: each ensemble member's slice separately.
    for name, p in algo.critic.named_parameters():
        key = f"policy.critic.{name}"
        assert p.shape[0] == n_critics, key
        for k in range(n_critics):
            assert changed(before[key][k], after[key][k]), f"{key}[{k}] did not change"
    # Entropy coefficient.
    assert changed(before["entropy.log_ent_coef"], after["entropy.log_ent_coef"])
    assert algo._n_updates == 1

    # Buffers: the critic's BatchRenorm stats moved (train-mode joint forward), one step each.
    for m, s in zip(bn_layers(algo.critic), critic_steps, strict=True):
        assert int(m.steps) == s + 1, "critic BatchRenorm must see exactly one training forward per update"
    for name in before:
        if name.startswith("policy.critic.") and name.endswith(("running_mean", "running_var")):
            for k in range(n_critics):
                assert changed(before[name][k], after[name][k]), f"{name}[{k}] did not change"
    # The actor's BatchRenorm saw exactly one training forward (the actor update).
    for m, s in zip(bn_layers(algo.actor), actor_steps, strict=True):
        assert int(m.steps) == s + 1, "actor BatchRenorm must see exactly one training forward per actor update"
    for name in before:
        if name.startswith("policy.actor.") and name.endswith(("running_mean", "running_var")):
            assert changed(before[name], after[name]), f"{name} did not change"

    # Nothing else in the state changed.
    expected_changes = {k for k in before if k.startswith(("policy.actor.", "policy.critic.")) or k == "entropy.log_ent_coef"}
    for key in set(before) - expected_changes:
        assert torch.equal(before[key], after[key]), f"{key} changed"
    assert set(after) == set(before)

    # Losses were recorded.
    assert {"train/critic_loss", "train/actor_loss", "train/ent_coef_loss", "train/ent_coef"} <= set(algo.metrics.sums)


def test_policy_delay_skips_actor_and_entropy():
    algo = make_algo(policy_delay=3)
    before = snapshot(algo)
    algo.update(make_batch())
    after = snapshot(algo)

    for name, _ in algo.critic.named_parameters():
        key = f"policy.critic.{name}"
        for k in range(algo.critic.n_critics):
            assert changed(before[key][k], after[key][k]), f"{key}[{k}] did not change"
    for key in before:
        if key.startswith("policy.actor.") or key.startswith("entropy."):
            # Parameters and BatchRenorm buffers alike: next actions are sampled in eval mode.
            assert torch.equal(before[key], after[key]), f"{key} changed although the actor was not updated"
    assert "train/actor_loss" not in algo.metrics.sums

    # The third update (n_updates % 3 == 0) does update the actor and the entropy coefficient.
    algo.update(make_batch(2))
    mid = snapshot(algo)
    assert torch.equal(mid["entropy.log_ent_coef"], before["entropy.log_ent_coef"])
    algo.update(make_batch(3))
    final = snapshot(algo)
    assert changed(mid["entropy.log_ent_coef"], final["entropy.log_ent_coef"])
    assert changed(mid["policy.actor.mu.weight"], final["policy.actor.mu.weight"])


def _critic_grads_of_update(algo: CrossQ, batch: ReplayBatch, seed: int) -> list[torch.Tensor]:
    """Run ``update`` and capture the critic's gradients right after the critic loss's backward."""
    captured: list[list[torch.Tensor]] = []

    def backward(loss):
        loss.backward()
        if not captured:  # the first backward of an update is the critic loss
            captured.append([p.grad.detach().clone() for p in algo.critic.parameters()])

    algo.manual_backward = backward
    torch.manual_seed(seed)
    algo.update(batch)
    return captured[0]


def _reference_critic_grads(algo: CrossQ, batch: ReplayBatch, seed: int, detach_target: bool) -> list[torch.Tensor]:
    """The critic-loss gradient written here: Q(s', a') enters the target as a constant (or not)."""
    actor, critic = copy.deepcopy(algo.actor), copy.deepcopy(algo.critic)
    alpha = algo.entropy.value().detach()
    torch.manual_seed(seed)
    actor.eval()
    with torch.no_grad():
        next_actions, next_log_prob = actor.action_log_prob(batch.next_observations)
    critic.train()
    q_all = critic.q_values(torch.cat([batch.observations, batch.next_observations]), torch.cat([batch.actions, next_actions]))
    q, q_next = q_all[:, :BATCH], q_all[:, BATCH:]
    next_v = q_next.min(dim=0).values - alpha * next_log_prob
    target = batch.rewards + (1.0 - batch.terminated) * algo.gamma * next_v
    if detach_target:
        target = target.detach()
    loss = 0.5 * sum(F.mse_loss(q_i, target) for q_i in q)
    return list(torch.autograd.grad(loss, list(critic.parameters())))


def test_critic_gradient_does_not_flow_into_the_target():
    algo = make_algo(policy_delay=1)
    batch = make_batch(5)
    ref_detached = _reference_critic_grads(algo, batch, seed=11, detach_target=True)
    ref_through = _reference_critic_grads(algo, batch, seed=11, detach_target=False)
    grads = _critic_grads_of_update(algo, batch, seed=11)

    # The two references differ, so the comparison below can tell them apart.
    assert any(not torch.allclose(a, b, rtol=1e-3, atol=1e-6) for a, b in zip(ref_detached, ref_through, strict=True))
    for g, ref, (name, _) in zip(grads, ref_detached, algo.critic.named_parameters(), strict=True):
        torch.testing.assert_close(g, ref, rtol=1e-4, atol=1e-6, msg=f"critic gradient of {name}")


def test_terminated_transitions_do_not_bootstrap():
    # With every transition terminated, the target is the reward whatever gamma is: the critic gradients
    # for gamma=0.99 and a very small gamma are identical. Without termination they differ.
    batch = make_batch(6)
    done = batch._replace(terminated=torch.ones(BATCH))
    g_a = _critic_grads_of_update(make_algo(gamma=0.99), done, seed=3)
    g_b = _critic_grads_of_update(make_algo(gamma=1e-6), done, seed=3)
    for a, b in zip(g_a, g_b, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    not_done = batch._replace(terminated=torch.zeros(BATCH))
    g_c = _critic_grads_of_update(make_algo(gamma=0.99), not_done, seed=3)
    g_d = _critic_grads_of_update(make_algo(gamma=1e-6), not_done, seed=3)
    assert any(not torch.allclose(c, d) for c, d in zip(g_c, g_d, strict=True))


def test_losses_are_pure_and_set_the_batch_renorm_modes():
    """critic_loss: actor BatchRenorm eval, critics train, gradients to the critics only; actor_loss: actor train,
    critics eval and frozen. Neither changes a parameter (BatchRenorm statistics move in train-mode forwards)."""
    algo = make_algo()
    policy, batch, alpha = algo.policy, make_batch(), torch.tensor(0.2)
    params_before = {k: v.detach().clone() for k, v in policy.named_parameters()}
    loss, metrics = crossq.critic_loss(policy, batch, alpha, 0.99)
    assert set(metrics) == {"train/critic_loss"} and not metrics["train/critic_loss"].requires_grad
    assert not any(m.training for m in bn_layers(policy.actor)) and all(m.training for m in bn_layers(policy.critic))
    loss.backward()
    assert all(p.grad is not None for p in policy.critic.parameters())
    assert all(p.grad is None for p in policy.actor.parameters())
    policy.zero_grad(set_to_none=True)

    actions, log_prob = crossq.policy_samples(policy, batch.observations)
    assert all(m.training for m in bn_layers(policy.actor))
    loss, metrics = crossq.actor_loss(policy, batch.observations, actions, log_prob, alpha)
    assert set(metrics) == {"train/actor_loss"} and not any(m.training for m in bn_layers(policy.critic))
    loss.backward()
    assert all(p.grad is not None for p in policy.actor.parameters())
    assert all(p.grad is None and p.requires_grad for p in policy.critic.parameters())
    assert all(torch.equal(params_before[k], v) for k, v in policy.named_parameters())
