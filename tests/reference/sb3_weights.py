"""Map Stable-Baselines3 / sb3-contrib networks onto lit_rl's: copy weights across, and compare them later.

A :class:`Pair` links one reference tensor to the part of a lit_rl tensor that
holds the same numbers (lit_rl fuses the critics into one ``EnsembleLinear``
whose weight is ``nn.Linear.weight`` transposed, with a leading member dim).
The same mapping serves parameters, buffers and the Adam state of a parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from sb3_contrib.common.torch_layers import BatchRenorm1d
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from torch import nn

from lit_rl.buffers.replay import ReplayBatch
from lit_rl.nets.actors import SquashedGaussianActor
from lit_rl.nets.batch_renorm import BatchRenorm
from lit_rl.nets.critics import QEnsemble
from lit_rl.nets.mlp import EnsembleLinear


def _identity(t: torch.Tensor) -> torch.Tensor:
    return t


@dataclass(frozen=True)
class Pair:
    """``select(lit)`` holds the numbers of ``convert(ref)``; both functions also apply to Adam state tensors."""

    name: str
    ref: torch.Tensor
    lit: torch.Tensor
    select: Callable[[torch.Tensor], torch.Tensor] = _identity
    convert: Callable[[torch.Tensor], torch.Tensor] = _identity


def _member(i: int, *index: int) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda t: t[(i, *index)]


def _transpose(t: torch.Tensor) -> torch.Tensor:
    return t.T


def batch_renorm_pairs(name: str, ref: BatchRenorm1d, lit: BatchRenorm, member: int | None = None) -> list[Pair]:
    """sb3-contrib BatchRenorm1d (scale, bias, ra_mean, ra_var, steps) <-> lit_rl BatchRenorm (member of an ensemble)."""
    assert (ref.eps, ref.momentum, ref.warmup_steps, ref.rmax, ref.dmax) == (
        lit.eps,
        lit.momentum,
        lit.warmup_steps,
        lit.r_max,
        lit.d_max,
    ), f"{name}: hyperparameters differ"
    affine = _identity if member is None else _member(member, 0)
    stat = _identity if member is None else _member(member)
    return [
        Pair(f"{name}.weight", ref.scale, lit.weight, affine),
        Pair(f"{name}.bias", ref.bias, lit.bias, affine),
        Pair(f"{name}.running_mean", ref.ra_mean, lit.running_mean, stat),
        Pair(f"{name}.running_var", ref.ra_var, lit.running_var, stat),
        # One step counter for all members: every member must have seen the same number of forwards.
        Pair(f"{name}.steps", ref.steps, lit.steps),
    ]


def sequential_pairs(name: str, ref: nn.Sequential, lit: nn.Sequential) -> list[Pair]:
    """Layer by layer (same indices in both): nn.Linear and BatchRenorm; activations must be of the same class."""
    assert len(ref) == len(lit), f"{name}: {len(ref)} reference layers, {len(lit)} lit_rl layers"
    pairs: list[Pair] = []
    for i, (r, m) in enumerate(zip(ref, lit, strict=True)):
        if isinstance(r, nn.Linear):
            assert isinstance(m, nn.Linear), f"{name}.{i}: {type(m).__name__} where the reference has nn.Linear"
            pairs += [Pair(f"{name}.{i}.weight", r.weight, m.weight), Pair(f"{name}.{i}.bias", r.bias, m.bias)]
        elif isinstance(r, BatchRenorm1d):
            assert isinstance(m, BatchRenorm), f"{name}.{i}: {type(m).__name__} where the reference has BatchRenorm1d"
            pairs += batch_renorm_pairs(f"{name}.{i}", r, m)
        else:
            assert type(r) is type(m), f"{name}.{i}: {type(m).__name__} where the reference has {type(r).__name__}"
    return pairs


def ensemble_pairs(name: str, refs: Sequence[nn.Sequential], lit: nn.Sequential) -> list[Pair]:
    """``n`` reference MLPs <-> one fused lit_rl MLP (EnsembleLinear weight ``(n, in, out)`` = Linear.weight.T)."""
    pairs: list[Pair] = []
    for k, ref in enumerate(refs):
        assert len(ref) == len(lit), f"{name}[{k}]: {len(ref)} reference layers, {len(lit)} lit_rl layers"
        for i, (r, m) in enumerate(zip(ref, lit, strict=True)):
            where = f"{name}[{k}].{i}"
            if isinstance(r, nn.Linear):
                assert isinstance(m, EnsembleLinear), f"{where}: {type(m).__name__} where the reference has nn.Linear"
                pairs += [
                    Pair(f"{where}.weight", r.weight, m.weight, _member(k), _transpose),
                    Pair(f"{where}.bias", r.bias, m.bias, _member(k, 0)),
                ]
            elif isinstance(r, BatchRenorm1d):
                assert isinstance(m, BatchRenorm), f"{where}: {type(m).__name__} where the reference has BatchRenorm1d"
                pairs += batch_renorm_pairs(where, r, m, member=k)
            else:
                assert type(r) is type(m), f"{where}: {type(m).__name__} where the reference has {type(r).__name__}"
    return pairs


def actor_pairs(ref: nn.Module, lit: SquashedGaussianActor) -> list[Pair]:
    """SB3 SAC / sb3-contrib CrossQ ``Actor`` <-> :class:`SquashedGaussianActor` (gSDE or not)."""
    mu = ref.mu[0] if isinstance(ref.mu, nn.Sequential) else ref.mu  # gSDE: Sequential(Linear, Hardtanh)
    pairs = sequential_pairs("actor.latent_pi", ref.latent_pi, lit.latent_pi)
    pairs += [Pair("actor.mu.weight", mu.weight, lit.mu.weight), Pair("actor.mu.bias", mu.bias, lit.mu.bias)]
    if lit.use_sde:
        assert ref.use_sde, "lit_rl actor uses gSDE, the reference does not"
        pairs.append(Pair("actor.log_std", ref.log_std, lit.action_dist.log_std))
    else:
        pairs += [
            Pair("actor.log_std.weight", ref.log_std.weight, lit.log_std.weight),
            Pair("actor.log_std.bias", ref.log_std.bias, lit.log_std.bias),
        ]
    return pairs


def critic_pairs(ref: nn.Module, lit: QEnsemble, name: str = "critic") -> list[Pair]:
    """SB3 ``ContinuousCritic`` / sb3-contrib ``CrossQCritic`` (qf0, qf1, ...) <-> :class:`QEnsemble`."""
    assert len(ref.q_networks) == lit.n_critics
    return ensemble_pairs(name, ref.q_networks, lit.q_net)


def entropy_pairs(log_ent_coef: torch.Tensor, lit_log_ent_coef: torch.Tensor) -> list[Pair]:
    """SB3's ``log_ent_coef`` (shape (1,)) <-> lit_rl's (a scalar)."""
    return [Pair("log_ent_coef", log_ent_coef, lit_log_ent_coef, convert=lambda t: t.reshape(()))]


@torch.no_grad()
def copy_into_lit(pairs: Sequence[Pair]) -> None:
    """Overwrite the lit_rl side of every pair with the reference's values."""
    for p in pairs:
        target = p.select(p.lit)
        value = p.convert(p.ref)
        assert target.shape == value.shape, f"{p.name}: lit_rl {tuple(target.shape)} vs reference {tuple(value.shape)}"
        target.copy_(value)


