"""Collection in lockstep with SB3's SAC and sb3-contrib's CrossQ on Hopper-v4 (the parity runs' task).

Both libraries get the same seed and the same initial weights, and torch's RNG in the same state when ``learn``
starts; ``gradient_steps=0`` keeps the weights put, so every env step of the run can be compared: the uniform
warm-up actions (the action space seeded by the model seed), the policy's stochastic actions after
``learning_starts`` (the actor in eval mode), the transitions stored, and what an episode end stores
(terminated vs truncated, the true final observation). A second part records the order of env steps and gradient
steps within ``train_freq`` rounds, at ``learning_starts`` and at the end of the budget.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import pytest
import sb3_contrib
import stable_baselines3 as sb3
import torch
from sb3_contrib.common.torch_layers import BatchRenorm1d
from stable_baselines3.common.callbacks import BaseCallback as SB3BaseCallback

import lit_rl
from lit_rl.callbacks.sb3 import BaseCallback
from tests.reference.sb3_weights import actor_pairs, assert_pairs_close, copy_into_lit, critic_pairs

ENV_ID = "Hopper-v4"
SEED = 3
TOTAL = 300  # env steps of the lockstep run
WARMUP = 100  # learning_starts: steps [0, 100) take uniform random actions, [100, 300) the policy's
TIME_LIMIT = 20  # a random Hopper falls after 14 to ~40 steps: the run holds terminated and truncated episodes
TORCH_SEED = 11  # torch's RNG state when each learn() starts: the policy's Gaussian draws
ALGOS = {
    "SAC": (sb3.SAC, lit_rl.SAC, [16, 16]),
    "CrossQ": (sb3_contrib.CrossQ, lit_rl.CrossQ, {"pi": [16, 16], "qf": [16, 16]}),
}
# The env is stepped with actions that differ by one float32 step (see the xfail cases below), and CrossQ's
# actor rounds its eval-mode BatchRenorm differently (at most 2.4e-7 in an action); MuJoCo's state then differs
# by rounding, measured at most 1.9e-6 over the run. An episode ending at another step, or a wrong field, shows
# up as a difference of order 0.1 or more.
OBS_TOL = dict(rtol=0.0, atol=1e-5)
ACTION_TOL = dict(rtol=0.0, atol=1e-6)


def hopper(time_limit: int = TIME_LIMIT) -> gym.Env:
    """Hopper-v4 with a short TimeLimit (SB3 and lit_rl each wrap it in their own way)."""
    return gym.make(ENV_ID, max_episode_steps=time_limit)


class SB3EnvSteps(SB3BaseCallback):
    """Records the actions SB3 steps the env with (``collect_rollouts``' locals) at every env step."""

    def __init__(self) -> None:
        super().__init__()
        self.actions: list[np.ndarray] = []

    def _on_step(self) -> bool:
        self.actions.append(np.array(self.locals["actions"], copy=True))
        return True


class LitEnvSteps(BaseCallback):
    """The same record on lit_rl's SB3-style callback API."""

    def __init__(self) -> None:
        super().__init__()
        self.actions: list[np.ndarray] = []

    def _on_step(self) -> bool:
        self.actions.append(np.array(self.locals["actions"], copy=True))
        return True


@dataclass
class Transitions:
    """One side's replay buffer rows (env 0) as numpy arrays; ``terminated``/``truncated`` in SB3's terms too."""

    observations: np.ndarray
    next_observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray  # the episode ended (terminated or truncated)
    terminated: np.ndarray  # ended in a terminal state: no bootstrap
    timeouts: np.ndarray  # SB3's: truncated by the time limit and not terminated


def sb3_transitions(buffer) -> Transitions:
    """SB3's numpy buffer (observations float64 for Hopper) as float32, with handle_timeout_termination's flags."""
    n = buffer.size()
    assert buffer.handle_timeout_termination
    dones, timeouts = buffer.dones[:n, 0].astype(bool), buffer.timeouts[:n, 0].astype(bool)
    return Transitions(
        observations=buffer.observations[:n, 0].astype(np.float32),
        next_observations=buffer.next_observations[:n, 0].astype(np.float32),
        actions=buffer.actions[:n, 0],
        rewards=buffer.rewards[:n, 0],
        dones=dones,
        terminated=dones & ~timeouts,  # what SB3's sample() returns as dones
        timeouts=timeouts,
    )


def lit_transitions(buffer) -> Transitions:
    """lit_rl's torch buffer: ``terminated`` (float 0/1) and ``truncated`` (bool) kept apart."""
    n = len(buffer)
    terminated, truncated = buffer.terminated[:n, 0].numpy() == 1.0, buffer.truncated[:n, 0].numpy()
    return Transitions(
        observations=buffer.observations[:n, 0].numpy(),
        next_observations=buffer.next_observations[:n, 0].numpy(),
        actions=buffer.actions[:n, 0].numpy(),
        rewards=buffer.rewards[:n, 0].numpy(),
        dones=terminated | truncated,
        terminated=terminated,
        timeouts=truncated & ~terminated,
    )


@dataclass
class Lockstep:
    """Both models after the same run, their buffers and the env actions of every step."""

    algo: str
    ref: object
    lit: object
    ref_rows: Transitions
    lit_rows: Transitions
    ref_env_actions: np.ndarray
    lit_env_actions: np.ndarray
    lit_actor_before: dict[str, torch.Tensor]


def randomise_running_statistics(actor: torch.nn.Module) -> None:
    """Give the reference actor's BatchRenorm layers running statistics far from (0, 1), so that acting in eval
    mode (running statistics) and in train mode (the batch's) give different actions."""
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for layer in actor.modules():
            if isinstance(layer, BatchRenorm1d):
                layer.ra_mean.copy_(torch.randn(layer.ra_mean.shape, generator=g))
                layer.ra_var.copy_(torch.rand(layer.ra_var.shape, generator=g) + 0.5)


def make_models(algo: str, time_limit: int = TIME_LIMIT, **kwargs):
    """The reference model and lit_rl's, built with the same seed and arguments on their own Hopper envs."""
    ref_class, lit_class, net_arch = ALGOS[algo]
    common = dict(seed=SEED, buffer_size=1_000, device="cpu", **kwargs)
    # SB3 writes into the policy_kwargs it is given: a copy each.
    ref = ref_class("MlpPolicy", hopper(time_limit), policy_kwargs={"net_arch": copy.deepcopy(net_arch)}, **common)
    lit = lit_class("MlpPolicy", hopper(time_limit), policy_kwargs={"net_arch": copy.deepcopy(net_arch)}, **common)
    return ref, lit


@pytest.fixture(scope="module", params=list(ALGOS))
def lockstep(request) -> Lockstep:
    """TOTAL env steps on each side: WARMUP uniform random ones, then the policy's, no gradient step."""
    algo = request.param
    ref, lit = make_models(algo, learning_starts=WARMUP, gradient_steps=0)
    if algo == "CrossQ":
        randomise_running_statistics(ref.actor)
    copy_into_lit(actor_pairs(ref.actor, lit.actor) + critic_pairs(ref.critic, lit.critic))
    lit_actor_before = {k: v.clone() for k, v in lit.actor.state_dict().items()}
    ref_steps, lit_steps = SB3EnvSteps(), LitEnvSteps()
    torch.manual_seed(TORCH_SEED)
    ref.learn(TOTAL, callback=ref_steps)
    torch.manual_seed(TORCH_SEED)
    lit.learn(TOTAL, callback=lit_steps)
    assert ref.num_timesteps == lit.num_timesteps == TOTAL
    return Lockstep(
        algo=algo,
        ref=ref,
        lit=lit,
        ref_rows=sb3_transitions(ref.replay_buffer),
        lit_rows=lit_transitions(lit.replay_buffer),
        ref_env_actions=np.concatenate(ref_steps.actions),
        lit_env_actions=np.concatenate(lit_steps.actions),
        lit_actor_before=lit_actor_before,
    )


# ---------------------------------------------------------------------------------------------------- warm-up
def test_warmup_actions_are_the_reference_samples(lockstep):
    """Before learning_starts both draw the same uniform actions from the action space seeded by the model seed,
    and store them scaled to [-1, 1] bit for bit."""
    ref, lit = lockstep.ref_rows, lockstep.lit_rows
    assert len(ref.actions) == len(lit.actions) == TOTAL
    np.testing.assert_array_equal(lit.actions[:WARMUP], ref.actions[:WARMUP])
    # The env actions agree to rounding (the exact bits differ: see the xfail case).
    np.testing.assert_allclose(lockstep.lit_env_actions[:WARMUP], lockstep.ref_env_actions[:WARMUP], **ACTION_TOL)
    # Random, not the policy's: spread over the whole box.
    assert ref.actions[:WARMUP].min() < -0.9 and ref.actions[:WARMUP].max() > 0.9


@pytest.mark.xfail(
    strict=True,
    reason="Before learning_starts SB3 steps the env with policy.unscale_action(policy.scale_action(sample)) "
    "(OffPolicyAlgorithm._sample_action), lit_rl with the sample itself (Collector.sample_action); both store "
    "scale_action(sample), bit for bit. On Hopper's Box(-1, 1) the round trip moves 53 % of the action entries "
    "(86 % of the steps) by one float32 step (at most 6e-8), first at env step 2 (seed 3: 0.16432407 and "
    "-0.13374612 in lit_rl, 0.16432405 and -0.13374615 in SB3), so the stored next observations differ from "
    "row 1 on, by at most 2.9e-7 over the 100 warm-up steps; episode ends and flags are identical. With the "
    "round trip done as SB3 does it (tried outside this suite), SAC's stored observations, next observations "
    "and rewards equal SB3's bit for bit over all 300 steps.",
)
def test_warmup_env_actions_are_bitwise_the_reference(lockstep):
    """The actions the env is stepped with before learning_starts are SB3's, bit for bit."""
    np.testing.assert_array_equal(lockstep.lit_env_actions[:WARMUP], lockstep.ref_env_actions[:WARMUP])


# ---------------------------------------------------------------------------------------------------- transitions
def test_stored_transitions_match_the_reference_row_by_row(lockstep):
    """Every row of the two replay buffers, warm-up and policy steps: observations, next observations, actions,
    rewards to rounding; episode ends, termination and truncation exactly."""
    ref, lit = lockstep.ref_rows, lockstep.lit_rows
    for field in ("observations", "next_observations", "rewards"):
        np.testing.assert_allclose(getattr(lit, field), getattr(ref, field), **OBS_TOL, err_msg=field)
    np.testing.assert_allclose(lit.actions, ref.actions, **ACTION_TOL)
    # SB3 with handle_timeout_termination: dones & ~timeouts is the termination lit_rl stores as `terminated`.
    np.testing.assert_array_equal(np.flatnonzero(lit.dones), np.flatnonzero(ref.dones))
    np.testing.assert_array_equal(np.flatnonzero(lit.terminated), np.flatnonzero(ref.terminated))
    np.testing.assert_array_equal(np.flatnonzero(lit.timeouts), np.flatnonzero(ref.timeouts))
    # The run holds what it is meant to compare, in both phases: falls, time limits, and a fall on the
    # time limit's step (SB3: a done that is no timeout; lit_rl: terminated and truncated both set).
    lit_truncated = lockstep.lit.replay_buffer.truncated[:TOTAL, 0].numpy()
    for phase in (slice(0, WARMUP), slice(WARMUP, TOTAL)):
        assert lit.terminated[phase].any() and lit.timeouts[phase].any(), phase
    assert (lit.terminated & lit_truncated).any()


@pytest.mark.parametrize("lockstep", ["SAC"], indirect=True)
@pytest.mark.xfail(
    strict=True,
    reason="After learning_starts SB3 stores policy.scale_action(policy.unscale_action(a)) for the policy's "
    "squashed Gaussian sample a (predict() unscales it, _sample_action scales it back), lit_rl stores a "
    "itself: 44.5 % of the stored action entries after learning_starts (82 % of the rows) differ by one "
    "float32 step, at most 6e-8, first at row 100 (seed 3). With both round trips done as SB3 does them "
    "(tried outside this suite), SAC's 300 stored transitions equal SB3's bit for bit.",
)
def test_policy_actions_stored_are_bitwise_the_reference(lockstep):
    """The actions stored after learning_starts are SB3's, bit for bit (SAC: CrossQ's actor already differs by
    rounding, its BatchRenorm in eval mode being one folded affine map in lit_rl, at most 2.4e-7 in an action)."""
    np.testing.assert_array_equal(lockstep.lit_rows.actions[WARMUP:], lockstep.ref_rows.actions[WARMUP:])


def test_episode_end_stores_the_true_final_observation(lockstep):
    """At an episode end the next observation is the episode's last one (a fallen Hopper for a termination),
    never the reset observation that autoreset puts into the next row; inside an episode it is the next row's."""
    env = hopper().unwrapped
    reset_center = np.concatenate([env.init_qpos[1:], env.init_qvel]).astype(np.float32)
    min_z, _ = env._healthy_z_range
    _, max_angle = env._healthy_angle_range
    ref, lit = lockstep.ref_rows, lockstep.lit_rows
    ends = np.flatnonzero(lit.dones[:-1])
    inside = np.flatnonzero(~lit.dones[:-1])
    np.testing.assert_array_equal(lit.next_observations[inside], lit.observations[inside + 1])
    # The row after an end starts a new episode: Hopper's reset state plus noise of at most reset_noise_scale.
    starts = lit.observations[ends + 1]
    assert np.abs(starts - reset_center).max() <= env._reset_noise_scale + 1e-6
    finals = lit.next_observations[ends]
    assert np.abs(finals - reset_center).max(axis=1).min() > 10 * env._reset_noise_scale
    np.testing.assert_allclose(finals, ref.next_observations[ends], **OBS_TOL)
    # A terminated episode's last observation is an unhealthy Hopper; a time limit's is a healthy one.
    z, angle = finals[:, 0], finals[:, 1]
    fallen = (z <= min_z) | (np.abs(angle) >= max_angle)
    np.testing.assert_array_equal(fallen, lit.terminated[ends])
    assert fallen.any() and not fallen.all()


# ---------------------------------------------------------------------------------------------------- the policy
def test_rollouts_leave_the_actor_in_place(lockstep):
    """Acting after learning_starts changes no weight and, for CrossQ, no BatchRenorm statistic or step counter
    (eval mode): both actors still hold the same numbers after the run."""
    lit, ref = lockstep.lit, lockstep.ref
    for name, before in lockstep.lit_actor_before.items():
        assert torch.equal(lit.actor.state_dict()[name], before), name
    assert_pairs_close(actor_pairs(ref.actor, lit.actor), rtol=0.0, atol=0.0, when="after the rollouts")


@pytest.mark.parametrize("deterministic", [False, True])
def test_policy_actions_match_the_reference_for_the_same_observations(lockstep, deterministic):
    """One batch of Hopper observations, the same weights and torch seed: SB3's predict (squashed Gaussian sample
    or mean, then unscaled to the action space) and lit_rl's give the same actions."""
    obs = lockstep.ref_rows.observations[:64].astype(np.float64)  # Hopper's observations are float64
    torch.manual_seed(123)
    ref_actions, _ = lockstep.ref.predict(obs, deterministic=deterministic)
    torch.manual_seed(123)
    lit_actions, _ = lockstep.lit.predict(obs, deterministic=deterministic)
    np.testing.assert_allclose(lit_actions, ref_actions, **ACTION_TOL)
    assert ref_actions.shape == (64, 3) and np.ptp(ref_actions, axis=0).min() > 0.01  # not one constant action
    torch.manual_seed(124)
    other_draw, _ = lockstep.lit.predict(obs, deterministic=deterministic)
    # Stochastic actions are draws of torch's global RNG (so the seed matters); deterministic ones are not.
    assert np.array_equal(other_draw, lit_actions) == deterministic


def test_crossq_acts_with_running_statistics():
    """CrossQ's actor acts in eval mode: with its BatchRenorm statistics replaced, its actions change; the
    reference's do too, and the two agree before and after."""
    ref, lit = make_models("CrossQ", learning_starts=0)
    randomise_running_statistics(ref.actor)
    pairs = actor_pairs(ref.actor, lit.actor)
    copy_into_lit(pairs)
    obs = np.stack([hopper().reset(seed=k)[0] for k in range(8)])
    ref_random, _ = ref.predict(obs, deterministic=True)
    lit_random, _ = lit.predict(obs, deterministic=True)
    np.testing.assert_allclose(lit_random, ref_random, **ACTION_TOL)
    with torch.no_grad():
        for layer in ref.actor.modules():
            if isinstance(layer, BatchRenorm1d):
                layer.ra_mean.zero_()
                layer.ra_var.fill_(1.0)
    copy_into_lit(pairs)
    ref_unit, _ = ref.predict(obs, deterministic=True)
    lit_unit, _ = lit.predict(obs, deterministic=True)
    np.testing.assert_allclose(lit_unit, ref_unit, **ACTION_TOL)
    assert np.abs(lit_unit - lit_random).max() > 1e-3


# ---------------------------------------------------------------------------------------------------- event order
class SB3Events(SB3BaseCallback):
    """Appends ("step", num_timesteps) to a shared event list at every env step."""

    def __init__(self, events: list[tuple[str, int]]) -> None:
        super().__init__()
        self.events = events

    def _on_step(self) -> bool:
        self.events.append(("step", self.num_timesteps))
        return True


class LitEvents(BaseCallback):
    """The same on lit_rl's SB3-style callback API."""

    def __init__(self, events: list[tuple[str, int]]) -> None:
        super().__init__()
        self.events = events

    def _on_step(self) -> bool:
        self.events.append(("step", self.num_timesteps))
        return True


def record_events(algo: str, total: int, **kwargs) -> tuple[list, list, object, object]:
    """Run both libraries for ``total`` env steps, recording env steps (callbacks) and gradient steps: SB3's
    ``train`` samples the buffer once per gradient step, lit_rl's ``gradient_step`` is one gradient step."""
    # 8 steps: too short for a Hopper to fall, so every episode ends on the time limit on both sides, whatever
    # the (differently trained) policies do, and episode-based rounds end at the same steps.
    ref, lit = make_models(algo, time_limit=8, batch_size=8, gradient_steps=2, **kwargs)
    ref_events: list[tuple[str, int]] = []
    lit_events: list[tuple[str, int]] = []
    sample = ref.replay_buffer.sample

    def recorded_sample(*args, **kw):
        ref_events.append(("update", ref.num_timesteps))
        return sample(*args, **kw)

    ref.replay_buffer.sample = recorded_sample
    gradient_step = lit.gradient_step

    def recorded_gradient_step(batch):
        lit_events.append(("update", lit.num_timesteps))
        return gradient_step(batch)

    lit.gradient_step = recorded_gradient_step
    ref.learn(total, callback=SB3Events(ref_events))
    lit.learn(total, callback=LitEvents(lit_events))
    return ref_events, lit_events, ref, lit


def updates_at(events: list[tuple[str, int]]) -> list[int]:
    return [t for kind, t in events if kind == "update"]


@pytest.mark.parametrize("algo", list(ALGOS))
@pytest.mark.parametrize("learning_starts", [8, 10])
def test_step_round_order_matches_the_reference(algo, learning_starts):
    """train_freq=(4, "step"), gradient_steps=2, 30 env steps: rounds of 4 env steps, then 2 updates once past
    learning_starts; both finish the round that crosses the budget (32 env steps)."""
    ref_events, lit_events, ref, lit = record_events(algo, 30, train_freq=(4, "step"), learning_starts=learning_starts)
    assert lit_events == ref_events
    # num_timesteps > learning_starts at a round's end: 12 for both 8 and 10.
    assert updates_at(ref_events) == [12, 12, 16, 16, 20, 20, 24, 24, 28, 28, 32, 32]
    assert ref_events[:13] == [("step", t) for t in range(1, 13)] + [("update", 12)]
    # The budget: both collect the started round to its end (32 env steps for 30) and train after it.
    assert ref_events[-3:] == [("step", 32), ("update", 32), ("update", 32)]
    assert ref.num_timesteps == lit.num_timesteps == 32
    assert ref._n_updates == lit._n_updates == 12


@pytest.mark.parametrize("algo", list(ALGOS))
def test_episode_round_order_matches_the_reference(algo):
    """train_freq=(1, "episode") with 8-step episodes, learning_starts=20, 60 env steps: 2 updates after each
    episode that ends past learning_starts; both finish the episode running at the budget (64 env steps)."""
    ref_events, lit_events, ref, lit = record_events(algo, 60, train_freq=(1, "episode"), learning_starts=20)
    assert lit_events == ref_events
    assert updates_at(ref_events) == [t for t in (24, 32, 40, 48, 56, 64) for _ in range(2)]
    assert ref_events[-3:] == [("step", 64), ("update", 64), ("update", 64)]
    assert ref.num_timesteps == lit.num_timesteps == 64
    # Every episode ran to the time limit on both sides (no fall), so the rounds had the same ends by design.
    assert [ep["l"] for ep in ref.ep_info_buffer] == [ep["l"] for ep in lit.ep_info_buffer] == [8] * 8
