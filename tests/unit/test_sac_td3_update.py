"""One SAC / TD3 / DDPG gradient step, without a Trainer: what moves, and by how much."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

from lit_rl.algorithms import sac
from lit_rl.algorithms.ddpg import DDPG
from lit_rl.algorithms.sac import SAC
from lit_rl.algorithms.td3 import TD3
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.core import deterministic
from lit_rl.core.persistence import class_path
from lit_rl.nets.target import polyak_update, update_target
from tests.helpers import without_trainer

OBS_SPACE = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
ACT_SPACE = spaces.Box(-2.0, 2.0, shape=(2,), dtype=np.float32)
BATCH = 32
TAU = 0.1  # large enough that "moved by tau" is far from "did not move" and from "moved by 1"
TINY = {"net_arch": {"pi": [16, 16], "qf": [16, 16]}}

# (class, extra kwargs, names of the (online, target) pairs)
ALGOS = {
    "sac": (SAC, {}, [("critic", "critic_target")]),
    "td3": (TD3, {"policy_delay": 1}, [("critic", "critic_target"), ("actor", "actor_target")]),
    "ddpg": (DDPG, {}, [("critic", "critic_target"), ("actor", "actor_target")]),
}


def make_algo(cls, **kwargs):
    torch.manual_seed(0)
    kwargs = {"policy_kwargs": TINY, "batch_size": BATCH, "buffer_size": 1_000, "tau": TAU, **kwargs}
    algo = cls(learning_rate=1e-2, **kwargs)
    return without_trainer(algo, OBS_SPACE, ACT_SPACE)


def make_batch(seed: int = 1, terminated: torch.Tensor | None = None) -> ReplayBatch:
    g = torch.Generator().manual_seed(seed)
    return ReplayBatch(
        observations=torch.rand(BATCH, 3, generator=g) * 2 - 1,
        actions=torch.rand(BATCH, 2, generator=g) * 2 - 1,
        next_observations=torch.rand(BATCH, 3, generator=g) * 2 - 1,
        rewards=torch.randn(BATCH, generator=g),
        terminated=(torch.rand(BATCH, generator=g) < 0.2).float() if terminated is None else terminated,
    )


def snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def assert_every_member_changed(before: dict, module: torch.nn.Module, n_members: int, prefix: str) -> None:
    """Every parameter changed; for a fused ensemble, every member's slice separately."""
    for name, p in module.named_parameters():
        assert p.shape[0] == n_members, f"{prefix}.{name}"
        for k in range(n_members):
            assert not torch.equal(before[name][k], p.detach()[k]), f"{prefix}.{name}[{k}] did not change"


def assert_every_param_changed(before: dict, module: torch.nn.Module, prefix: str) -> None:
    for name, p in module.named_parameters():
        assert not torch.equal(before[name], p.detach()), f"{prefix}.{name} did not change"


@pytest.mark.parametrize("name", list(ALGOS))
def test_networks_targets_and_optimizers(name):
    cls, kwargs, pairs = ALGOS[name]
    algo = make_algo(cls, **kwargs)
    assert algo.critic.n_critics == (1 if name == "ddpg" else 2)
    optimized = {id(p) for opt in algo._test_opts for group in opt.param_groups for p in group["params"]}
    for online_name, target_name in pairs:
        online, target = getattr(algo, online_name), getattr(algo, target_name)
        # A frozen copy: same values, separate storage, no gradients, never optimised, saved in checkpoints.
        assert target is not online
        for (n, p), (tn, tp) in zip(online.named_parameters(), target.named_parameters(), strict=True):
            assert n == tn and torch.equal(p, tp) and p.data_ptr() != tp.data_ptr()
            assert p.requires_grad and not tp.requires_grad
            assert id(p) in optimized and id(tp) not in optimized
        assert any(k.startswith(f"policy.{target_name}.") for k in algo.state_dict())
    if name == "sac":
        assert len(algo._test_opts) == 3 and id(algo.entropy.log_ent_coef) in optimized
        assert all(opt.defaults["betas"] == (0.9, 0.999) for opt in algo._test_opts)  # Adam's defaults, as SB3
    actions = algo.policy_action(make_batch().observations, deterministic=True)
    assert actions.shape == (BATCH, 2) and actions.abs().max() <= 1.0


