"""Whole runs of a pack (``learn_packed``) against the same members' unpacked ``learn()`` runs: same envs, seeds,
buffers and noise streams; members differ in seed, learning rate, tau and gamma."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lit_rl import DQN, QRDQN, SAC, TD3, TQC, Pack
from lit_rl.collect.noise import NormalActionNoise
from lit_rl.packed import learn_packed

STEPS, STARTS = 400, 100
SETTINGS = [dict(seed=0, learning_rate=3e-4, tau=0.005, gamma=0.99), dict(seed=1, learning_rate=1e-3, tau=0.02,
            gamma=0.98), dict(seed=2, learning_rate=3e-3, tau=0.01, gamma=0.95)]  # fmt: skip


def sac(i: int) -> SAC:
    return SAC("MlpPolicy", "Pendulum-v1", learning_starts=STARTS, batch_size=64, buffer_size=STEPS, policy_kwargs={"net_arch": [32, 32]},
               **SETTINGS[i])  # fmt: skip


def td3(i: int) -> TD3:
    noise = NormalActionNoise(np.zeros(1), 0.1 * np.ones(1), seed=10 + i)  # its own stream, as each run's
    return TD3("MlpPolicy", "Pendulum-v1", learning_starts=STARTS, batch_size=64, buffer_size=STEPS, action_noise=noise,
               policy_kwargs={"net_arch": [32, 32]}, **SETTINGS[i])  # fmt: skip


def tqc(i: int) -> TQC:
    return TQC("MlpPolicy", "Pendulum-v1", learning_starts=STARTS, batch_size=64, buffer_size=STEPS,
               policy_kwargs={"net_arch": [32, 32], "n_quantiles": 5}, **SETTINGS[i])  # fmt: skip


def dqn(i: int, cls=DQN, **kwargs) -> DQN:
    # Every env step: a gradient step, an epsilon-greedy action (exploration over the first half), target copies.
    return cls("MlpPolicy", "CartPole-v1", learning_starts=STARTS, batch_size=64, buffer_size=STEPS, train_freq=1,
               target_update_interval=50, exploration_fraction=0.5, policy_kwargs={"net_arch": [32, 32], **kwargs},
               **SETTINGS[i])  # fmt: skip


def qrdqn(i: int) -> QRDQN:
    return dqn(i, QRDQN, n_quantiles=5)


def largest_difference(a, b) -> float:
    got, want = a.policy.state_dict(), b.policy.state_dict()
    return max((got[k] - want[k]).abs().max().item() for k in want)


@pytest.mark.parametrize("make", [sac, td3, tqc, dqn, qrdqn], ids=["sac", "td3", "tqc", "dqn", "qrdqn"])
def test_each_member_of_a_packed_run_is_its_unpacked_run(make):
    alone = [make(i).learn(STEPS) for i in range(3)]
    packed = learn_packed([make(i) for i in range(3)], STEPS)
    for i, (member, own) in enumerate(zip(packed, alone, strict=True)):
        assert member.num_timesteps == own.num_timesteps == STEPS
        assert member._n_updates == own._n_updates == STEPS - STARTS
        # 300 updates apart only by the packed products' float32 rounding (Adam carries it to ~1e-5)
        assert largest_difference(member, own) < 1e-3, f"member {i}"
        observed, own_observed = member.replay_buffer.observations, own.replay_buffer.observations
        assert torch.equal(observed[: STARTS + 1], own_observed[: STARTS + 1])  # warm-up and first action: bitwise
        torch.testing.assert_close(observed, own_observed, atol=1e-3, rtol=1e-3)  # then the same states, to rounding
    # The tolerance means something: another member's run is far from this one's.
    assert largest_difference(packed[0], alone[1]) > 0.1


def test_a_second_learn_packed_continues_the_members_optimizers_as_learn_does():
    """SB3's ``learn(..., reset_num_timesteps=False)`` continues a run; so does a second ``learn_packed``."""
    alone = []
    for i in range(2):  # each built and run before the next is built: its own process's global RNG stream
        member = td3(i)
        member.learn(STEPS // 2)
        alone.append(member.learn(STEPS // 2, reset_num_timesteps=False))
    packed = [td3(i) for i in range(2)]
    learn_packed(packed, STEPS // 2)
    learn_packed(packed, STEPS // 2, reset_num_timesteps=False)
    for member, own in zip(packed, alone, strict=True):
        assert member.num_timesteps == own.num_timesteps == STEPS and member._n_updates == own._n_updates
        assert largest_difference(member, own) < 1e-3


def test_a_packed_member_saves_with_its_adam_state_and_continues_alone(tmp_path):
    own = sac(1).learn(STEPS)
    (_, member, _) = learn_packed([sac(i) for i in range(3)], STEPS)
    member.save(tmp_path / "member")
    loaded = SAC.load(tmp_path / "member")
    for name, value in member.policy.state_dict().items():
        assert torch.equal(loaded.policy.state_dict()[name], value), name
    for packed_opt, own_opt in zip(member.optimizers(use_pl_optimizer=False), own.optimizers(use_pl_optimizer=False),
                                   strict=True):  # fmt: skip
        for p, q in zip(packed_opt.param_groups[0]["params"], own_opt.param_groups[0]["params"], strict=True):
            assert float(packed_opt.state[p]["step"]) == float(own_opt.state[q]["step"]) == STEPS - STARTS
            torch.testing.assert_close(packed_opt.state[p]["exp_avg"], own_opt.state[q]["exp_avg"], atol=1e-3, rtol=0)


def test_a_pack_trains_its_members_as_learn_packed_trains_them():
    per_member = {k: [SETTINGS[i][k] for i in range(2)] for k in SETTINGS[0]}
    pack = Pack(SAC, "MlpPolicy", "Pendulum-v1", learning_starts=STARTS, batch_size=64, buffer_size=STEPS,
                policy_kwargs={"net_arch": [32, 32]}, **per_member).learn(STEPS)  # fmt: skip
    members = learn_packed([sac(i) for i in range(2)], STEPS)
    assert len(pack) == 2 and [m.learning_rate for m in pack] == per_member["learning_rate"]
    for i, (member, own) in enumerate(zip(pack, members, strict=True)):
        assert member.num_timesteps == STEPS
        assert largest_difference(member, own) == 0.0, f"member {i}"  # a packed run repeats bitwise


def test_action_noise_from_numpys_global_state_is_refused():
    members = [TD3("MlpPolicy", "Pendulum-v1", action_noise=NormalActionNoise(np.zeros(1), np.ones(1)), seed=i)
               for i in range(2)]  # fmt: skip
    with pytest.raises(ValueError, match=r"member 0: its action_noise draws from numpy's global random state"):
        learn_packed(members, 200)


def test_a_member_that_fails_stops_the_pack_and_is_named():
    members = [sac(i) for i in range(3)]
    members[2].learning_starts = 10**9  # never asks for gradient steps: it cannot keep step with the others
    members[2].batch_size = 64
    with pytest.raises(ValueError, match="learning_starts differs across the pack"):
        learn_packed(members, STEPS)
