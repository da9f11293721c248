"""TD3, DDPG and DQN side by side with Stable-Baselines3 2.9.2: same weights, same batches, same results.

Each test builds SB3's model and lit_rl's, copies SB3's weights (online and
target) into lit_rl, then feeds both the identical batch for several gradient
steps, with torch's global RNG seeded identically before each step (TD3's
target policy smoothing noise is the only random draw of a step on both
sides). After every step the parameters, target parameters and Adam states
(exp_avg, exp_avg_sq, step) must agree.

Tolerances: lit_rl's TD3/DDPG use the fused Adam kernel, fuse the critics into
batched matmuls (baddbmm) and move targets with ``torch._foreach_lerp_``; SB3
uses the per-tensor Adam, one nn.Linear per critic and ``mul_``/``add_``. Same
arithmetic in another order: float32 rounding only, ~1e-7 relative per op. A
real difference (a missing term, a wrong member, a skipped step) moves values
by at least the learning rate (3e-3) or tau times a target gap (~5e-3).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import stable_baselines3 as sb3
import stable_baselines3.dqn.dqn as sb3_dqn_module
import torch
from gymnasium import spaces
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import DummyVecEnv
from torch import nn

import lit_rl.core.q_learning as lit_q_learning
from lit_rl.algorithms.ddpg import DDPG
from lit_rl.algorithms.dqn import DQN
from lit_rl.algorithms.td3 import TD3
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.nets.mlp import EnsembleLinear

RTOL, ATOL = 1e-4, 1e-5  # float32 rounding of reordered arithmetic, see the module docstring
BATCH = 64
STEPS = 12
LR = 3e-3
TAU = 0.05  # with targets perturbed away from the online nets, a Polyak step moves them by ~5e-3 >> ATOL
BOX_OBS = spaces.Box(-1.0, 1.0, shape=(5,), dtype=np.float32)
BOX_ACT = spaces.Box(-2.0, 2.0, shape=(2,), dtype=np.float32)
DISCRETE_ACT = spaces.Discrete(3)


class SpacesOnlyEnv(gym.Env):
    """An env that only carries spaces: SB3 needs one to build a model; the update tests never step it."""

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        self.observation_space, self.action_space = observation_space, action_space

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


# ---------------------------------------------------------------------------------------------- model pairs
def sb3_model(cls, action_space: spaces.Space, **kwargs):
    model = cls("MlpPolicy", SpacesOnlyEnv(BOX_OBS, action_space), learning_rate=LR, batch_size=BATCH, seed=0, **kwargs)
    model.set_logger(Logger(folder=None, output_formats=[]))  # train() records losses; learn() would set this
    return model


def lit_model(cls, action_space: spaces.Space, **kwargs):
    """lit_rl's algorithm with networks and optimizers, driven without a Trainer (as tests/unit do)."""
    algo = cls(learning_rate=LR, batch_size=BATCH, **kwargs)
    algo.build_networks(BOX_OBS, action_space)
    opts = algo.configure_optimizers()
    algo.optimizers = lambda: opts  # Lightning plumbing that needs a Trainer; the algorithm itself is untouched
    algo.manual_backward = lambda loss: loss.backward()
    return algo, opts if isinstance(opts, list) else [opts]


def linears(seq: nn.Sequential, kind: type[nn.Module]) -> list[nn.Module]:
    return [m for m in seq if isinstance(m, kind)]


def linear_pairs(name: str, sb3_seq: nn.Sequential, lit_seq: nn.Sequential, member: int | None = None) -> list:
    """(name, SB3 tensor, lit_rl tensor, member) for every Linear; member: the slice of a fused EnsembleLinear."""
    sb3_layers = linears(sb3_seq, nn.Linear)
    lit_layers = linears(lit_seq, nn.Linear if member is None else EnsembleLinear)
    assert len(sb3_layers) == len(lit_layers), name
    pairs = []
    for i, (a, b) in enumerate(zip(sb3_layers, lit_layers, strict=True)):
        pairs += [(f"{name}.{i}.weight", a.weight, b.weight, member), (f"{name}.{i}.bias", a.bias, b.bias, member)]
    return pairs


