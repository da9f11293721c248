"""``Pack``'s arguments: one value per member in lists, every member's otherwise, and its refusals."""

from __future__ import annotations

import gymnasium as gym
import pytest

from lit_rl import SAC, TD3, Pack

SMALL = {"policy_kwargs": {"net_arch": [16]}, "buffer_size": 100, "batch_size": 32}


def test_lists_give_each_member_its_value_and_other_arguments_are_shared():
    pack = Pack(SAC, "MlpPolicy", "Pendulum-v1", seed=range(3), learning_rate=[1e-3, 3e-4, 1e-4], gamma=0.9, **SMALL)
    assert [m.seed for m in pack] == [0, 1, 2]
    assert [m.learning_rate for m in pack] == [1e-3, 3e-4, 1e-4]
    assert all(m.gamma == 0.9 and m.policy_kwargs["net_arch"] == [16] for m in pack)
    assert pack[0] is not pack[1] and pack[0].env is not pack[1].env  # each member its own env
    assert repr(pack) == "Pack(SAC x 3: seeds [0, 1, 2])"


def test_every_per_member_setting_takes_a_list():
    pack = Pack(TD3, "MlpPolicy", "Pendulum-v1", seed=[0, 1], target_policy_noise=[0.1, 0.3], action_noise_std=[0.1, 0.2],
                **SMALL)  # fmt: skip
    assert [(m.target_policy_noise, m.action_noise_std) for m in pack] == [(0.1, 0.1), (0.3, 0.2)]
    pack = Pack(SAC, "MlpPolicy", "Pendulum-v1", ent_coef=[0.1, 0.2], target_entropy=[-1.0, -2.0], **SMALL)
    assert [(m.ent_coef, m.target_entropy) for m in pack] == [(0.1, -1.0), (0.2, -2.0)]


def test_n_alone_builds_members_of_equal_settings_and_envs_may_be_given_one_each():
    assert len(Pack(SAC, "MlpPolicy", "Pendulum-v1", n=2, **SMALL)) == 2
    envs = [gym.make("Pendulum-v1") for _ in range(2)]
    pack = Pack(SAC, "MlpPolicy", envs, seed=[5, 6], **SMALL)
    assert [m.seed for m in pack] == [5, 6]


@pytest.mark.parametrize(
    ("env", "kwargs", "message"),
    [
        ("Pendulum-v1", {"seed": [0, 1], "learning_rate": [1e-3]}, r"learning_rate has 1 values for 2 members"),
        ("Pendulum-v1", {"n": 3, "seed": [0, 1]}, r"seed has 2 values for 3 members; allowed: one value per member"),
        ("Pendulum-v1", {}, r"Pack needs n or a list of values for one of learning_rate, tau, gamma, seed"),
        ("Pendulum-v1", {"n": 0}, r"n=0; allowed: an integer >= 1"),
        (None, {"n": 2}, r"one env cannot serve several members; allowed: an env id"),
    ],
    ids=["lengths", "n_and_lengths", "no_size", "n_zero", "one_env"],
)
def test_bad_input_is_refused_naming_it(env, kwargs, message):
    env = gym.make("Pendulum-v1") if env is None else env
    with pytest.raises(ValueError, match=message):
        Pack(SAC, "MlpPolicy", env, **kwargs, **SMALL)
