"""Image augmentation of sampled batches: DrQ's random shift (Kostrikov et al., 2020; Yarats et al., 2021).

Each image of a batch is padded by ``pad`` pixels, repeating its border pixels, and cropped back to its size at
a random offset: a shift of up to ``pad`` pixels in each direction. Observations and next observations get
independent shifts, as in DrQ and DrQ-v2, drawn from the buffer's sampling generator (exact resume).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

AUGMENTATIONS = ("random_shift",)


def check_augmentation(augmentation: str | None, pad: int, obs_shape: tuple[int, ...] | None = None) -> None:
    """Clear errors for bad ``buffer.augmentation`` / ``buffer.augmentation_pad`` values, naming the key."""
    if augmentation is None:
        return
    if augmentation not in AUGMENTATIONS:
        raise ValueError(f"buffer.augmentation={augmentation!r} is not allowed; allowed: {list(AUGMENTATIONS)} or null")
    if not isinstance(pad, int) or isinstance(pad, bool) or pad < 1:
        raise ValueError(f"buffer.augmentation_pad={pad!r} must be an integer >= 1")
    if obs_shape is not None and len(obs_shape) != 3:
        raise ValueError(
            f"buffer.augmentation={augmentation!r} shifts images, but the observations have shape {obs_shape}; "
            "allowed: image observations (channels, height, width), e.g. env=dmc env.kwargs.pixels=true"
        )


def random_shift(images: torch.Tensor, pad: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """``images`` (batch, channels, height, width), each shifted by up to ``pad`` pixels; same dtype and shape."""
    batch, _, height, width = images.shape
    # Replicate padding works on floats; uint8 frames go through float32 and back, exactly (integers below 2^24).
    padded = F.pad(images.float(), (pad, pad, pad, pad), mode="replicate")
    draw_on = generator.device if generator is not None else images.device
    offsets = torch.randint(0, 2 * pad + 1, (2, batch), generator=generator, device=draw_on).to(images.device)
    rows = (offsets[0, :, None] + torch.arange(height, device=images.device))[:, None, :, None]
    cols = (offsets[1, :, None] + torch.arange(width, device=images.device))[:, None, None, :]
    index = torch.arange(batch, device=images.device)[:, None, None, None]
    channels = torch.arange(images.shape[1], device=images.device)[None, :, None, None]
    return padded[index, channels, rows, cols].to(images.dtype)
