"""The bit-flipping task of the HER paper: a goal-conditioned env with sparse rewards."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class BitFlippingEnv(gym.Env):
    """Flip bits of an ``n_bits`` vector until it equals a random goal (Andrychowicz et al., 2017).

    Action ``i`` (``Discrete(n_bits)``) flips bit ``i``; with ``continuous=True``
    the action is a ``Box(-1, 1, (n_bits,))`` and bit ``i`` flips where
    ``action[i] > 0``. Observations are Dicts of ``MultiBinary(n_bits)``:
    ``observation`` and ``achieved_goal`` (both the current bits) and
    ``desired_goal``. Reward -1 per step, 0 on success; the episode terminates
    on success and is truncated after ``max_steps`` (default ``n_bits``) steps.
    """

    metadata = {"render_modes": ["human"]}

    def __init__(self, n_bits: int = 10, max_steps: int | None = None, continuous: bool = False) -> None:
        if isinstance(n_bits, bool) or not isinstance(n_bits, int) or n_bits < 1:
            raise ValueError(f"n_bits={n_bits!r} must be a positive integer")
        self.n_bits = n_bits
        self.max_steps = n_bits if max_steps is None else int(max_steps)
        if self.max_steps < 1:
            raise ValueError(f"max_steps={max_steps!r} must be a positive integer")
        self.continuous = continuous
        bits = spaces.MultiBinary(n_bits)
        self.observation_space = spaces.Dict({"observation": bits, "achieved_goal": bits, "desired_goal": bits})
        self.action_space = spaces.Box(-1.0, 1.0, (n_bits,), np.float32) if continuous else spaces.Discrete(n_bits)
        self.state = np.zeros(n_bits, dtype=np.int8)
        self.goal = np.zeros(n_bits, dtype=np.int8)
        self.current_step = 0

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.state.copy(), "achieved_goal": self.state.copy(), "desired_goal": self.goal.copy()}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.current_step = 0
        self.state = self.np_random.integers(0, 2, self.n_bits, dtype=np.int8)
        self.goal = self.np_random.integers(0, 2, self.n_bits, dtype=np.int8)
        while np.array_equal(self.state, self.goal):  # start away from the goal, as SB3 does
            self.goal = self.np_random.integers(0, 2, self.n_bits, dtype=np.int8)
        return self._obs(), {}

    def step(self, action):
        if self.continuous:
            self.state = np.where(np.asarray(action) > 0, 1 - self.state, self.state).astype(np.int8)
        else:
            self.state[int(action)] = 1 - self.state[int(action)]
        self.current_step += 1
        reward = float(self.compute_reward(self.state, self.goal, None))
        terminated = reward == 0.0
        truncated = not terminated and self.current_step >= self.max_steps
        return self._obs(), reward, terminated, truncated, {"is_success": terminated}

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        """0 where the goals match, else -1; works on one goal or a batch (last axis: bits)."""
        mismatch = np.any(np.asarray(achieved_goal) != np.asarray(desired_goal), axis=-1)
        return np.where(mismatch, -1.0, 0.0).astype(np.float32)
