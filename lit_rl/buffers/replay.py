"""Uniform replay buffer in preallocated torch storage on the algorithm's device."""

from __future__ import annotations

import os
import warnings
from typing import Any, NamedTuple

import numpy as np
import torch
from gymnasium import spaces

from lit_rl.buffers.observations import DictObservationFlattener


def _rows(name: str, values: Any, shape: tuple[int, ...]) -> torch.Tensor:
    """``values`` as a tensor of exactly ``shape`` (a wrong shape is an error, never a silent reshape)."""
    tensor = torch.as_tensor(values)
    if tuple(tensor.shape) != shape:
        raise ValueError(
            f"ReplayBuffer.add: {name} of shape {tuple(tensor.shape)}; allowed: {shape} (n_envs, *space shape)"
        )
    return tensor


class ReplayBatch(NamedTuple):
    """A sampled mini-batch; every tensor has the batch as its first dimension."""

    observations: torch.Tensor
    actions: torch.Tensor
    next_observations: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor  # 1.0 where the episode ended in a terminal state (no bootstrap)
    # Per-sample discount of the bootstrap term (gamma^k for k-step returns); None means the algorithm's gamma.
    discounts: torch.Tensor | None = None


STATE_FORMAT = 2  # 2: buffer_size counts transitions; fields saved by name


def normalize_obs(obs: torch.Tensor, env: Any) -> torch.Tensor:
    """Sampled raw observations through ``env.normalize_obs`` (SB3's ``_normalize_obs``); None: unchanged."""
    return obs if env is None else env.normalize_obs(obs)


def normalize_reward(rewards: torch.Tensor, env: Any) -> torch.Tensor:
    """Sampled raw rewards through ``env.normalize_reward`` (SB3's ``_normalize_reward``); None: unchanged."""
    return rewards if env is None else env.normalize_reward(rewards)


def take_rows(storage: torch.Tensor, row: torch.Tensor, env: torch.Tensor) -> torch.Tensor:
    """``storage[row, env]`` of a contiguous ``(rows, n_envs, ...)`` tensor, for index tensors of any equal shape.

    ``index_select`` over the flattened (row, env) axis copies whole entries: on the CPU, advanced indexing
    of image rows costs about 20 times as much.
    """
    flat = storage.view(storage.shape[0] * storage.shape[1], -1)
    return flat.index_select(0, (row * storage.shape[1] + env).reshape(-1)).view(*row.shape, *storage.shape[2:])


