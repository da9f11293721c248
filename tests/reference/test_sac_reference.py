"""lit_rl's SAC side by side with stable_baselines3.SAC: same weights, same batches, same random draws."""

from __future__ import annotations

import gymnasium as gym
import pytest
import stable_baselines3
import torch

from lit_rl.algorithms.sac import SAC
from tests.reference.sb3_weights import (
    actor_pairs,
    assert_adam_state_close,
    assert_pairs_close,
    changed,
    copy_into_lit,
    critic_pairs,
    entropy_pairs,
    feed_reference,
    reference_batches,
    update_lit,
    values,
    without_trainer,
)

B = 64
NET_ARCH = {"pi": [32, 32], "qf": [64, 64]}
TAU = 0.05  # larger than the default 0.005 so that the target critics move visibly within a few steps
# lit_rl's Adam is the fused kernel and its Polyak update a lerp, SB3's the single-tensor Adam loop and
# mul + add: the same rules in a different order, so the sides drift apart by float32 rounding, not bit for bit.
TOL = dict(rtol=1e-4, atol=1e-5)

# Gradient steps per SB3 ``train`` call (one call per rollout); SB3 counts target_update_interval within a call.
ONE_PER_ROLLOUT = [1] * 12
CASES = {
    "auto_ent_coef": (dict(), ONE_PER_ROLLOUT),
    "fixed_ent_coef": (dict(ent_coef=0.2), ONE_PER_ROLLOUT),
    "gsde": (dict(use_sde=True), ONE_PER_ROLLOUT),
    "target_update_interval_2": (dict(target_update_interval=2), ONE_PER_ROLLOUT),
    "target_update_interval_2_gradient_steps_5": (dict(target_update_interval=2), [5, 5, 2]),
}


def make_pair(ent_coef="auto", use_sde: bool = False, target_update_interval: int = 1):
    """Stable-Baselines3's SAC and lit_rl's with the reference's initial weights copied in."""
    env = gym.make("Pendulum-v1")
    common = dict(
        ent_coef=ent_coef,
        use_sde=use_sde,
        target_update_interval=target_update_interval,
        batch_size=B,
        tau=TAU,
        buffer_size=1_000,
    )
    # A copy of policy_kwargs each: SB3 writes use_sde into the dict it is given.
    ref = stable_baselines3.SAC("MlpPolicy", env, policy_kwargs={"net_arch": NET_ARCH}, seed=0, device="cpu", **common)
    algo = SAC(policy_kwargs={"net_arch": NET_ARCH}, **common)
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


def run_rollouts(ref, algo, gradient_steps: list[int], check=None) -> None:
    """One SB3 ``train`` call and as many lit_rl updates per entry, each after a (skipped) rollout."""
    batches = reference_batches(3, 1, B, sum(gradient_steps), seed=3)
    feed_reference(ref, batches)
    for n in gradient_steps:
        algo.on_rollout_step(0)  # what collect_rollouts calls first
        ref.train(gradient_steps=n, batch_size=B)
        for i in range(n):
            algo.round_gradient_step = i  # what training_step sets
            update_lit(algo, *batches.pop(0))
        if check is not None:
            check()


@pytest.mark.parametrize("case", list(CASES))
def test_updates_match_stable_baselines3(case):
    kwargs, gradient_steps = CASES[case]
    ref, algo, groups, target = make_pair(**kwargs)

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
    run_rollouts(ref, algo, gradient_steps, check)


@pytest.mark.parametrize("ent_coef", ["auto", 0.2])
@pytest.mark.parametrize("target_update_interval", [1, 2])
def test_each_loss_moves_exactly_what_it_trains(ent_coef, target_update_interval):
    """Within one train call of 4 gradient steps, every step moves the actor, the critic and (when learned)
    alpha; the target critics move, by Polyak averaging, only on every ``target_update_interval``-th step of
    the call. The reference agrees step by step."""
    ref, algo, groups, target = make_pair(ent_coef=ent_coef, target_update_interval=target_update_interval)
    trained = [p for group, _, _ in groups for p in group]
    pairs = trained + target
    fixed_before = None if algo.entropy.learned else algo.entropy.fixed_ent_coef.clone()
    n = 4
    batches = reference_batches(3, 1, B, n, seed=5)
    ref_values = []  # the reference's state at the start of every gradient step, then at the end of the call
    feed_reference(ref, batches, on_sample=lambda: ref_values.append(values(pairs, "ref")))
    ref.train(gradient_steps=n, batch_size=B)
    ref_values.append(values(pairs, "ref"))
    lit_values = [values(pairs, "lit")]
    algo.on_rollout_step(0)
    for i, (seed, batch) in enumerate(batches):
        algo.round_gradient_step = i  # what training_step sets
        update_lit(algo, seed, batch)
        lit_values.append(values(pairs, "lit"))

    for step in range(n):
        expected = {p.name for p in trained}
        if step % target_update_interval == 0:
            expected |= {p.name for p in target}
        lit_moved = changed(lit_values[step], lit_values[step + 1])
        ref_moved = changed(ref_values[step], ref_values[step + 1])
        assert lit_moved == expected, f"step {step}: unexpected {lit_moved - expected}, still {expected - lit_moved}"
        assert ref_moved == expected, f"step {step}: the reference moved {ref_moved ^ expected} differently"
        for p in target if step % target_update_interval == 0 else []:
            # Polyak: target <- (1 - tau) target + tau online, with the online weights after this step's update.
            online = lit_values[step + 1][p.name.replace("critic_target", "critic")]
            expected_value = torch.lerp(lit_values[step][p.name], online, TAU)
            torch.testing.assert_close(lit_values[step + 1][p.name], expected_value, rtol=0, atol=0)
    assert ("log_ent_coef" in expected) == (ent_coef == "auto")
    if fixed_before is not None:
        assert torch.equal(algo.entropy.fixed_ent_coef, fixed_before)
