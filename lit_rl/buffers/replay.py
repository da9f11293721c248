"""Uniform replay buffer in preallocated torch storage on the algorithm's device."""

from __future__ import annotations

import os
import warnings
from typing import Any, NamedTuple

import numpy as np
import torch
from gymnasium import spaces


class ReplayBatch(NamedTuple):
    """A sampled mini-batch; every tensor has the batch as its first dimension."""

    observations: torch.Tensor
    actions: torch.Tensor
    next_observations: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor  # 1.0 where the episode ended in a terminal state (no bootstrap)


def _available_bytes(device: torch.device) -> int | None:
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _storage_dtype(space: spaces.Space) -> torch.dtype:
    if isinstance(space, spaces.Box) and np.issubdtype(space.dtype, np.floating):
        return torch.float32
    if isinstance(space, spaces.Box):
        return torch.from_numpy(np.zeros((), dtype=space.dtype)).dtype
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return torch.long
    if isinstance(space, spaces.MultiBinary):
        return torch.float32
    raise TypeError(
        f"ReplayBuffer cannot store a {type(space).__name__} space; allowed: Box, Discrete, MultiDiscrete, MultiBinary"
    )


def _space_shape(space: spaces.Space) -> tuple[int, ...]:
    if isinstance(space, spaces.Discrete):
        return ()
    return tuple(space.shape)


