"""Building the replay buffer an algorithm asks for, with what the buffer class needs from the algorithm."""

from __future__ import annotations

import logging
import sys
import warnings
import weakref
from types import FrameType
from typing import Any

import gymnasium as gym
import torch

from lit_rl.buffers.augmentation import check_augmentation, random_shift
from lit_rl.buffers.frames import frame_buffer_choice
from lit_rl.buffers.nstep import NStepReplayBuffer
from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer
from lit_rl.utils.io import log_to_files_only

log = logging.getLogger(__name__)

# Models already told that their batch_size exceeds the buffer: a rebuilt buffer (set_env, load) does not repeat it.
_warned_batch_size: weakref.WeakSet[Any] = weakref.WeakSet()


def env_needed_to_sample(*args: Any, **kwargs: Any) -> Any:
    """The ``compute_reward`` of a buffer built without an env (a model loaded without one): it says what to do."""
    raise RuntimeError(
        "this replay buffer was built for a model loaded without an env, and sampling it needs the env's "
        "compute_reward: give the env with load(path, env=...), set_env(env) or learn(env=...)"
    )


class ReplayBufferSetup:
    """The replay buffer and its settings: the class (``n_steps`` > 1 picks the n-step buffer, as in SB3), its
    arguments and, once built for an env, the buffer itself (``model.replay_buffer``)."""

    def __init__(
        self,
        buffer_class: type[ReplayBuffer] | None,
        buffer_kwargs: dict[str, Any] | None,
        n_steps: int,
        optimize_memory_usage: bool,
    ) -> None:
        self.buffer_class: type[ReplayBuffer] = buffer_class or (NStepReplayBuffer if n_steps > 1 else ReplayBuffer)
        self.buffer_kwargs: dict[str, Any] = dict(buffer_kwargs or {})
        # None: frames stored once for image stacks of FrameStackObservation envs (decided when the env is known).
        self.frame_dedup: bool | None = self.buffer_kwargs.pop("frame_dedup", None)
        # DrQ's random shift of sampled images (augment): applied to each batch before the update.
        self.augmentation: str | None = self.buffer_kwargs.pop("augmentation", None)
        self.augmentation_pad: int = self.buffer_kwargs.pop("augmentation_pad", 4)
        check_augmentation(self.augmentation, self.augmentation_pad)
        self.buffer: ReplayBuffer | None = None
        if n_steps > 1 and buffer_class is not None:  # SB3: a user's buffer class is built as given
            warnings.warn(f"n_steps={n_steps} is ignored with replay_buffer_class={buffer_class.__name__}; "
                          "allowed: n_steps with the default buffer, or replay_buffer_kwargs for the class",
                          stacklevel=find_user_stacklevel())  # fmt: skip
        elif n_steps > 1:
            self.buffer_kwargs.setdefault("n_steps", n_steps)
        if optimize_memory_usage:
            self.buffer_kwargs["optimize_memory_usage"] = True

    def algorithm_kwargs(self, algo: Any, env: gym.vector.VectorEnv | None) -> dict[str, Any]:
        """What the buffer class asks of the algorithm (its ``algorithm_kwargs``): ``gamma``, ``compute_reward``."""
        from lit_rl.envs.goal import goal_compute_reward

        providers = {
            "gamma": lambda: algo.gamma,
            "compute_reward": lambda: env_needed_to_sample if env is None else goal_compute_reward(env),
        }
        needs = getattr(self.buffer_class, "algorithm_kwargs", ())
        unknown = [n for n in needs if n not in providers]
        if unknown:
            raise ValueError(f"{self.buffer_class.__name__}.algorithm_kwargs asks for {unknown}; "
                             f"allowed: {list(providers)}")  # fmt: skip
        return {n: providers[n]() for n in needs if n not in self.buffer_kwargs}

    def make(
        self, algo: Any, env: gym.vector.VectorEnv | None, device: torch.device, n_envs: int | None = None
    ) -> ReplayBuffer:
        """An empty replay buffer for ``algo`` (its size, spaces, seed) and ``env`` on ``device``; its size, layout
        and device logged once (train.log). ``env=None`` (a model loaded without an env, as SB3's ``load``):
        ``n_envs`` envs per row."""
        n_envs = env.num_envs if env is not None else n_envs or 1
        assert algo.observation_space is not None and algo.action_space is not None  # set with the env or by load
        check_augmentation(self.augmentation, self.augmentation_pad, algo.observation_space.shape)
        buffer_class, frame_kwargs = frame_buffer_choice(self.buffer_class, self.frame_dedup, algo.observation_space,
                                                         env, self.buffer_kwargs)  # fmt: skip
        buffer = buffer_class(buffer_size=algo.buffer_size, observation_space=algo.observation_space,
                              action_space=algo.action_space, n_envs=n_envs, device=device, seed=algo.seed,
                              **self.buffer_kwargs, **frame_kwargs, **self.algorithm_kwargs(algo, env))  # fmt: skip
        # Once per run, in train.log and on the launcher's console; learn() at verbose=0 stays silent.
        log.info(buffer.describe())
        warn_batch_size_over_buffer(algo, algo.batch_size, buffer)
        return buffer


    def augment(self, batch: ReplayBatch) -> ReplayBatch:
        """``batch`` with its observations and next observations shifted independently (``augmentation``), from
        the buffer's generator, so a resumed run draws the same shifts; unchanged without an augmentation."""
        if self.augmentation is None or self.buffer is None:
            return batch
        generator, pad = self.buffer.generator, self.augmentation_pad
        return batch._replace(
            observations=random_shift(batch.observations, pad, generator),
            next_observations=random_shift(batch.next_observations, pad, generator),
        )


def warn_batch_size_over_buffer(model: Any, batch_size: int, buffer: ReplayBuffer) -> None:
    """Warn once per model when ``batch_size`` exceeds the buffer's capacity (SB3's semantics are kept: it runs)."""
    capacity = buffer.buffer_size * buffer.n_envs
    if batch_size <= capacity or model in _warned_batch_size:
        return
    _warned_batch_size.add(model)
    ratio = batch_size / capacity
    times = f"{ratio:,.0f}x" if ratio >= 10 else f"{ratio:.1f}x"
    message = (
        f"batch_size={batch_size:,} is {times} the replay buffer's {capacity:,} transitions "
        f"(buffer_size={buffer.buffer_size:,}): each gradient step samples with replacement, so a batch repeats "
        f"transitions and costs {times} a full buffer's worth of compute; usual: batch_size <= buffer_size"
    )
    warnings.warn(message, UserWarning, stacklevel=find_user_stacklevel())
    log_to_files_only(log, logging.WARNING, message)


def find_user_stacklevel() -> int:
    """The stacklevel of the first frame outside lit_rl, torch and Lightning (the user's line that built the model)."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in ("lit_rl", "torch", "lightning"):
        frame, level = frame.f_back, level + 1
    return level
