"""lit_rl's TQC side by side with sb3_contrib.TQC: same weights, same batches, same random draws."""

from __future__ import annotations

import gymnasium as gym
import pytest
import sb3_contrib
import torch
from sb3_contrib.common.utils import quantile_huber_loss as reference_quantile_huber_loss

from lit_rl.algorithms.tqc import TQC, quantile_huber_loss
from tests.reference.sb3_weights import (
    actor_pairs,
    assert_adam_state_close,
    assert_pairs_close,
    copy_into_lit,
    critic_pairs,
    entropy_pairs,
    feed_reference,
    reference_batches,
    update_lit,
    without_trainer,
)

B = 64
NET_ARCH = {"pi": [32, 32], "qf": [64, 64]}
TAU = 0.05  # larger than the default 0.005 so that the target critics move visibly within a few steps
# Fused Adam and a lerp Polyak update on lit_rl's side, the single-tensor loop and mul + add on SB3's, and the
# quantile loss averaged in another layout: the same rules in a different order, equal up to float32 rounding.
TOL = dict(rtol=1e-4, atol=1e-5)

ONE_PER_ROLLOUT = [1] * 12  # gradient steps per SB3 ``train`` call (one call per rollout)
CASES = {
    "auto_ent_coef": (dict(), ONE_PER_ROLLOUT),
    "fixed_ent_coef": (dict(ent_coef=0.2), ONE_PER_ROLLOUT),
    "gsde": (dict(use_sde=True), ONE_PER_ROLLOUT),
    "drop_0": (dict(top_quantiles_to_drop_per_net=0), ONE_PER_ROLLOUT),
    "5_quantiles_drop_3_of_3_critics": (dict(n_quantiles=5, n_critics=3, top_quantiles_to_drop_per_net=3), [3, 3]),
    "target_update_interval_2_gradient_steps_5": (dict(target_update_interval=2), [5, 5, 2]),
}


def make_pair(
    ent_coef="auto",
    use_sde: bool = False,
    target_update_interval: int = 1,
    top_quantiles_to_drop_per_net: int = 2,
    n_quantiles: int = 10,
    n_critics: int = 2,
    lit_drop: int | None = None,
):
    """sb3-contrib's TQC and lit_rl's with the reference's initial weights copied in (``lit_drop``: a fault)."""
    env = gym.make("Pendulum-v1")
    common = dict(
        ent_coef=ent_coef,
        use_sde=use_sde,
        target_update_interval=target_update_interval,
        batch_size=B,
        tau=TAU,
        buffer_size=1_000,
    )
    policy_kwargs = {"net_arch": NET_ARCH, "n_quantiles": n_quantiles, "n_critics": n_critics}
    # A copy of policy_kwargs each: SB3 writes use_sde into the dict it is given.
    ref = sb3_contrib.TQC(
        "MlpPolicy", env, policy_kwargs=dict(policy_kwargs), seed=0, device="cpu",
        top_quantiles_to_drop_per_net=top_quantiles_to_drop_per_net, **common,
    )  # fmt: skip
    drop = top_quantiles_to_drop_per_net if lit_drop is None else lit_drop
    algo = TQC(policy_kwargs=dict(policy_kwargs), top_quantiles_to_drop_per_net=drop, **common)
    algo.build_networks(env.observation_space, env.action_space)
    algo._n_envs = 1  # set by setup() from the env; on_rollout_step's gSDE noise needs it
    opts = without_trainer(algo)
    actor, critic = actor_pairs(ref.actor, algo.actor), critic_pairs(ref.critic, algo.critic)
    target = critic_pairs(ref.critic_target, algo.critic_target, name="critic_target")
    entropy = entropy_pairs(ref.log_ent_coef, algo.entropy.log_ent_coef) if algo.entropy.learned else []
    copy_into_lit(actor + critic + target + entropy)
    groups = [(actor, ref.actor.optimizer, opts[0]), (critic, ref.critic.optimizer, opts[1])]
    if entropy:
        groups.append((entropy, ref.ent_coef_optimizer, opts[2]))
    return ref, algo, groups, target


def run_and_check(ref, algo, groups, target, gradient_steps: list[int], case: str) -> None:
    """One SB3 ``train`` call and as many lit_rl updates per entry; compare everything after each call."""

    def check() -> None:
        when = f"after {algo._n_updates} gradient steps ({case})"
        for pairs, ref_opt, lit_opt in groups:
            assert_pairs_close(pairs, **TOL, when=when)
            assert_adam_state_close(pairs, ref_opt, lit_opt, rtol=TOL["rtol"], when=when)
        assert_pairs_close(target, **TOL, when=when)
        assert algo._n_updates == ref._n_updates
        if not algo.entropy.learned:
            assert float(algo.entropy.value()) == float(ref.ent_coef_tensor)

    check()
    batches = reference_batches(3, 1, B, sum(gradient_steps), seed=3)
    feed_reference(ref, batches)
    for n in gradient_steps:
        algo.on_rollout_step(0)  # what collect_rollouts calls first
        ref.train(gradient_steps=n, batch_size=B)
        for i in range(n):
            algo.round_gradient_step = i  # what training_step sets
            update_lit(algo, *batches.pop(0))
        check()


@pytest.mark.parametrize("case", list(CASES))
def test_updates_match_sb3_contrib(case):
    kwargs, gradient_steps = CASES[case]
    ref, algo, groups, target = make_pair(**kwargs)
    assert (
        algo.n_target_quantiles == ref.critic.quantiles_total - ref.top_quantiles_to_drop_per_net * ref.critic.n_critics
    )
    run_and_check(ref, algo, groups, target, gradient_steps, case)


def test_a_wrong_number_of_dropped_quantiles_is_caught():
    """The comparison is sharp enough to see one quantile per critic dropped too many."""
    ref, algo, groups, target = make_pair(lit_drop=3)
    with pytest.raises(AssertionError, match="differs from the reference"):
        run_and_check(ref, algo, groups, target, [1] * 3, "fault: lit_rl drops 3, sb3-contrib 2")


def test_quantile_huber_loss_equals_sb3_contrib():
    g = torch.Generator().manual_seed(0)
    quantiles = torch.randn(3, 16, 7, generator=g, requires_grad=True)  # (n_critics, batch, n_quantiles)
    target = torch.randn(16, 15, generator=g) * 2
    loss = quantile_huber_loss(quantiles, target)
    ref_quantiles = quantiles.detach().transpose(0, 1).clone().requires_grad_(True)  # sb3-contrib: batch first
    ref_loss = reference_quantile_huber_loss(ref_quantiles, target[:, None, :], sum_over_quantiles=False)
    torch.testing.assert_close(loss, ref_loss)
    loss.backward()
    ref_loss.backward()
    torch.testing.assert_close(quantiles.grad.transpose(0, 1), ref_quantiles.grad)
