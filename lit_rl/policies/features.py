"""Observations -> features inside each network: SB3's preprocessing and features extractor, with a flat fast path.

Networks receive observations as the replay buffer stores them (the env's dtype:
uint8 images, integer Discrete/MultiDiscrete, int8 MultiBinary; Dict observations
as one float vector of their keys, Discrete/MultiDiscrete keys one-hot). Each
network preprocesses them as Stable-Baselines3 does (one-hot, float, images / 255
and channels first) and runs its ``features_extractor``. When the extractor is a
flatten of what is already a flat float vector, the observation *is* the features
and neither step runs.
"""

from __future__ import annotations

import importlib
from typing import Any, cast

import torch
from gymnasium import spaces
from torch import nn

from lit_rl.nets.extractors import CombinedExtractor, FlattenExtractor, NatureCNN
from lit_rl.nets.preprocessing import (
    PREPROCESSED_SPACES,
    channels_first_space,
    flattened_obs_dim,
    is_image_space,
    needs_transpose,
    preprocess_dict_obs,
    preprocess_tensor_obs,
    to_channels_first,
)
from lit_rl.policies.sb3_methods import SB3PolicyMethods

EXTRACTORS: dict[str, type[nn.Module]] = {
    "FlattenExtractor": FlattenExtractor,
    "CombinedExtractor": CombinedExtractor,
    "NatureCNN": NatureCNN,
}
# Modules whose extractor classes lit_rl knows by name (SB3's are the same networks).
EXTRACTOR_MODULES = ("lit_rl.nets.extractors", "stable_baselines3.common.torch_layers")


def extractor_name(cls: type) -> str | None:
    """``"FlattenExtractor"``, ``"CombinedExtractor"`` or ``"NatureCNN"`` for lit_rl's or SB3's class; else None."""
    name = getattr(cls, "__name__", None)
    return name if name in EXTRACTORS and getattr(cls, "__module__", None) in EXTRACTOR_MODULES else None


def resolve_extractor_class(value: Any) -> type[nn.Module] | None:
    """``policy_kwargs.features_extractor_class``: None (the space's default), a name, a dotted path or a class."""
    allowed = (f"None, {sorted(EXTRACTORS)}, a dotted class path, or a class called as "
               "cls(observation_space, **features_extractor_kwargs) with a features_dim")  # fmt: skip
    if value is None:
        return None
    if value is nn.Flatten or value == "Flatten":  # lit_rl's earlier spelling of a flatten
        return FlattenExtractor
    if isinstance(value, str):
        if value in EXTRACTORS:
            return EXTRACTORS[value]
        module, _, name = value.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), name) if module else None
        except (ImportError, AttributeError):
            found = None
        if found is None:
            raise ValueError(f"policy_kwargs.features_extractor_class={value!r} cannot be found; allowed: {allowed}")
        value = found
    if isinstance(value, type) and issubclass(value, nn.Module):
        return value
    raise ValueError(
        f"policy_kwargs.features_extractor_class={value!r} is not a features extractor; allowed: {allowed}"
    )


def check_observation_space(space: spaces.Space, owner: str) -> None:
    """Raise a ValueError unless the networks can take observations of ``space``."""
    allowed = [s.__name__ for s in (*PREPROCESSED_SPACES, spaces.Dict)]
    subspaces = space.spaces.items() if isinstance(space, spaces.Dict) else [(None, space)]
    for key, sub in subspaces:
        if not isinstance(sub, PREPROCESSED_SPACES):
            where = f"observation key {key!r} has" if key is not None else "got"
            raise ValueError(
                f"{owner} cannot take {type(sub).__name__} observations ({where} {sub}); allowed: {allowed}"
            )


def default_extractor(space: spaces.Space) -> nn.Module:
    """What a network uses without a given extractor: a flatten, or one per key for Dict spaces."""
    space = channels_first_space(space)
    return CombinedExtractor(space) if isinstance(space, spaces.Dict) else FlattenExtractor(space)


def features_are_observations(extractor: nn.Module, space: spaces.Space) -> bool:
    """Whether ``extractor`` applied to preprocessed observations of ``space`` returns the stored observation itself."""
    name = extractor_name(type(extractor))
    if isinstance(space, spaces.Dict):
        # Stored Dict observations are already the concatenated flattened keys (one-hot where SB3 one-hots);
        # image keys differ (divided by 255, transposed), and so does a CNN on any key.
        if any(is_image_space(sub) for sub in space.spaces.values()) or name not in (
            "FlattenExtractor",
            "CombinedExtractor",
        ):
            return False
        return name == "FlattenExtractor" or all(
            isinstance(m, nn.Flatten) for m in cast(nn.ModuleDict, extractor.extractors).values()
        )
    return name == "FlattenExtractor" and isinstance(space, spaces.Box) and len(space.shape) == 1


