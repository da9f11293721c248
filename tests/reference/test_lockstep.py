"""Lockstep runs (``tests/reference/lockstep.py``): lit_rl and the reference through 200 updates on Hopper-v4
(CrossQ before and after BatchRenorm's warm-up, SAC, TD3, TQC), and 60 on Walker2d, HalfCheetah and Ant.

Two kinds of run. Resynchronised: lit_rl gets the reference's whole state
before every update, so each record is one update's error; it must stay at
float32 rounding on every update, except where the sides' ReLU inputs (or the
critic that ``min`` picks) fall on opposite sides of the kink: there 1e-7 of
rounding moves a gradient by one sample's share, which is no bug. Free-running:
the difference accumulates and must stay at rounding level until the first such
flip; after it the two runs part, as two runs from one seed on different
hardware do.

Measured (small nets, 2-core EPYC, torch 2.13): without a flip the largest
relative difference of any group (parameters, BatchRenorm statistics, Adam
moments, losses) stays below 4e-5 (Adam's exp_avg of the critic; everything else
~1e-6), resynchronised or free-running; a flip update reaches 1e-3 to 1e-1. A BatchRenorm momentum of 0.011 instead of
0.01, or Adam beta2 0.99 instead of 0.999 on the critic, exceeds 1e-3 from the
first updates on, with no flip to explain it.
"""

from __future__ import annotations

import pytest

from lit_rl.nets.batch_renorm import BatchRenorm
from tests.reference.lockstep import build

N = 200
TOL = 1e-3  # ~30x the largest rounding difference measured without a flip
NETS = {"net_arch": {"pi": [32, 32], "qf": [64, 64]}}
CROSSQ = dict(batch_size=64, learning_rate=1e-3, policy_delay=3, policy_kwargs=NETS)
CASES = {
    "crossq_warmup": ("crossq", CROSSQ),  # BatchRenorm still plain batch norm (warm-up 100000)
    "crossq_renorm": ("crossq", {**CROSSQ, "policy_kwargs": {**NETS, "renorm_warmup_steps": 20}}),
    "sac": ("sac", dict(batch_size=64, policy_kwargs=NETS)),
    "td3": ("td3", dict(batch_size=64, policy_kwargs=NETS)),  # policy_delay 2: the actor loss reads Q_1 alone
    "tqc": ("tqc", dict(batch_size=64, policy_kwargs=NETS)),
}


def run(case: str, resync: bool, fault=None, env_id: str = "Hopper-v4", n: int = N):
    algo, hp = CASES[case]
    state = build(algo, env_id, hp, learning_starts=1_000, n_updates=n, resync=resync)
    if fault is not None:
        fault(state)
    return state, state.run(n)


def worst(record) -> float:
    return max(record["rel"].values())


def flipped(record) -> bool:
    return any(record["flips"].values())


def unexplained(records) -> list[int]:
    """Updates above the tolerance with no ReLU or argmin flip to explain them."""
    return [r["update"] for r in records if worst(r) > TOL and not flipped(r)]


@pytest.mark.parametrize("case", list(CASES))
def test_every_update_equals_the_reference_to_rounding(case):
    state, records = run(case, resync=True)
    assert unexplained(records) == []
    assert sum(map(flipped, records)) <= N // 20  # the excused updates are rare
    assert all(r["abs"][g] == 0 for r in records for g in r["abs"] if g.endswith("bn_steps"))
    groups = set().union(*(r["rel"] for r in records))
    expected = {"actor.params", "critic.params", "critic.exp_avg", "actor.exp_avg_sq", "loss.critic_loss"}
    assert expected <= groups
    if case.startswith("crossq"):
        assert {"actor.bn_mean", "critic.bn_var", "ent_coef.exp_avg", "loss.actor_loss"} <= groups
        critic_bn = state.lit.critic.q_net[0]
        assert (int(critic_bn.steps) > critic_bn.warmup_steps) == (case == "crossq_renorm")
    else:
        assert "critic_target.params" in groups
    if case == "td3":
        assert "actor_target.params" in groups


@pytest.mark.parametrize("case", list(CASES))
def test_free_running_drift_stays_at_rounding_until_a_kink_flips(case):
    _, records = run(case, resync=False)
    first_flip = next((i for i, r in enumerate(records) if flipped(r)), len(records))
    before = records[:first_flip]
    assert len(before) >= 5
    assert max(map(worst, before)) <= TOL, [(r["update"], worst(r)) for r in before if worst(r) > TOL]


# The other MuJoCo tasks: other observation and action sizes, other reward and termination rules.
@pytest.mark.parametrize("env_id", ["Walker2d-v4", "HalfCheetah-v4", "Ant-v4"])
@pytest.mark.parametrize("case", ["crossq_renorm", "sac"])
def test_other_tasks_every_update_equals_the_reference_to_rounding(case, env_id):
    state, records = run(case, resync=True, env_id=env_id, n=60)
    assert state.env.spec.id == env_id
    assert unexplained(records) == []
    assert sum(map(flipped, records)) <= 6


def _bn_momentum(state) -> None:
    for m in state.lit.critic.modules():
        if isinstance(m, BatchRenorm):
            m.momentum = 0.011


def _adam_beta2(state) -> None:
    state.optimizers["critic"][1].param_groups[0]["betas"] = (0.5, 0.99)


@pytest.mark.parametrize("fault", [_bn_momentum, _adam_beta2])
def test_a_wrong_rule_shows_as_an_unexplained_jump(fault):
    _, records = run("crossq_warmup", resync=True, fault=fault)
    bad = unexplained(records)
    assert bad and bad[0] <= 3 and len(bad) >= N // 10  # from the first updates on, and again and again


def test_bad_arguments_name_the_allowed_values():
    with pytest.raises(ValueError, match=r"algo='ppo' is not allowed; allowed: crossq, sac, tqc, td3"):
        build("ppo")
    with pytest.raises(ValueError, match=r"collect='policy' is not allowed; allowed: random, reference"):
        build("sac", collect="policy")


# Compiling the whole step takes ~30 s on 2 cores (inductor, cold cache); `make test-fast` skips it.
@pytest.mark.slow
def test_the_compiled_update_equals_the_reference_to_rounding():
    algo, hp = CASES["sac"]
    state = build(algo, "Hopper-v4", hp, learning_starts=1_000, n_updates=30, resync=True, compile=True)
    records = state.run(30)
    assert state.taps is None  # hooks would be traced into the graph: no flip counts, so few updates
    assert max(map(worst, records)) <= TOL
    assert state.lit.compile_updates is True