def choose_rows(mask: torch.Tensor, chosen: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """``torch.where(mask, chosen, other)`` for a ``mask`` over the leading axes: whole entries picked by index
    (on the CPU, ``torch.where`` broadcasting a mask over a batch of images costs about 5 times as much)."""
    n = mask.numel()
    if n == 0:
        return other
    both = torch.cat([other.reshape(n, -1), chosen.reshape(n, -1)])
    index = mask.reshape(-1).long() * n + torch.arange(n, device=mask.device)
    return both.index_select(0, index).view(other.shape)


def _cpu_copy(value: Any) -> Any:
    """A copy that shares no memory with the buffer (tensors on CPU)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    return value.copy() if isinstance(value, np.ndarray) else value


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
    if isinstance(space, spaces.MultiBinary):  # the space's dtype (int8): the policy converts to float
        return torch.from_numpy(np.zeros((), dtype=space.dtype)).dtype
    raise TypeError(
        f"ReplayBuffer cannot store a {type(space).__name__} space; allowed: Box, Discrete, MultiDiscrete, MultiBinary"
    )


def _space_shape(space: spaces.Space) -> tuple[int, ...]:
    if isinstance(space, spaces.Discrete):
        return ()
    if space.shape is None:
        raise TypeError(f"{space} has no shape; allowed: Box, Discrete, MultiDiscrete, MultiBinary or a Dict of them")
    return tuple(space.shape)


class ReplayBuffer:
    """FIFO ring buffer of ``buffer_size`` transitions, stored as ``buffer_size // n_envs`` rows of ``n_envs``.

    ``buffer_size`` means what it means in Stable-Baselines3: the total number
    of transitions; the attribute ``buffer_size`` is then the number of rows
    (``max(buffer_size // n_envs, 1)``), as SB3's is. ``len(buffer)`` is the
    number of stored transitions. ``add`` takes one vector-env step;
    ``terminated`` and ``truncated`` are kept apart: a truncated transition's
    ``next_obs`` must be the true final observation and it still bootstraps.

    A ``spaces.Dict`` observation space is stored flattened (see
    :class:`DictObservationFlattener`): batches hold flat float32 observations.

    ``optimize_memory_usage`` (SB3's option) stores no separate next
    observations: the next observation of row ``i`` is the observation of row
    ``i + 1``. The true final observation of an episode (which autoreset
    replaces by the next episode's first one) is kept in a small side store, so
    transitions at episode ends stay correct; the oldest row is not sampled
    once the buffer is full, because its observation was overwritten.
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        n_envs: int = 1,
        device: torch.device | str = "cpu",
        seed: int | None = None,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
    ) -> None:
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValueError(f"buffer_size={buffer_size!r} must be a positive integer (transitions)")
        if isinstance(n_envs, bool) or not isinstance(n_envs, int) or n_envs < 1:
            raise ValueError(f"n_envs={n_envs!r} must be a positive integer")
        if not isinstance(optimize_memory_usage, bool):
            raise TypeError(f"optimize_memory_usage={optimize_memory_usage!r} must be a bool")
        if optimize_memory_usage and buffer_size // n_envs < 2:
            raise ValueError(
                f"optimize_memory_usage=True needs two rows, buffer_size >= 2 * n_envs; "
                f"got buffer_size={buffer_size}, n_envs={n_envs}"
            )
        # Rows of n_envs transitions, as SB3 (which also keeps at least one row).
        self.buffer_size, self.n_envs = max(buffer_size // n_envs, 1), n_envs
        self.optimize_memory_usage = optimize_memory_usage
        # SB3's switch: False stores time-limit ends as terminations (no bootstrap from the final observation).
        self.handle_timeout_termination = handle_timeout_termination
        self.device = torch.device(device)
        self.observation_space, self.action_space = observation_space, action_space
        self.flattener = (
            DictObservationFlattener(observation_space) if isinstance(observation_space, spaces.Dict) else None
        )
        stored_space = self.flattener.flat_space if self.flattener else observation_space
        self.obs_shape, self.action_shape = _space_shape(stored_space), _space_shape(action_space)
        if isinstance(action_space, spaces.Box):  # flat, as SB3's action_dim: the networks see prod(shape) numbers
            self.action_shape = (int(np.prod(action_space.shape)),)
        obs_dtype, act_dtype = _storage_dtype(stored_space), _storage_dtype(action_space)

        rows = (self.buffer_size, n_envs)
        self._check_fits(rows, obs_dtype, act_dtype)
        # torch.empty: pages are committed only when written, so a large buffer starts instantly.
        self.observations = torch.empty(rows + self.obs_shape, dtype=obs_dtype, device=self.device)
        self.next_observations: torch.Tensor | None = None
        if optimize_memory_usage:
            # Side store of true final observations, grown on demand; final_slot points into it.
            self.final_slot = torch.zeros(rows, dtype=torch.int32, device=self.device)
            self.final_observations = torch.empty((64,) + self.obs_shape, dtype=obs_dtype, device=self.device)
            self._final_written_at = np.full(64, -(2**62), dtype=np.int64)  # add count when each slot was written
            self._final_next = 0
        else:
            self.next_observations = torch.empty(rows + self.obs_shape, dtype=obs_dtype, device=self.device)
        self.actions = torch.empty(rows + self.action_shape, dtype=act_dtype, device=self.device)
        self.rewards = torch.empty(rows, dtype=torch.float32, device=self.device)
        self.terminated = torch.empty(rows, dtype=torch.float32, device=self.device)
        self.truncated = torch.empty(rows, dtype=torch.bool, device=self.device)
        self.pos, self.full = 0, False
        self.n_adds = 0
        self.generator = torch.Generator(device=self.device)
        if seed is not None:
            self.generator.manual_seed(seed)

    def transition_nbytes(self) -> int:
        """Bytes of row storage per stored transition (one env, one step); excludes final-observation slots."""
        per_row = sum(t[0].nbytes for t in self._storage())
        return per_row // self.n_envs

    def _storage(self) -> list[torch.Tensor]:
        return [getattr(self, name) for name in self._row_fields()]

    def nbytes(self) -> int:
        """Bytes of all preallocated storage on the buffer's device (rows and side stores)."""
        return sum(getattr(self, name).nbytes for name in self._device_fields())

    def describe(self) -> str:
        """One line for the run's log: capacity, layout and memory."""
        return (
            f"replay buffer: {self.buffer_size * self.n_envs:,} transitions "
            f"({self.buffer_size:,} rows x {self.n_envs} envs), {self.nbytes() / 2**20:.1f} MiB on {self.device}"
        )

    def _row_fields(self) -> list[str]:
        """Attributes with one entry per row (first dimension ``buffer_size``), saved up to the filled rows."""
        obs = ["observations", "final_slot" if self.optimize_memory_usage else "next_observations"]
        return obs + ["actions", "rewards", "terminated", "truncated"]

    def _extra_fields(self) -> list[str]:
        """Other attributes a resumed run needs, saved whole."""
        fields = ["pos", "full", "n_adds"]
        if self.optimize_memory_usage:
            fields += ["final_observations", "_final_written_at", "_final_next"]
        return fields

    def _device_fields(self) -> list[str]:
        """Tensors that :meth:`nbytes` counts."""
        return self._row_fields() + (["final_observations"] if self.optimize_memory_usage else [])

    def _check_fits(self, rows: tuple[int, int], obs_dtype: torch.dtype, act_dtype: torch.dtype) -> None:
        n = rows[0] * rows[1]
        obs_bytes = int(np.prod(self.obs_shape, dtype=np.int64)) * obs_dtype.itemsize
        act_bytes = int(np.prod(self.action_shape, dtype=np.int64)) * act_dtype.itemsize
        obs_total = obs_bytes + 4 if self.optimize_memory_usage else 2 * obs_bytes
        total = n * (obs_total + act_bytes + 4 + 4 + 1)
        available = _available_bytes(self.device)
        if available is not None and total > available:
            warnings.warn(
                f"ReplayBuffer: {n} transitions ({rows[0]} rows x {rows[1]} envs) need {total / 2**30:.2f} GiB "
                f"but only {available / 2**30:.2f} GiB is free on {self.device}; lower buffer_size",
                UserWarning,  # shown by default (a ResourceWarning is hidden), before the allocation fails
                stacklevel=3,
            )

    def size(self) -> int:
        """SB3's ``size()``: the filled rows, i.e. transitions per env (``len(buffer)`` counts all transitions)."""
        return self.buffer_size if self.full else self.pos

    def __len__(self) -> int:
        """Number of stored transitions (filled rows times envs)."""
        return (self.buffer_size if self.full else self.pos) * self.n_envs

    def _write(self, name: str, row: int, values: Any) -> None:
        """Row ``row`` of the storage tensor ``name`` := ``values`` (one value per env, cast to its dtype).

        On the CPU through a numpy view of the tensor: numpy's cast and assignment cost about a microsecond where
        torch's conversion and indexing cost several (a step's writes took 5x SB3's numpy buffer's). The view is
        rebuilt when the tensor or its memory changes (a copied or restored buffer).
        """
        tensor = getattr(self, name)
        if tensor.device.type != "cpu":
            tensor[row] = torch.as_tensor(values).to(tensor.device, tensor.dtype)
            return
        views = self.__dict__.setdefault("_numpy_views", {})
        view = views.get(name)
        if view is None or view[0] is not tensor or view[1] != tensor.data_ptr():
            view = views[name] = (tensor, tensor.data_ptr(), tensor.numpy())
        view[2][row] = values

    def __getstate__(self) -> dict[str, Any]:
        # Copies and pickles hold the storage once: the numpy views are rebuilt on the first write.
        return {k: v for k, v in self.__dict__.items() if k != "_numpy_views"}

    def _write_rows(self, name: str, row: int, values: Any, shape: tuple[int, ...]) -> None:
        """:meth:`_write` of exactly ``shape`` (a wrong shape is an error, never a silent broadcast)."""
        if np.shape(values) != shape:
            _rows(name, values, shape)  # raises, naming the field and the allowed shape
        self._write(name, row, values)

    def add(self, obs, next_obs, action, reward, terminated, truncated) -> None:
        """Store one vector-env step: every argument has ``n_envs`` as first dimension."""
        p, obs_shape = self.pos, (self.n_envs,) + self.obs_shape
        if self.flattener is not None:
            obs, next_obs = self.flattener.flatten(obs), self.flattener.flatten(next_obs)
        self._write_rows("observations", p, obs, obs_shape)
        if self.optimize_memory_usage:
            next_rows = _rows("observations", next_obs, obs_shape).to(self.device, self.observations.dtype)
            self._add_next_observations(p, next_rows, np.asarray(terminated) | np.asarray(truncated))
        else:
            self._write_rows("next_observations", p, next_obs, obs_shape)
        self._write_rows("actions", p, action, (self.n_envs,) + self.action_shape)
        self._write("rewards", p, reward)
        if not self.handle_timeout_termination:
            terminated = np.asarray(terminated) | np.asarray(truncated)
        self._write("terminated", p, terminated)
        self._write("truncated", p, truncated)
        self.pos = (p + 1) % self.buffer_size
        self.full = self.full or self.pos == 0
        self.n_adds += 1

    def end_last_transition(self) -> None:
        """Store the last written transition as terminated: its next observation is about to be overwritten
        by another episode's first one (``optimize_memory_usage``; SB3 marks it done the same way)."""
        self.terminated[(self.pos - 1) % self.buffer_size] = 1.0

    def _add_next_observations(self, p: int, next_rows: torch.Tensor, dones: np.ndarray) -> None:
        # The next row's observation is this row's next observation; the next add rewrites it with the
        # same value, or, after an episode end, with the reset observation: the true final one goes aside.
        self.observations[(p + 1) % self.buffer_size] = next_rows
        for env in np.flatnonzero(dones):
            slot = self._final_next
            # A slot is still in use while the row that points at it has not been overwritten.
            if self.n_adds - self._final_written_at[slot] < self.buffer_size:
                slot = self._grow_final_store()
            self.final_observations[slot] = next_rows[env]
            self.final_slot[p, env] = slot
            self._final_written_at[slot] = self.n_adds
            self._final_next = (slot + 1) % len(self._final_written_at)

    def _grow_final_store(self) -> int:
        old = len(self._final_written_at)
        grown = torch.empty((2 * old,) + self.obs_shape, dtype=self.observations.dtype, device=self.device)
        grown[:old] = self.final_observations
        self.final_observations = grown
        self._final_written_at = np.concatenate([self._final_written_at, np.full(old, -(2**62), dtype=np.int64)])
        return old

    def observations_at(self, row: torch.Tensor, env: torch.Tensor) -> torch.Tensor:
        """The observations of the transitions at (``row``, ``env``)."""
        return self.observations[row, env]

    def next_observations_at(self, row: torch.Tensor, env: torch.Tensor) -> torch.Tensor:
        """The next observations of the transitions at (``row``, ``env``)."""
        if self.next_observations is not None:  # stored unless optimize_memory_usage
            return self.next_observations[row, env]
        following = take_rows(self.observations, (row + 1) % self.buffer_size, env)
        final = self.final_observations.index_select(0, self.final_slot[row, env].long())
        done = (self.terminated[row, env] > 0) | self.truncated[row, env]
        return choose_rows(done, final, following)

    def sample_indices(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Uniform (row, env) indices of ``batch_size`` stored transitions (with replacement)."""
        rows = self.buffer_size if self.full else self.pos
        if self.optimize_memory_usage and self.full:
            # Skip the oldest row (at pos): its observation was overwritten by the newest next observation.
            offset = torch.randint(1, rows, (batch_size,), device=self.device, generator=self.generator)
            row = (offset + self.pos) % self.buffer_size
        else:
            if rows == 0:
                raise RuntimeError("ReplayBuffer.sample called on an empty buffer")
            row = torch.randint(0, rows, (batch_size,), device=self.device, generator=self.generator)
        env = torch.randint(0, self.n_envs, (batch_size,), device=self.device, generator=self.generator)
        return row, env

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs, on CPU: the filled rows of the per-row storage, the named
        other fields of this buffer class (counters, side stores, e.g. HER's open episodes) and the sampler's RNG."""
        filled = self.buffer_size if self.full else self.pos
        return {
            "format": STATE_FORMAT,
            "class": type(self).__qualname__,
            "buffer_size": self.buffer_size * self.n_envs,
            "rows": self.buffer_size,
            "n_envs": self.n_envs,
            "optimize_memory_usage": self.optimize_memory_usage,
            "generator": self.generator.get_state(),
            "storage": {name: self._saved_rows(name, filled) for name in self._row_fields()},
            "extra": {name: _cpu_copy(getattr(self, name)) for name in self._extra_fields()},
        }

    def _saved_rows(self, name: str, filled: int) -> Any:
        """The first ``filled`` rows of storage ``name`` as :meth:`state_dict` holds them: a CPU copy."""
        if name == "observations" and self.optimize_memory_usage and not self.full:
            filled += 1  # the newest row's next observation, written ahead into the row after it
        return _cpu_copy(getattr(self, name)[:filled])

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` into a buffer of the same class, size, number of envs and memory option."""
        if state.get("format") != STATE_FORMAT:
            raise ValueError(
                "the replay buffer state was written by an earlier lit_rl (its buffer_size counted rows); "
                "allowed: a file of save_replay_buffer or a checkpoint of this version"
            )
        mine = (type(self).__qualname__, self.buffer_size, self.n_envs, self.optimize_memory_usage)
        theirs = (state["class"], state["rows"], state["n_envs"], state["optimize_memory_usage"])
        if mine != theirs:
            raise ValueError(
                f"the replay buffer state holds (class, rows, n_envs, optimize_memory_usage)={theirs} "
                f"(buffer_size={state['buffer_size']}); this buffer is {mine} (buffer_size={self.buffer_size * self.n_envs}); "
                "allowed: the same class, buffer_size, n_envs and optimize_memory_usage"
            )
        missing = sorted({*self._row_fields()} - set(state["storage"]) | {*self._extra_fields()} - set(state["extra"]))
        if missing:
            raise ValueError(f"the replay buffer state lacks {missing}; allowed: a state of {type(self).__qualname__}")
        for name in self._row_fields():
            target, value = getattr(self, name), state["storage"][name]
            if tuple(value.shape[1:]) != tuple(target.shape[1:]):
                raise ValueError(
                    f"the replay buffer state's {name} has rows of shape {tuple(value.shape[1:])}; "
                    f"allowed: {tuple(target.shape[1:])} (the same observation and action spaces)"
                )
            target[: len(value)] = value.to(target.device) if isinstance(target, torch.Tensor) else value
        for name in self._extra_fields():  # whole values: side stores may have grown
            value = state["extra"][name]
            setattr(
                self, name, value.to(self.device, copy=True) if isinstance(value, torch.Tensor) else _cpu_copy(value)
            )
        self.generator.set_state(state["generator"])

    def sample(self, batch_size: int, env: Any = None) -> ReplayBatch:
        """Uniformly sample ``batch_size`` stored transitions (with replacement).

        ``env``: SB3's argument: an object with ``normalize_obs`` and ``normalize_reward`` (the model's
        :class:`~lit_rl.nets.normalization.Normalization`) that the raw stored data passes through.
        """
        row, env_index = self.sample_indices(batch_size)
        return ReplayBatch(
            observations=normalize_obs(self.observations_at(row, env_index), env),
            actions=self.actions[row, env_index],
            next_observations=normalize_obs(self.next_observations_at(row, env_index), env),
            rewards=normalize_reward(self.rewards[row, env_index], env),
            terminated=self.terminated[row, env_index],
        )
