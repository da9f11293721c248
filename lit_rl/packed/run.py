"""Whole training runs of a pack: each member learns in its own thread, as its own ``learn()`` does, and every
round of gradient steps is taken once for all members, packed.

Each member collects with its own env, replay buffer and action noise; its exploration and update noise come from a
generator that starts where torch's global one stood after the member built its networks, the stream its own
unpacked run draws from. A member's run is therefore its unpacked run, to the float32 rounding of the packed step.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from lit_rl.core import precision as mixed_precision
from lit_rl.core.off_policy import OffPolicyAlgorithm
from lit_rl.nets.noise_source import thread_generator
from lit_rl.packed.base import PackedUpdate
from lit_rl.packed.rendezvous import Rendezvous

# The algorithms with a packed update (pack_class), by class name: what the launchers accept in a pack.
PACKED_ALGORITHMS = ("SAC", "TD3", "DDPG", "CrossQ", "TQC", "DQN", "QRDQN")


def pack_class(member: OffPolicyAlgorithm) -> type[PackedUpdate]:
    """The packed update of ``member``'s algorithm, or a ``ValueError`` naming the algorithms that have one."""
    from lit_rl.packed.crossq import PackedCrossQ
    from lit_rl.packed.q_learning import PackedQLearning
    from lit_rl.packed.sac import PackedSAC
    from lit_rl.packed.td3 import PackedTD3
    from lit_rl.packed.tqc import PackedTQC

    for packed in (PackedSAC, PackedTD3, PackedCrossQ, PackedTQC, PackedQLearning):
        if isinstance(member, packed.algorithm):
            return packed
    raise ValueError(f"{type(member).__name__} has no packed update; allowed: {', '.join(PACKED_ALGORITHMS)}")


def member_generator(member: OffPolicyAlgorithm, index: int) -> torch.Generator:
    """The generator ``member``'s noise comes from in packed runs: at first at the state torch's global one had after
    the member built its networks (its own run's stream), then where the member's last packed run left it."""
    generator = getattr(member, "packed_generator", None)
    if generator is not None:
        return generator
    state = getattr(member, "rng_after_init", None)
    if state is None:
        raise ValueError(f"member {index} has no networks yet; allowed: models built with an env (SAC(policy, env))")
    generator = torch.Generator()
    generator.set_state(state)
    member.__dict__["packed_generator"] = generator  # a plain attribute beside the module's own
    return generator


def check_noise(members: Sequence[OffPolicyAlgorithm]) -> None:
    """Refuse action noise that draws from numpy's global state: threads would share it, in no fixed order."""
    for i, member in enumerate(members):
        noise = getattr(member, "action_noise", None)
        if noise is not None and type(getattr(noise, "rng", None)).__name__ == "GlobalNumpyRandom":
            raise ValueError(
                f"member {i}: its action_noise draws from numpy's global random state, which members in one process "
                "would share; allowed: a seeded noise (NormalActionNoise(..., seed=...)) or none"
            )