def assert_pairs_close(pairs: Sequence[Pair], rtol: float, atol: float, when: str = "") -> None:
    """Every pair's values agree (integer buffers such as step counters exactly)."""
    for p in pairs:
        lit, ref = p.select(p.lit).detach(), p.convert(p.ref).detach()
        msg = f"{p.name} differs from the reference {when}"
        if not ref.is_floating_point():
            assert torch.equal(lit, ref), f"{msg}: {lit.tolist()} != {ref.tolist()}"
        else:
            torch.testing.assert_close(lit, ref, rtol=rtol, atol=atol, msg=lambda m, msg=msg: f"{msg}\n{m}")


def assert_adam_state_close(
    pairs: Sequence[Pair], ref_opt: torch.optim.Optimizer, lit_opt: torch.optim.Optimizer, rtol: float, when: str = ""
) -> None:
    """Adam's ``step``, ``exp_avg`` and ``exp_avg_sq`` agree for every parameter pair the two optimizers hold.

    The moments span many orders of magnitude (``exp_avg_sq`` ~ grad^2), so the absolute tolerance is
    ``rtol`` times the largest entry of the reference tensor rather than a fixed number.
    """
    ref_params = {id(p) for g in ref_opt.param_groups for p in g["params"]}
    lit_params = {id(p) for g in lit_opt.param_groups for p in g["params"]}
    checked = 0
    for p in pairs:
        in_ref, in_lit = id(p.ref) in ref_params, id(p.lit) in lit_params
        if not (in_ref or in_lit):
            continue
        assert in_ref and in_lit, f"{p.name}: optimised by only one side (reference {in_ref}, lit_rl {in_lit})"
        ref_state, lit_state = ref_opt.state.get(p.ref, {}), lit_opt.state.get(p.lit, {})
        assert bool(ref_state) == bool(lit_state), f"{p.name}: Adam state present on one side only {when}"
        if not ref_state:
            continue
        assert float(lit_state["step"]) == float(ref_state["step"]), f"{p.name}: Adam step differs {when}"
        for key in ("exp_avg", "exp_avg_sq"):
            lit, ref = p.select(lit_state[key]), p.convert(ref_state[key])
            scale = float(ref.abs().max()) if ref.numel() else 0.0
            torch.testing.assert_close(
                lit,
                ref,
                rtol=rtol,
                atol=rtol * scale + 1e-20,
                msg=lambda m, key=key, p=p: f"Adam {key} of {p.name} differs from the reference {when}\n{m}",
            )
        checked += 1
    assert checked or not ref_opt.state, "no parameter of the optimizers was compared"


