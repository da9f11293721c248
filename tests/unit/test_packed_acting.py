"""A pack's rollout actions, one batched forward for all members, against each member's own ``act`` with the same
generator: members that differ in seed, learning rate, tau and gamma, after packed gradient steps (so their weights,
and CrossQ's BatchRenorm statistics, are each their own)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lit_rl import DQN, QRDQN
from lit_rl.algorithms.crossq import CrossQ
from lit_rl.algorithms.ddpg import DDPG
from lit_rl.algorithms.sac import SAC
from lit_rl.algorithms.td3 import TD3
from lit_rl.algorithms.tqc import TQC
from lit_rl.nets.noise_source import thread_generator
from lit_rl.packed.run import pack_class

P, N_ENVS = 3, 2
CASES = {
    "sac": (SAC, "Pendulum-v1", {}),
    "sac_bf16": (SAC, "Pendulum-v1", {"precision": "bf16-mixed"}),
    "td3": (TD3, "Pendulum-v1", {}),
    "ddpg": (DDPG, "Pendulum-v1", {}),
    "crossq": (CrossQ, "Pendulum-v1", {"policy_kwargs": {"net_arch": [32, 32], "renorm_warmup_steps": 2}}),
    "tqc": (TQC, "Pendulum-v1", {"policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 5, "n_critics": 2}}),
    "dqn": (DQN, "CartPole-v1", {}),
    "qrdqn": (QRDQN, "CartPole-v1", {"policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 5}}),
}


def make_pack(case: str):
    cls, env_id, kwargs = CASES[case]
    members = []
    for i in range(P):
        per = {"learning_rate": [3e-4, 1e-3, 3e-3][i], "gamma": [0.99, 0.98, 0.95][i], "seed": i}
        settings = {"policy_kwargs": {"net_arch": [32, 32]}, "batch_size": 16, "buffer_size": 500} | kwargs
        members.append(cls("MlpPolicy", env_id, **settings, **per))
    pack = pack_class(members[0])(members, [torch.Generator().manual_seed(100 + i) for i in range(P)])
    rng = np.random.default_rng(0)
    for member in members:  # a few transitions, then packed steps: each member's weights move its own way
        obs_dim = member.observation_space.shape[0]
        for _ in range(40):
            action = np.clip(np.asarray(member.action_space.sample()), -1, 1)[None]  # one env's
            member.replay_buffer.add(rng.normal(size=(1, obs_dim)), rng.normal(size=(1, obs_dim)), action,
                                     rng.normal(size=1), np.zeros(1), np.zeros(1))  # fmt: skip
        if hasattr(member, "exploration_rate"):
            member.exploration_rate = 0.5  # half the steps explore: both branches of epsilon-greedy
    for _ in range(4):
        batch = pack.sample()
        pack.gradient_step(batch, pack.draw_noise(batch))
    return members, pack


def observations(members, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(P, N_ENVS, members[0].observation_space.shape[0])).astype(np.float32)


def own_actions(members, states, obs) -> tuple[list[np.ndarray], list[torch.Tensor]]:
    """Each member's ``act`` in its own run's way: its draws from its own generator (here: from ``states``)."""
    actions, after = [], []
    for member, state, member_obs in zip(members, states, obs, strict=True):
        generator = torch.Generator()
        generator.set_state(state)
        with thread_generator(generator):
            actions.append(member.act(member_obs))
        after.append(generator.get_state())
    return actions, after


def packed_actions(members, pack, obs) -> np.ndarray:
    stacked = torch.stack([m.acting_input(o) for m, o in zip(members, obs, strict=True)])
    return pack.act(stacked).float().numpy()


@pytest.mark.parametrize("case", list(CASES))
def test_each_members_packed_action_equals_its_own_act(case):
    members, pack = make_pack(case)
    atol = 2e-3 if "bf16" in case else 1e-6  # bf16 products round differently batched (about 1e-3 of an action)
    explored = 0
    for call in range(4):  # consecutive calls: each member's stream advanced by its own draws only
        obs = observations(members, call)
        states = [g.get_state() for g in pack.generators]
        own, after = own_actions(members, states, obs)
        packed = packed_actions(members, pack, obs)
        for i in range(P):
            assert packed[i].shape == own[i].shape
            np.testing.assert_allclose(packed[i], own[i], rtol=1e-5, atol=atol, err_msg=f"member {i}, call {call}")
            assert torch.equal(pack.generators[i].get_state(), after[i]), f"member {i}'s draws, call {call}"
        greedy = [m.act(o, deterministic=True) for m, o in zip(members, obs, strict=True)]
        explored += sum(not np.array_equal(a, g) for a, g in zip(own, greedy, strict=True))
    assert explored > 0 or not case.endswith("dqn")  # some calls took epsilon's random actions


def test_a_members_actions_do_not_depend_on_the_others_observations():
    """A member that left the pack acts on its last observation, unread: the others' actions stay bitwise equal."""
    members, pack = make_pack("sac")
    obs = observations(members, 0)
    states = [g.get_state() for g in pack.generators]
    first = packed_actions(members, pack, obs)
    for generator, state in zip(pack.generators, states, strict=True):
        generator.set_state(state)
    obs[1] = 0.0
    second = packed_actions(members, pack, obs)
    assert np.array_equal(first[[0, 2]], second[[0, 2]])
    assert not np.array_equal(first[1], second[1])