class PackRun:
    """The rounds of ``size`` members training in threads of one process: each member's ``run_gradient_steps``
    waits for the others, and the last to arrive takes the round for all, packed.

    Members join as they start training (:meth:`join`); the pack is made of those that joined once every member has
    joined or left. A member that leaves (its run ended, or failed) is no longer waited for: its slice of the pack is
    still stepped, apart from the others, and the others go on as they would have.
    """

    def __init__(self, size: int, compile: bool = False) -> None:
        self.size, self.compile = size, compile
        self.members: list[Any] = [None] * size
        self.generators: list[Any] = [None] * size
        self.requested = [0] * size
        self.pack: PackedUpdate | None = None
        self.positions: dict[int, int] = {}  # member index -> its place in the pack
        self.preemptions: list[Any] = []  # the members' PreemptionCheckpoint callbacks (launcher runs)
        self.stop_signal: int | None = None
        self._stop_requeue: Callable[[int, Any], Any] | None = None
        self.rounds_taken = 0
        self.joined = Rendezvous(size, lambda _: self.start())
        self.rounds = Rendezvous(size, self.round)
        # Rollout actions, one batched forward for all members; under the rounds' lock, so a stop sees both.
        self.acting = Rendezvous(size, self.act, condition=self.rounds.hold())
        self.observations: list[torch.Tensor | None] = [None] * size  # each member's last rollout observation
        self.actions: list[torch.Tensor | None] = [None] * size

    @property
    def packed(self) -> PackedUpdate:
        if self.pack is None:
            raise RuntimeError("the pack's members have not all joined yet")
        return self.pack

    def add(self, index: int, member: OffPolicyAlgorithm) -> torch.Generator:
        """Member ``index``, its gradient steps from now on taken in the pack's rounds; returns its noise generator."""
        self.members[index], self.generators[index] = member, member_generator(member, index)

        def run_gradient_steps(n_updates: int, batch_size: int) -> None:  # the member's round: packed with all
            self.requested[index] = n_updates
            self.rounds.wait(index)

        def rollout_act(obs: Any) -> Any:  # the member's rollout actions: computed with all members' at once
            self.observations[index] = member.acting_input(obs)
            self.acting.wait(index)
            actions, self.actions[index] = self.actions[index], None
            assert actions is not None  # set by the acting round for every member that waited in it
            return mixed_precision.float32_actions(actions).cpu().numpy()

        member.run_gradient_steps = run_gradient_steps  # type: ignore[method-assign]
        member.rollout_act = rollout_act  # type: ignore[method-assign]
        return self.generators[index]

    def join(self, index: int, member: OffPolicyAlgorithm) -> torch.Generator:
        """:meth:`add` from the member's own thread, then wait for the others; the last to join makes the pack."""
        generator = self.add(index, member)
        self.joined.wait(index)
        return generator

    def start(self) -> None:
        """Make the pack of the members added."""
        indices = [i for i, m in enumerate(self.members) if m is not None]
        members = [self.members[i] for i in indices]
        check_noise(members)
        self.pack = pack_class(members[0])(members, [self.generators[i] for i in indices], compile=self.compile)
        self.positions = {index: position for position, index in enumerate(indices)}

    def write_optimizer_states(self, index: int) -> None:
        """Member ``index``'s slice of the pack's Adam states into its own optimizers (before they are saved)."""
        if self.pack is not None and index in self.positions:
            self.pack.write_optimizer_states(self.positions[index])

    def leave(self, index: int) -> None:
        """Member ``index`` steps alone again and is waited for no more (its run ended, or failed)."""
        member = self.members[index]
        for hook in ("run_gradient_steps", "rollout_act"):
            if member is not None and hook in vars(member):
                delattr(member, hook)
        self.joined.leave(index)
        self.rounds.leave(index)
        self.acting.leave(index)

    def round(self, indices: list[int]) -> None:
        """The rounds' action, run while every member in the pack waits: one packed round, then a pending stop."""
        packed_round(self.packed, [self.requested[i] for i in indices])
        self.rounds_taken += 1
        if self.stop_signal is not None:
            self._stop_members()

    def act(self, indices: list[int]) -> None:
        """The acting rendezvous's action: the rollout actions of members ``indices``, batched with the pack's other
        members (those that left act on their last observation, unread), so no member's result depends on another's
        presence."""
        observations = [self.observations[i] for i in self.positions]  # in pack order
        present = next(o for o in observations if o is not None)
        obs = torch.stack([present.new_zeros(present.shape) if o is None else o for o in observations])
        actions = self.packed.act(obs)
        for i in indices:
            self.actions[i] = actions[self.positions[i]]

    def stop(self, signum: int, requeue: Callable[[int, Any], Any] | None = None) -> None:
        """A stop signal for every member: each saves its checkpoint and stops (``requeue``: its run ends as requeued,
        through that handler). Every member must stop after the same round, or the pack could not resume together:
        once a member waits for a round, the stop is handed to all members in that round, while all wait; before
        (the warm-up), each member stops at the end of its running batch."""
        with self.rounds.hold():  # no round runs and no member arrives at one meanwhile
            if self.stop_signal is not None:
                return
            self.stop_signal, self._stop_requeue = signum, requeue
            if self.rounds_taken == 0 and not self.rounds.waiting and not self.acting.waiting:
                self._stop_members()

    def _stop_members(self) -> None:
        assert self.stop_signal is not None
        for preemption in self.preemptions:
            preemption.receive(self.stop_signal, self._stop_requeue)

    def abort(self) -> None:
        """Release every member waiting for the others, with ``threading.BrokenBarrierError``."""
        self.joined.abort()
        self.rounds.abort()
        self.acting.abort()


def learn_packed(
    members: Sequence[OffPolicyAlgorithm], total_timesteps: int, compile: bool = False, **learn_kwargs: Any
) -> list[OffPolicyAlgorithm]:
    """``member.learn(total_timesteps, **learn_kwargs)`` for every member, their gradient steps packed.

    Members are models of one algorithm built with their envs (``SAC("MlpPolicy", env, seed=...)``), equal in
    every setting but seed and the scalars each member may set (:data:`lit_rl.packed.members.PER_MEMBER`). Returns the
    members, trained.
    """
    members = list(members)
    if not members:
        raise ValueError("learn_packed needs at least one member; got none")
    run = PackRun(len(members), compile)
    generators = [run.add(i, m) for i, m in enumerate(members)]
    try:
        run.start()
    except BaseException:
        for i in range(len(members)):
            run.leave(i)
        raise
    errors: list[tuple[int, BaseException]] = []

    def learn(i: int, member: OffPolicyAlgorithm) -> None:
        try:
            with thread_generator(generators[i]):
                member.learn(total_timesteps, **learn_kwargs)
        except BaseException as error:  # noqa: BLE001  # reported after every thread has ended
            errors.append((i, error))
            run.abort()  # the others stop waiting for it
        finally:
            run.leave(i)

    threads = [threading.Thread(target=learn, args=(i, m), name=f"member-{i}") for i, m in enumerate(members)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    first = next(((i, e) for i, e in errors if not isinstance(e, threading.BrokenBarrierError)), None)
    if first is not None:
        raise RuntimeError(f"member {first[0]} failed: {type(first[1]).__name__}: {first[1]}") from first[1]
    run.packed.write_optimizer_states()
    return members


def packed_round(pack: PackedUpdate, requested: Sequence[int], step: Callable[..., dict] | None = None) -> None:
    """One round of gradient steps for every member (all asked for the same number), as each member's own
    ``run_gradient_steps`` takes them: learning rate, training mode, round counter, metrics."""
    if len(set(requested)) != 1:
        raise RuntimeError(f"members asked for different numbers of gradient steps in one round: {list(requested)}")
    for member in pack.members:
        member.update_learning_rate()
        member.set_policy_training(True)
    for r in range(requested[0]):
        for member in pack.members:
            member.clock.round_gradient_step = r
        batch = pack.sample()
        metrics = pack.gradient_step(batch, pack.draw_noise(batch), r)
        for i, member in enumerate(pack.members):
            for name, value in metrics.items():
                member.record(name, value[i])