def lit_view(t: torch.Tensor, member: int | None, name: str) -> torch.Tensor:
    """lit_rl's tensor (parameter or optimizer state) in SB3's layout: EnsembleLinear weight (n, in, out) is
    nn.Linear's weight transposed, its bias is (n, 1, out). A view, so it can also be written to."""
    if member is None:
        return t
    return t[member].T if name.endswith("weight") else t[member, 0]


def td3_pairs(model, algo) -> list:
    pairs = []
    for name in ("actor", "actor_target"):
        pairs += linear_pairs(name, getattr(model, name).mu, getattr(algo, name).mu)
    for name in ("critic", "critic_target"):
        for k, q_net in enumerate(getattr(model, name).q_networks):
            pairs += linear_pairs(f"{name}.{k}", q_net, getattr(algo, name).q_net, member=k)
    return pairs


def dqn_pairs(model, algo) -> list:
    return linear_pairs("q_net", model.q_net.q_net, algo.q_net) + linear_pairs(
        "q_net_target", model.q_net_target.q_net, algo.q_net_target
    )


def assert_pairs_cover(pairs: list, model, algo) -> None:
    """Every parameter of both sides is compared: no network or head left out of the mapping."""
    assert {id(p) for p in model.policy.parameters()} == {id(sb3_t) for _, sb3_t, _, _ in pairs}
    assert {id(p) for p in algo.parameters()} == {id(lit_t) for _, _, lit_t, _ in pairs}


def perturb_targets(pairs: list, seed: int = 3) -> None:
    """Move SB3's target nets away from the online ones, so that a target read in place of an online net
    (or a wrong Polyak weight) shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, sb3_t, _, _ in pairs:
            if "_target" in name:
                sb3_t.add_(torch.randn(sb3_t.shape, generator=g) * 0.05)


def copy_weights(pairs: list) -> None:
    with torch.no_grad():
        for name, sb3_t, lit_t, member in pairs:
            lit_view(lit_t, member, name).copy_(sb3_t)


def opt_state(opts: list[torch.optim.Optimizer], p: torch.Tensor) -> dict | None:
    for opt in opts:
        if any(q is p for group in opt.param_groups for q in group["params"]):
            return opt.state.get(p) or {}
    return None  # not optimised (a target parameter)


def adam_settings(opts: list[torch.optim.Optimizer]) -> list[tuple]:
    keys = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")
    return [tuple(g[k] for k in keys) for opt in opts for g in opt.param_groups]


def assert_same(pairs: list, sb3_opts: list, lit_opts: list, where: str) -> None:
    """Parameters and Adam states equal, within float32 rounding."""
    for name, sb3_t, lit_t, member in pairs:
        msg = f"{where}: {name}"
        torch.testing.assert_close(
            lit_view(lit_t.detach(), member, name), sb3_t.detach(), rtol=RTOL, atol=ATOL, msg=msg
        )
        s_state, l_state = opt_state(sb3_opts, sb3_t), opt_state(lit_opts, lit_t)
        assert (s_state is None) == (l_state is None), f"{msg}: optimised on one side only"
        if s_state is None:
            continue
        assert set(s_state) == set(l_state), f"{msg}: Adam state {sorted(s_state)} vs {sorted(l_state)}"
        if s_state:
            assert float(s_state["step"]) == float(l_state["step"]), f"{msg}: Adam step"
            for key in ("exp_avg", "exp_avg_sq"):
                # Moments are sums of per-sample terms: their rounding scales with the tensor's largest
                # entries, not with each (possibly cancelled, near-zero) entry; exp_avg_sq is ~1e-7 here.
                ref = s_state[key]
                atol = RTOL * float(ref.abs().max()) + 1e-30
                torch.testing.assert_close(
                    lit_view(l_state[key], member, name), ref, rtol=RTOL, atol=atol, msg=f"{msg} {key}"
                )


def moved(pairs: list, before: dict) -> dict[str, tuple[bool, bool]]:
    """Per parameter (per critic member for fused ensembles): (moved in SB3, moved in lit_rl)."""
    return {
        name: (
            not torch.equal(sb3_t, before[name][0]),
            not torch.equal(lit_view(lit_t.detach(), member, name), before[name][1]),
        )
        for name, sb3_t, lit_t, member in pairs
    }


def snapshot(pairs: list) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    return {
        name: (sb3_t.detach().clone(), lit_view(lit_t.detach(), member, name).clone())
        for name, sb3_t, lit_t, member in pairs
    }


# ---------------------------------------------------------------------------------------------- batches
def box_batch(step: int) -> ReplayBatch:
    g = torch.Generator().manual_seed(100 + step)
    terminated = (torch.rand(BATCH, generator=g) < 0.25).float()
    terminated[:2] = torch.tensor([0.0, 1.0])  # both kinds in every batch
    return ReplayBatch(
        observations=torch.rand(BATCH, 5, generator=g) * 2 - 1,
        actions=torch.rand(BATCH, 2, generator=g) * 2 - 1,  # buffer actions are in [-1, 1] on both sides
        next_observations=torch.rand(BATCH, 5, generator=g) * 2 - 1,
        rewards=torch.randn(BATCH, generator=g),
        terminated=terminated,
    )


def dqn_batch(step: int) -> ReplayBatch:
    g = torch.Generator().manual_seed(200 + step)
    terminated = (torch.rand(BATCH, generator=g) < 0.25).float()
    terminated[:2] = torch.tensor([0.0, 1.0])
    # A reward scale that changes from step to step: TD errors on both sides of Huber's kink (|d| = 1), and
    # a gradient norm that changes, so clipping it changes Adam's result (a constant clip factor would
    # cancel in Adam's m / sqrt(v)).
    scale = 0.5 + 3.0 * (step % 4)
    return ReplayBatch(
        observations=torch.rand(BATCH, 5, generator=g) * 2 - 1,
        actions=torch.arange(BATCH) % DISCRETE_ACT.n,  # every action, so every output unit trains
        next_observations=torch.rand(BATCH, 5, generator=g) * 2 - 1,
        rewards=torch.randn(BATCH, generator=g) * scale,
        terminated=terminated,
    )


def sb3_samples(batch: ReplayBatch) -> ReplayBufferSamples:
    """The same transitions in SB3's layout: rewards and dones (B, 1); discrete actions (B, 1) long."""
    actions = batch.actions.reshape(-1, 1) if batch.actions.dim() == 1 else batch.actions
    return ReplayBufferSamples(
        observations=batch.observations.clone(),
        actions=actions.clone(),
        next_observations=batch.next_observations.clone(),
        dones=batch.terminated.reshape(-1, 1).clone(),
        rewards=batch.rewards.reshape(-1, 1).clone(),
    )


