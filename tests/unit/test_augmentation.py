"""DrQ's random shift against numpy's edge padding and slicing: each image is its padded copy cropped at an
offset in [0, 2 * pad], the offsets cover that range, and uint8 frames stay bitwise uint8."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lit_rl.buffers.augmentation import check_augmentation, random_shift


def offsets_used(generator_seed: int, batch: int, pad: int) -> np.ndarray:
    """The (row, col) offsets ``random_shift`` draws from a generator seeded ``generator_seed``."""
    generator = torch.Generator().manual_seed(generator_seed)
    return torch.randint(0, 2 * pad + 1, (2, batch), generator=generator).numpy()


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_random_shift_is_an_edge_padded_crop(dtype):
    rng = np.random.default_rng(0)
    images = torch.as_tensor(rng.integers(0, 256, (64, 9, 84, 84)), dtype=dtype)
    shifted = random_shift(images, pad=4, generator=torch.Generator().manual_seed(7))
    assert shifted.dtype == dtype and shifted.shape == images.shape
    rows, cols = offsets_used(7, 64, 4)
    padded = np.pad(images.numpy(), ((0, 0), (0, 0), (4, 4), (4, 4)), mode="edge")
    for b in range(64):
        np.testing.assert_array_equal(shifted[b].numpy(), padded[b, :, rows[b] : rows[b] + 84, cols[b] : cols[b] + 84])
    assert set(rows) | set(cols) == set(range(9))  # every shift from -4 to +4 is drawn
    assert (rows != 4).any() and not torch.equal(shifted, images)


def test_random_shift_follows_its_generator():
    images = torch.rand(8, 3, 16, 16)
    a = random_shift(images, 2, torch.Generator().manual_seed(1))
    b = random_shift(images, 2, torch.Generator().manual_seed(1))
    c = random_shift(images, 2, torch.Generator().manual_seed(2))
    assert torch.equal(a, b) and not torch.equal(a, c)


@pytest.mark.parametrize(
    ("augmentation", "pad", "shape", "words"),
    [("flip", 4, None, ["buffer.augmentation='flip'", "random_shift"]),
     ("random_shift", 0, None, ["buffer.augmentation_pad=0", ">= 1"]),
     ("random_shift", 4, (17,), ["shape (17,)", "image observations"])],
)  # fmt: skip
def test_bad_augmentation_settings_are_named(augmentation, pad, shape, words):
    with pytest.raises(ValueError) as error:
        check_augmentation(augmentation, pad, shape)
    assert all(word in str(error.value) for word in words), error.value
