"""Lockstep runs of DQN and QR-DQN on Breakout's frames (``tests/reference/lockstep.py``): lit_rl against
Stable-Baselines3 / sb3-contrib with ``CnnPolicy`` on (4, 84, 84) uint8 stacks from ``lit_rl/Atari-v0``, the
reference acting epsilon-greedily, target copies every 10 updates.

Resynchronised, each record is one update's error; free-running, the difference accumulates over the updates and
the target copies. Both must stay at float32 rounding through three convolutions; a target copied one update late
shows as a jump.
"""

from __future__ import annotations

import pytest

from tests.reference.lockstep import build

N, STARTS = 30, 300
TOL = 1e-3  # rounding through the convolutions stays near 1e-5
SMALL = {"features_extractor_kwargs": {"features_dim": 64}}
HP = {
    "dqn": dict(target_update_interval=10, policy_kwargs=SMALL),
    "qrdqn": dict(target_update_interval=10, policy_kwargs={**SMALL, "n_quantiles": 8}),
}


def run(algo: str, resync: bool, fault=None):
    state = build(algo, "lit_rl/Atari-v0", HP[algo], learning_starts=STARTS, n_updates=N, resync=resync)
    if fault is not None:
        fault(state)
    return state.run(N)


# CI runs the free-running DQN case (the drift over updates and target copies); make test-all runs all.
CASES = [pytest.param(algo, resync, marks=() if (algo, resync) == ("dqn", False) else pytest.mark.slow,
                      id=f"{algo}-{'resync' if resync else 'free_running'}")
         for algo in ("dqn", "qrdqn") for resync in (True, False)]  # fmt: skip


@pytest.mark.parametrize(("algo", "resync"), CASES)
def test_updates_on_atari_frames_equal_the_reference(algo, resync):
    records = run(algo, resync)
    worst = max(max(r["rel"].values()) for r in records)
    groups = set(records[-1]["rel"])
    assert {"q_net.params", "q_net_target.params", "q_net.exp_avg", "loss.loss"} <= groups, groups
    print(f"{algo} {'resync' if resync else 'free-running'}: largest relative difference over {N} updates {worst:.1e}")
    assert worst < TOL, [(r["update"], max(r["rel"].items(), key=lambda kv: kv[1])) for r in records]


@pytest.mark.slow
def test_a_target_copied_one_update_late_shows():
    def late(state):
        state.lit.target_update_interval = 11

    records = run("dqn", resync=False, fault=late)
    assert max(r["rel"]["q_net_target.params"] for r in records) > 10 * TOL