def feed(model, batch: ReplayBatch) -> None:
    model.replay_buffer.sample = lambda *args, **kwargs: sb3_samples(batch)


# ---------------------------------------------------------------------------------------------- TD3 / DDPG
TD3_KW = dict(tau=TAU, gamma=0.98, policy_kwargs=dict(net_arch=dict(pi=[32, 32], qf=[32, 32])))
CASES = {
    "td3": (sb3.TD3, TD3, dict(policy_delay=2, target_policy_noise=0.3, target_noise_clip=0.4)),
    "ddpg": (sb3.DDPG, DDPG, {}),
}


def td3_pair(name: str):
    sb3_cls, lit_cls, kwargs = CASES[name]
    model = sb3_model(sb3_cls, BOX_ACT, **TD3_KW, **kwargs)
    algo, lit_opts = lit_model(lit_cls, BOX_ACT, **TD3_KW, **kwargs)
    pairs = td3_pairs(model, algo)
    assert_pairs_cover(pairs, model, algo)
    perturb_targets(pairs)
    copy_weights(pairs)
    sb3_opts = [model.actor.optimizer, model.critic.optimizer]
    assert adam_settings(sb3_opts) == adam_settings(lit_opts)
    assert_same(pairs, sb3_opts, lit_opts, "after copying")
    return model, algo, pairs, sb3_opts, lit_opts


def td3_step(model, algo, step: int) -> None:
    batch = box_batch(step)
    feed(model, batch)
    torch.manual_seed(step)  # the smoothing noise: SB3's normal_ and lit_rl's randn_like draw the same numbers
    model.train(gradient_steps=1, batch_size=BATCH)
    algo.metrics.sums, algo.metrics.counts = {}, {}
    torch.manual_seed(step)
    algo.update(batch)


