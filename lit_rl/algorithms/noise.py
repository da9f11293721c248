"""Deprecated: the action noises moved to :mod:`lit_rl.collect.noise`; import them from :mod:`lit_rl.noise`.

Each name this module had still resolves (old pickles load), with a DeprecationWarning naming the new path.
"""

from __future__ import annotations

import warnings
from typing import Any

# The names lit_rl/algorithms/noise.py had before it moved (commit 7a923c0), and their documented homes now.
MOVED = {
    "ActionNoise": "lit_rl.noise",
    "NormalActionNoise": "lit_rl.noise",
    "OrnsteinUhlenbeckActionNoise": "lit_rl.noise",
    "VectorizedActionNoise": "lit_rl.noise",
    "ACTION_NOISE_TYPES": "lit_rl.collect.noise",
    "check_action_noise": "lit_rl.collect.noise",
    "make_action_noise": "lit_rl.collect.noise",
}


def __getattr__(name: str) -> Any:
    if name not in MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"lit_rl.algorithms.noise.{name} moved to {MOVED[name]}: use from {MOVED[name]} import {name}",
        DeprecationWarning,
        stacklevel=2,
    )
    from lit_rl.collect import noise

    return getattr(noise, name)


def __dir__() -> list[str]:
    return sorted(MOVED)
