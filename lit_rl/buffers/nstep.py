"""N-step returns from the uniform replay buffer."""

from __future__ import annotations

from typing import Any

import torch

from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer, normalize_obs, normalize_reward
from lit_rl.utils.checks import check_float, check_int


class NStepReplayBuffer(ReplayBuffer):
    """Samples n-step transitions: ``sum_j gamma^j r_{t+j}`` over up to ``n_steps`` stored steps.

    A window stops after the first step that ends an episode (terminated or
    truncated) and before the newest stored step. The batch's
    ``next_observations`` and ``terminated`` are those of the window's last
    step and ``discounts`` is ``gamma^k`` for a window of ``k`` steps, so a
    target ``R + (1 - terminated) * discounts * V(s')`` stops at a termination
    and, after a truncation, bootstraps from the true final observation.
    ``gamma`` is the algorithm's (passed in by it); ``n_steps=1`` is the plain buffer.
    It has no state beyond the plain buffer's: ``n_steps`` and ``gamma`` are settings.
    """

    algorithm_kwargs = ("gamma",)

    def __init__(self, *args: Any, n_steps: int = 3, gamma: float = 0.99, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.n_steps = check_int("n_steps", n_steps, minimum=1)
        self.gamma = check_float("gamma", gamma, 0.0, 1.0)
        self._offsets = torch.arange(self.n_steps, device=self.device)
        self._powers = self.gamma ** self._offsets.to(torch.float32)

    def sample(self, batch_size: int, env: Any = None) -> ReplayBatch:
        """``env`` normalises observations and each step's reward before the sum, as SB3's n-step buffer."""
        normalizer = env
        row, env = self.sample_indices(batch_size)
        rows = (row[:, None] + self._offsets) % self.buffer_size  # (batch, n_steps)
        envs = env[:, None].expand_as(rows)
        # Steps after the newest stored row do not exist yet (or hold the oldest data once the ring wrapped).
        newest = (self.pos - 1 - row) % self.buffer_size
        stored = self._offsets <= newest[:, None]
        done = (self.terminated[rows, envs] > 0) | self.truncated[rows, envs]
        ended_before = (done.cumsum(dim=1) - done.long()) > 0
        included = stored & ~ended_before  # the first step is always included
        k = included.sum(dim=1)
        # where, not a product with the mask: rows never written hold arbitrary memory (NaN * 0 = NaN).
        rewards = normalize_reward(self.rewards[rows, envs], normalizer)
        returns = torch.where(included, rewards * self._powers, 0.0).sum(dim=1)
        last = rows.gather(1, (k - 1)[:, None]).squeeze(1)
        return ReplayBatch(
            observations=normalize_obs(self.observations_at(row, env), normalizer),
            actions=self.actions[row, env],
            next_observations=normalize_obs(self.next_observations_at(last, env), normalizer),
            rewards=returns,
            terminated=self.terminated[last, env],
            discounts=self.gamma ** k.to(torch.float32),
        )