@pytest.mark.parametrize("name", list(CASES))
def test_td3_ddpg_updates_equal_sb3(name):
    """Critic, actor, both targets and both Adam states equal SB3's after every one of STEPS gradient steps."""
    model, algo, pairs, sb3_opts, lit_opts = td3_pair(name)
    assert algo.critic.n_critics == len(model.critic.q_networks) == (2 if name == "td3" else 1)
    for step in range(1, STEPS + 1):
        td3_step(model, algo, step)
        assert_same(pairs, sb3_opts, lit_opts, f"{name} step {step}")
        sb3_logged = model.logger.name_to_value
        assert float(algo.metrics.sums["train/critic_loss"]) == pytest.approx(sb3_logged["train/critic_loss"], rel=RTOL)
        # The actor step happens on the same steps (SB3 logs the actor loss only when there was one).
        assert ("train/actor_loss" in algo.metrics.sums) == ("train/actor_loss" in sb3_logged)
        if "train/actor_loss" in sb3_logged:
            assert float(algo.metrics.sums["train/actor_loss"]) == pytest.approx(
                sb3_logged["train/actor_loss"], rel=RTOL, abs=ATOL
            )
        model.logger.name_to_value.clear()
    assert algo._n_updates == model._n_updates == STEPS


def test_td3_smoothing_noise_is_in_the_comparison():
    """Sanity of the harness: the same steps with other noise (another seed for lit_rl) no longer agree, so
    the test above does compare the target policy smoothing, draw for draw."""
    model, algo, pairs, sb3_opts, lit_opts = td3_pair("td3")
    batch = box_batch(1)
    feed(model, batch)
    torch.manual_seed(1)
    model.train(gradient_steps=1, batch_size=BATCH)
    torch.manual_seed(2)
    algo.update(batch)
    with pytest.raises(AssertionError):
        assert_same(pairs, sb3_opts, lit_opts, "different noise")


@pytest.mark.parametrize("name", list(CASES))
def test_td3_ddpg_each_loss_moves_what_it_trains_and_nothing_else(name):
    """The critic moves at every step (every member); the actor and the targets only at policy-delay steps
    (TD3: even steps; DDPG: every step), exactly where SB3's move."""
    model, algo, pairs, _, _ = td3_pair(name)
    delay = CASES[name][2].get("policy_delay", 1)
    for step in range(1, 5):
        before = snapshot(pairs)
        td3_step(model, algo, step)
        for param, (sb3_moved, lit_moved) in moved(pairs, before).items():
            expected = param.startswith("critic.") or step % delay == 0
            assert sb3_moved == expected, f"SB3 {param} step {step}: the expectation is wrong"
            assert lit_moved == expected, f"lit_rl {param} step {step}: moved={lit_moved}, SB3's moved={sb3_moved}"


# ---------------------------------------------------------------------------------------------- DQN
DQN_KW = dict(gamma=0.97, target_update_interval=4, max_grad_norm=0.1, policy_kwargs=dict(net_arch=[32, 32]))


def dqn_pair(**overrides):
    kwargs = {**DQN_KW, **overrides}
    model = sb3_model(sb3.DQN, DISCRETE_ACT, **kwargs)
    algo, lit_opts = lit_model(DQN, DISCRETE_ACT, **kwargs)
    pairs = dqn_pairs(model, algo)
    assert_pairs_cover(pairs, model, algo)
    perturb_targets(pairs)
    copy_weights(pairs)
    sb3_opts = [model.policy.optimizer]
    assert adam_settings(sb3_opts) == adam_settings(lit_opts)
    assert_same(pairs, sb3_opts, lit_opts, "after copying")
    return model, algo, pairs, sb3_opts, lit_opts


def dqn_step(model, algo, step: int) -> None:
    """One gradient step on the same batch, then one env step's bookkeeping (the target update lives there)."""
    batch = dqn_batch(step)
    feed(model, batch)
    model.train(gradient_steps=1, batch_size=BATCH)
    algo.update(batch)
    model._on_step()
    algo.on_env_step()


@pytest.mark.parametrize("tau", [1.0, 0.3])
def test_dqn_updates_equal_sb3(tau):
    """Huber loss, gradient clipping, Adam and target updates (every 4th env step) equal SB3's, step by step."""
    model, algo, pairs, sb3_opts, lit_opts = dqn_pair(tau=tau)
    for step in range(1, STEPS + 1):
        dqn_step(model, algo, step)
        assert_same(pairs, sb3_opts, lit_opts, f"dqn tau={tau} step {step}")
        # rtol 1e-4 as the parameters: the loss is a mean of 64 Huber terms of the same floats
        assert float(algo.metrics.sums["train/loss"]) / algo.metrics.counts["train/loss"] == pytest.approx(
            model.logger.name_to_value["train/loss"], rel=RTOL
        )
        algo.metrics.sums, algo.metrics.counts = {}, {}