class ObservationEncoder:
    """Stored observations of one space -> the features extractor's input (SB3's preprocessing, channels first)."""

    def __init__(self, space: spaces.Space, normalize_images: bool) -> None:
        self.space, self.normalize_images = space, normalize_images
        self.slices: dict[str, slice] = {}
        if isinstance(space, spaces.Dict):
            start = 0
            for key, sub in space.spaces.items():
                self.slices[key] = slice(start, start + flattened_obs_dim(sub))
                start += flattened_obs_dim(sub)

    def _finish(self, x: torch.Tensor, space: spaces.Space) -> torch.Tensor:
        return to_channels_first(x) if needs_transpose(space) else x

    def __call__(self, obs: torch.Tensor | dict[str, torch.Tensor]) -> torch.Tensor | dict[str, torch.Tensor]:
        if not isinstance(self.space, spaces.Dict):
            if isinstance(obs, dict):
                raise TypeError(f"observation_space={self.space} needs a tensor of observations; got a dict")
            return self._finish(preprocess_tensor_obs(obs, self.space, self.normalize_images), self.space)
        if isinstance(obs, dict):  # a dict of raw key tensors, as an SB3 user may pass
            pre = preprocess_dict_obs(obs, self.space, self.normalize_images)
            return {key: self._finish(value, self.space[key]) for key, value in pre.items()}
        out = {}
        for key, sub in self.space.spaces.items():
            part = obs[:, self.slices[key]]  # already one-hot for Discrete and MultiDiscrete keys
            if isinstance(sub, (spaces.Box, spaces.MultiBinary)):
                part = preprocess_tensor_obs(part.reshape(part.shape[0], *sub.shape), sub, self.normalize_images)
            out[key] = self._finish(part, sub)
        return out


class FeatureExtraction(SB3PolicyMethods):
    """Mixin of the network modules: a ``features_extractor`` submodule and :meth:`extract_features`."""

    share_features_extractor = False

    @staticmethod
    def extractor_and_dim(hp: dict[str, Any]) -> tuple[nn.Module, int]:
        """The given extractor (or the space's default) and the features size, before the module exists."""
        extractor = hp["features_extractor"]
        if extractor is None:
            extractor = default_extractor(hp["observation_space"])
        return extractor, int(hp["features_dim"] or extractor.features_dim)

    def attach_features_extractor(self, extractor: nn.Module, hp: dict[str, Any]) -> None:
        """Register ``extractor`` and the preprocessing of ``hp['observation_space']`` (after ``nn.Module.__init__``)."""
        self.features_extractor = extractor
        # First, as SB3 registers it: parameters() and so optimizer states come in SB3's order.
        self._modules = {"features_extractor": extractor, **self._modules}
        self.normalize_images = hp["normalize_images"]
        self.observation_encoder = ObservationEncoder(hp["observation_space"], hp["normalize_images"])
        self.acts_in = hp.get("action_space")  # predict()'s env scale (None: raw outputs, e.g. Q-network argmax)
        self.features_are_observations = features_are_observations(extractor, hp["observation_space"])

    @property
    def predict_spaces(self) -> tuple[spaces.Space, spaces.Space | None]:
        return self.observation_encoder.space, self.acts_in

    def extract_features(self, obs: torch.Tensor | dict[str, torch.Tensor]) -> torch.Tensor:
        """Preprocess ``obs`` and run the features extractor (flat float observations pass through)."""
        if self.features_are_observations:
            if isinstance(obs, dict):
                encoded = self.observation_encoder(obs)
                assert isinstance(encoded, dict)  # a Dict space's encoder returns one tensor per key
                return torch.cat([encoded[key].flatten(1) for key in self.observation_encoder.slices], dim=1)
            return obs if obs.dtype == torch.float32 else obs.float()
        return self.features_extractor(self.observation_encoder(obs))


def observation_dim(space: spaces.Space) -> int:
    """Size of one flattened, preprocessed observation (Dict: the sum over keys)."""
    if isinstance(space, spaces.Dict):
        return int(sum(flattened_obs_dim(sub) for sub in space.spaces.values()))
    return flattened_obs_dim(space)  # prod(shape) for spaces that are not one-hot