class ReplayBuffer:
    """FIFO ring buffer of transitions with a ``(buffer_size, n_envs)`` layout.

    ``buffer_size`` counts rows; each row holds one transition per env, as in
    Stable-Baselines3, so the buffer holds ``buffer_size * n_envs``
    transitions. ``add`` takes one vector-env step; ``terminated`` and
    ``truncated`` are kept apart: a truncated transition's ``next_obs`` must be
    the true final observation and it still bootstraps.
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        n_envs: int = 1,
        device: torch.device | str = "cpu",
        seed: int | None = None,
    ) -> None:
        if not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValueError(f"buffer_size={buffer_size!r} must be a positive integer")
        if n_envs < 1:
            raise ValueError(f"n_envs={n_envs!r} must be a positive integer")
        self.buffer_size, self.n_envs = buffer_size, n_envs
        self.device = torch.device(device)
        self.observation_space, self.action_space = observation_space, action_space
        self.obs_shape, self.action_shape = _space_shape(observation_space), _space_shape(action_space)
        obs_dtype, act_dtype = _storage_dtype(observation_space), _storage_dtype(action_space)

        rows = (buffer_size, n_envs)
        self._check_fits(rows, obs_dtype, act_dtype)
        # torch.empty: pages are committed only when written, so a large buffer starts instantly.
        self.observations = torch.empty(rows + self.obs_shape, dtype=obs_dtype, device=self.device)
        self.next_observations = torch.empty(rows + self.obs_shape, dtype=obs_dtype, device=self.device)
        self.actions = torch.empty(rows + self.action_shape, dtype=act_dtype, device=self.device)
        self.rewards = torch.empty(rows, dtype=torch.float32, device=self.device)
        self.terminated = torch.empty(rows, dtype=torch.float32, device=self.device)
        self.truncated = torch.empty(rows, dtype=torch.bool, device=self.device)
        self.pos, self.full = 0, False
        self.generator = torch.Generator(device=self.device)
        if seed is not None:
            self.generator.manual_seed(seed)

    def transition_nbytes(self) -> int:
        """Bytes of storage per stored transition (one env, one step)."""
        per_row = sum(t[0].nbytes for t in self._storage())
        return per_row // self.n_envs

    def _storage(self) -> list[torch.Tensor]:
        return [self.observations, self.next_observations, self.actions, self.rewards, self.terminated, self.truncated]

    def _check_fits(self, rows: tuple[int, int], obs_dtype: torch.dtype, act_dtype: torch.dtype) -> None:
        n = rows[0] * rows[1]
        obs_bytes = int(np.prod(self.obs_shape, dtype=np.int64)) * obs_dtype.itemsize
        act_bytes = int(np.prod(self.action_shape, dtype=np.int64)) * act_dtype.itemsize
        total = n * (2 * obs_bytes + act_bytes + 4 + 4 + 1)
        available = _available_bytes(self.device)
        if available is not None and total > available:
            warnings.warn(
                f"ReplayBuffer: buffer_size={rows[0]} x n_envs={rows[1]} needs {total / 2**30:.2f} GiB "
                f"but only {available / 2**30:.2f} GiB is free on {self.device}; lower buffer_size",
                ResourceWarning,
                stacklevel=3,
            )

    def __len__(self) -> int:
        """Number of stored transitions (rows times envs)."""
        return (self.buffer_size if self.full else self.pos) * self.n_envs

    def add(self, obs, next_obs, action, reward, terminated, truncated) -> None:
        """Store one vector-env step: every argument has ``n_envs`` as first dimension."""
        p = self.pos
        self.observations[p] = (
            torch.as_tensor(obs).to(self.device, self.observations.dtype).reshape(self.observations[p].shape)
        )
        self.next_observations[p] = (
            torch.as_tensor(next_obs).to(self.device, self.observations.dtype).reshape(self.observations[p].shape)
        )
        self.actions[p] = torch.as_tensor(action).to(self.device, self.actions.dtype).reshape(self.actions[p].shape)
        self.rewards[p] = torch.as_tensor(reward).to(self.device, torch.float32)
        self.terminated[p] = torch.as_tensor(terminated).to(self.device, torch.float32)
        self.truncated[p] = torch.as_tensor(truncated).to(self.device, torch.bool)
        self.pos = (p + 1) % self.buffer_size
        self.full = self.full or self.pos == 0

    def state_dict(self) -> dict[str, Any]:
        """The stored transitions (filled rows only, on CPU), write position and sampler RNG."""
        rows = self.buffer_size if self.full else self.pos
        storage = {
            name: (value[:rows].cpu().clone() if isinstance(value, torch.Tensor) else value[:rows].copy())
            for name, value in vars(self).items()
            if isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim >= 1 and value.shape[0] == self.buffer_size
        }
        return {
            "class": type(self).__qualname__,
            "buffer_size": self.buffer_size,
            "n_envs": self.n_envs,
            "pos": self.pos,
            "full": self.full,
            "generator": self.generator.get_state(),
            "storage": storage,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` into a buffer of the same class, size and number of envs."""
        mine = (type(self).__qualname__, self.buffer_size, self.n_envs)
        theirs = (state["class"], state["buffer_size"], state["n_envs"])
        if mine != theirs:
            raise ValueError(
                f"replay buffer file holds (class, buffer_size, n_envs)={theirs}; this buffer is {mine}; "
                "allowed: the same class, buffer_size and n_envs"
            )
        for name, value in state["storage"].items():
            target = getattr(self, name)
            if isinstance(target, torch.Tensor):
                target[: len(value)] = value.to(target.device)
            else:
                target[: len(value)] = value
        self.pos, self.full = state["pos"], state["full"]
        self.generator.set_state(state["generator"])

    def sample(self, batch_size: int) -> ReplayBatch:
        """Uniformly sample ``batch_size`` stored transitions (with replacement)."""
        rows = self.buffer_size if self.full else self.pos
        if rows == 0:
            raise RuntimeError("ReplayBuffer.sample called on an empty buffer")
        row = torch.randint(0, rows, (batch_size,), device=self.device, generator=self.generator)
        env = torch.randint(0, self.n_envs, (batch_size,), device=self.device, generator=self.generator)
        return ReplayBatch(
            observations=self.observations[row, env],
            actions=self.actions[row, env],
            next_observations=self.next_observations[row, env],
            rewards=self.rewards[row, env],
            terminated=self.terminated[row, env],
        )