def test_dqn_clipping_is_in_the_comparison():
    """Sanity of the harness: SB3 without clipping ends elsewhere than SB3 with max_grad_norm=0.1, so the test
    above does compare the clipped gradient (these batches' grad norms are 0.16 to 0.26)."""
    clipped, _, pairs, _, _ = dqn_pair()
    unclipped, _, unclipped_pairs, _, _ = dqn_pair(max_grad_norm=1e9)
    for step in range(1, 5):
        for model in (clipped, unclipped):
            feed(model, dqn_batch(step))
            model.train(gradient_steps=1, batch_size=BATCH)
    differ = [
        not torch.allclose(a[1], b[1], rtol=RTOL, atol=ATOL)
        for a, b in zip(pairs, unclipped_pairs, strict=True)
        if a[0].startswith("q_net.")
    ]
    assert all(differ)


def test_dqn_each_loss_moves_what_it_trains_and_nothing_else():
    """Every Q-network parameter moves at every gradient step; the target only at env steps 4 and 8
    (target_update_interval=4), exactly where SB3's moves."""
    model, algo, pairs, _, _ = dqn_pair()
    for step in range(1, 9):
        before = snapshot(pairs)
        dqn_step(model, algo, step)
        for param, (sb3_moved, lit_moved) in moved(pairs, before).items():
            expected = param.startswith("q_net.") or step % 4 == 0
            assert sb3_moved == expected, f"SB3 {param} step {step}: the expectation is wrong"
            assert lit_moved == expected, f"lit_rl {param} step {step}: moved={lit_moved}, SB3's moved={sb3_moved}"


@pytest.mark.parametrize("n_envs", [1, 3])
def test_dqn_exploration_schedule_and_target_update_timing_equal_sb3(monkeypatch, n_envs):
    """Through each side's own collection loop on CartPole: after every vector-env step, the same
    num_timesteps and exploration rate, and the target network updated at the same steps (SB3 counts
    target_update_interval // n_envs calls of _on_step, so with 3 envs and interval 10 every 9 env steps)."""
    kwargs = dict(
        learning_starts=1_000,  # no gradient steps: only the schedule and the target updates are under test
        target_update_interval=10,
        exploration_fraction=0.4,
        exploration_initial_eps=0.9,
        exploration_final_eps=0.2,
        buffer_size=500,
        policy_kwargs=dict(net_arch=[8]),
        seed=0,
    )
    total = 96  # a multiple of train_freq (4) * n_envs: SB3 finishes a started rollout past total_timesteps

    model = sb3.DQN("MlpPolicy", DummyVecEnv([lambda: gym.make("CartPole-v1")] * n_envs), **kwargs)
    sb3_steps, sb3_updates = [], []
    sb3_on_step, sb3_polyak = model._on_step, sb3_dqn_module.polyak_update

    def sb3_record():
        sb3_on_step()
        sb3_steps.append((model.num_timesteps, model.exploration_rate))

    def sb3_polyak_recorded(params, target_params, tau):
        params = list(params)
        if params:  # the q_net's parameters; the second call copies BatchNorm statistics (none here)
            sb3_updates.append((model.num_timesteps, tau))
        sb3_polyak(params, target_params, tau)

    model._on_step = sb3_record
    monkeypatch.setattr(sb3_dqn_module, "polyak_update", sb3_polyak_recorded)
    model.learn(total)

    algo = DQN(**kwargs)
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
    # lit_rl stores the true last observation from same-step autoreset (SB3's VecEnv does the same).
    venv = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1")] * n_envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    algo.learn(total, env=venv, accelerator="cpu")

    assert len(sb3_steps) == total // n_envs and len(sb3_updates) >= 3
    assert [n for n, _ in lit_steps] == [n for n, _ in sb3_steps]
    # Both evaluate start + elapsed * (end - start) / fraction in float64: equal up to the last bits.
    assert [eps for _, eps in lit_steps] == pytest.approx([eps for _, eps in sb3_steps], rel=1e-12, abs=1e-15)
    assert lit_updates == sb3_updates
