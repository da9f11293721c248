"""Checks of an algorithm's arguments that need more than a range: ``train_freq``, the policy, the env's spaces."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from lit_rl.buffers.observations import DictObservationFlattener
from lit_rl.policies.base import cnn_policy_class
from lit_rl.policies.features import check_observation_space
from lit_rl.utils.checks import check_int

TRAIN_FREQ_UNITS = ("step", "episode")
# MultiInputPolicy (SB3's name for Dict observations) is MlpPolicy over the concatenated keys; either name
# accepts either kind of observation space. CnnPolicy: NatureCNN features extractors.
POLICY_NAMES = ("MlpPolicy", "MultiInputPolicy", "CnnPolicy")


class UnsupportedSpaceError(ValueError, AssertionError):
    """A space the algorithm cannot use: a ValueError like every bad input, and the AssertionError SB3 raises."""


class TrainFreq(NamedTuple):
    """How much to collect between two rounds of gradient steps."""

    frequency: int
    unit: str  # "step" or "episode"


def parse_train_freq(train_freq: Any) -> TrainFreq:
    """Accept ``4``, ``(4, "step")``, ``[2, "episode"]``; raise naming the value otherwise."""
    if isinstance(train_freq, TrainFreq):
        return train_freq
    if isinstance(train_freq, (list, tuple)):
        if len(train_freq) != 2:
            raise ValueError(f"train_freq={train_freq!r} must be an integer or a pair (frequency, unit)")
        frequency, unit = train_freq
    else:
        frequency, unit = train_freq, "step"
    if unit not in TRAIN_FREQ_UNITS:
        raise ValueError(f"train_freq unit {unit!r} is not allowed; allowed: {list(TRAIN_FREQ_UNITS)}")
    if isinstance(frequency, bool) or not isinstance(frequency, (int, np.integer)):
        # SB3 raises ValueError for any bad train_freq ("4", ("1", "episode")); so do we.
        raise ValueError(f"train_freq={train_freq!r}: the frequency must be an integer >= 1")
    return TrainFreq(check_int("train_freq", int(frequency), minimum=1), unit)


def resolve_policy_class(algorithm: str, policy: Any, default: type) -> type:
    """``"MlpPolicy"`` / ``"MultiInputPolicy"`` -> the algorithm's policy class; a class must subclass it."""
    if isinstance(policy, str):
        if policy not in POLICY_NAMES:
            raise ValueError(f"policy={policy!r} is not available; allowed: {list(POLICY_NAMES)} or a policy class")
        return cnn_policy_class(default) if policy == "CnnPolicy" else default
    if isinstance(policy, type) and issubclass(policy, default):
        return policy
    raise ValueError(
        f"policy={policy!r} is not available for {algorithm}; allowed: {list(POLICY_NAMES)} or a subclass of "
        f"{default.__name__}"
    )


def check_spaces(
    algorithm: str, supported: tuple[type[spaces.Space], ...], observation_space: spaces.Space, action_space: spaces.Space
) -> None:
    """Raise a ValueError when the algorithm cannot handle these spaces."""
    if not isinstance(action_space, supported):
        allowed = [s.__name__ for s in supported]
        raise UnsupportedSpaceError(
            f"{algorithm} does not support {type(action_space).__name__} action spaces ({action_space}); "
            f"allowed: {allowed}"
        )
    if isinstance(action_space, spaces.Box) and not (
        np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))
    ):
        raise UnsupportedSpaceError(f"{algorithm} needs a Box action space with finite bounds; got {action_space}")
    if isinstance(observation_space, spaces.Dict):
        try:
            DictObservationFlattener(observation_space)
        except TypeError as err:
            raise UnsupportedSpaceError(f"{algorithm} cannot use the Dict observation space {observation_space}: {err}") from None
    else:
        check_observation_space(observation_space, algorithm)
