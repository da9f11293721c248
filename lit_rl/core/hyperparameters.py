"""The types of the algorithms' arguments, and the settings some algorithms pin.

Each algorithm's typed ``__init__`` signature declares its hyperparameters and
their defaults (Stable-Baselines3's names, types and defaults); the Hydra schema
(:mod:`lit_rl.launcher.config`) is generated from it. ``pinned`` settings are fixed by the
algorithm and are not arguments (DDPG is TD3 without its three tricks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import gymnasium as gym

if TYPE_CHECKING:
    import lightning as L
    from stable_baselines3.common.vec_env import VecEnv  # optional: an SB3 VecEnv is accepted wherever an env is

    from lit_rl.callbacks.sb3.base import BaseCallback
    from lit_rl.envs.sb3_view import VecEnvView

__all__ = ["NO_SDE", "NO_SDE_HINT", "GymEnv", "MaybeCallback", "SB3VecEnv", "Schedule"]

# SB3's Schedule: progress remaining (1 -> 0) -> value, e.g. a learning rate.
Schedule: TypeAlias = Callable[[float], float]
# An env object the algorithms train on (an env id, a str, is accepted beside it where noted).
GymEnv: TypeAlias = "gym.Env[Any, Any] | gym.vector.VectorEnv[Any, Any, Any] | VecEnv"
# What get_env() returns: the user's SB3 VecEnv, or a view with SB3's VecEnv API of the env lit_rl steps.
SB3VecEnv: TypeAlias = "VecEnv | VecEnvView"
# learn()'s callback: SB3-style callbacks, functions (locals, globals) -> bool, Lightning callbacks, or a list of them.
CallbackItem: TypeAlias = "BaseCallback | L.Callback | Callable[[dict[str, Any], dict[str, Any]], bool]"
MaybeCallback: TypeAlias = "CallbackItem | Sequence[CallbackItem] | None"

# A deterministic or greedy policy has no gSDE: TD3, DDPG and DQN pin these (SB3's do not take them either).
NO_SDE: dict[str, Any] = {"use_sde": False, "sde_sample_freq": -1, "use_sde_at_warmup": False, "sde_support": False}
NO_SDE_HINT = "gSDE needs a stochastic (squashed Gaussian) policy; allowed: use_sde with SAC or CrossQ, or action_noise"
