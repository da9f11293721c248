"""lit_rl's QRDQN side by side with sb3_contrib.QRDQN 2.9: same weights, same batches, same results.

Each test builds sb3-contrib's model and lit_rl's, copies sb3-contrib's quantile network and its (perturbed)
target into lit_rl, then feeds both the identical batch for several gradient steps, each followed by one env
step's bookkeeping (the target update and the exploration schedule live there). After every step the
parameters, the target's parameters, Adam's state and the logged loss must agree.

Tolerance: lit_rl uses the fused Adam kernel and moves the target with ``torch._foreach_lerp_``; sb3-contrib
the single-tensor Adam and ``mul_``/``add_``. The forward and the loss are the same operations on the same
floats. What is left is float32 rounding (measured after 12 steps: parameters at most 6e-8 apart, the logged
loss equal to the last bit at 59 of 60 steps); a wrong rule (a mean over quantiles in place of their sum, the online network's greedy action, a
missed target update) moves parameters by about the learning rate (1e-3) or more.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import sb3_contrib
import sb3_contrib.qrdqn.qrdqn as sb3_qrdqn_module
import torch
from gymnasium import spaces
from sb3_contrib.common.utils import quantile_huber_loss as reference_quantile_huber_loss
from sb3_contrib.qrdqn.policies import QRDQNPolicy as ReferencePolicy
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import DummyVecEnv

import lit_rl.algorithms.qrdqn as lit_qrdqn_module
import lit_rl.core.q_learning as lit_q_learning
from lit_rl import QRDQN
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.core.quantile_regression import quantile_huber_loss
from lit_rl.policies.qrdqn import QRDQNPolicy
from tests.reference.sb3_weights import (
    assert_adam_state_close,
    assert_pairs_close,
    copy_into_lit,
    sequential_pairs,
    without_trainer,
)

ATOL, RTOL = 1e-6, 1e-5  # float32 rounding, see the module docstring
BATCH = 64
STEPS = 12
LR = 1e-3
OBS = spaces.Box(-1.0, 1.0, shape=(5,), dtype=np.float32)
ACT = spaces.Discrete(3)
KW = dict(gamma=0.97, target_update_interval=4, policy_kwargs=dict(net_arch=[32, 32], n_quantiles=25))


class SpacesOnlyEnv(gym.Env):
    """An env that only carries spaces: sb3-contrib needs one to build a model; the update tests never step it."""

    def __init__(self) -> None:
        self.observation_space, self.action_space = OBS, ACT

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def make_pair(noise: float = 0.0, target_noise: float = 0.05, **overrides):
    """sb3-contrib's QRDQN and lit_rl's with the reference's weights (its target moved off the online net) copied in.

    ``noise`` / ``target_noise``: the std of normal noise added to the reference's online / target weights first
    (larger weights spread the greedy actions of random observations over every action).
    """
    kwargs = {**KW, **overrides}
    kwargs["policy_kwargs"] = dict(kwargs["policy_kwargs"])  # each side its own dict
    ref = sb3_contrib.QRDQN("MlpPolicy", SpacesOnlyEnv(), learning_rate=LR, batch_size=BATCH, seed=0, device="cpu",
                            **{**kwargs, "policy_kwargs": dict(kwargs["policy_kwargs"])})  # fmt: skip
    ref.set_logger(Logger(folder=None, output_formats=[]))  # train() records the loss; learn() would set this
    algo = QRDQN(learning_rate=LR, batch_size=BATCH, **kwargs)
    algo.build_networks_for(OBS, ACT)
    opt = without_trainer(algo)
    online = sequential_pairs("quantile_net", ref.quantile_net.quantile_net, algo.quantile_net)
    target = sequential_pairs("quantile_net_target", ref.quantile_net_target.quantile_net, algo.quantile_net_target)
    assert {id(p.ref) for p in online + target} == {id(p) for p in ref.policy.parameters()}
    assert {id(p.lit) for p in online + target} == {id(p) for p in algo.parameters()}
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in online:
            p.ref.add_(torch.randn(p.ref.shape, generator=g) * noise)
        for p in target:  # a target read in place of the online net (or a wrong Polyak weight) then shows
            p.ref.add_(torch.randn(p.ref.shape, generator=g) * target_noise)
    copy_into_lit(online + target)
    settings = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")
    assert [tuple(grp[k] for k in settings) for grp in ref.policy.optimizer.param_groups] == [
        tuple(grp[k] for k in settings) for grp in opt.param_groups
    ]
    return ref, algo, online, target, opt


def make_batch(step: int, n_step: bool = False) -> ReplayBatch:
    g = torch.Generator().manual_seed(200 + step)
    terminated = (torch.rand(BATCH, generator=g) < 0.25).float()
    terminated[:2] = torch.tensor([0.0, 1.0])  # both kinds in every batch
    # A reward scale that changes from step to step: pairwise errors on both sides of Huber's kink (|d| = 1).
    scale = 0.5 + 3.0 * (step % 4)
    return ReplayBatch(
        observations=torch.rand(BATCH, 5, generator=g) * 2 - 1,
        actions=torch.arange(BATCH) % ACT.n,  # every action, so every output unit trains
        next_observations=torch.rand(BATCH, 5, generator=g) * 2 - 1,
        rewards=torch.randn(BATCH, generator=g) * scale,
        terminated=terminated,
        # k-step discounts gamma^k (an n-step buffer's), one per sample
        discounts=0.97 ** torch.randint(1, 4, (BATCH,), generator=g).float() if n_step else None,
    )


def feed(ref, batch: ReplayBatch) -> None:
    """The same transitions in SB3's layout: rewards, dones and discounts (B, 1); actions (B, 1)."""
    samples = ReplayBufferSamples(
        observations=batch.observations.clone(),
        actions=batch.actions.reshape(-1, 1).clone(),
        next_observations=batch.next_observations.clone(),
        dones=batch.terminated.reshape(-1, 1).clone(),
        rewards=batch.rewards.reshape(-1, 1).clone(),
        discounts=None if batch.discounts is None else batch.discounts.reshape(-1, 1).clone(),
    )
    ref.replay_buffer.sample = lambda *args, **kwargs: samples


