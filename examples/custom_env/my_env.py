"""A small custom gymnasium env, registered as ``PointTarget-v0`` when this module is imported.

A point in the square [-1, 1]^2 moves up to ``speed`` per step towards a random target. Observation: the point
and the target (4 floats); action: a direction in [-1, 1]^2; reward: minus the distance to the target; the
episode terminates on reaching the target (``info["is_success"]``) and is truncated after 100 steps.

The id ``"my_env:PointTarget-v0"`` makes gymnasium (and lit_rl) import this module first, so the launcher needs
no code of yours, only this folder on PYTHONPATH: see README.md beside this file.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class PointTargetEnv(gym.Env):
    """Move a point to a random target in the square [-1, 1]^2."""

    def __init__(self, speed: float = 0.1, tolerance: float = 0.05) -> None:
        self.speed, self.tolerance = speed, tolerance
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self._point = self._target = np.zeros(2)

    def _obs(self) -> np.ndarray:
        return np.concatenate([self._point, self._target]).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._point, self._target = self.np_random.uniform(-1.0, 1.0, size=(2, 2))
        return self._obs(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        move = self.speed * np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        self._point = np.clip(self._point + move, -1.0, 1.0)
        distance = float(np.linalg.norm(self._target - self._point))
        reached = distance < self.tolerance
        return self._obs(), -distance, reached, False, {"is_success": reached}


if "PointTarget-v0" not in gym.registry:
    gym.register("PointTarget-v0", entry_point=PointTargetEnv, max_episode_steps=100)
