"""TQC beyond the sb3-contrib reference: the CrossQ-style variant, policy_delay, HER, saving and bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from lit_rl import TQC, HerReplayBuffer
from lit_rl.envs import make_vec_env
from lit_rl.nets.batch_renorm import BatchRenorm
from tests.reference.sb3_weights import reference_batches, update_lit, without_trainer

PENDULUM = gym.make("Pendulum-v1")
CROSSQ_STYLE = {"net_arch": [16, 16], "n_quantiles": 5, "batch_norm": True, "target_network": False}


def built(**kwargs) -> TQC:
    algo = TQC(**kwargs)
    algo.build_networks(PENDULUM.observation_space, PENDULUM.action_space)
    algo._n_envs = 1
    return algo


def test_crossq_style_critics_normalise_both_halves_and_have_no_target():
    algo = built(policy_kwargs=CROSSQ_STYLE, batch_size=32)
    opts = without_trainer(algo)
    assert not hasattr(algo.policy, "critic_target")
    assert opts[0].param_groups[0]["betas"] == opts[1].param_groups[0]["betas"] == (0.5, 0.999)  # CrossQ's Adam
    seed, batch = reference_batches(3, 1, 32, 1)[0]
    update_lit(algo, seed, batch)
    first = next(m for m in algo.critic.q_net if isinstance(m, BatchRenorm))
    # One forward of cat([s, s']): the running mean of the observation features moved towards both halves' mean.
    both = torch.cat([batch.observations, batch.next_observations]).mean(0)
    torch.testing.assert_close(first.running_mean[:, :3], (first.momentum * both).expand(2, 3))
    assert int(first.steps) == 1


def test_default_tqc_keeps_adam_defaults_and_a_target_network():
    algo = built(policy_kwargs={"net_arch": [16, 16], "n_quantiles": 5})
    opts = without_trainer(algo)
    assert opts[1].param_groups[0]["betas"] == (0.9, 0.999)
    assert not any(isinstance(m, BatchRenorm) for m in algo.policy.modules())
    assert all(not p.requires_grad for p in algo.policy.critic_target.parameters())


def test_policy_delay_trains_actor_and_alpha_every_third_step_only():
    algo = built(policy_kwargs=CROSSQ_STYLE, policy_delay=3, batch_size=32)
    without_trainer(algo)
    moved = []
    for i, (seed, batch) in enumerate(reference_batches(3, 1, 32, 6)):
        before = [p.detach().clone() for p in (*algo.actor.parameters(), algo.entropy.log_ent_coef)]
        algo.round_gradient_step = i
        update_lit(algo, seed, batch)
        after = [*algo.actor.parameters(), algo.entropy.log_ent_coef]
        moved.append(any(not torch.equal(b, a) for b, a in zip(before, after, strict=True)))
    assert moved == [False, False, True, False, False, True]


def test_her_with_multi_input_policy():
    env = make_vec_env("lit_rl/BitFlipping-v0", n_envs=2, env_kwargs={"n_bits": 5, "continuous": True}, seed=0)
    model = TQC(
        "MultiInputPolicy",
        learning_starts=20,
        batch_size=16,
        buffer_size=200,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"n_sampled_goal": 2, "goal_selection_strategy": "future"},
        policy_kwargs={"net_arch": [16], "n_quantiles": 5},
        seed=0,
    )
    model.learn(60, env=env)
    assert model.num_timesteps >= 60 and model._n_updates > 0
    obs, _ = env.reset(seed=1)
    assert model.predict(obs, deterministic=True)[0].shape == (2, 5)
    env.close()


def test_save_and_load_predict_the_same(tmp_path):
    model = TQC("MlpPolicy", "Pendulum-v1", learning_starts=50, batch_size=16, use_sde=True,
                policy_kwargs={"net_arch": [16], "n_quantiles": 5}, seed=0, device="cpu")  # fmt: skip
    model.learn(80)
    model.save(tmp_path / "tqc")
    loaded = TQC.load(tmp_path / "tqc", device="cpu")
    obs = np.stack([PENDULUM.observation_space.sample() for _ in range(4)])
    np.testing.assert_allclose(loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])
    assert loaded.policy.critic.n_quantiles == 5 and loaded.top_quantiles_to_drop_per_net == 2


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"top_quantiles_to_drop_per_net": 5}, ValueError, "top_quantiles_to_drop_per_net=5"),
        ({"top_quantiles_to_drop_per_net": -1}, ValueError, "top_quantiles_to_drop_per_net"),
        ({"policy_delay": 0}, ValueError, "policy_delay"),
        ({"policy_kwargs": {"n_quantiles": 0}}, ValueError, "policy_kwargs.n_quantiles"),
        ({"policy_kwargs": {"target_network": "no"}}, TypeError, "policy_kwargs.target_network"),
    ],
)
def test_bad_values_name_the_key(kwargs, error, names):
    kwargs.setdefault("policy_kwargs", {})
    kwargs["policy_kwargs"] = {"n_quantiles": 5, **kwargs["policy_kwargs"]}
    with pytest.raises(error, match=names):
        built(**kwargs)