def step_both(ref, algo, step: int, n_step: bool = False) -> tuple[float, float]:
    """One gradient step on the same batch, then one env step's bookkeeping; (sb3-contrib's, lit_rl's) loss."""
    batch = make_batch(step, n_step)
    feed(ref, batch)
    ref.train(gradient_steps=1, batch_size=BATCH)
    algo.metrics.sums, algo.metrics.counts = {}, {}
    algo.update(batch)
    ref._on_step()
    algo.on_env_step()
    return float(ref.logger.name_to_value["train/loss"]), float(algo.metrics.sums["train/loss"])


def max_difference(pairs) -> float:
    return max(float((p.select(p.lit) - p.convert(p.ref)).detach().abs().max()) for p in pairs)


CASES = {
    "hard_target": dict(tau=1.0),
    "soft_target": dict(tau=0.3),
    "clipped": dict(max_grad_norm=0.5),
    "200_quantiles": dict(policy_kwargs=dict(net_arch=[32, 32])),  # sb3-contrib's default n_quantiles
    "n_step_discounts": dict(),
}


@pytest.mark.parametrize("case", list(CASES))
def test_updates_equal_sb3_contrib(case):
    """Quantile Huber loss, Adam (eps 0.01 / batch_size), clipping and target updates (every 4th env step)
    equal sb3-contrib's, step by step."""
    ref, algo, online, target, opt = make_pair(**CASES[case])
    assert algo.n_quantiles == ref.n_quantiles
    for step in range(1, STEPS + 1):
        ref_loss, lit_loss = step_both(ref, algo, step, n_step=case == "n_step_discounts")
        when = f"after step {step} ({case})"
        assert_pairs_close(online + target, rtol=RTOL, atol=ATOL, when=when)
        assert_adam_state_close(online, ref.policy.optimizer, opt, rtol=RTOL, when=when)
        assert lit_loss == pytest.approx(ref_loss, rel=RTOL, abs=ATOL), when
    assert algo._n_updates == ref._n_updates == STEPS
    print(f"{case}: after {STEPS} steps, largest parameter difference {max_difference(online):.1e} "
          f"(target {max_difference(target):.1e}), loss {lit_loss:.6f} vs {ref_loss:.6f}")  # fmt: skip