@pytest.mark.parametrize("name", list(ALGOS))
def test_one_update_changes_every_optimized_parameter_and_moves_targets_by_tau(name):
    cls, kwargs, pairs = ALGOS[name]
    algo = make_algo(cls, **kwargs)
    actor_before, critic_before = snapshot(algo.actor), snapshot(algo.critic)
    targets_before = {t: snapshot(getattr(algo, t)) for _, t in pairs}
    ent_before = algo.entropy.log_ent_coef.detach().clone() if name == "sac" else None

    algo.update(make_batch())

    assert algo._n_updates == 1
    assert_every_param_changed(actor_before, algo.actor, "actor")
    assert_every_member_changed(critic_before, algo.critic, algo.critic.n_critics, "critic")
    if name == "sac":
        assert not torch.equal(ent_before, algo.entropy.log_ent_coef.detach())
    # target_new == (1 - tau) * target_old + tau * online_new, for every target parameter.
    online_before = {"critic": critic_before, "actor": actor_before}
    for online_name, target_name in pairs:
        online, target = getattr(algo, online_name), getattr(algo, target_name)
        old = targets_before[target_name]
        used_stale_online = False
        for (n, p), (_, tp) in zip(online.named_parameters(), target.named_parameters(), strict=True):
            expected = (1 - TAU) * old[n] + TAU * p.detach()
            torch.testing.assert_close(tp, expected, rtol=1e-5, atol=1e-6, msg=f"{target_name}.{n}")
            assert not torch.allclose(tp, old[n], rtol=0, atol=1e-6), f"{target_name}.{n} did not move"
            stale = (1 - TAU) * old[n] + TAU * online_before[online_name][n]
            used_stale_online |= not torch.allclose(tp, stale, rtol=1e-5, atol=1e-6)
        assert used_stale_online, "the comparison cannot tell the updated online network from the old one"
    expected_metrics = {"train/critic_loss", "train/actor_loss"}
    if name == "sac":
        expected_metrics |= {"train/ent_coef", "train/ent_coef_loss"}
    assert expected_metrics <= set(algo.metrics.sums)


def test_td3_policy_delay_updates_critics_only_on_the_first_step():
    algo = make_algo(TD3)  # policy_delay=2, SB3's default
    assert algo.policy_delay == 2
    actor_before, critic_before = snapshot(algo.actor), snapshot(algo.critic)
    targets_before = {t: snapshot(getattr(algo, t)) for t in ("actor_target", "critic_target")}

    algo.update(make_batch(1))
    assert_every_member_changed(critic_before, algo.critic, 2, "critic")
    for k, v in snapshot(algo.actor).items():
        assert torch.equal(v, actor_before[k]), f"actor.{k} changed on a delayed step"
    for t, before in targets_before.items():
        for k, v in snapshot(getattr(algo, t)).items():
            assert torch.equal(v, before[k]), f"{t}.{k} changed on a delayed step"
    assert "train/actor_loss" not in algo.metrics.sums

    # The second update (n_updates % 2 == 0) updates the actor and both targets.
    algo.update(make_batch(2))
    assert_every_param_changed(actor_before, algo.actor, "actor")
    for t, before in targets_before.items():
        assert any(not torch.equal(v, before[k]) for k, v in snapshot(getattr(algo, t)).items()), f"{t} did not move"


def test_sac_target_update_interval_skips_target_updates():
    """As SB3: steps 0, 2, 4, ... of the gradient steps after each rollout update the targets (see
    tests/reference/test_sac_reference.py)."""
    algo = make_algo(SAC, target_update_interval=2)
    moves = []
    for rollout_steps in (3, 1):
        algo.on_rollout_step(0)  # collect_rollouts' first call: a new rollout
        for i in range(rollout_steps):
            before = snapshot(algo.critic_target)
            algo.round_gradient_step = i  # what training_step sets
            algo.update(make_batch(10 * rollout_steps + i))
            after = snapshot(algo.critic_target)
            moved = [not torch.equal(v, before[k]) for k, v in after.items()]
            assert all(moved) or not any(moved)
            moves.append(all(moved))
    assert moves == [True, False, True, True]


