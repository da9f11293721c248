"""Building the replay buffer an algorithm asks for, with what the buffer class needs from the algorithm."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import gymnasium as gym
import torch

from lit_rl.buffers.nstep import NStepReplayBuffer
from lit_rl.buffers.replay import ReplayBuffer

log = logging.getLogger(__name__)


class BufferSetup:
    """Mixin of :class:`~lit_rl.algorithms.off_policy.OffPolicyAlgorithm` (uses its buffer settings and spaces)."""

    def set_buffer_settings(self, buffer_class: type[ReplayBuffer] | None, buffer_kwargs: dict[str, Any] | None) -> None:
        """The buffer class and its arguments: ``n_steps`` > 1 picks the n-step buffer, as in SB3."""
        self.replay_buffer_class = buffer_class or (NStepReplayBuffer if self.n_steps > 1 else ReplayBuffer)
        self.replay_buffer_kwargs = dict(buffer_kwargs or {})
        if self.n_steps > 1 and buffer_class is not None:  # SB3: a user's buffer class is built as given
            warnings.warn(f"n_steps={self.n_steps} is ignored with replay_buffer_class={buffer_class.__name__}; "
                          "allowed: n_steps with the default buffer, or replay_buffer_kwargs for the class",
                          stacklevel=3)  # fmt: skip
        elif self.n_steps > 1:
            self.replay_buffer_kwargs.setdefault("n_steps", self.n_steps)
        if self.optimize_memory_usage:
            self.replay_buffer_kwargs["optimize_memory_usage"] = True

    def buffer_algorithm_kwargs(self, env: gym.vector.VectorEnv) -> dict[str, Any]:
        """What the buffer class asks of the algorithm (its ``algorithm_kwargs``): ``gamma``, ``compute_reward``."""
        from lit_rl.envs.goal import goal_compute_reward

        providers = {"gamma": lambda: self.gamma, "compute_reward": lambda: goal_compute_reward(env)}
        needs = getattr(self.replay_buffer_class, "algorithm_kwargs", ())
        unknown = [n for n in needs if n not in providers]
        if unknown:
            raise ValueError(f"{self.replay_buffer_class.__name__}.algorithm_kwargs asks for {unknown}; "
                             f"allowed: {list(providers)}")  # fmt: skip
        return {n: providers[n]() for n in needs if n not in self.replay_buffer_kwargs}

    def make_replay_buffer(self, env: gym.vector.VectorEnv, device: torch.device) -> ReplayBuffer:
        """The replay buffer for ``env`` on ``device``; its size, layout and device logged once (train.log)."""
        buffer = self.replay_buffer_class(buffer_size=self.buffer_size, observation_space=self.observation_space,
                                          action_space=self.action_space, n_envs=env.num_envs, device=device,
                                          seed=self.seed, **self.replay_buffer_kwargs,
                                          **self.buffer_algorithm_kwargs(env))  # fmt: skip
        # Once per run, in train.log and on the launcher's console; learn() at verbose=0 stays silent.
        log.info(buffer.describe())
        return buffer