def test_a_mean_over_quantiles_in_place_of_their_sum_is_caught(monkeypatch):
    """The comparison is sharp enough to see the loss averaged over quantiles (TQC's form) instead of summed."""
    ref, algo, online, target, _ = make_pair()
    averaged = lambda q, t, sum_over_quantiles: quantile_huber_loss(q, t)  # noqa: E731
    monkeypatch.setattr(lit_qrdqn_module, "quantile_huber_loss", averaged)
    ref_loss, lit_loss = step_both(ref, algo, 1)
    assert lit_loss != pytest.approx(ref_loss, rel=RTOL, abs=ATOL)
    with pytest.raises(AssertionError, match="differs from the reference"):
        assert_pairs_close(online, rtol=RTOL, atol=ATOL)


def test_the_online_networks_greedy_action_in_the_target_is_caught(monkeypatch):
    """... and to see the target built from the online network's greedy action (double Q-learning) instead."""
    ref, algo, online, target, _ = make_pair(noise=0.5, target_noise=0.5)
    original = lit_qrdqn_module.quantile_q_loss

    def double_q(policy, batch, discount):
        with torch.no_grad():
            greedy = policy.q_net(batch.next_observations).mean(dim=1).argmax(dim=1)
            quantiles = policy.q_net_target(batch.next_observations)
            # the target's quantiles of the online greedy action, as every action's: the loss's argmax picks them
            picked = quantiles.gather(2, greedy[:, None, None].expand(-1, quantiles.shape[1], 1)).expand_as(quantiles)
        fake = SimpleNamespace(q_net=policy.q_net, q_net_target=lambda obs: picked, n_quantiles=policy.n_quantiles,
                               action_start=policy.action_start)  # fmt: skip
        return original(fake, batch, discount)

    algo.loss = double_q
    for step in range(1, 4):
        step_both(ref, algo, step)
    with pytest.raises(AssertionError, match="differs from the reference"):
        assert_pairs_close(online, rtol=RTOL, atol=ATOL)


def test_quantile_huber_loss_equals_sb3_contrib_for_qrdqn():
    g = torch.Generator().manual_seed(0)
    quantiles = torch.randn(16, 7, generator=g, requires_grad=True)  # (batch, n_quantiles)
    target = torch.randn(16, 7, generator=g) * 2  # pairwise errors on both sides of |d| = 1
    for summed in (True, False):
        loss = quantile_huber_loss(quantiles, target, sum_over_quantiles=summed)
        ref_quantiles = quantiles.detach().clone().requires_grad_(True)
        ref_loss = reference_quantile_huber_loss(ref_quantiles, target, sum_over_quantiles=summed)
        torch.testing.assert_close(loss, ref_loss, rtol=0, atol=0)
        grad, ref_grad = torch.autograd.grad(loss, quantiles)[0], torch.autograd.grad(ref_loss, ref_quantiles)[0]
        torch.testing.assert_close(grad, ref_grad, rtol=0, atol=0)


def test_forward_and_greedy_prediction_equal_sb3_contrib():
    """Quantiles bitwise equal; predict's greedy action (argmax of the mean over quantiles) the same."""
    ref, algo, _, _, _ = make_pair(noise=0.5, policy_kwargs=dict(net_arch=[32, 32]))
    obs = np.stack([OBS.sample() for _ in range(256)])
    with torch.no_grad():
        ref_quantiles = ref.quantile_net(torch.as_tensor(obs))
        lit_quantiles = algo.quantile_net(torch.as_tensor(obs))
    assert lit_quantiles.shape == ref_quantiles.shape == (256, 200, ACT.n)
    torch.testing.assert_close(lit_quantiles, ref_quantiles, rtol=0, atol=0)
    ref_actions, _ = ref.predict(obs, deterministic=True)
    lit_actions, _ = algo.predict(obs, deterministic=True)
    assert set(ref_actions.tolist()) == set(range(ACT.n))  # the comparison sees every action
    np.testing.assert_array_equal(lit_actions, ref_actions)
    assert np.issubdtype(lit_actions.dtype, np.integer)
    assert int(algo.predict(obs[0], deterministic=True)[0]) == int(ref.predict(obs[0], deterministic=True)[0])


