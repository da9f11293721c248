"""``Pack``: models of one algorithm built and trained together, in the SB3 API's words."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from lit_rl.core.hyperparameters import GymEnv
from lit_rl.core.off_policy import OffPolicyAlgorithm
from lit_rl.packed.members import PER_MEMBER
from lit_rl.packed.run import learn_packed


class Pack(Sequence[OffPolicyAlgorithm]):
    """``n`` models ``algorithm(policy, env, **kwargs)`` whose gradient steps and rollout actions are packed.

    A list (or range) given for a setting each member may have (``seed``, ``learning_rate``, ``tau``, ``gamma``,
    ``ent_coef``, ``target_entropy``, ``target_policy_noise``, ``target_noise_clip``, ``action_noise_std``) holds
    one value per member; any other argument is every member's. ``env`` is an env id (each member makes its own
    env) or a list of envs, one per member. ``n`` defaults to the lists' length. ``compile`` compiles the pack's batched step (not the members')::

        pack = Pack(SAC, "MlpPolicy", "Pendulum-v1", seed=range(4), learning_rate=[3e-4, 1e-3, 3e-4, 1e-3])
        pack.learn(10_000)
        pack[0].save("sac_seed0")  # each member is a model of its own

    Bad input (lists of other lengths, an env instance shared by all members) raises a ``ValueError``.
    """

    def __init__(
        self,
        algorithm: type[OffPolicyAlgorithm],
        policy: str | type,
        env: str | Sequence[GymEnv],
        n: int | None = None,
        compile: bool = False,
        **kwargs: Any,
    ) -> None:
        lists = {k: list(v) for k, v in kwargs.items() if k in PER_MEMBER and isinstance(v, list | tuple | range)}
        envs = None if isinstance(env, str) else list(env) if isinstance(env, list | tuple) else env
        if envs is not None and not isinstance(envs, list):
            raise ValueError(f"env={env!r}: one env cannot serve several members; allowed: an env id (each member "
                             "makes its own) or a list of envs, one per member")  # fmt: skip
        lengths = {k: len(v) for k, v in lists.items()} | ({"env": len(envs)} if envs is not None else {})
        if n is None and not lengths:
            raise ValueError(f"Pack needs n or a list of values for one of {', '.join(PER_MEMBER)}; got neither")
        size = n if n is not None else next(iter(lengths.values()))
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"n={size!r}; allowed: an integer >= 1")
        wrong = {k: length for k, length in lengths.items() if length != size}
        if wrong:
            raise ValueError(f"{', '.join(f'{k} has {v} values' for k, v in wrong.items())} for {size} members; "
                             "allowed: one value per member")  # fmt: skip
        self.compile = compile
        member_envs: list[Any] = [env] * size if envs is None else envs  # an id: each member makes its own env
        self.members: list[OffPolicyAlgorithm] = []
        for i in range(size):
            own = kwargs | {k: v[i] for k, v in lists.items()}
            self.members.append(algorithm(policy, member_envs[i], **own))

    def learn(self, total_timesteps: int, **learn_kwargs: Any) -> Pack:
        """Every member's ``learn(total_timesteps, **learn_kwargs)``, together (:func:`learn_packed`)."""
        learn_packed(self.members, total_timesteps, compile=self.compile, **learn_kwargs)
        return self

    def __getitem__(self, index: int) -> OffPolicyAlgorithm:  # type: ignore[override]  # members by index only
        return self.members[index]

    def __len__(self) -> int:
        return len(self.members)

    def __iter__(self) -> Iterator[OffPolicyAlgorithm]:
        return iter(self.members)

    def __repr__(self) -> str:
        name = type(self.members[0]).__name__
        return f"Pack({name} x {len(self)}: seeds {[m.seed for m in self.members]})"
