"""Packed DQN and QR-DQN steps against each member's own gradient step (lit_rl's, itself equal to Stable-Baselines3's
and sb3-contrib's): same initial weights, same batches; members differ in seed, learning rate and gamma; gradients
clipped to a global norm small enough that every step clips; the members' own target copies in between."""

from __future__ import annotations

import copy

import pytest
import torch

from lit_rl import DQN, QRDQN
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.nets.target import update_target
from lit_rl.packed import PackedQLearning
from tests.reference.sb3_weights import without_trainer
from tests.unit.packed_members import assert_members_equal_their_own

P, B, STEPS = 3, 32, 9
PER_MEMBER = {"learning_rate": [3e-4, 1e-3, 3e-3], "gamma": [0.99, 0.98, 0.95]}
CASES = {
    "dqn": (DQN, {}),
    "qrdqn": (QRDQN, {"n_quantiles": 5}),
}


def make_members(cls, policy_kwargs, max_grad_norm: float | None = 0.05):
    return [cls("MlpPolicy", "CartPole-v1", batch_size=B, buffer_size=1000, seed=i, max_grad_norm=max_grad_norm,
                policy_kwargs={"net_arch": [32, 32], **policy_kwargs}, **{k: v[i] for k, v in PER_MEMBER.items()})
            for i in range(P)]  # fmt: skip


def batches(n: int):
    g = torch.Generator().manual_seed(0)
    for _ in range(n):
        yield ReplayBatch(
            torch.randn(P, B, 4, generator=g), torch.randint(0, 2, (P, B, 1), generator=g),
            torch.randn(P, B, 4, generator=g), torch.randn(P, B, generator=g),
            (torch.rand(P, B, generator=g) < 0.1).float(),
        )  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_each_member_equals_its_own_clipped_step_and_target_copies(case):
    cls, policy_kwargs = CASES[case]
    members = make_members(cls, policy_kwargs)
    own = [copy.deepcopy(m) for m in members]
    initial = [copy.deepcopy(m.state_dict()) for m in members]
    for algo in own:
        without_trainer(algo)
    pack = PackedQLearning(members)
    for step, batch in enumerate(batches(STEPS)):
        pack.gradient_step(batch, pack.draw_noise(batch))
        for i, algo in enumerate(own):
            algo.gradient_step(ReplayBatch(*(t[i] for t in batch[:5])))
        if step % 3 == 2:  # each member's target copy, on its own slices of the pack (as its on_env_step does)
            for algo in (*members, *own):
                update_target(algo.q_net, algo.q_net_target, algo.tau)
    assert_members_equal_their_own(members, own, initial, atol=1e-6, moved_groups=(".q_net.", ".q_net_target."))


def test_the_clipping_is_each_members_own():
    """With a clip that binds, unclipped members would end elsewhere: the test above sees the clipping."""
    clipped, free = make_members(DQN, {}), make_members(DQN, {}, max_grad_norm=None)
    for pack in (PackedQLearning(clipped), PackedQLearning(free)):
        for batch in batches(3):
            pack.gradient_step(batch, [])
    for a, b in zip(clipped, free, strict=True):
        assert not torch.allclose(next(a.q_net.parameters()), next(b.q_net.parameters()))


def test_dqn_and_qrdqn_do_not_mix_nor_different_clips():
    with pytest.raises(ValueError, match="member 1 is a QRDQN; allowed: DQN members only"):
        PackedQLearning([make_members(DQN, {})[0], make_members(QRDQN, {"n_quantiles": 5})[1]])
    members = make_members(DQN, {})
    members[2].max_grad_norm = 1.0
    with pytest.raises(ValueError, match="max_grad_norm differs across the pack"):
        PackedQLearning(members)
