"""DQN's gradient step, target-network updates, exploration schedule and spaces, without a Trainer."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from gymnasium import spaces

from lit_rl.algorithms.dqn import DQN, q_loss
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.core.q_learning import linear_schedule
from lit_rl.policies.base import split_net_arch
from lit_rl.policies.dqn import DQNPolicy
from tests.helpers import without_trainer

OBS_SPACE = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
ACT_SPACE = spaces.Discrete(3)
BATCH = 32


def make_algo(action_space: spaces.Discrete = ACT_SPACE, **kwargs) -> DQN:
    torch.manual_seed(0)
    params = dict(policy_kwargs=dict(net_arch=[16, 16]), batch_size=BATCH, buffer_size=1_000)
    params.update(kwargs)
    return without_trainer(DQN(**params), OBS_SPACE, action_space)


def make_batch(seed: int = 1, reward_scale: float = 1.0) -> ReplayBatch:
    g = torch.Generator().manual_seed(seed)
    return ReplayBatch(
        observations=torch.rand(BATCH, 3, generator=g) * 2 - 1,
        actions=torch.arange(BATCH) % ACT_SPACE.n,  # every action occurs; stored as long with shape ()
        next_observations=torch.rand(BATCH, 3, generator=g) * 2 - 1,
        rewards=torch.randn(BATCH, generator=g) * reward_scale,
        terminated=(torch.rand(BATCH, generator=g) < 0.3).float(),
    )


def params_of(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def grad_norm(module: torch.nn.Module) -> float:
    return float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in module.parameters()])))


def perturb(module: torch.nn.Module, seed: int = 7) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.3)


def test_networks_optimizer_and_frozen_target():
    algo = make_algo()
    assert algo.q_net(torch.zeros(5, 3)).shape == (5, ACT_SPACE.n)
    linears = [m for m in algo.q_net if isinstance(m, torch.nn.Linear)]
    assert [m.out_features for m in linears] == [16, 16, 3]
    held = {id(p) for group in algo._test_opts.param_groups for p in group["params"]}
    assert held == {id(p) for p in algo.q_net.parameters()}
    assert isinstance(algo._test_opts, torch.optim.Adam) and algo._test_opts.param_groups[0]["lr"] == 1e-4
    assert not any(p.requires_grad for p in algo.q_net_target.parameters())
    for a, b in zip(algo.q_net.parameters(), algo.q_net_target.parameters(), strict=True):
        assert a is not b and torch.equal(a, b)


def test_sb3_defaults():
    algo = DQN()
    algo.build_networks(OBS_SPACE, ACT_SPACE)
    assert (algo.learning_rate, algo.buffer_size, algo.learning_starts, algo.batch_size) == (1e-4, 1_000_000, 100, 32)
    assert (algo.tau, algo.gamma, tuple(algo.train_freq), algo.gradient_steps) == (1.0, 0.99, (4, "step"), 1)
    assert algo.target_update_interval == 10_000 and algo.max_grad_norm == 10.0
    assert (algo.exploration_fraction, algo.exploration_initial_eps, algo.exploration_final_eps) == (0.1, 1.0, 0.05)
    assert algo.policy.net_arch == [64, 64]


def test_one_update_changes_every_q_parameter_and_not_the_target():
    algo = make_algo()
    q_before, target_before = params_of(algo.q_net), params_of(algo.q_net_target)
    algo.update(make_batch())
    q_after, target_after = params_of(algo.q_net), params_of(algo.q_net_target)
    for key in q_before:
        assert not torch.equal(q_before[key], q_after[key]), f"q_net.{key} did not change"
    # Every action's output unit was trained (each action occurs in the batch).
    out_bias = [k for k in q_before if k.endswith("bias")][-1]
    assert torch.all(q_before[out_bias] != q_after[out_bias])
    for key in target_before:
        assert torch.equal(target_before[key], target_after[key]), f"q_net_target.{key} changed"
    assert algo._n_updates == 1 and "train/loss" in algo.metrics.sums


def _update_grads(algo: DQN, batch: ReplayBatch) -> list[torch.Tensor]:
    """The Q-network's gradients right after the update's backward (before clipping)."""
    captured = []

    def backward(loss):
        loss.backward()
        captured.append([p.grad.detach().clone() for p in algo.q_net.parameters()])

    algo.manual_backward = backward
    algo.update(batch)
    return captured[0]


def _reference_grads(algo: DQN, batch: ReplayBatch, bootstrap_net: torch.nn.Module) -> list[torch.Tensor]:
    """Huber(Q(s,a), r + (1 - terminated) * gamma * max_a' Q_boot(s',a')), written out by hand."""
    q_net = copy.deepcopy(algo.q_net)
    with torch.no_grad():
        next_v = bootstrap_net(batch.next_observations).max(dim=1).values
        target = batch.rewards + (1.0 - batch.terminated) * algo.gamma * next_v
    q = q_net(batch.observations)[torch.arange(BATCH), batch.actions]
    diff = (q - target).abs()
    loss = torch.where(diff < 1.0, 0.5 * diff**2, diff - 0.5).mean()
    return list(torch.autograd.grad(loss, list(q_net.parameters())))


def test_loss_is_huber_on_the_target_network_max():
    algo = make_algo(max_grad_norm=1e9)
    perturb(algo.q_net_target)  # make the target network differ from the online one
    batch = make_batch(4, reward_scale=3.0)  # errors on both sides of Huber's kink
    with_target = _reference_grads(algo, batch, algo.q_net_target)
    with_online = _reference_grads(algo, batch, copy.deepcopy(algo.q_net))
    assert any(not torch.allclose(a, b, rtol=1e-3, atol=1e-6) for a, b in zip(with_target, with_online, strict=True))
    grads = _update_grads(algo, batch)
    for g, ref in zip(grads, with_target, strict=True):
        torch.testing.assert_close(g, ref, rtol=1e-5, atol=1e-7)


def test_terminated_transitions_do_not_bootstrap():
    batch = make_batch(6)
    done = batch._replace(terminated=torch.ones(BATCH))
    g_a = _update_grads(make_algo(gamma=0.99), done)
    g_b = _update_grads(make_algo(gamma=1e-6), done)
    for a, b in zip(g_a, g_b, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    not_done = batch._replace(terminated=torch.zeros(BATCH))
    g_c = _update_grads(make_algo(gamma=0.99), not_done)
    g_d = _update_grads(make_algo(gamma=1e-6), not_done)
    assert any(not torch.allclose(c, d) for c, d in zip(g_c, g_d, strict=True))


def test_gradient_norm_is_clipped_before_the_optimizer_step():
    # Huber caps each error's gradient at 1, so even a huge reward gives a small norm: use a small max_grad_norm.
    max_grad_norm = 0.01
    algo = make_algo(max_grad_norm=max_grad_norm)
    norms = {}

    def backward(loss):
        loss.backward()
        norms["after_backward"] = grad_norm(algo.q_net)

    original_step = algo._test_opts.step

    def step(*args, **kwargs):
        norms["at_step"] = grad_norm(algo.q_net)
        return original_step(*args, **kwargs)

    algo.manual_backward = backward
    algo._test_opts.step = step
    algo.update(make_batch(2, reward_scale=1e6))
    assert norms["after_backward"] > 5 * max_grad_norm  # clipping has something to do
    assert norms["at_step"] <= max_grad_norm * (1 + 1e-4)
    assert norms["at_step"] == pytest.approx(max_grad_norm, rel=1e-3)  # scaled down, not zeroed


def test_target_is_copied_exactly_every_target_update_interval_hook_calls():
    algo = make_algo(target_update_interval=5)
    algo.update(make_batch())
    stale = params_of(algo.q_net_target)
    for _ in range(4):
        algo.on_env_step()
    assert all(torch.equal(stale[k], v) for k, v in params_of(algo.q_net_target).items())
    algo.on_env_step()  # 5th call
    online, target = params_of(algo.q_net), params_of(algo.q_net_target)
    assert all(torch.equal(online[k], target[k]) for k in online)
    assert any(not torch.equal(stale[k], target[k]) for k in stale)

    algo.update(make_batch(3))
    for _ in range(4):
        algo.on_env_step()
    assert all(torch.equal(target[k], v) for k, v in params_of(algo.q_net_target).items())
    algo.on_env_step()  # 10th call
    online = params_of(algo.q_net)
    assert all(torch.equal(online[k], v) for k, v in params_of(algo.q_net_target).items())


def test_target_update_interval_counts_env_steps_over_vector_envs():
    # SB3: every max(target_update_interval // n_envs, 1) vector steps.
    algo = make_algo(target_update_interval=5)
    algo._n_envs = 2
    algo.update(make_batch())
    stale = params_of(algo.q_net_target)
    algo.on_env_step()
    assert all(torch.equal(stale[k], v) for k, v in params_of(algo.q_net_target).items())
    algo.on_env_step()
    online = params_of(algo.q_net)
    assert all(torch.equal(online[k], v) for k, v in params_of(algo.q_net_target).items())


def test_soft_target_update_with_tau():
    algo = make_algo(target_update_interval=1, tau=0.25)
    algo.update(make_batch())
    online, old_target = params_of(algo.q_net), params_of(algo.q_net_target)
    algo.on_env_step()
    for k, v in params_of(algo.q_net_target).items():
        torch.testing.assert_close(v, 0.25 * online[k] + 0.75 * old_target[k])
        assert not torch.equal(v, online[k])


def test_exploration_schedule_follows_progress():
    algo = make_algo(exploration_fraction=0.2, exploration_initial_eps=1.0, exploration_final_eps=0.1)
    algo.total_timesteps = 1_000

    def rate_at(step: int) -> float:
        algo.num_timesteps = step
        algo.on_env_step()
        return algo.exploration_rate

    assert rate_at(0) == pytest.approx(1.0)
    assert rate_at(100) == pytest.approx(0.55)  # half of exploration_fraction: halfway from 1.0 to 0.1
    assert rate_at(150) == pytest.approx(0.325)
    assert rate_at(200) == pytest.approx(0.1)
    assert rate_at(201) == pytest.approx(0.1)
    assert rate_at(1_000) == pytest.approx(0.1)
    # The pure schedule, SB3's get_linear_fn; exploration_fraction=0 jumps to the final value.
    assert linear_schedule(1.0, 0.05, 0.1, progress_remaining=0.95) == pytest.approx(0.525)
    assert linear_schedule(1.0, 0.05, 0.0, progress_remaining=1.0) == 0.05


def test_logs_exploration_rate_and_loss():
    algo = make_algo()
    algo.total_timesteps = 1_000
    algo.num_timesteps = 50
    algo.on_env_step()
    algo.update(make_batch())
    algo.dump_logs()
    assert algo.latest_metrics["rollout/exploration_rate"] == pytest.approx(1.0 - 0.5 * 0.95)
    assert algo.latest_metrics["train/loss"] > 0.0 and algo.latest_metrics["train/n_updates"] == 1


def test_policy_action_is_greedy_or_epsilon_greedy_per_observation():
    algo = make_algo(action_space=spaces.Discrete(4))
    obs = torch.rand(4_000, 3) * 2 - 1
    with torch.no_grad():
        greedy = algo.q_net(obs).argmax(dim=1)
        algo.exploration_rate = 1.0
        deterministic = algo.policy_action(obs, deterministic=True)
        torch.manual_seed(0)
        all_random = algo.policy_action(obs, deterministic=False)
        algo.exploration_rate = 0.5
        torch.manual_seed(1)
        halves = [algo.policy_action(obs, deterministic=False) for _ in range(200)]
        algo.exploration_rate = 0.0
        none = algo.policy_action(obs, deterministic=False)
    assert deterministic.dtype == torch.long and torch.equal(deterministic, greedy)
    assert torch.equal(none, greedy)
    counts = torch.bincount(all_random, minlength=4)
    assert counts.min() > 850 and counts.max() < 1150  # uniform over the 4 actions
    # One coin for the batch, as SB3's DQN.predict: a call is all greedy or all random (then ~3/4 differ).
    differing = torch.stack([(half != greedy).float().mean() for half in halves])
    all_greedy = differing == 0
    assert bool((all_greedy | (differing > 0.6)).all())
    assert 0.4 < all_greedy.float().mean() < 0.6


def test_discrete_start_offset_is_respected():
    space = spaces.Discrete(3, start=-1)
    algo = make_algo(action_space=space, max_grad_norm=1e9)
    obs = torch.rand(200, 3)
    algo.exploration_rate = 1.0
    with torch.no_grad():
        greedy = algo.policy_action(obs, deterministic=True)
        explored = algo.policy_action(obs, deterministic=False)
    torch.testing.assert_close(greedy, algo.q_net(obs).argmax(dim=1) - 1)
    assert set(explored.tolist()) == {-1, 0, 1}
    batch = make_batch(8)
    shifted = batch._replace(actions=batch.actions - 1)  # env actions -1, 0, 1 are Q-network outputs 0, 1, 2
    ref = _reference_grads(algo, batch, algo.q_net_target)
    for g, r in zip(_update_grads(algo, shifted), ref, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-7)


def test_predict_returns_integer_actions():
    algo = make_algo()
    algo.observation_space, algo.action_space = OBS_SPACE, ACT_SPACE
    obs = OBS_SPACE.sample()
    action = algo.predict(obs, deterministic=True)[0]
    assert action.shape == () and np.issubdtype(action.dtype, np.integer) and ACT_SPACE.contains(action)
    expected = int(algo.q_net(torch.as_tensor(obs)[None]).argmax())
    assert int(action) == expected
    actions = algo.predict(np.stack([OBS_SPACE.sample() for _ in range(6)]), deterministic=False)[0]
    assert actions.shape == (6,) and np.issubdtype(actions.dtype, np.integer)
    assert all(ACT_SPACE.contains(a) for a in actions)


def test_box_action_space_is_rejected_naming_dqn_and_the_allowed_spaces():
    algo = DQN()
    with pytest.raises(ValueError) as err:
        algo.check_spaces(OBS_SPACE, spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32))
    message = str(err.value)
    assert "DQN" in message and "Box" in message and "Discrete" in message
    algo.check_spaces(OBS_SPACE, ACT_SPACE)  # a Discrete space passes


def dqn_net_arch(net_arch):
    return split_net_arch(net_arch, DQNPolicy.default_net_arch)[1]


def test_net_arch_accepts_a_list_or_the_qf_entry_of_a_dict():
    assert dqn_net_arch(None) == [64, 64]
    assert dqn_net_arch([32]) == [32]
    assert dqn_net_arch({"pi": [8], "qf": [32, 16]}) == [32, 16]
    assert DQNPolicy(OBS_SPACE, ACT_SPACE, net_arch={"pi": [8, 8], "qf": [24]}).net_arch == [24]
    with pytest.raises(ValueError, match="net_arch"):
        dqn_net_arch({"vf": [64]})
    with pytest.raises(ValueError, match="unknown keys"):
        DQN(policy_kwargs={"n_critics": 2})


@pytest.mark.parametrize(
    ("key", "value"),
    [("exploration_fraction", 1.5), ("exploration_final_eps", -0.1), ("target_update_interval", 0)],
)
def test_bad_arguments_are_value_errors_naming_the_key(key, value):
    with pytest.raises(ValueError, match=key):
        DQN(**{key: value})


def test_q_loss_is_pure_and_trains_only_the_q_network():
    algo = make_algo()
    before = {k: v.clone() for k, v in algo.policy.state_dict().items()}
    batch = make_batch()
    loss, metrics = q_loss(algo.policy, batch, 0.99)
    assert loss.shape == () and set(metrics) == {"train/loss"} and not metrics["train/loss"].requires_grad
    loss.backward()
    assert all(p.grad is not None for p in algo.q_net.parameters())
    assert all(p.grad is None for p in algo.q_net_target.parameters())
    assert all(torch.equal(before[k], v) for k, v in algo.policy.state_dict().items())

