"""gSDE: the noise matrix, the squashed log-probability, and one SAC / CrossQ update with it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch.distributions import Normal, TanhTransform, TransformedDistribution

from lit_rl.algorithms.crossq import CrossQ
from lit_rl.algorithms.ddpg import DDPG
from lit_rl.algorithms.dqn import DQN
from lit_rl.algorithms.sac import SAC
from lit_rl.algorithms.td3 import TD3
from lit_rl.buffers.replay import ReplayBuffer
from lit_rl.nets.actors import SquashedGaussianActor, squashed_sample_log_prob
from lit_rl.nets.distributions import SDE_EPSILON, StateDependentNoiseDistribution
from tests.helpers import without_trainer

OBS_SPACE = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
ACT_SPACE = spaces.Box(-2.0, 2.0, shape=(2,), dtype=np.float32)
BATCH = 32
BN = {"momentum": 0.01, "eps": 1e-3, "warmup_steps": 100_000}


def make_actor(batch_norm=None, **sde) -> SquashedGaussianActor:
    torch.manual_seed(0)
    return SquashedGaussianActor(3, 2, [16, 16], batch_norm=batch_norm, use_sde=True, **sde)


def observations(n: int, seed: int = 1) -> torch.Tensor:
    return torch.rand(n, 3, generator=torch.Generator().manual_seed(seed)) * 2 - 1


@pytest.mark.parametrize("batch_norm", [None, BN], ids=["plain", "batch_renorm"])
def test_noise_is_fixed_between_resamples_and_changes_with_them(batch_norm):
    actor = make_actor(batch_norm).eval()  # rollouts use eval mode (CrossQ's BatchRenorm running statistics)
    obs = observations(8)
    with torch.no_grad():
        actor.reset_noise()
        first, again = actor(obs), actor(obs)
        mean_action = actor(obs, deterministic=True)
        actor.reset_noise()
        resampled = actor(obs)
    assert torch.equal(first, again)  # same matrix, same observation: same action
    assert not torch.allclose(first, mean_action)  # the matrix does add noise
    assert (first - resampled).abs().min() > 0  # a new matrix moves every action


def test_rollout_matrices_are_one_per_env():
    actor = make_actor().eval()
    with torch.no_grad():
        actor.reset_noise(3)
        same_obs = observations(1).expand(3, 3)
        per_env = actor(same_obs)  # one row per env: each env its own matrix
        shared = actor(observations(1).expand(5, 3))  # a batch of another size: one shared matrix
    assert actor.action_dist.exploration_matrices.shape == (3, 16, 2)
    assert not torch.allclose(per_env[0], per_env[1]) and not torch.allclose(per_env[1], per_env[2])
    assert torch.equal(shared, shared[:1].expand(5, 2))


def test_log_prob_matches_torch_distributions():
    actor = make_actor(clip_mean=0.5)
    obs = observations(BATCH)
    actor.reset_noise()
    actions, log_prob = actor.action_log_prob(obs)
    with torch.no_grad():
        # Independent computation: Normal(mean, sqrt(z^2 @ std^2 + eps)) pushed through torch's TanhTransform.
        latent = actor.latent_pi(obs)
        mean = actor.mu(latent).clamp(-0.5, 0.5)
        std = torch.sqrt(latent.pow(2) @ actor.action_dist.log_std.exp().pow(2) + SDE_EPSILON)
        pre_tanh = mean + latent @ actor.action_dist.exploration_mat
        expected = TransformedDistribution(Normal(mean, std), TanhTransform()).log_prob(actions).sum(-1)
    assert torch.allclose(actions, torch.tanh(pre_tanh), atol=1e-6)
    # TanhTransform's Jacobian is exact; ours adds 1e-6 inside log(1 - a^2), as SB3 does.
    assert torch.allclose(log_prob, expected, atol=1e-3), (log_prob - expected).abs().max()


def test_squashed_density_integrates_to_one():
    actor = make_actor(log_std_init=1.0)
    obs = observations(1)
    with torch.no_grad():
        latent = actor.latent_pi(obs)
        mean = actor.mu(latent).clamp(-2.0, 2.0)
        std = actor.action_dist.action_std(latent)
        z = torch.linspace(-9.0, 9.0, 200_001, dtype=torch.float64)[:, None]
    assert (std > 0.5).all()  # a real spread, not a near-point mass
    # The action dims are independent: each one's density must integrate to one over (-1, 1).
    for k in range(2):
        actions, log_prob = squashed_sample_log_prob(mean[:, k : k + 1].double(), z, std[:, k : k + 1].log().double())
        assert math.isclose(float(torch.trapezoid(log_prob.exp(), actions[:, 0])), 1.0, abs_tol=2e-3)


def test_partial_std_and_expln():
    dist = StateDependentNoiseDistribution(4, 3, full_std=False, use_expln=True, log_std_init=0.0)
    assert dist.log_std.shape == (4, 1)
    with torch.no_grad():
        assert torch.allclose(dist.weight_std(), torch.ones(4, 3), atol=1e-5)  # expln(0) = 1, as exp(0)
        dist.log_std.fill_(1.0)
        assert torch.allclose(dist.weight_std(), torch.full((4, 3), math.log(2.0) + 1.0))  # log1p(1) + 1 < e
        dist.log_std.fill_(-1.0)
        assert torch.allclose(dist.weight_std(), torch.full((4, 3), math.exp(-1.0)))


def test_reset_noise_needs_sde():
    with pytest.raises(ValueError, match="use_sde"):
        SquashedGaussianActor(3, 2, [16]).reset_noise()


# ---------------------------------------------------------------- one update
def make_algo(cls, **kwargs):
    torch.manual_seed(0)
    net = {"net_arch": {"pi": [16, 16], "qf": [16, 16]}, "log_std_init": -1.0}
    algo = cls(learning_rate=1e-2, batch_size=BATCH, buffer_size=1_000, policy_kwargs=net, use_sde=True, **kwargs)
    return without_trainer(algo, OBS_SPACE, ACT_SPACE)


def sample_batch(n: int = 200):
    """A real replay buffer filled with random transitions, sampled once."""
    buffer = ReplayBuffer(n, OBS_SPACE, ACT_SPACE, n_envs=1, device="cpu", seed=0)
    rng = np.random.default_rng(0)
    for _ in range(n):
        obs, next_obs = rng.uniform(-1, 1, (2, 1, 3)).astype(np.float32)
        action = rng.uniform(-1, 1, (1, 2)).astype(np.float32)
        buffer.add(obs, next_obs, action, rng.normal(size=1), rng.random(1) < 0.1, np.zeros(1, dtype=bool))
    return buffer.sample(BATCH)


@pytest.mark.parametrize(("cls", "kwargs"), [(SAC, {}), (CrossQ, {"policy_delay": 1})], ids=["sac", "crossq"])
def test_one_update_changes_every_optimized_parameter_including_log_std(cls, kwargs):
    algo = make_algo(cls, **kwargs)
    optimized = {id(p) for opt in algo._test_opts for group in opt.param_groups for p in group["params"]}
    assert id(algo.actor.action_dist.log_std) in optimized
    named = dict(algo.named_parameters())
    before = {name: p.detach().clone() for name, p in named.items() if id(p) in optimized}
    algo.update(sample_batch())
    for name, value in before.items():
        assert not torch.equal(value, named[name].detach()), f"{name} did not change"
    assert "policy.actor.action_dist.log_std" in before


def test_update_resamples_the_shared_matrix_with_a_graph_to_log_std():
    algo = make_algo(SAC)
    algo.actor.reset_noise()
    rollout_matrix = algo.actor.action_dist.exploration_mat
    algo.update(sample_batch())
    update_matrix = algo.actor.action_dist.exploration_mat
    assert not torch.equal(rollout_matrix, update_matrix)
    assert update_matrix.requires_grad  # the actor loss reaches log_std through the sampled matrix too


# ---------------------------------------------------------------- arguments
@pytest.mark.parametrize("cls", [TD3, DDPG, DQN])
def test_algorithms_without_a_stochastic_policy_reject_use_sde(cls):
    with pytest.raises(TypeError, match=r"use_sde.*SAC or CrossQ"):
        cls(use_sde=True)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"use_sde": "yes"}, "use_sde"),
        ({"sde_sample_freq": 0}, "sde_sample_freq"),
        ({"use_sde_at_warmup": 1}, "use_sde_at_warmup"),
        ({"use_sde": True, "policy_kwargs": {"clip_mean": -1.0}}, "policy_kwargs.clip_mean"),
        ({"use_sde": True, "policy_kwargs": {"full_std": "no"}}, "policy_kwargs.full_std"),
    ],
)
@pytest.mark.parametrize("cls", [SAC, CrossQ])
def test_bad_sde_arguments_fail_at_construction_naming_the_key(cls, kwargs, key):
    with pytest.raises((TypeError, ValueError), match=key):
        cls(**kwargs)
