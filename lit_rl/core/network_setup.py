"""Building the policy for the env's spaces: space checks, seeded initialisation, Dict observations, normalisation;
and switching the policy between train and eval mode cheaply."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from lit_rl.buffers.observations import DictObservationFlattener
from lit_rl.nets.normalization import Normalization

# Initialisation draws from the global generators: runs in threads of one process (a pack's members) take turns,
# and whoever seeds or restores those generators holds the same lock (global_rng_lock).
_INITIALISATION = threading.RLock()


def global_rng_lock() -> threading.RLock:
    """Held while torch's, numpy's and Python's global generators are seeded, restored or drawn from for
    initialisation, so threads of one process never interleave there."""
    return _INITIALISATION


@contextmanager
def seeded_initialisation(seed: int | None) -> Iterator[None]:
    """As SB3's ``set_random_seed`` before building networks: initialisation and numpy-drawn noise in the block
    follow ``seed``, and no other thread seeds or initialises meanwhile."""
    with _INITIALISATION:
        if seed is not None:
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
        yield


def check_env_fits(algo: Any, env: gym.vector.VectorEnv) -> None:
    """The env's spaces are the ones the networks were built for, and its number of envs is allowed."""
    name = type(algo).__name__
    obs_space, act_space = env.single_observation_space, env.single_action_space
    if obs_space != algo.observation_space or act_space != algo.action_space:
        raise ValueError(f"{name} was built for observation space {algo.observation_space} and action space "
                         f"{algo.action_space}; the env has {obs_space} and {act_space}")  # fmt: skip
    if env.num_envs > 1 and not algo.support_multi_env:
        raise ValueError(f"{name} was created with support_multi_env=False; got n_envs={env.num_envs}")
    if algo.train_freq.unit == "episode" and env.num_envs > 1:
        raise ValueError(f"train_freq={tuple(algo.train_freq)} counts episodes, which needs n_envs=1; "
                         f"got n_envs={env.num_envs}")  # fmt: skip


def observation_flattener(observation_space: spaces.Space) -> DictObservationFlattener | None:
    """Dict observations reach the policy as one vector of their keys; other spaces as they are (None)."""
    return DictObservationFlattener(observation_space) if isinstance(observation_space, spaces.Dict) else None


def make_normalizer(
    algo: Any, observation_space: spaces.Space, flattener: DictObservationFlattener | None
) -> Normalization | None:
    """SB3's VecNormalize inside the model, with ``normalize_obs`` / ``normalize_reward``; else None."""
    if not (algo.normalize_obs or algo.normalize_reward):
        return None
    gamma = algo.gamma if algo.normalize_kwargs["gamma"] is None else algo.normalize_kwargs["gamma"]
    return Normalization(observation_space, algo.normalize_obs, algo.normalize_reward,
                         key_slices=flattener.slices if flattener else None,
                         **{**algo.normalize_kwargs, "gamma": gamma})  # fmt: skip


class PolicyModes:
    """The policy's train (updates) or eval mode (acting), as SB3 sets them around ``train`` and rollouts.

    Set twice per env step, so each module's flag is set directly instead of ``nn.Module.train``'s
    recursive walk through ``__setattr__`` (measured: 0.6 ms per step for TD3's 37 modules on a CPU);
    a policy holding a module with its own ``train()`` gets the plain call.
    """

    def __init__(self) -> None:
        self.policy: nn.Module | None = None
        self.modules: list[nn.Module] | None = None  # None: a module overrides train(); call set_training_mode

    def set(self, policy: Any, mode: bool) -> None:
        if policy.training == mode:
            return
        if self.policy is not policy:
            modules = list(policy.modules())
            self.policy = policy
            self.modules = modules if all(type(m).train is nn.Module.train for m in modules) else None
        if self.modules is None:
            policy.set_training_mode(mode)
            return
        for module in self.modules:
            object.__setattr__(module, "training", mode)
