"""Lockstep runs: lit_rl and Stable-Baselines3 / sb3-contrib driven through the same data for many updates.

Both sides start from the reference's weights (copied into lit_rl, the
entropy coefficient too). Every update draws one set of replay indices from a
shared memory of real env transitions and hands the identical batch to both
sides' update, with torch's RNG seeded identically before each (the actor's
sampling noise, TD3's smoothing noise). After each update the largest
difference of every group of state is recorded: parameters, BatchRenorm running
statistics and step counters, Adam's ``exp_avg`` / ``exp_avg_sq`` per
optimizer, the entropy coefficient and the losses. Float32 rounding makes the
two sides drift apart slowly; a wrong rule makes the curve jump.

The memory starts with ``learning_starts`` transitions from uniform random
actions (as a real run's first updates see) and, with ``collect="reference"``,
grows by one transition per update from the reference policy's stochastic
action (as a real run's later updates see: states move with the policy).

DQN and QR-DQN run on Atari frames (``lit_rl/Atari-v0``, SB3's preprocessing, (4, 84, 84) uint8 stacks) with
``CnnPolicy``: the reference acts epsilon-greedily, and after every update both sides take their env-step
bookkeeping (SB3's ``_on_step``, lit_rl's ``on_env_step``: target copies every ``target_update_interval``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import sb3_contrib
import stable_baselines3
import torch
from stable_baselines3.common.logger import Logger
from torch import nn

from lit_rl.algorithms import DQN, QRDQN, SAC, TD3, TQC, CrossQ
from lit_rl.buffers.replay import ReplayBatch
from lit_rl.nets.mlp import EnsembleLinear
from tests.reference.sb3_weights import (
    Pair,
    actor_pairs,
    copy_into_lit,
    critic_pairs,
    entropy_pairs,
    feed_reference,
    without_trainer,
)

COLLECT = ("random", "reference")


@dataclass(frozen=True)
class AlgoSpec:
    """A reference class, lit_rl's counterpart and the pairs that map one's state onto the other's."""

    reference: type
    lit: type
    pairs: Callable[[Any, Any], dict[str, list[Pair]]]  # network name -> pairs
    losses: tuple[str, ...]


def _entropy(ref, lit) -> list[Pair]:
    return entropy_pairs(ref.log_ent_coef, lit.entropy.log_ent_coef) if lit.entropy.learned else []


def _crossq_pairs(ref, lit) -> dict[str, list[Pair]]:
    return {
        "actor": actor_pairs(ref.actor, lit.actor),
        "critic": critic_pairs(ref.critic, lit.critic),
        "ent_coef": _entropy(ref, lit),
    }


def _sac_pairs(ref, lit) -> dict[str, list[Pair]]:
    return {
        **_crossq_pairs(ref, lit),
        "critic_target": critic_pairs(ref.critic_target, lit.critic_target, name="critic_target"),
    }


def _linear_pairs(name: str, ref: nn.Sequential, lit: nn.Sequential) -> list[Pair]:
    """The Linear layers in order (SB3's TD3 actor ends in a Tanh module, lit_rl's squashes in forward)."""
    ref_layers = [m for m in ref if isinstance(m, nn.Linear)]
    lit_layers = [m for m in lit if isinstance(m, nn.Linear | EnsembleLinear)]
    assert len(ref_layers) == len(lit_layers), f"{name}: {len(ref_layers)} vs {len(lit_layers)} linear layers"
    pairs = []
    for i, (r, m) in enumerate(zip(ref_layers, lit_layers, strict=True)):
        assert isinstance(m, nn.Linear), f"{name}.{i}: {type(m).__name__}"
        pairs += [Pair(f"{name}.{i}.weight", r.weight, m.weight), Pair(f"{name}.{i}.bias", r.bias, m.bias)]
    return pairs


def _td3_pairs(ref, lit) -> dict[str, list[Pair]]:
    return {
        "actor": _linear_pairs("actor", ref.actor.mu, lit.actor.mu),
        "actor_target": _linear_pairs("actor_target", ref.actor_target.mu, lit.actor_target.mu),
        "critic": critic_pairs(ref.critic, lit.critic),
        "critic_target": critic_pairs(ref.critic_target, lit.critic_target, name="critic_target"),
    }


