"""Observations as networks take them: one-hot, float, images in [0, 1] and channels first (SB3's preprocessing)."""

from __future__ import annotations

import warnings
from typing import TypeGuard

import numpy as np
import torch
from gymnasium import spaces

# Spaces whose observations :func:`preprocess_obs` turns into network inputs.
PREPROCESSED_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def flattened_obs_dim(space: spaces.Space) -> int:
    """Size of one preprocessed, flattened observation: ``n`` (Discrete), ``sum(nvec)`` (MultiDiscrete), else ``prod(shape)``."""
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    if space.shape is None:
        raise TypeError(f"{space} has no shape; a flattened observation size needs one")
    return int(np.prod(space.shape))


def is_image_space_channels_first(space: spaces.Box) -> bool:
    """Whether an image space is ``(C, H, W)`` (True) rather than ``(H, W, C)``: the smallest dimension is the channels."""
    smallest = int(np.argmin(space.shape))
    if smallest == 1:
        warnings.warn("Treating image space as channels-last, while its second dimension is the smallest", stacklevel=2)
    return smallest == 0


def is_image_space(
    space: spaces.Space, check_channels: bool = False, normalized_image: bool = False
) -> TypeGuard[spaces.Box]:
    """SB3's check: a 3-d Box, uint8 in [0, 255] (only the shape with ``normalized_image``), 1/3/4 channels if asked."""
    if not isinstance(space, spaces.Box) or len(space.shape) != 3:
        return False
    if not normalized_image and (space.dtype != np.uint8 or np.any(space.low != 0) or np.any(space.high != 255)):
        return False
    if not check_channels:
        return True
    n_channels = space.shape[0] if is_image_space_channels_first(space) else space.shape[-1]
    return n_channels in (1, 3, 4)


def channels_first_space(space: spaces.Space) -> spaces.Space:
    """``space`` as the networks see it: channel-last image spaces (and Dict keys) transposed to ``(C, H, W)``.

    Stable-Baselines3 transposes such envs with ``VecTransposeImage``; lit_rl stores the env's
    observations as they come and transposes in :func:`to_channels_first` instead.
    """
    if isinstance(space, spaces.Dict):
        return spaces.Dict({key: channels_first_space(sub) for key, sub in space.spaces.items()})
    if is_image_space(space) and not is_image_space_channels_first(space):
        h, w, c = space.shape
        return spaces.Box(
            np.transpose(space.low, (2, 0, 1)), np.transpose(space.high, (2, 0, 1)), (c, h, w), space.dtype
        )
    return space


def needs_transpose(space: spaces.Space) -> bool:
    """Whether observations of ``space`` (not a Dict) are channel-last images."""
    return is_image_space(space) and not is_image_space_channels_first(space)


def to_channels_first(obs: torch.Tensor) -> torch.Tensor:
    """A batch of ``(H, W, C)`` images as ``(C, H, W)`` (a view)."""
    return obs.permute(0, 3, 1, 2)


def one_hot(obs: torch.Tensor, n: int, start: int = 0) -> torch.Tensor:
    """Integer observations ``(batch,)`` or ``(batch, 1)`` -> float one-hot ``(batch, n)``."""
    return torch.nn.functional.one_hot(obs.long().reshape(-1) - start, num_classes=n).float()


def multi_one_hot(obs: torch.Tensor, space: spaces.MultiDiscrete) -> torch.Tensor:
    """MultiDiscrete observations ``(batch, *nvec.shape)`` -> the concatenated one-hots ``(batch, sum(nvec))``."""
    columns = obs.long().reshape(obs.shape[0], -1)
    # Python ints, not tensors from numpy: no host-to-device copy (a sync on the GPU) in the update.
    sizes, starts = space.nvec.reshape(-1).tolist(), np.asarray(space.start).reshape(-1).tolist()
    parts = [
        torch.nn.functional.one_hot(columns[:, i] - start, num_classes=size)
        for i, (size, start) in enumerate(zip(sizes, starts, strict=True))
    ]
    return torch.cat(parts, dim=1).float()


def preprocess_obs(
    obs: torch.Tensor | dict[str, torch.Tensor], space: spaces.Space, normalize_images: bool = True
) -> torch.Tensor | dict[str, torch.Tensor]:
    """Raw observations -> network inputs, as SB3's ``preprocess_obs``.

    Box: float (images divided by 255 with ``normalize_images``); Discrete: one-hot
    ``(batch, n)``; MultiDiscrete: concatenated one-hots; MultiBinary: float; Dict: per key.
    Unlike SB3, Discrete and MultiDiscrete subtract the space's ``start``.
    """
    if isinstance(space, spaces.Dict):
        if not isinstance(obs, dict):
            raise TypeError(f"observation_space={space} needs a dict of observations; got {type(obs).__name__}")
        return preprocess_dict_obs(obs, space, normalize_images)
    if isinstance(obs, dict):
        raise TypeError(f"observation_space={space} needs a tensor of observations; got a dict")
    return preprocess_tensor_obs(obs, space, normalize_images)


def preprocess_dict_obs(
    obs: dict[str, torch.Tensor], space: spaces.Dict, normalize_images: bool = True
) -> dict[str, torch.Tensor]:
    """:func:`preprocess_obs` of a Dict space: each key's tensor preprocessed by its (non-Dict) sub-space."""
    return {key: preprocess_tensor_obs(obs[key], sub, normalize_images) for key, sub in space.spaces.items()}


def preprocess_tensor_obs(obs: torch.Tensor, space: spaces.Space, normalize_images: bool = True) -> torch.Tensor:
    """:func:`preprocess_obs` of a space that is not a Dict."""
    if isinstance(space, spaces.Box):
        if normalize_images and is_image_space(space):
            return obs.float() / 255.0
        return obs.float()
    if isinstance(space, spaces.Discrete):
        return one_hot(obs, int(space.n), int(space.start))
    if isinstance(space, spaces.MultiDiscrete):
        return multi_one_hot(obs, space)
    if isinstance(space, spaces.MultiBinary):
        return obs.float()
    allowed = [s.__name__ for s in (*PREPROCESSED_SPACES, spaces.Dict)]
    raise TypeError(f"observation_space={space} cannot be preprocessed; allowed: {allowed}")