@pytest.mark.parametrize("name", list(ALGOS))
def test_actor_loss_adds_no_gradient_to_the_critic(name):
    """The critic's gradients at the end of an update are exactly those of the critic loss."""
    cls, kwargs, _ = ALGOS[name]
    algo = make_algo(cls, **kwargs)
    captured: list[list[torch.Tensor]] = []
    critic_params = list(algo.critic.parameters())

    def backward(loss):
        loss.backward()
        if critic_params[0].grad is not None and not captured:  # right after the critic loss's backward
            captured.append([p.grad.clone() for p in critic_params])

    algo.manual_backward = backward
    algo.update(make_batch())
    assert "train/actor_loss" in algo.metrics.sums
    for p, g in zip(critic_params, captured[0], strict=True):
        assert torch.equal(p.grad, g)


@pytest.mark.parametrize("name", list(ALGOS))
def test_terminated_transitions_do_not_bootstrap(name):
    """With every transition terminated the critic target is the reward, whatever gamma is."""
    cls, kwargs, _ = ALGOS[name]

    def critic_after_one_update(gamma: float, terminated: torch.Tensor) -> list[torch.Tensor]:
        algo = make_algo(cls, gamma=gamma, **kwargs)
        torch.manual_seed(3)
        algo.update(make_batch(6, terminated=terminated))
        return [p.detach().clone() for p in algo.critic.parameters()]

    done, not_done = torch.ones(BATCH), torch.zeros(BATCH)
    for a, b in zip(critic_after_one_update(0.99, done), critic_after_one_update(1e-6, done), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    pairs = zip(critic_after_one_update(0.99, not_done), critic_after_one_update(1e-6, not_done), strict=True)
    assert any(not torch.allclose(a, b) for a, b in pairs)


@pytest.mark.parametrize("name", list(ALGOS))
def test_critic_target_comes_from_the_target_networks(name):
    """Shifting a target network changes the critic loss; the online networks are not used for the target."""
    cls, kwargs, pairs = ALGOS[name]

    def critic_loss(shift: str | None) -> float:
        algo = make_algo(cls, **kwargs)
        if shift is not None:
            with torch.no_grad():
                for p in getattr(algo, shift).parameters():
                    p.add_(0.5)
        torch.manual_seed(3)
        algo.update(make_batch(7, terminated=torch.zeros(BATCH)))
        return float(algo.metrics.sums["train/critic_loss"])

    reference = critic_loss(None)
    for _, target_name in pairs:
        assert abs(critic_loss(target_name) - reference) > 1e-3 * max(abs(reference), 1.0), target_name


def test_ddpg_is_td3_without_its_tricks_and_rebuilds_from_its_hparams():
    def built(algo):
        algo.build_networks(OBS_SPACE, ACT_SPACE)
        return algo

    algo = built(DDPG(policy_kwargs={"net_arch": [8]}, seed=0))
    assert (algo.critic.n_critics, algo.policy_delay, algo.target_policy_noise) == (1, 1, 0.0)
    assert (algo.learning_rate, algo.tau, algo.policy.actor_kwargs["net_arch"]) == (1e-3, 0.005, [8])
    assert built(DDPG(policy_kwargs={"n_critics": 2})).critic.n_critics == 2  # only a default, as SB3
    rebuilt = built(DDPG(**algo.hparams))
    assert (rebuilt.critic.n_critics, rebuilt.policy_delay, rebuilt.policy.critic_kwargs["net_arch"]) == (1, 1, [8])
    td3 = built(TD3())
    pi, qf = td3.policy.actor_kwargs["net_arch"], td3.policy.critic_kwargs["net_arch"]
    assert (pi, qf, td3.learning_rate, td3.action_noise) == (
        [400, 300],
        [400, 300],
        1e-3,
        None,
    )
    sac = built(SAC())
    assert (sac.policy.actor_kwargs["net_arch"], sac.learning_rate, sac.ent_coef, sac.critic.n_critics) == (
        [256, 256],
        3e-4,
        "auto",
        2,
    )


def test_polyak_update_and_update_target():
    online, target = torch.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    with torch.no_grad():
        online.weight.fill_(2.0)
        online.running_mean.fill_(5.0)
    target.requires_grad_(False)
    update_target(online, target, 0.25)
    torch.testing.assert_close(target.weight, torch.full((3,), 0.75 * 1.0 + 0.25 * 2.0))
    torch.testing.assert_close(target.running_mean, torch.full((3,), 5.0))  # buffers are copied
    a, b = [torch.ones(2)], [torch.zeros(2)]
    polyak_update(a, b, 1.0)
    assert torch.equal(b[0], a[0])
    with pytest.raises(ValueError, match="target parameters"):
        polyak_update(a, [], 0.5)


@pytest.mark.parametrize(
    ("cls", "kwargs", "key"),
    [
        (SAC, {"policy_kwargs": {"batch_norm": True}}, "batch_norm"),
        (TD3, {"policy_delay": 0}, "policy_delay"),
        (TD3, {"target_policy_noise": -0.1}, "target_policy_noise"),
        (SAC, {"target_update_interval": 0}, "target_update_interval"),
        (SAC, {"ent_coef": "learned"}, "ent_coef"),
        (TD3, {"action_noise": "gaussian"}, "action_noise"),
    ],
)
def test_bad_arguments_fail_at_construction_naming_the_key(cls, kwargs, key):
    with pytest.raises(ValueError, match=key):
        cls(**kwargs)


def grads(module: torch.nn.Module) -> list[bool]:
    """For each parameter: does it hold a gradient?"""
    return [p.grad is not None for p in module.parameters()]


@pytest.mark.parametrize("name", list(ALGOS))
def test_losses_are_pure_and_train_only_their_network(name):
    """critic_loss / actor_loss move nothing; their gradients reach only the network each one trains."""
    cls, kwargs, _ = ALGOS[name]
    algo = make_algo(cls, **kwargs)
    policy, batch, alpha = algo.policy, make_batch(), torch.tensor(0.2)
    before = snapshot(policy)
    if name == "sac":
        loss, metrics = sac.critic_loss(policy, batch, alpha, 0.99)
    else:
        loss, metrics = deterministic.critic_loss(policy, batch, 0.99, algo.target_smoothing)
    assert loss.shape == () and loss.requires_grad and set(metrics) == {"train/critic_loss"}
    assert not metrics["train/critic_loss"].requires_grad and torch.equal(metrics["train/critic_loss"], loss)
    loss.backward()
    assert all(grads(policy.critic)) and not any(grads(policy.actor))
    policy.zero_grad(set_to_none=True)

    if name == "sac":
        actions, log_prob = policy.actor.action_log_prob(batch.observations)
        loss, metrics = sac.actor_loss(policy, batch.observations, actions, log_prob, alpha)
    else:
        loss, metrics = deterministic.actor_loss(policy, batch.observations)
    assert set(metrics) == {"train/actor_loss"} and not metrics["train/actor_loss"].requires_grad
    loss.backward()
    # Through the critics, but no gradient work on their parameters; they are trainable again afterwards.
    assert all(grads(policy.actor)) and not any(grads(policy.critic))
    assert all(p.requires_grad for p in policy.critic.parameters())
    after = snapshot(policy)
    assert all(torch.equal(before[k], after[k]) for k in before), "a loss function changed the policy"


def test_no_algorithm_imports_another_and_ddpg_keeps_its_class_path():
    folder = Path(sac.__file__).parent
    names = {"crossq", "sac", "td3", "ddpg", "dqn", "tqc"}
    for name in names:
        tree = ast.parse((folder / f"{name}.py").read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        others = {f"lit_rl.algorithms.{other}" for other in names - {name}}
        assert not imported & others, f"{name}.py imports {sorted(imported & others)}"
    assert not issubclass(DDPG, TD3) and class_path(DDPG) == "lit_rl.algorithms.ddpg.DDPG"
    # DDPG = TD3's arguments and defaults without its three settings, which it pins (SB3's DDPG).
    td3_args = dict(inspect.signature(TD3).parameters)
    tricks = {"policy_delay", "target_policy_noise", "target_noise_clip"}
    assert dict(inspect.signature(DDPG).parameters) == {k: v for k, v in td3_args.items() if k not in tricks}
    assert {k: DDPG.pinned_values[k] for k in tricks} == {"policy_delay": 1, "target_policy_noise": 0.0,
                                                         "target_noise_clip": 0.0}  # fmt: skip
    with pytest.raises(TypeError, match=r"DDPG does not take \['policy_delay'\].*use TD3"):
        DDPG(policy_delay=2)