def _parameter_pairs(name: str, ref: nn.Module, lit: nn.Module) -> list[Pair]:
    """The two networks' parameters in order (NatureCNN, then the head, on both sides)."""
    ref_params, lit_params = list(ref.parameters()), list(lit.parameters())
    assert [tuple(p.shape) for p in ref_params] == [tuple(p.shape) for p in lit_params], name
    return [Pair(f"{name}.{i}", r, m) for i, (r, m) in enumerate(zip(ref_params, lit_params, strict=True))]


def _q_pairs(ref, lit) -> dict[str, list[Pair]]:
    online, target = ("q_net", "q_net_target") if hasattr(ref, "q_net") else ("quantile_net", "quantile_net_target")
    return {
        "q_net": _parameter_pairs("q_net", getattr(ref, online), lit.q_net),
        "q_net_target": _parameter_pairs("q_net_target", getattr(ref, target), lit.q_net_target),
    }


LOSSES = ("critic_loss", "actor_loss", "ent_coef_loss")
ALGOS: dict[str, AlgoSpec] = {
    "crossq": AlgoSpec(sb3_contrib.CrossQ, CrossQ, _crossq_pairs, LOSSES),
    "sac": AlgoSpec(stable_baselines3.SAC, SAC, _sac_pairs, LOSSES),
    "tqc": AlgoSpec(sb3_contrib.TQC, TQC, _sac_pairs, LOSSES),
    "td3": AlgoSpec(stable_baselines3.TD3, TD3, _td3_pairs, LOSSES[:2]),
    "dqn": AlgoSpec(stable_baselines3.DQN, DQN, _q_pairs, ("loss",)),
    "qrdqn": AlgoSpec(sb3_contrib.QRDQN, QRDQN, _q_pairs, ("loss",)),
}
Q_LEARNING = ("dqn", "qrdqn")

# The regime of the CrossQ parity runs (sb3-contrib 2.9.2 defaults on Hopper-v4).
CROSSQ_PARITY = dict(
    learning_rate=1e-3,
    batch_size=256,
    policy_delay=3,
    policy_kwargs={"net_arch": {"pi": [256, 256], "qf": [1024, 1024]}, "renorm_warmup_steps": 100_000},
)


def _kind(pair_name: str) -> str:
    for suffix, kind in (("running_mean", "bn_mean"), ("running_var", "bn_var"), ("steps", "bn_steps")):
        if pair_name.endswith(suffix):
            return kind
    return "params"


def _adam_settings(opt: torch.optim.Optimizer) -> list[tuple]:
    keys = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")
    return [tuple(g.get(k) for k in keys) for g in opt.param_groups]


@dataclass
class Transitions:
    """A replay memory of real transitions (actions in [-1, 1], the buffers' scale) that both sides sample."""

    observations: np.ndarray
    actions: np.ndarray
    next_observations: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    size: int = 0

    @classmethod
    def empty(cls, capacity: int, observation_space: gym.Space, action_space: gym.Space) -> Transitions:
        """Room for ``capacity`` transitions: observations as the env gives them (float32 vectors, uint8 frames),
        actions as the buffers store them (float32 in [-1, 1], or a discrete action's index)."""
        z = np.zeros
        obs_shape, obs_dtype = (capacity, *observation_space.shape), observation_space.dtype
        discrete = isinstance(action_space, gym.spaces.Discrete)
        actions = z((capacity, 1), np.int64) if discrete else z((capacity, *action_space.shape), np.float32)
        return cls(z(obs_shape, obs_dtype), actions, z(obs_shape, obs_dtype), z(capacity, np.float32),
                   z(capacity, np.float32))  # fmt: skip

    def add(self, obs, action, next_obs, reward: float, terminated: bool) -> None:
        """Append one transition."""
        i = self.size
        self.observations[i], self.actions[i], self.next_observations[i] = obs, action, next_obs
        self.rewards[i], self.terminated[i] = reward, float(terminated)
        self.size += 1

    def batch(self, idx: np.ndarray) -> ReplayBatch:
        """The rows ``idx`` as lit_rl's batch (the reference gets the same rows via ``feed_reference``)."""
        return ReplayBatch(
            observations=torch.from_numpy(self.observations[idx]),
            actions=torch.from_numpy(self.actions[idx]),
            next_observations=torch.from_numpy(self.next_observations[idx]),
            rewards=torch.from_numpy(self.rewards[idx]),
            terminated=torch.from_numpy(self.terminated[idx]),
        )