def test_defaults_equal_sb3_contrib():
    """Every hyperparameter both constructors take has sb3-contrib's default; so do the policy's."""
    ref_params = inspect.signature(sb3_contrib.QRDQN).parameters
    lit_params = inspect.signature(QRDQN).parameters
    shared = (set(ref_params) & set(lit_params)) - {"policy", "env"}
    assert {"learning_rate", "exploration_fraction", "max_grad_norm", "target_update_interval"} <= shared
    assert {n: lit_params[n].default for n in shared} == {n: ref_params[n].default for n in shared}
    ref_policy = inspect.signature(ReferencePolicy).parameters
    assert QRDQNPolicy.defaults["n_quantiles"] == ref_policy["n_quantiles"].default == 200
    ref, algo = sb3_contrib.QRDQN("MlpPolicy", SpacesOnlyEnv(), device="cpu"), QRDQN()
    algo.build_networks_for(OBS, ACT)
    assert algo.policy.net_arch == ref.policy.net_arch == [64, 64]
    assert algo.configure_optimizers().defaults["eps"] == ref.policy.optimizer.defaults["eps"] == 0.01 / 32


@pytest.mark.parametrize("n_envs", [1, 3])
def test_exploration_schedule_and_target_update_timing_equal_sb3_contrib(monkeypatch, n_envs):
    """Through each side's own collection loop on CartPole: after every vector-env step, the same num_timesteps
    and exploration rate, and the target network updated at the same steps (every target_update_interval //
    n_envs vector-env steps)."""
    kwargs = dict(
        learning_starts=1_000,  # no gradient steps: only the schedule and the target updates are under test
        target_update_interval=10,
        exploration_fraction=0.4,
        exploration_initial_eps=0.9,
        exploration_final_eps=0.2,
        buffer_size=500,
        policy_kwargs=dict(net_arch=[8], n_quantiles=5),
        seed=0,
    )
    total = 96  # a multiple of train_freq (4) * n_envs: SB3 finishes a started rollout past total_timesteps

    ref = sb3_contrib.QRDQN("MlpPolicy", DummyVecEnv([lambda: gym.make("CartPole-v1")] * n_envs), device="cpu",
                            **{**kwargs, "policy_kwargs": dict(kwargs["policy_kwargs"])})  # fmt: skip
    ref_steps, ref_updates = [], []
    ref_on_step, ref_polyak = ref._on_step, sb3_qrdqn_module.polyak_update

    def ref_record():
        ref_on_step()
        ref_steps.append((ref.num_timesteps, ref.exploration_rate))

    def ref_polyak_recorded(params, target_params, tau):
        params = list(params)
        if params:  # the quantile net's parameters; the second call copies BatchNorm statistics (none here)
            ref_updates.append((ref.num_timesteps, tau))
        ref_polyak(params, target_params, tau)

    ref._on_step = ref_record
    monkeypatch.setattr(sb3_qrdqn_module, "polyak_update", ref_polyak_recorded)
    ref.learn(total)

    algo = QRDQN(**kwargs)
    lit_steps, lit_updates = [], []
    lit_on_env_step, lit_update_target = algo.on_env_step, lit_q_learning.update_target

    def lit_record():
        lit_on_env_step()
        lit_steps.append((algo.num_timesteps, algo.exploration_rate))

    def lit_update_recorded(online, target, tau):
        lit_updates.append((algo.num_timesteps, tau))
        lit_update_target(online, target, tau)

    algo.on_env_step = lit_record
    monkeypatch.setattr(lit_q_learning, "update_target", lit_update_recorded)
    venv = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1")] * n_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    algo.learn(total, env=venv, accelerator="cpu")

    assert len(ref_steps) == total // n_envs and len(ref_updates) >= 3
    assert [n for n, _ in lit_steps] == [n for n, _ in ref_steps]
    assert [eps for _, eps in lit_steps] == pytest.approx([eps for _, eps in ref_steps], rel=1e-12, abs=1e-15)
    assert lit_updates == ref_updates
