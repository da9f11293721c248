"""Replay of frame-stacked observations that stores each frame once and rebuilds the stacks when sampling."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import torch
from gymnasium import spaces
from gymnasium.wrappers import FrameStackObservation

from lit_rl.buffers.nstep import NStepReplayBuffer
from lit_rl.buffers.replay import ReplayBuffer, _rows, choose_rows, take_rows
from lit_rl.utils.checks import check_int

_FREE = -(2**62)  # add count of a prefix slot never written


class FrameReplayBuffer(ReplayBuffer):
    """:class:`ReplayBuffer` of frame stacks (Atari's ``(4, 84, 84)``, DMC's ``(9, 84, 84)``) holding each frame once.

    An observation's first axis is ``k`` frames of ``frame_channels`` entries, oldest first, as gymnasium's
    ``FrameStackObservation`` builds them; consecutive observations of an episode share ``k - 1`` frames. Each row
    keeps only the newest frame of its observation; the next observation's newest frame is the next row's frame
    (SB3's ``optimize_memory_usage``, whose side store keeps the final frames of episodes), and sampling rebuilds
    both stacks from the frames of the rows before. A stack that reaches back past its episode's start repeats
    the episode's first frame, as ``FrameStackObservation``'s default padding (``"reset"``) does; an episode
    whose first stack is padded otherwise (``"zero"``, a custom value) keeps its first ``k - 1`` frames aside,
    once for all the episodes in a row that pad alike.
    Batches equal the stacked :class:`ReplayBuffer`'s bit for bit, in about ``1/(2k)`` of its memory.

    ``add`` checks what the rebuild relies on and raises a ValueError where it does not hold: each next
    observation is its observation shifted by one frame. An observation that does not continue its env's
    previous next observation (a ``learn`` that resets the env, a resume without the env's state, a step that
    was not stored) ends the previous transition as truncated, its next observation kept, and starts an episode
    there, its older frames kept aside unless padded with its first frame. Once the buffer is
    full, the ``k`` oldest rows are not sampled: their stacks may reach into overwritten frames.
    ``optimize_memory_usage`` is accepted and has no effect: next observations are never stored apart.
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
        *,
        frame_channels: int,
        **kwargs: Any,
    ) -> None:
        check_int("frame_channels", frame_channels, minimum=1)
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) < 2:
            raise ValueError(
                f"FrameReplayBuffer stores frame stacks; observation_space={observation_space} is not one; "
                "allowed: a Box whose first axis is the stack, e.g. (4, 84, 84) uint8"
            )
        stack_shape = tuple(observation_space.shape)
        if stack_shape[0] % frame_channels:
            raise ValueError(
                f"frame_channels={frame_channels} does not divide the first axis of observations of shape "
                f"{stack_shape}; allowed: a divisor of {stack_shape[0]} (1 for Atari's grayscale, 3 for RGB)"
            )
        self.frame_stack = stack_shape[0] // frame_channels
        self.frame_channels = frame_channels
        valid = isinstance(buffer_size, int) and isinstance(n_envs, int) and n_envs > 0  # else the parent says why
        if valid and buffer_size // n_envs <= self.frame_stack:
            raise ValueError(
                f"buffer_size={buffer_size} gives {buffer_size // n_envs} rows of {n_envs} envs; a frame buffer of "
                f"{self.frame_stack}-frame stacks needs more than {self.frame_stack} rows; "
                f"allowed: buffer_size >= {(self.frame_stack + 1) * n_envs}"
            )
        # One frame per row: the parent stores and samples frames, with its next-row storage of next observations.
        low, high = observation_space.low[:frame_channels], observation_space.high[:frame_channels]
        frame_space = spaces.Box(low, high, dtype=observation_space.dtype)
        super().__init__(buffer_size, frame_space, action_space, n_envs, device, seed, True,
                         handle_timeout_termination, **kwargs)  # fmt: skip
        self.observation_space, self.stack_shape = observation_space, stack_shape
        k, rows = self.frame_stack, (self.buffer_size, self.n_envs)
        # Steps since the row's episode started, capped at k - 1: how far back its stack reads stored frames.
        self.frame_ages = torch.zeros(rows, dtype=torch.uint8, device=self.device)
        # At an episode's first row, its first stack's older frames when they are not its first frame repeated.
        self.prefix_slot = torch.full(rows, -1, dtype=torch.int32, device=self.device)
        self.prefix_frames = torch.empty((0, k - 1, *self.obs_shape), dtype=self.observations.dtype, device=self.device)
        self._prefix_written_at = np.zeros(0, dtype=np.int64)
        self._last_prefix, self._last_prefix_frames = -1, np.zeros(0, dtype=observation_space.dtype)
        # Per env: the last stored next observation, whether it ended its episode, and the age of the next row.
        self._last_next = np.zeros((n_envs, *stack_shape), dtype=observation_space.dtype)
        self._episode_ended = np.ones(n_envs, dtype=bool)  # nothing stored yet: the next row starts a stream
        self._next_age = np.zeros(n_envs, dtype=np.int64)
        self._positions = torch.arange(k, device=self.device)

    def _row_fields(self) -> list[str]:
        return super()._row_fields() + ["frame_ages", "prefix_slot"]

    def _extra_fields(self) -> list[str]:
        return super()._extra_fields() + [
            "prefix_frames", "_prefix_written_at", "_last_prefix", "_last_prefix_frames",
            "_last_next", "_episode_ended", "_next_age",
        ]  # fmt: skip

    def _device_fields(self) -> list[str]:
        return super()._device_fields() + ["prefix_frames"]

    def describe(self) -> str:
        """One line for the run's log: capacity, layout, frames and memory."""
        kind = f"frame replay buffer ({self.frame_stack} frames a stack, each stored once):"
        return super().describe().replace("replay buffer:", kind, 1)

    # ------------------------------------------------------------------ adding
    def add(self, obs, next_obs, action, reward, terminated, truncated) -> None:
        """Store one vector-env step of frame stacks: every argument has ``n_envs`` as first dimension."""
        stacks = (self.n_envs, *self.stack_shape)
        obs, next_obs = self._frames_of("obs", obs, stacks), self._frames_of("next_obs", next_obs, stacks)
        # What the rebuild relies on: the next stack is this one moved by one frame.
        shifted = np.equal(next_obs[:, :-1], obs[:, 1:]).reshape(self.n_envs, -1).all(axis=1)
        if not shifted.all():
            raise ValueError(
                f"FrameReplayBuffer.add: next_obs of env {int(np.flatnonzero(~shifted)[0])} is not obs moved by one "
                f"frame of {self.frame_channels} channels along the first axis, so frames cannot be stored once; "
                "allowed: observations of gymnasium's FrameStackObservation (channel-first frames), or a buffer "
                "that stores whole stacks (buffer.frame_dedup=false)"
            )
        last_next = self._last_next.reshape(obs.shape)
        continues = np.equal(obs, last_next).reshape(self.n_envs, -1).all(axis=1)
        cut = ~self._episode_ended & ~continues
        if cut.any():
            self._cut_last_rows(cut)
        starts = self._episode_ended | cut
        age = np.where(starts, 0, self._next_age)
        prefix = np.full(self.n_envs, -1, dtype=np.int32)
        for env in np.flatnonzero(starts):
            if not np.equal(obs[env, :-1], obs[env, -1:]).all():  # not padded with its first frame
                prefix[env] = self._store_prefix(obs[env, :-1])
        p = self.pos
        self._write("frame_ages", p, age)
        self._write("prefix_slot", p, prefix)
        frame_shape = (self.n_envs, *self.obs_shape)
        super().add(obs[:, -1].reshape(frame_shape), next_obs[:, -1].reshape(frame_shape), action, reward,
                    terminated, truncated)  # fmt: skip
        self._last_next[...] = next_obs.reshape(self._last_next.shape)
        self._episode_ended = np.asarray(terminated, dtype=bool) | np.asarray(truncated, dtype=bool)
        self._next_age = np.minimum(age + 1, self.frame_stack - 1)

    def _frames_of(self, name: str, values: Any, shape: tuple[int, ...]) -> np.ndarray:
        """``values`` as a numpy array ``(n_envs, k, frame entries)`` (a wrong shape is an error naming ``name``)."""
        if np.shape(values) != shape:
            _rows(name, values, shape)  # raises, naming the field and the allowed shape
        array = values.detach().cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values)
        return array.reshape(self.n_envs, self.frame_stack, -1)

    def end_last_transition(self) -> None:
        """End each env's last stored transition as truncated (its next observation kept): the env is reset."""
        self._cut_last_rows(~self._episode_ended)
        self._episode_ended[:] = True

    def _cut_last_rows(self, envs: np.ndarray) -> None:
        """The last row of ``envs`` ends its episode, truncated: its next frame (the row after, about to be
        overwritten by another episode's first frame) moves to the side store of final frames."""
        if self.n_adds == 0 or not envs.any():
            return
        last = (self.pos - 1) % self.buffer_size
        self._add_next_observations(last, self.observations[self.pos].clone(), envs)
        self.truncated[last, torch.as_tensor(envs, device=self.device)] = True
        if not self.handle_timeout_termination:  # SB3's switch stores every episode end as a termination
            self.terminated[last, torch.as_tensor(envs, device=self.device)] = 1.0

    def _store_prefix(self, frames: np.ndarray) -> int:
        """Keep an episode's first ``k - 1`` padding frames; a slot is reused once no row can read it."""
        if self._last_prefix >= 0 and np.array_equal(frames, self._last_prefix_frames):
            # Zeros or a custom padding: every episode pads alike, so one slot serves them all.
            self._prefix_written_at[self._last_prefix] = self.n_adds  # in use as long as this episode's rows
            return self._last_prefix
        in_use = self.n_adds - self._prefix_written_at < self.buffer_size + self.frame_stack
        free = np.flatnonzero(~in_use)
        if len(free):
            slot = int(free[0])
        else:
            slot = len(self._prefix_written_at)
            grown = torch.empty((max(8, 2 * slot), *self.prefix_frames.shape[1:]), dtype=self.prefix_frames.dtype,
                                device=self.device)  # fmt: skip
            grown[:slot] = self.prefix_frames
            self.prefix_frames = grown
            self._prefix_written_at = np.concatenate([self._prefix_written_at, np.full(len(grown) - slot, _FREE)])
        self.prefix_frames[slot] = torch.as_tensor(frames.reshape(self.prefix_frames.shape[1:])).to(self.device)
        self._prefix_written_at[slot] = self.n_adds
        self._last_prefix, self._last_prefix_frames = slot, frames.copy()
        return slot

    # ------------------------------------------------------------------ sampling
    def sample_indices(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Uniform (row, env) indices; once full, not the ``k`` oldest rows (frames they stack were overwritten)."""
        if not self.full:  # the stacked buffer's draws: equal seeds sample equal transitions
            return super().sample_indices(batch_size)
        offset = torch.randint(self.frame_stack, self.buffer_size, (batch_size,), device=self.device,
                               generator=self.generator)  # fmt: skip
        env = torch.randint(0, self.n_envs, (batch_size,), device=self.device, generator=self.generator)
        return (offset + self.pos) % self.buffer_size, env

    def observations_at(self, row: torch.Tensor, env: torch.Tensor) -> torch.Tensor:
        """The frame stacks of the transitions at (``row``, ``env``), rebuilt from the stored frames."""
        age = self.frame_ages[row, env].long()
        frames = self._stack_frames(row, env, age, self._positions)
        return frames.reshape(len(row), *self.stack_shape)

    def next_observations_at(self, row: torch.Tensor, env: torch.Tensor) -> torch.Tensor:
        """The next frame stacks of the transitions at (``row``, ``env``): stored frames and the next frame."""
        age = torch.clamp(self.frame_ages[row, env].long() + 1, max=self.frame_stack - 1)
        older = self._stack_frames((row + 1) % self.buffer_size, env, age, self._positions[:-1])
        newest = super().next_observations_at(row, env)  # the next row's frame, or the episode's final frame
        return torch.cat([older, newest[:, None]], dim=1).reshape(len(row), *self.stack_shape)

    def _stack_frames(self, end: torch.Tensor, env: torch.Tensor, age: torch.Tensor, positions: torch.Tensor):
        """Frames at stack ``positions`` (0: oldest) of the stacks whose newest frame is row ``end``'s, ``age``
        steps into their episode: row ``end - d`` for ``d`` steps back, the episode's first row before it."""
        back = (self.frame_stack - 1) - positions  # steps back from the newest frame
        within = back[None, :] <= age[:, None]
        rows = (end[:, None] - torch.minimum(back[None, :], age[:, None])) % self.buffer_size
        frames = take_rows(self.observations, rows, env[:, None].expand_as(rows))
        if len(self._prefix_written_at):  # some episode started with other padding: its frames are aside
            start = (end - age) % self.buffer_size
            slot = self.prefix_slot[start, env].long()
            aside = ~within & (slot[:, None] >= 0)
            index = torch.clamp(positions[None, :] + age[:, None], max=self.frame_stack - 2)
            kept = take_rows(self.prefix_frames, slot.clamp(min=0)[:, None].expand_as(index), index)
            frames = choose_rows(aside, kept, frames)
        return frames

    # ------------------------------------------------------------------ saving
    def _saved_rows(self, name: str, filled: int) -> Any:
        """Frames are not copied (on the CPU): the state shares them with the buffer until it is written, and
        ``torch.save`` streams them to the file. Write the state before the next ``add``."""
        frames = self.observations
        if name != "observations" or frames.device.type != "cpu":
            return super()._saved_rows(name, filled)
        rows = self.buffer_size if self.full else self.pos + 1  # with the newest row's next frame, written ahead
        # from_numpy: a tensor whose storage is exactly these rows (torch.save writes a view's whole storage).
        return torch.from_numpy(frames[:rows].numpy())

    def state_dict(self) -> dict[str, Any]:
        """:meth:`ReplayBuffer.state_dict` with the stack size. On the CPU the frames are the buffer's own, not a
        copy (``torch.save`` streams them to the file): write the state before the next ``add``."""
        return {**super().state_dict(), "frame_stack": self.frame_stack}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` into a frame buffer of the same size, envs, stack and frame shape."""
        if state.get("frame_stack") not in (None, self.frame_stack):
            raise ValueError(
                f"the replay buffer state holds stacks of {state['frame_stack']} frames; this buffer stacks "
                f"{self.frame_stack}; allowed: the same observation space and frame_channels"
            )
        super().load_state_dict(state)


class NStepFrameReplayBuffer(FrameReplayBuffer, NStepReplayBuffer):
    """:class:`NStepReplayBuffer`'s n-step returns over a :class:`FrameReplayBuffer`'s frames."""


# The buffers that store stacks whole, and their frame-once counterparts.
FRAME_BUFFERS: dict[type[ReplayBuffer], type[FrameReplayBuffer]] = {
    ReplayBuffer: FrameReplayBuffer,
    NStepReplayBuffer: NStepFrameReplayBuffer,
}


def is_frame_stack_space(space: spaces.Space) -> bool:
    """Image stacks: a uint8 Box of 3 or more axes, the first one frames (``(k * c, H, W)`` or ``(k, H, W, c)``)."""
    return isinstance(space, spaces.Box) and space.dtype == np.uint8 and len(space.shape) >= 3


def env_frame_stack(env: Any) -> int | None:
    """The ``stack_size`` of gymnasium's ``FrameStackObservation`` among the first sub-env's wrappers, or None."""
    if env is None:
        return None
    sub_envs = getattr(getattr(env, "unwrapped", env), "envs", None)
    if sub_envs:  # a SyncVectorEnv: walk the wrappers of its first env
        wrapper = sub_envs[0]
        while wrapper is not None:
            if isinstance(wrapper, FrameStackObservation):
                return int(wrapper.stack_size)
            wrapper = getattr(wrapper, "env", None)
        return None
    try:  # async workers: the first wrapper that has the attribute answers
        sizes = env.get_attr("stack_size")
    except Exception:  # noqa: BLE001 (no such wrapper, or a vector env without get_attr)
        return None
    return int(sizes[0]) if sizes and isinstance(sizes[0], (int, np.integer)) else None


def env_frame_channels(observation_space: spaces.Space, env: Any) -> int | None:
    """Entries per frame along the first axis of image stacks built by ``env``'s ``FrameStackObservation``, or None."""
    if not is_frame_stack_space(observation_space):
        return None
    stack, first = env_frame_stack(env), cast(tuple[int, ...], observation_space.shape)[0]
    return first // stack if stack and first % stack == 0 else None


def frame_buffer_choice(
    buffer_class: type[ReplayBuffer],
    frame_dedup: bool | None,
    observation_space: spaces.Space,
    env: Any,
    buffer_kwargs: dict[str, Any],
) -> tuple[type[ReplayBuffer], dict[str, Any]]:
    """The buffer class to build and the arguments it adds, for the ``frame_dedup`` setting.

    ``None`` (auto): the frame buffer for uint8 image stacks of an env wrapped in gymnasium's
    ``FrameStackObservation``; ``True``: the frame buffer, or a ValueError saying why not; ``False``:
    ``buffer_class`` as is. A :class:`FrameReplayBuffer` class given without ``frame_channels`` takes them from the env.
    """
    if frame_dedup is not None and not isinstance(frame_dedup, bool):
        raise TypeError(f"buffer.frame_dedup={frame_dedup!r}; allowed: true, false or null (auto)")
    if frame_dedup is False:
        return buffer_class, {}
    if issubclass(buffer_class, FrameReplayBuffer):
        if "frame_channels" in buffer_kwargs:
            return buffer_class, {}
        chosen: type[ReplayBuffer] | None = buffer_class
    else:
        chosen = FRAME_BUFFERS.get(buffer_class)
    channels = env_frame_channels(observation_space, env)
    if frame_dedup is None and chosen is not buffer_class:  # auto: only where it certainly applies
        return (chosen, {"frame_channels": channels}) if chosen and channels else (buffer_class, {})
    if not is_frame_stack_space(observation_space):
        raise ValueError(
            f"buffer.frame_dedup=true stores each frame of image stacks once, but the observation space is "
            f"{observation_space}; allowed: a uint8 Box of stacked frames, e.g. (4, 84, 84), or "
            "buffer.frame_dedup=false or null (auto)"
        )
    if chosen is None:
        raise ValueError(
            f"buffer.frame_dedup=true with replay_buffer_class={buffer_class.__name__}; allowed: ReplayBuffer or "
            "NStepReplayBuffer (buffer=replay or buffer=nstep), FrameReplayBuffer, or buffer.frame_dedup=false"
        )
    if channels is None:
        raise ValueError(
            f"buffer.frame_dedup=true, but no frame stack was found for observations of shape "
            f"{observation_space.shape}: the env's first sub-env has no gymnasium FrameStackObservation whose "
            "stack_size divides the first axis; allowed: such an env, or replay_buffer_class=FrameReplayBuffer "
            "with replay_buffer_kwargs={'frame_channels': <entries per frame along the first axis>}"
        )
    return chosen, {"frame_channels": channels}