class Taps:
    """Where the two sides can part discontinuously: a ReLU input on either side of 0, and the critic that
    ``min_i Q_i`` picks. Forward hooks record both sides' calls during an update; :meth:`flips` counts the
    entries whose ReLU sign or argmin differs between the sides. A float32 difference of 1e-7 there changes a
    gradient by a whole sample's share, so an update with a flip may jump without any bug."""

    def __init__(self) -> None:
        self.active = False
        self.calls: dict[tuple[str, str], list[torch.Tensor]] = {}
        self.kinds: dict[str, tuple[str, int]] = {}  # tap name -> ("relu" | "argmin", reference modules)

    def _hook(self, name: str, side: str, kind: str) -> Callable:
        def record(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
            if self.active:
                x = inputs[0].detach() > 0 if kind == "relu" else output.detach()
                self.calls.setdefault((name, side), []).append(x)

        return record

    def tap(self, name: str, kind: str, refs: Sequence[nn.Module], lit: nn.Module) -> None:
        """``refs``: the reference's modules (one per ensemble member) that lit_rl's ``lit`` fuses (or is).

        ``kind`` "relu" records the inputs' signs, "argmin" the outputs of the critics' last layers.
        """
        self.kinds[name] = (kind, len(refs))
        for k, m in enumerate(refs):
            m.register_forward_hook(self._hook(name, f"ref{k}", kind))
        lit.register_forward_hook(self._hook(name, "lit", kind))

    def flips(self) -> dict[str, int]:
        """ReLU sign flips and argmin flips between the sides over the recorded calls; clears the record."""
        counts = {"relu": 0, "argmin": 0}
        for name, (kind, n) in self.kinds.items():
            lit_calls = self.calls.get((name, "lit"), [])
            ref_calls = [self.calls.get((name, f"ref{k}"), []) for k in range(n)]
            # The sides can call a module unequally often: TD3's actor loss reads Q_1 alone, SB3 through the first
            # critic's modules, lit_rl through its fused ensemble's first member (a 2-d call, not a 3-d one).
            # Calls pair in order; a 2-d call of a fused module is member 0's only.
            if kind == "relu":
                for k, calls in enumerate(ref_calls):
                    for ref, lit in zip(calls, lit_calls, strict=False):
                        if lit.dim() == ref.dim() + 1:
                            lit = lit[k]
                        elif k > 0:
                            continue
                        assert lit.shape == ref.shape, (name, k, tuple(lit.shape), tuple(ref.shape))
                        counts["relu"] += int((ref != lit).sum())
            else:  # the calls every member saw: (members, N, 1) on both sides
                for j in range(min(len(lit_calls), *(len(c) for c in ref_calls))):
                    ref = torch.stack([c[j] for c in ref_calls])
                    counts["argmin"] += int((ref.argmin(0) != lit_calls[j].argmin(0)).sum())
        self.calls.clear()
        return counts


def _relu_taps(taps: Taps, name: str, refs: Sequence[nn.Sequential], lit: nn.Sequential) -> None:
    """Every ReLU of ``lit`` with the ReLU at the same index of each reference MLP."""
    for i, m in enumerate(lit):
        if isinstance(m, nn.ReLU):
            assert all(isinstance(r[i], nn.ReLU) for r in refs), f"{name}.{i}: no ReLU at this index in the reference"
            taps.tap(f"{name}.{i}", "relu", [r[i] for r in refs], m)


def _critic_taps(taps: Taps, name: str, ref, lit) -> None:
    _relu_taps(taps, name, ref.q_networks, lit.q_net)
    last = lit.q_net[-1]
    if len(ref.q_networks) > 1 and isinstance(last, EnsembleLinear) and last.weight.shape[-1] == 1:
        taps.tap(f"{name}.min", "argmin", [q[-1] for q in ref.q_networks], last)


def make_taps(algo: str, ref, lit) -> Taps:
    """Taps on the networks of ``algo`` (the same networks :data:`ALGOS` pairs)."""
    taps = Taps()
    if algo == "td3":
        for net in ("actor", "actor_target"):
            _relu_taps(taps, net, [getattr(ref, net).mu], getattr(lit, net).mu)
    else:
        _relu_taps(taps, "actor", [ref.actor.latent_pi], lit.actor.latent_pi)
    for net in ("critic", "critic_target"):
        if getattr(lit, net, None) is not None and hasattr(getattr(ref, net, None), "q_networks"):
            _critic_taps(taps, net, getattr(ref, net), getattr(lit, net))
    return taps


@dataclass
class Lockstep:
    """A reference model and lit_rl's algorithm with the same weights, advanced together by :meth:`step`."""

    algo: str
    ref: Any
    lit: Any
    pairs: dict[str, list[Pair]]
    optimizers: dict[str, tuple[torch.optim.Optimizer, torch.optim.Optimizer]]  # network -> (reference, lit_rl)
    env: gym.Env
    data: Transitions
    collect: str
    rng: np.random.Generator
    batch_size: int
    taps: Taps | None = None
    resync: bool = False
    records: list[dict[str, Any]] = field(default_factory=list)
    _obs: np.ndarray | None = None

    # ------------------------------------------------------------------ data
    def env_step(self, policy: bool) -> None:
        """One env transition into the memory: a uniform random action, or the reference policy's sample."""
        if policy:
            torch.manual_seed(int(self.rng.integers(2**31)))
            action, _ = self.ref.predict(self._obs, deterministic=False)
        else:
            action = self.env.action_space.sample()
        if isinstance(self.env.action_space, gym.spaces.Discrete):
            scaled = np.asarray(action, dtype=np.int64).reshape(1)
        else:
            scaled = self.ref.policy.scale_action(np.asarray(action, dtype=np.float32))
        next_obs, reward, terminated, truncated, _ = self.env.step(action)
        self.data.add(self._obs, scaled, next_obs, float(reward), bool(terminated))
        self._obs = next_obs
        if terminated or truncated:
            self._obs, _ = self.env.reset()

    # ------------------------------------------------------------------ updates
    def step(self) -> dict[str, Any]:
        """One gradient step on both sides on the same batch and RNG state; returns (and keeps) its record."""
        if self.collect == "reference" and self.records:
            self.env_step(policy=True)
        idx = self.rng.integers(0, self.data.size, size=self.batch_size)
        seed = int(self.rng.integers(2**31))
        batch = self.data.batch(idx)
        if self.resync:
            self.synchronise()
        feed_reference(self.ref, [(seed, batch)])  # also a fresh logger: only this step's losses in it
        if self.taps is not None:
            self.taps.active = True
        self.ref.train(gradient_steps=1, batch_size=self.batch_size)
        self.lit.on_rollout_step(0)  # what collect_rollouts calls first (gSDE)
        self.lit.round_gradient_step = 0  # one gradient step per train call, as above
        torch.manual_seed(seed)
        metrics = self.lit.gradient_step(batch)
        assert self.lit._n_updates == self.ref._n_updates, (self.lit._n_updates, self.ref._n_updates)
        record = {"update": self.lit._n_updates, **self.differences(metrics, self.ref.logger.name_to_value)}
        if self.taps is not None:
            self.taps.active = False
            record["flips"] = self.taps.flips()
        if self.algo in Q_LEARNING:  # the env step's bookkeeping: target copies, the exploration schedule
            self.ref._on_step()
            self.lit.on_env_step()
        self.records.append(record)
        return record

    def run(self, n: int, on_record: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
        """``n`` more updates; their records."""
        out = []
        for _ in range(n):
            out.append(self.step())
            if on_record is not None:
                on_record(out[-1])
        return out

    @torch.no_grad()
    def synchronise(self) -> None:
        """Overwrite lit_rl's state (parameters, statistics, Adam moments and steps) with the reference's."""
        copy_into_lit([p for pairs in self.pairs.values() for p in pairs])
        for net, (ref_opt, lit_opt) in self.optimizers.items():
            for p in self.pairs[net]:
                if p.ref not in ref_opt.state:
                    continue
                ref_state, lit_state = ref_opt.state[p.ref], lit_opt.state[p.lit]
                for key in ("exp_avg", "exp_avg_sq"):
                    p.select(lit_state[key]).copy_(p.convert(ref_state[key]))
                lit_state["step"].fill_(float(ref_state["step"]))

    # ------------------------------------------------------------------ comparison
    @torch.no_grad()
    def differences(self, lit_metrics: dict[str, torch.Tensor], ref_logged: dict[str, Any]) -> dict[str, dict]:
        """Per group: ``abs`` the largest |lit_rl - reference| of any entry, ``rel`` the largest over tensors
        of max|difference| / max|reference| (entries near zero would make element-wise ratios meaningless)."""
        absd: dict[str, float] = {}
        reld: dict[str, float] = {}

        def put(group: str, lit: torch.Tensor, ref: torch.Tensor) -> None:
            d = float((lit.double() - ref.double()).abs().max()) if ref.numel() else 0.0
            scale = float(ref.double().abs().max()) if ref.numel() else 0.0
            absd[group] = max(absd.get(group, 0.0), d)
            reld[group] = max(reld.get(group, 0.0), d / scale if scale > 0 else d)

        for net, pairs in self.pairs.items():
            ref_opt, lit_opt = self.optimizers.get(net, (None, None))
            for p in pairs:
                put(f"{net}.{_kind(p.name)}", p.select(p.lit), p.convert(p.ref))
                if ref_opt is None or p.ref not in ref_opt.state:
                    continue
                ref_state, lit_state = ref_opt.state[p.ref], lit_opt.state[p.lit]
                assert float(ref_state["step"]) == float(lit_state["step"]), f"{p.name}: Adam step differs"
                for key in ("exp_avg", "exp_avg_sq"):
                    put(f"{net}.{key}", p.select(lit_state[key]), p.convert(ref_state[key]))
        for name in ALGOS[self.algo].losses:
            key = f"train/{name}"
            assert (key in lit_metrics) == (key in ref_logged), f"{key} computed on one side only"
            if key in ref_logged:
                put(f"loss.{name}", lit_metrics[key].detach().reshape(()), torch.tensor(float(ref_logged[key])))
        return {"abs": absd, "rel": reld}


def build(
    algo: str,
    env_id: str = "Hopper-v4",
    hyperparameters: dict[str, Any] | None = None,
    compile: bool = False,
    learning_starts: int = 5_000,
    n_updates: int = 0,
    collect: str = "reference",
    seed: int = 0,
    resync: bool = False,
    taps: bool | None = None,
    precision: str = "32-true",
) -> Lockstep:
    """Both models for ``env_id`` with the same ``hyperparameters`` (constructor arguments of both, e.g.
    ``policy_kwargs``), the reference's weights in lit_rl, and ``learning_starts`` random transitions.

    ``n_updates`` sizes the memory for ``collect="reference"`` (one more transition per update).
    ``resync``: copy the reference's whole state into lit_rl before every update, so that each record holds
    what one update adds (free-running otherwise: the records hold the accumulated drift). ``taps``: count
    ReLU and argmin flips per update (:class:`Taps`; default on, except for the compiled update, whose
    graphs would capture the hooks). ``precision``: lit_rl's (``bf16-mixed``: how far one bf16 update lands
    from the reference's fp32 one, with ``resync``).
    """
    if algo not in ALGOS:
        raise ValueError(f"algo={algo!r} is not allowed; allowed: {', '.join(ALGOS)}")
    if collect not in COLLECT:
        raise ValueError(f"collect={collect!r} is not allowed; allowed: {', '.join(COLLECT)}")
    spec = ALGOS[algo]
    hp = dict(hyperparameters or {})
    policy_kwargs = hp.pop("policy_kwargs", {})
    hp.setdefault("buffer_size", 1_000)  # neither side's own buffer is used
    q_learning = algo in Q_LEARNING
    with warnings.catch_warnings():  # gymnasium's "Hopper-v4 is out of date": the -v4 tasks are the ones compared
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"gymnasium(\.|$)")
        env = gym.make(env_id)
    policy = "CnnPolicy" if len(env.observation_space.shape) == 3 else "MlpPolicy"
    # Copies of policy_kwargs: SB3 writes into the dict it is given.
    ref = spec.reference(policy, env, policy_kwargs=dict(policy_kwargs), seed=seed, device="cpu", **hp)
    lit = spec.lit(policy, policy_kwargs=dict(policy_kwargs), compile=compile, precision=precision, **hp)
    if q_learning:
        lit.build_networks_for(env.observation_space, env.action_space)
        ref.set_logger(Logger(folder=None, output_formats=[]))  # _on_step records the exploration rate
        # Acting as past the exploration phase (epsilon at its final value): no learn() moves the schedule here.
        ref._current_progress_remaining = 0.0
    else:
        lit.build_networks(env.observation_space, env.action_space)
    lit._n_envs = 1  # set by setup() from the env; on_rollout_step's gSDE noise needs it
    lit_opts = without_trainer(lit)
    lit_opts = lit_opts if isinstance(lit_opts, list) else [lit_opts]
    pairs = {net: p for net, p in spec.pairs(ref, lit).items() if p}
    copy_into_lit([p for group in pairs.values() for p in group])
    if q_learning:
        ref_opts = {"q_net": ref.policy.optimizer}
    else:
        ref_opts = {"actor": ref.actor.optimizer, "critic": ref.critic.optimizer}
    if getattr(ref, "ent_coef_optimizer", None) is not None:
        ref_opts["ent_coef"] = ref.ent_coef_optimizer
    optimizers = {net: (ref_opt, lit_opts[i]) for i, (net, ref_opt) in enumerate(ref_opts.items())}
    for net, (ref_opt, lit_opt) in optimizers.items():
        assert _adam_settings(ref_opt) == _adam_settings(lit_opt), (
            net,
            _adam_settings(ref_opt),
            _adam_settings(lit_opt),
        )
    extra = n_updates if collect == "reference" else 0
    taps = False if q_learning else (not compile if taps is None else taps)  # no ReLU taps on convolutions
    state = Lockstep(
        algo=algo, ref=ref, lit=lit, pairs=pairs, optimizers=optimizers, env=env,
        data=Transitions.empty(learning_starts + extra, env.observation_space, env.action_space), collect=collect,
        rng=np.random.default_rng(seed), batch_size=int(hp.get("batch_size", 256)), resync=resync,
        taps=make_taps(algo, ref, lit) if taps else None,
    )  # fmt: skip
    env.action_space.seed(seed)
    state._obs, _ = env.reset(seed=seed)
    for _ in range(learning_starts):
        state.env_step(policy=False)
    return state


# ---------------------------------------------------------------------------- reading the curves
def groups(records: Sequence[dict[str, Any]]) -> list[str]:
    """Every group name that occurs in ``records``, in first-seen order."""
    seen: dict[str, None] = {}
    for r in records:
        seen.update(dict.fromkeys(r["abs"]))
    return list(seen)


def curve(records: Sequence[dict[str, Any]], group: str, kind: str = "rel") -> np.ndarray:
    """The ``kind`` ("abs" or "rel") difference of ``group`` per update (NaN where it was not computed)."""
    return np.array([r[kind].get(group, math.nan) for r in records], dtype=float)


def largest_jump(records: Sequence[dict[str, Any]], group: str, kind: str = "rel", floor: float = 1e-7) -> float:
    """The largest ratio of one update's difference to the largest before it (both floored at ``floor``)."""
    c = curve(records, group, kind)
    c = np.where(np.isnan(c), 0.0, np.maximum(c, floor))
    before = np.maximum.accumulate(c)
    return float(np.max(c[1:] / before[:-1])) if len(c) > 1 else 1.0
