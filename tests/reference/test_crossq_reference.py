"""lit_rl's CrossQ side by side with sb3_contrib.CrossQ: same weights, same batches, same random draws."""

from __future__ import annotations

import gymnasium as gym
import pytest
import sb3_contrib
import torch

from lit_rl.algorithms.crossq import CrossQ
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
STEPS = 12
NET_ARCH = {"pi": [32, 32], "qf": [64, 64]}
# lit_rl's Adam is the fused kernel, SB3's the single-tensor loop, and lit_rl's BatchRenorm folds its arithmetic
# into one affine map: the same update rule in a different order, so the two sides drift apart by rounding
# (float32) over the steps, not bit for bit. Measured differences stay well below these bounds.
TOL = dict(rtol=1e-4, atol=1e-5)

CASES = {
    "before_warmup": dict(),
    "after_warmup": dict(renorm_warmup_steps=3),
    "policy_delay_3": dict(policy_delay=3, renorm_warmup_steps=3),
    "gsde": dict(use_sde=True, renorm_warmup_steps=3),
    "fixed_ent_coef": dict(ent_coef=0.2, renorm_warmup_steps=3),
}


def make_pair(renorm_warmup_steps: int = 100_000, policy_delay: int = 1, ent_coef="auto", use_sde: bool = False):
    """sb3-contrib's CrossQ and lit_rl's with the reference's initial weights copied in."""
    env = gym.make("Pendulum-v1")
    policy_kwargs = {"net_arch": NET_ARCH, "renorm_warmup_steps": renorm_warmup_steps}
    common = dict(policy_delay=policy_delay, ent_coef=ent_coef, use_sde=use_sde, batch_size=B, learning_rate=1e-3)
    # A copy: SB3 writes use_sde into the policy_kwargs it is given.
    ref = sb3_contrib.CrossQ(
        "MlpPolicy", env, policy_kwargs=dict(policy_kwargs), buffer_size=1_000, seed=0, device="cpu", **common
    )
    algo = CrossQ(policy_kwargs=policy_kwargs, buffer_size=1_000, **common)
    algo.build_networks(env.observation_space, env.action_space)
    opts = without_trainer(algo)
    actor, critic = actor_pairs(ref.actor, algo.actor), critic_pairs(ref.critic, algo.critic)
    entropy = entropy_pairs(ref.log_ent_coef, algo.entropy.log_ent_coef) if algo.entropy.learned else []
    copy_into_lit(actor + critic + entropy)
    groups = [(actor, ref.actor.optimizer, opts[0]), (critic, ref.critic.optimizer, opts[1])]
    if entropy:
        groups.append((entropy, ref.ent_coef_optimizer, opts[2]))
    return ref, algo, groups


def assert_same(ref, algo, groups, when: str) -> None:
    """Parameters, BatchRenorm statistics and step counters, entropy coefficient and Adam states all agree."""
    for pairs, ref_opt, lit_opt in groups:
        assert_pairs_close(pairs, **TOL, when=when)
        assert_adam_state_close(pairs, ref_opt, lit_opt, rtol=TOL["rtol"], when=when)
    assert algo._n_updates == ref._n_updates
    if not algo.entropy.learned:
        assert float(algo.entropy.value()) == float(ref.ent_coef_tensor)


@pytest.mark.parametrize("case", list(CASES))
def test_updates_match_sb3_contrib(case):
    ref, algo, groups = make_pair(**CASES[case])
    batches = reference_batches(3, 1, B, STEPS)
    feed_reference(ref, batches)
    assert_same(ref, algo, groups, "at the start")
    for k, (seed, batch) in enumerate(batches):
        ref.train(gradient_steps=1, batch_size=B)
        update_lit(algo, seed, batch)
        assert_same(ref, algo, groups, f"after gradient step {k + 1} ({case})")
    # The case means what it says: BatchRenorm's warm-up ended (or not) within the steps compared.
    critic_steps = int(algo.critic.q_net[0].steps)
    assert critic_steps == STEPS
    assert (critic_steps > algo.critic.q_net[0].warmup_steps) == ("renorm_warmup_steps" in CASES[case])


@pytest.mark.parametrize("ent_coef", ["auto", 0.2])
def test_each_loss_moves_exactly_what_it_trains(ent_coef):
    """policy_delay=3: critic-only steps move the critic and its statistics, never the actor or alpha; the
    third step moves the actor (and its statistics) and, when learned, alpha. The reference agrees."""
    ref, algo, groups = make_pair(policy_delay=3, ent_coef=ent_coef, renorm_warmup_steps=1)
    pairs = [p for group, _, _ in groups for p in group]
    critic = {p.name for p in groups[1][0]}
    actor = {p.name for p in groups[0][0]}
    entropy = {p.name for p in pairs} - critic - actor
    fixed_before = None if algo.entropy.learned else algo.entropy.fixed_ent_coef.clone()
    batches = reference_batches(3, 1, B, 3, seed=7)
    feed_reference(ref, batches)
    for k, (seed, batch) in enumerate(batches):
        ref_before, lit_before = values(pairs, "ref"), values(pairs, "lit")
        ref.train(gradient_steps=1, batch_size=B)
        update_lit(algo, seed, batch)
        ref_moved, lit_moved = changed(ref_before, values(pairs, "ref")), changed(lit_before, values(pairs, "lit"))
        expected = critic | (actor | entropy if k == 2 else set())
        assert lit_moved == expected, f"step {k + 1}: unexpected {lit_moved - expected}, still {expected - lit_moved}"
        assert ref_moved == expected, f"step {k + 1}: the reference moved {ref_moved ^ expected} differently"
    assert entropy == (set() if ent_coef == 0.2 else {"log_ent_coef"})
    if fixed_before is not None:
        assert torch.equal(algo.entropy.fixed_ent_coef, fixed_before)
