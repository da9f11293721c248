"""Actions between an env's Box bounds and the networks' [-1, 1] scale, flat as the buffer stores them."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces


def scale_action(action_space: spaces.Space, action: np.ndarray) -> np.ndarray:
    """Map env actions from ``[low, high]`` to ``[-1, 1]`` (identity for non-Box spaces)."""
    if not isinstance(action_space, spaces.Box):
        return action
    low, high = action_space.low, action_space.high
    return (2.0 * (action - low) / (high - low) - 1.0).astype(np.float32)


def flat_actions(action_space: spaces.Space, actions: np.ndarray) -> np.ndarray:
    """A batch of Box actions as ``(n, prod(shape))``, the layout of the networks and the buffer (SB3's)."""
    if not isinstance(action_space, spaces.Box) or len(action_space.shape) == 1:
        return actions
    return actions.reshape(len(actions), -1)


def unscale_action(action_space: spaces.Space, scaled: np.ndarray) -> np.ndarray:
    """Map a batch of ``[-1, 1]`` actions to the env's ``[low, high]``, clipped (identity for non-Box spaces).

    Flat actions of a multi-dimensional Box (``(n, prod(shape))``) come back in the env's shape ``(n, *shape)``.
    """
    if not isinstance(action_space, spaces.Box):
        return scaled
    if scaled.shape[1:] != action_space.shape:
        scaled = scaled.reshape((-1, *action_space.shape))
    low, high = action_space.low, action_space.high
    return np.clip(low + 0.5 * (scaled + 1.0) * (high - low), low, high).astype(action_space.dtype)
