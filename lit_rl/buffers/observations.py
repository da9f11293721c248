"""Flat storage of Dict observations: one float vector per observation, one slice per key."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from lit_rl.nets.preprocessing import flattened_obs_dim

FLATTENABLE = (spaces.Box, spaces.MultiBinary, spaces.Discrete, spaces.MultiDiscrete)
_key_dim = flattened_obs_dim


def _multi_one_hot(value: np.ndarray, space: spaces.MultiDiscrete) -> np.ndarray:
    """``(batch, *nvec.shape)`` integers -> concatenated one-hots ``(batch, sum(nvec))`` (SB3's preprocessing)."""
    nvec, start = space.nvec.reshape(-1), np.asarray(space.start).reshape(-1)
    index = value.reshape(value.shape[0], -1) - start + (np.cumsum(nvec) - nvec)
    out = np.zeros((value.shape[0], int(nvec.sum())), dtype=np.float32)
    np.put_along_axis(out, index.astype(np.int64), 1.0, axis=1)
    return out


class DictObservationFlattener:
    """Concatenates the keys of a ``spaces.Dict`` observation into one float32 vector.

    Keys come in the space's order (gymnasium sorts them), Box and MultiBinary
    keys are flattened, Discrete and MultiDiscrete keys one-hot encoded, as Stable-Baselines3's
    ``CombinedExtractor`` does without a CNN (image keys are kept as raw values: the
    policy's preprocessing divides them by 255). Flattening once, where numpy
    observations enter torch (buffer ``add`` and the algorithm's ``act``), lets
    every network stay a plain MLP over ``flat_space``.
    """

    def __init__(self, space: spaces.Dict) -> None:
        if not isinstance(space, spaces.Dict):
            raise TypeError(f"observation_space={space!r} must be a gymnasium.spaces.Dict")
        self.space = space
        self.slices: dict[str, slice] = {}
        start = 0
        for key, sub in space.spaces.items():
            if not isinstance(sub, FLATTENABLE):
                allowed = [s.__name__ for s in FLATTENABLE]
                raise TypeError(
                    f"observation key {key!r} has a {type(sub).__name__} space ({sub}); allowed in a Dict: {allowed}"
                )
            self.slices[key] = slice(start, start + _key_dim(sub))
            start += _key_dim(sub)
        self.dim = start
        self.flat_space = spaces.Box(-np.inf, np.inf, (self.dim,), np.float32)

    def flatten(self, obs: dict[str, Any]) -> np.ndarray:
        """A batch of dict observations (each key with a leading batch dimension) -> ``(batch, dim)`` float32."""
        parts = []
        for key, sub in self.space.spaces.items():
            value = np.asarray(obs[key])
            if isinstance(sub, spaces.Discrete):
                value = np.eye(sub.n, dtype=np.float32)[value.reshape(-1) - sub.start]
            elif isinstance(sub, spaces.MultiDiscrete):
                value = _multi_one_hot(value, sub)
            parts.append(value.reshape(value.shape[0], -1).astype(np.float32, copy=False))
        return np.concatenate(parts, axis=1)

    def key(self, flat: torch.Tensor, key: str) -> torch.Tensor:
        """The part of flat observations ``(..., dim)`` that holds ``key``."""
        return flat[..., self.slices[key]]
