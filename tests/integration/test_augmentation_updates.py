"""``buffer.augmentation=random_shift`` (``replay_buffer_kwargs={"augmentation": "random_shift"}``): every update
sees each sampled image shifted by at most ``augmentation_pad`` pixels, observations and next observations apart."""

from __future__ import annotations

import numpy as np
import torch
from stable_baselines3.common.envs import FakeImageEnv

from lit_rl import SAC


def shift_of(shifted: np.ndarray, image: np.ndarray, pad: int) -> tuple[int, int] | None:
    """The (row, col) offset at which ``shifted`` is ``image`` edge-padded by ``pad`` and cropped, or None."""
    padded = np.pad(image, ((0, 0), (pad, pad), (pad, pad)), mode="edge")
    h, w = image.shape[1:]
    for r in range(2 * pad + 1):
        for c in range(2 * pad + 1):
            if np.array_equal(padded[:, r : r + h, c : c + w], shifted):
                return r, c
    return None


def test_updates_see_shifted_images():
    env = FakeImageEnv(screen_height=40, screen_width=40, n_channels=3, discrete=False, channel_first=True)
    model = SAC("CnnPolicy", env, learning_starts=30, buffer_size=200, batch_size=16, seed=0, device="cpu",
                policy_kwargs={"net_arch": [8], "features_extractor_kwargs": {"features_dim": 8}},
                replay_buffer_kwargs={"augmentation": "random_shift", "augmentation_pad": 3})  # fmt: skip
    model.learn(40)
    seen = []
    model.update = lambda batch: seen.append(batch)  # the batches the gradient step would get
    state = model.replay_buffer.generator.get_state()
    model.train(gradient_steps=1, batch_size=32)
    model.replay_buffer.generator.set_state(state)
    plain = [model.replay_buffer.sample(32)]  # the same draw, before augmentation (whose shifts draw after it)
    offsets = []
    for got, raw in zip(seen, plain, strict=True):
        for name in ("observations", "next_observations"):
            for shifted, image in zip(getattr(got, name).numpy(), getattr(raw, name).numpy(), strict=True):
                offset = shift_of(shifted, image, 3)
                assert offset is not None, name
                offsets.append(offset)
        assert torch.equal(got.actions, raw.actions) and torch.equal(got.rewards, raw.rewards)
    assert len(set(offsets)) > 10  # shifts vary across images (49 possible)
