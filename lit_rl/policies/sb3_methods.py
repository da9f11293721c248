"""What SB3 users call on a policy or one of its networks: ``device``, ``predict``, ``obs_to_tensor``, ``save``/``load``.

One mixin for both the policy modules (:class:`~lit_rl.policies.base.BasePolicy`) and the networks
(``Actor``, critics, ``QNetwork``), as every SB3 policy class is a ``BasePolicy``.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from lit_rl.checks import resolve_device
from lit_rl.envs.actions import unscale_action


def observation_is_single(space: spaces.Space, observation: Any) -> bool:
    """Whether ``observation`` is one observation of ``space`` rather than a batch (SB3's predict takes both)."""
    if isinstance(space, spaces.Dict):
        key, sub_space = next(iter(space.spaces.items()))
        return np.asarray(observation[key]).shape == (sub_space.shape or ())
    return np.asarray(observation).shape == (space.shape or ())


class SB3PolicyMethods:
    """Mixin of torch modules whose constructor arguments describe them fully (saved by :meth:`save`)."""

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
        space = self.predict_spaces[0]
        single = observation_is_single(space, observation)

        def batch(value: Any) -> torch.Tensor:
            value = np.asarray(value)
            return torch.as_tensor(value[None] if single else value, device=self.device)

        if isinstance(observation, dict):
            return {key: batch(value) for key, value in observation.items()}, single
        return batch(observation), single

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