# ---------------------------------------------------------------------------- driving both sides without a Trainer
def reference_batches(
    obs_dim: int, action_dim: int, batch_size: int, n: int, seed: int = 0
) -> list[tuple[int, ReplayBatch]]:
    """``n`` (torch seed, batch) pairs: Pendulum-like observations, actions in [-1, 1], about 25 % terminated."""
    g = torch.Generator().manual_seed(seed)

    def obs() -> torch.Tensor:
        theta = torch.rand(batch_size, generator=g) * 2 * torch.pi - torch.pi
        rest = torch.rand(batch_size, obs_dim - 2, generator=g) * 16 - 8
        return torch.cat([theta.cos()[:, None], theta.sin()[:, None], rest], dim=1)

    batches = []
    for k in range(n):
        batch = ReplayBatch(
            observations=obs(),
            actions=torch.rand(batch_size, action_dim, generator=g) * 2 - 1,
            next_observations=obs(),
            rewards=torch.randn(batch_size, generator=g) - 3.0,
            terminated=(torch.rand(batch_size, generator=g) < 0.25).float(),
        )
        assert 0 < batch.terminated.sum() < batch_size
        batches.append((1_000 + k, batch))
    return batches


def feed_reference(model, batches: list[tuple[int, ReplayBatch]], on_sample: Callable[[], None] | None = None) -> None:
    """Make ``model.replay_buffer.sample`` return ``batches`` in turn, seeding torch's RNG as it hands each out.

    SB3 samples first in every gradient step, so the seed lands right before the step's random draws
    (gSDE matrix, a' ~ pi(s'), a ~ pi(s)), as :func:`update_lit` seeds right before lit_rl's ``update``.
    ``on_sample`` runs at the start of every gradient step: a look at the state between two steps of one call.
    """
    queue = list(batches)

    def sample(batch_size: int, env=None) -> ReplayBufferSamples:
        if on_sample is not None:
            on_sample()
        seed, b = queue.pop(0)
        assert batch_size == len(b.rewards)
        torch.manual_seed(seed)
        return ReplayBufferSamples(
            observations=b.observations.clone(),
            actions=b.actions.clone(),
            next_observations=b.next_observations.clone(),
            dones=b.terminated[:, None].clone(),
            rewards=b.rewards[:, None].clone(),
        )

    model.replay_buffer.sample = sample
    model.set_logger(Logger(folder=None, output_formats=[]))


def without_trainer(algo) -> list[torch.optim.Optimizer]:
    """Give an lit_rl algorithm the two pieces of Lightning plumbing ``update`` uses; return its optimizers."""
    opts = algo.configure_optimizers()
    algo.optimizers = lambda: opts
    algo.manual_backward = lambda loss: loss.backward()
    return opts


def update_lit(algo, seed: int, batch: ReplayBatch) -> None:
    """One lit_rl gradient step on ``batch`` with torch's RNG seeded as :func:`feed_reference` seeds SB3's."""
    torch.manual_seed(seed)
    algo.update(batch)


def values(pairs: Sequence[Pair], side: str) -> dict[str, torch.Tensor]:
    """Copies of the ``"ref"`` or ``"lit"`` side of every pair (in lit_rl's layout), by pair name."""
    if side == "ref":
        return {p.name: p.convert(p.ref).detach().clone() for p in pairs}
    return {p.name: p.select(p.lit).detach().clone() for p in pairs}


def changed(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> set[str]:
    """Names whose values differ between two :func:`values` snapshots."""
    return {name for name, value in before.items() if not torch.equal(value, after[name])}
