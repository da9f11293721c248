"""What every packed update holds: the members, their stacked policies and Adam states, and their sampling."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import torch
from torch.func import grad, vmap

from lit_rl.buffers.replay import ReplayBatch
from lit_rl.core.compiled import CompiledFunction
from lit_rl.core.precision import matmul_precision
from lit_rl.nets.noise_source import given_noise
from lit_rl.packed.adam import StackedAdam
from lit_rl.packed.members import check_members, per_member, stacked_adam
from lit_rl.packed.stack import Stack


class PackedUpdate:
    """A pack of members of one algorithm (``algorithm``, settings ``shared`` equal, learning rate, tau, gamma and
    seed their own), their policies stacked, one :class:`~lit_rl.packed.adam.StackedAdam` per optimizer.

    ``generators`` (one per member; default: seeded with the member's seed) draw the members' update noise.
    ``compile`` runs each loss's batched gradient through ``torch.compile`` (compiled once, at the first step).
    """

    algorithm: ClassVar[type]
    shared: ClassVar[tuple[str, ...]]
    targets: ClassVar[tuple[str, ...]]  # the networks with a Polyak-averaged "<name>_target" copy

    def __init__(
        self, members: Sequence[Any], generators: Sequence[torch.Generator] | None = None, compile: bool = False
    ) -> None:
        self.compile = compile
        check_members(members, self.member_class(members), self.shared)
        self.members = list(members)
        self.policy = Stack([m.policy for m in members], "policy")
        self.make_adams(compile)
        self.tau = per_member([m.tau for m in members])
        self.gamma = per_member([m.gamma for m in members])
        if generators is not None and len(generators) != len(members):
            raise ValueError(f"generators: {len(generators)} given for {len(members)} members; allowed: one each")
        self.generators = list(generators) if generators is not None else [
            torch.Generator().manual_seed(i if m.seed is None else m.seed) for i, m in enumerate(members)
        ]  # fmt: skip
        self.n_updates = 0
        self.started = False
        policy = self.policy

        def acting(tensors: dict, obs: torch.Tensor, noise: list[torch.Tensor]) -> torch.Tensor:
            with given_noise(noise):
                return policy.call(tensors, self.acting_output, obs)

        acting_batched = vmap(acting)
        self.acting = CompiledFunction(acting_batched, owner=policy.call_module) if compile else acting_batched

    def make_adams(self, compile: bool) -> None:
        """The stacked Adams of the members' optimizers: an actor's and a critic's."""
        self.actor_adam = stacked_adam(self.members, self.policy, "actor.", 0, compile)
        self.critic_adam = stacked_adam(self.members, self.policy, "critic.", 1, compile)

    def batched_grad(self, fn: Callable[..., tuple[torch.Tensor, Any]]) -> Callable[..., tuple[dict, Any]]:
        """``vmap(grad(fn, has_aux=True))``: the gradient of a member's loss with respect to its first argument, for
        every member at once; compiled with ``compile``."""
        batched = vmap(grad(fn, has_aux=True))
        # lit_rl's compiled functions: each its own cache (several packs in one process), the CPU inductor config.
        return CompiledFunction(batched, owner=self.policy.call_module) if self.compile else batched

    def member_class(self, members: Sequence[Any]) -> type:
        """The one class every member must be."""
        return self.algorithm

    def sample(self) -> ReplayBatch:
        """One batch per member from its own replay buffer, as its own update samples it, stacked member-first."""
        batches = [m.sample_batch(m.batch_size) for m in self.members]
        fields: list[Any] = [None if f[0] is None else torch.stack(f) for f in zip(*batches, strict=True)]
        return ReplayBatch(*fields)

    def train(self, gradient_steps: int) -> dict[str, torch.Tensor]:
        """``gradient_steps`` packed steps, each member on batches from its own buffer (SB3's ``train``)."""
        metrics: dict[str, torch.Tensor] = {}
        for i in range(gradient_steps):
            batch = self.sample()
            metrics = self.gradient_step(batch, self.draw_noise(batch), i)
        return metrics

    def draw_noise(self, batch: ReplayBatch) -> list[torch.Tensor]:
        """One step's standard normal draws, each member's from its own generator (member axis first)."""
        return self.draw(self.noise_shapes(batch))

    def draw(self, shapes: Sequence[tuple[int, ...]]) -> list[torch.Tensor]:
        """Standard normal draws of ``shapes`` (member axis first), each member's slice from its own generator."""
        return [torch.stack([torch.randn(shape[1:], generator=g) for g in self.generators]) for shape in shapes]

    @torch.no_grad()
    def act(self, obs: torch.Tensor) -> torch.Tensor:
        """Every member's exploring rollout actions on its slice of ``obs`` (member axis first), in one batched
        forward: member ``i``'s equal its own ``act`` with its generator (its draws, in its order), to the float32
        rounding of the batched matrix products."""
        noise = self.draw(self.acting_noise_shapes(obs))
        self.members[0].set_policy_training(False)  # the module the stacked tensors are lent to: eval mode
        with matmul_precision(self.members[0].precision, obs.device):
            return self.acting(self.policy.tensors, obs, noise)

    @staticmethod
    def acting_output(policy: Any, obs: torch.Tensor) -> torch.Tensor:
        """What one member's policy computes when acting, batched over the members: its exploring actions."""
        return policy(obs, False)

    def acting_noise_shapes(self, obs: torch.Tensor) -> list[tuple[int, ...]]:
        """The shapes (member axis first) of the draws :meth:`acting_output` makes: none (deterministic actors)."""
        return []

    def noise_shapes(self, batch: ReplayBatch) -> list[tuple[int, ...]]:
        """The shapes (member axis first) of the draws one step makes, in the order it makes them."""
        raise NotImplementedError

    def gradient_step(self, batch: ReplayBatch, noise: Sequence[torch.Tensor], round_step: int = 0) -> dict:
        """One step of every member on its slice of ``batch`` with ``noise``; ``round_step`` counts the steps
        since the last rollout (SB3's loop index in ``train``). The matrix products in the members' precision."""
        if not self.started:  # the members' optimizer states as they are now (after any learn() of their own)
            self.read_optimizer_states()
            self.started = True
        with matmul_precision(self.members[0].precision, torch.device("cpu")):
            metrics = self.packed_step(batch, noise, round_step)
        for member in self.members:  # each member counts its updates, as its own gradient_step does
            member.clock.n_updates += 1
        return metrics

    def packed_step(self, batch: ReplayBatch, noise: Sequence[torch.Tensor], round_step: int) -> dict:
        """The algorithm's step, batched over the members."""
        raise NotImplementedError

    def adams(self) -> list[tuple[StackedAdam, Stack]]:
        """The stacked Adams in the order of a member's own optimizers, each with the stack it steps."""
        return [(self.actor_adam, self.policy), (self.critic_adam, self.policy)]

    def member_optimizer_params(self) -> Iterator[tuple[int, torch.optim.Optimizer, StackedAdam, torch.Tensor, str]]:
        """``(member, its optimizer, the stacked Adam, parameter, stacked name)`` for every parameter of every
        member's own optimizers (those of its last ``learn``; none before one)."""
        for i, member in enumerate(self.members):
            optimizers = member.optimizers(use_pl_optimizer=False) if member._trainer is not None else []
            optimizers = optimizers if isinstance(optimizers, list) else [optimizers]
            for optimizer, (adam, stack) in zip(optimizers, self.adams(), strict=False):
                names = {id(t): n for n, t in stack.members[i].named_parameters()}
                for param in optimizer.param_groups[0]["params"]:
                    yield i, optimizer, adam, param, names[id(param)]

    @torch.no_grad()
    def read_optimizer_states(self) -> None:
        """Start from the members' own Adam moments and step counts (members that have learned before), so packed
        steps continue their optimizers rather than restart them; members whose counts differ are refused."""
        steps: dict[int, set[float]] = {}
        for i, optimizer, adam, param, name in self.member_optimizer_params():
            state = optimizer.state.get(param)
            if state:
                adam.exp_avg[name][i].copy_(state["exp_avg"])
                adam.exp_avg_sq[name][i].copy_(state["exp_avg_sq"])
                steps.setdefault(id(adam), set()).add(float(state["step"]))
        for adam, _ in self.adams():
            counts = steps.get(id(adam), set())
            if len(counts) > 1:
                raise ValueError(f"the members' optimizers have taken different numbers of steps {sorted(counts)}; "
                                 "allowed: members trained alike so far")  # fmt: skip
            if counts:
                adam.step_count = int(counts.pop())
        self.n_updates = self.members[0]._n_updates

    @torch.no_grad()
    def write_optimizer_states(self, member: int | None = None) -> None:
        """Give each member's own optimizers (those of its last ``learn``) the pack's Adam moments and step count,
        so a member saved now continues alone as it would had it taken every step itself; ``member``: only its."""
        if not self.started:  # no packed step yet: the members' own states are the current ones
            return
        for i, optimizer, adam, param, name in self.member_optimizer_params():
            if member is not None and i != member:
                continue
            optimizer.state[param] = {
                "step": torch.tensor(float(adam.step_count)),
                "exp_avg": adam.exp_avg[name][i].clone(),
                "exp_avg_sq": adam.exp_avg_sq[name][i].clone(),
            }

    @torch.no_grad()
    def update_targets(self) -> None:
        """Polyak-average each target network towards its online one at each member's ``tau``; buffers copied."""
        tensors = self.policy.tensors
        for name in tensors:
            online = next((t for t in self.targets if name.startswith(t + ".")), None)
            if online is None:
                continue
            target = tensors[f"{online}_target.{name.removeprefix(online + '.')}"]
            if name in self.policy.param_names:
                target.lerp_(tensors[name], self.tau.view(-1, *[1] * (target.dim() - 1)))
            else:
                target.copy_(tensors[name])
