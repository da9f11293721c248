"""Features extractors, as Stable-Baselines3's ``torch_layers``: flatten, Nature CNN, one per Dict key.

A features extractor is built as ``cls(observation_space, **kwargs)`` from the
(channels-first) observation space, takes preprocessed observations (see
:func:`~lit_rl.nets.preprocessing.preprocess_obs`) and has ``features_dim``
outputs. SB3's own classes, and users' subclasses of SB3's or lit_rl's
``BaseFeaturesExtractor``, fit the same slot.
"""

from __future__ import annotations

import torch
from gymnasium import spaces
from torch import nn

from lit_rl.nets.preprocessing import flattened_obs_dim, is_image_space


class FeaturesExtractorError(ValueError, AssertionError):
    """A features extractor that cannot be built for the observation space.

    A ValueError like every bad input; also an AssertionError, which SB3 raises there
    (its extractors assert), so code written against SB3 catches it unchanged.
    """


class BaseFeaturesExtractor(nn.Module):
    """Base class of features extractors: keeps the observation space and ``features_dim`` (> 0)."""

    def __init__(self, observation_space: spaces.Space, features_dim: int = 0) -> None:
        super().__init__()
        if features_dim <= 0:
            raise FeaturesExtractorError(
                f"{type(self).__name__}: features_dim={features_dim!r} must be a positive integer"
            )
        self._observation_space = observation_space
        self._features_dim = features_dim

    @property
    def features_dim(self) -> int:
        """Number of features the extractor outputs."""
        return self._features_dim


class FlattenExtractor(BaseFeaturesExtractor):
    """Flattens each observation: the extractor when the MLP takes the observation itself."""

    def __init__(self, observation_space: spaces.Space) -> None:
        super().__init__(observation_space, flattened_obs_dim(observation_space))
        self.flatten = nn.Flatten()

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.flatten(observations)


def _check_image_space(name: str, space: spaces.Space, normalized_image: bool) -> spaces.Box:
    if not isinstance(space, spaces.Box) or not is_image_space(space, normalized_image=normalized_image):
        raise FeaturesExtractorError(
            f"{name} needs a channels-first image space (a 3-d Box, uint8 in [0, 255]; with normalized_image=True "
            f"any 3-d Box); got {space}. Use MlpPolicy for vector observations, or normalize_images=False for "
            "images that are already normalized"
        )
    return space


class NatureCNN(BaseFeaturesExtractor):
    """The CNN of the DQN Nature paper (Mnih et al., 2015): three conv layers, then ``Linear(features_dim)`` + ReLU.

    ``normalized_image=True`` accepts any 3-d Box (images already in [0, 1]), as SB3's.
    """

    def __init__(
        self, observation_space: spaces.Space, features_dim: int = 512, normalized_image: bool = False
    ) -> None:
        image_shape = _check_image_space("NatureCNN", observation_space, normalized_image).shape
        super().__init__(observation_space, features_dim)
        self.cnn = nn.Sequential(
            nn.Conv2d(image_shape[0], 32, kernel_size=8, stride=4, padding=0),
            nn.ReLU(),
            nn.Conv2d(32, 64, kernel_size=4, stride=2, padding=0),
            nn.ReLU(),
            nn.Conv2d(64, 64, kernel_size=3, stride=1, padding=0),
            nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():  # the flattened size for this image size
            n_flatten = self.cnn(torch.zeros((1, *image_shape))).shape[1]
        self.linear = nn.Sequential(nn.Linear(n_flatten, features_dim), nn.ReLU())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.linear(self.cnn(observations))


class CombinedExtractor(BaseFeaturesExtractor):
    """For Dict observations: a :class:`NatureCNN` (``cnn_output_dim`` features) per image key, a flatten per
    other key, concatenated in the space's key order."""

    def __init__(
        self, observation_space: spaces.Dict, cnn_output_dim: int = 256, normalized_image: bool = False
    ) -> None:
        if not isinstance(observation_space, spaces.Dict):
            raise FeaturesExtractorError(f"CombinedExtractor needs a Dict observation space; got {observation_space}")
        super().__init__(observation_space, features_dim=1)  # the real size is known after the loop
        extractors: dict[str, nn.Module] = {}
        total = 0
        for key, subspace in observation_space.spaces.items():
            if is_image_space(subspace, normalized_image=normalized_image):
                extractors[key] = NatureCNN(subspace, features_dim=cnn_output_dim, normalized_image=normalized_image)
                total += cnn_output_dim
            else:
                extractors[key] = nn.Flatten()
                total += flattened_obs_dim(subspace)
        self.extractors = nn.ModuleDict(extractors)
        self._features_dim = total

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([extractor(observations[key]) for key, extractor in self.extractors.items()], dim=1)
