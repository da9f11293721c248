"""What SB3 users call on a policy or one of its networks: ``device``, ``predict``, ``obs_to_tensor``, ``save``/``load``.

One mixin for both the policy modules (:class:`~lit_rl.policies.base.BasePolicy`) and the networks
(``Actor``, critics, ``QNetwork``), as every SB3 policy class is a ``BasePolicy``.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from lit_rl.envs.actions import unscale_action
from lit_rl.nets.preprocessing import is_image_space, is_image_space_channels_first
from lit_rl.utils.checks import resolve_device

GYM_TUPLE_ERROR = (
    "You have passed a tuple to the predict() function instead of a Numpy array or a Dict. "
    "You are probably mixing Gym API with SB3 VecEnv API: `obs, info = env.reset()` (Gym) "
    "vs `obs = vec_env.reset()` (SB3 VecEnv)"
)


def _is_vectorized(observation: np.ndarray, space: spaces.Space, name: str = "observation") -> bool:
    """SB3's ``is_vectorized_observation``: True for ``(n_env, *space.shape)``, False for ``space.shape``, else an error."""
    shape = space.shape
    if shape is None:  # Tuple, Text, Graph ...: SB3 cannot tell either
        raise ValueError(f"predict: cannot tell whether {name} is one observation or a batch for {space}")
    if observation.shape == shape:
        return False
    if observation.ndim == len(shape) + 1 and observation.shape[1:] == shape:
        return True
    raise ValueError(
        f"predict: Unexpected observation shape {observation.shape} for {name}: it does not fit the model's "
        f"observation space {space}; allowed: {shape} (one observation) or (n_env, {', '.join(map(str, shape))})"
    )


def _maybe_transpose(observation: Any, space: spaces.Space) -> np.ndarray:
    """An image in the other channel layout turned to the space's one (SB3's ``maybe_transpose``, both ways)."""
    observation = np.asarray(observation)
    if not is_image_space(space) or observation.ndim < 3:
        return observation
    if observation.shape in (space.shape, (observation.shape[0], *space.shape)):
        return observation
    # (H, W, C) -> (C, H, W) for a channel-first space; (C, H, W) -> (H, W, C) for a channel-last one
    moved = np.moveaxis(observation, -1, -3) if is_image_space_channels_first(space) else np.moveaxis(observation, -3, -1)
    return moved if moved.shape in (space.shape, (moved.shape[0], *space.shape)) else observation


def observation_batch(space: spaces.Space, observation: Any) -> tuple[np.ndarray | dict[str, np.ndarray], bool]:
    """``observation`` as a batch of ``space``'s observations, and whether it was one (SB3's ``predict`` takes both).

    SB3's checks (``obs_to_tensor``): one observation or ``(n_env, ...)`` of them, any other shape is an error;
    images are accepted in either channel layout; each key of a Dict is checked against its own space.
    """
    if isinstance(observation, tuple) and len(observation) == 2 and isinstance(observation[1], dict):
        raise ValueError(GYM_TUPLE_ERROR)
    if not isinstance(space, spaces.Dict):
        if isinstance(observation, dict):
            raise ValueError(f"predict: a dict observation (keys {sorted(observation)}) for the non-Dict space {space}")
        obs = _maybe_transpose(observation, space)
        one_batch = _is_vectorized(obs, space)
        assert space.shape is not None  # _is_vectorized raised otherwise
        return obs.reshape((-1, *space.shape)), not one_batch
    if not isinstance(observation, dict):
        raise ValueError(f"predict: the model's observation space is a Dict {space}; got a {type(observation).__name__}")
    if set(observation) != set(space.spaces):
        raise ValueError(
            f"predict: observation keys {sorted(observation)} do not match the model's; allowed: {sorted(space.spaces)}"
        )
    batch: dict[str, np.ndarray] = {}
    vectorized: dict[str, bool] = {}
    for key, sub in space.spaces.items():
        value = _maybe_transpose(observation[key], sub)
        vectorized[key] = _is_vectorized(value, sub, f"key {key!r}")
        assert sub.shape is not None  # _is_vectorized raised otherwise
        batch[key] = value.reshape((-1, *sub.shape))
    if len({len(value) for value in batch.values()}) > 1:
        sizes = {key: np.shape(value) for key, value in observation.items()}
        raise ValueError(f"predict: a mix of single and batched (or unequal batch) observations across keys: {sizes}")
    return batch, not any(vectorized.values())


if TYPE_CHECKING:
    _ModuleHost = nn.Module  # what the mixin is mixed into, for type checkers
else:
    _ModuleHost = object  # at run time: the MRO of the host classes unchanged


class SB3PolicyMethods(_ModuleHost):
    """Mixin of torch modules whose constructor arguments describe them fully (saved by :meth:`save`)."""

    # Set by the host classes (the policies and networks); the arguments by __new__.
    observation_space: spaces.Space
    action_space: spaces.Space
    _constructor_arguments: tuple[tuple[Any, ...], dict[str, Any]]

    squash_output = False  # SB3's attribute: True where actions come out tanh-squashed

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        module = super().__new__(cls)
        # The constructor's arguments, for save(); set before nn.Module.__init__, so past its __setattr__.
        object.__setattr__(module, "_constructor_arguments", (args, kwargs))
        return module

    @property
    def device(self) -> torch.device:
        """The device of the module's parameters (CPU for a module without any)."""
        return next(self.parameters(), torch.empty(0)).device

    @property
    def predict_spaces(self) -> tuple[spaces.Space, spaces.Space | None]:
        """The observation space the module reads and the action space it acts in (None: raw outputs)."""
        return self.observation_space, self.action_space

    def _predict(self, obs: Any, deterministic: bool) -> torch.Tensor:
        return self(obs, deterministic)

    def obs_to_tensor(self, observation: Any) -> tuple[Any, bool]:
        """SB3's ``obs_to_tensor``: a batch of tensors on the module's device, and whether it was one observation."""
        batch, single = observation_batch(self.predict_spaces[0], observation)
        if isinstance(batch, dict):
            return {key: torch.as_tensor(value, device=self.device) for key, value in batch.items()}, single
        return torch.as_tensor(batch, device=self.device), single

    def predict(
        self, observation: Any, state: Any = None, episode_start: Any = None, deterministic: bool = False
    ) -> tuple[np.ndarray, Any]:
        """SB3's ``predict``: env actions for one observation or a batch (eval mode, no exploration noise)."""
        self.set_training_mode(False)
        obs, single = self.obs_to_tensor(observation)
        with torch.no_grad():
            actions = self._predict(obs, deterministic).cpu().numpy()
        action_space = self.predict_spaces[1]
        if action_space is not None:
            actions = unscale_action(action_space, actions)
        return (np.asarray(actions[0]) if single else actions), state

    def set_training_mode(self, mode: bool) -> None:
        """Training (True) or evaluation mode of every layer (BatchRenorm statistics, dropout)."""
        self.train(mode)

    def save(self, path: str | Path) -> None:
        """Write the constructor's arguments and the weights (SB3's ``policy.save``)."""
        args, kwargs = self._constructor_arguments
        named = inspect.signature(type(self)).bind_partial(*args, **kwargs).arguments
        named.pop("lr_schedule", None)  # the algorithm's (a lambda may not pickle); a loaded policy needs none
        torch.save({"args": (), "kwargs": dict(named), "state_dict": self.state_dict()}, path)

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device = "auto") -> Any:
        """A module written by :meth:`save`, on ``device`` (SB3's ``Policy.load``)."""
        data = torch.load(path, map_location="cpu", weights_only=False)
        module = cls(*data["args"], **data["kwargs"])
        module.load_state_dict(data["state_dict"])
        return module.to(resolve_device(device))
