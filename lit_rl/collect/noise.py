"""Exploration noise added to deterministic policy actions (TD3, DDPG), with Stable-Baselines3's semantics.

Each noise draws from its own ``numpy.random.Generator``, so runs are
reproducible from the algorithm's seed without touching numpy's global state.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

import numpy as np
from gymnasium import spaces

from lit_rl.utils.checks import check_int

ACTION_NOISE_TYPES = ("normal", "ornstein-uhlenbeck")


class GlobalNumpyRandom:
    """numpy's global random state as a generator: what SB3's noises draw from (seeded by the model's ``seed``)."""

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        return np.random.normal(loc, scale, size)


class ActionNoise(ABC):
    """Base class: ``noise()`` draws one sample, ``reset()`` is called at the end of each episode.

    Without a ``seed`` draws come from numpy's global random state, as in SB3, so a model's ``seed``
    (which seeds it) makes a run with a user's noise repeatable; with one, from its own stream.
    """

    def __init__(self, seed: Any = None) -> None:
        self.seed(seed)

    def seed(self, seed: Any) -> None:
        """Restart the random stream from ``seed`` (an int or a ``SeedSequence``; None: numpy's global state)."""
        self.rng = GlobalNumpyRandom() if seed is None else np.random.default_rng(seed)

    def reset(self) -> None:  # noqa: B027 (an optional hook, not abstract)
        """Restore the state of a new episode (stateless noises have nothing to reset)."""

    @abstractmethod
    def __call__(self) -> np.ndarray:
        raise NotImplementedError


class NormalActionNoise(ActionNoise):
    """Independent Gaussian noise ``N(mean, sigma^2)`` at every step."""

    def __init__(self, mean: np.ndarray, sigma: np.ndarray, dtype: Any = np.float32, seed: Any = None) -> None:
        super().__init__(seed)
        self._mu = np.asarray(mean, dtype=np.float64)
        self._sigma = np.asarray(sigma, dtype=np.float64)
        self._dtype = dtype

    def __call__(self) -> np.ndarray:
        return self.rng.normal(self._mu, self._sigma).astype(self._dtype)

    def __repr__(self) -> str:
        return f"NormalActionNoise(mu={self._mu}, sigma={self._sigma})"


class OrnsteinUhlenbeckActionNoise(ActionNoise):
    """Temporally correlated noise: an Ornstein-Uhlenbeck process discretised with step ``dt``.

    ``x <- x + theta * (mean - x) * dt + sigma * sqrt(dt) * N(0, 1)``; ``reset``
    returns ``x`` to ``initial_noise`` (zeros by default).
    """

    noise_prev: np.ndarray  # the process state, set by reset

    def __init__(
        self,
        mean: np.ndarray,
        sigma: np.ndarray,
        theta: float = 0.15,
        dt: float = 1e-2,
        initial_noise: np.ndarray | None = None,
        dtype: Any = np.float32,
        seed: Any = None,
    ) -> None:
        super().__init__(seed)
        self._mu = np.asarray(mean, dtype=np.float64)
        self._sigma = np.asarray(sigma, dtype=np.float64)
        self._theta, self._dt, self._dtype = theta, dt, dtype
        self.initial_noise = None if initial_noise is None else np.asarray(initial_noise, dtype=np.float64)
        self.reset()

    def __call__(self) -> np.ndarray:
        noise = (
            self.noise_prev
            + self._theta * (self._mu - self.noise_prev) * self._dt
            + self._sigma * np.sqrt(self._dt) * self.rng.normal(size=self._mu.shape)
        )
        self.noise_prev = noise
        return noise.astype(self._dtype)

    def reset(self) -> None:
        self.noise_prev = np.zeros_like(self._mu) if self.initial_noise is None else self.initial_noise.copy()

    def __repr__(self) -> str:
        return f"OrnsteinUhlenbeckActionNoise(mu={self._mu}, sigma={self._sigma})"


class VectorizedActionNoise(ActionNoise):
    """One independent copy of ``base_noise`` per env; ``noise()`` returns ``(n_envs, action_dim)``.

    The copies get independent random streams spawned from ``base_noise``'s
    generator (plain deep copies would draw identical noise in every env).
    """

    def __init__(self, base_noise: ActionNoise, n_envs: int) -> None:
        self.n_envs = check_int("n_envs", n_envs, minimum=1)
        self.base_noise = base_noise
        self.noises = [copy.deepcopy(base_noise) for _ in range(self.n_envs)]
        if not isinstance(base_noise.rng, GlobalNumpyRandom):  # global draws differ from env to env already (SB3)
            for noise, child in zip(self.noises, base_noise.rng.spawn(self.n_envs), strict=True):
                noise.rng = child
        self.rng = base_noise.rng

    def seed(self, seed: Any) -> None:
        for noise, child in zip(self.noises, np.random.SeedSequence(seed).spawn(self.n_envs), strict=True):
            noise.seed(child)

    def reset(self, indices: Iterable[int] | None = None) -> None:
        """Reset the noise of the envs in ``indices`` (all envs when None)."""
        for index in range(self.n_envs) if indices is None else indices:
            self.noises[index].reset()

    def __call__(self) -> np.ndarray:
        return np.stack([noise() for noise in self.noises])

    def __repr__(self) -> str:
        return f"VectorizedActionNoise({self.base_noise!r}, n_envs={self.n_envs})"


def check_action_noise(action_noise: Any) -> None:
    """Raise a ValueError naming ``action_noise`` unless it is None, an ActionNoise or an allowed name."""
    if action_noise is None or isinstance(action_noise, ActionNoise):
        return
    if not isinstance(action_noise, str) or action_noise not in ACTION_NOISE_TYPES:
        raise ValueError(
            f"action_noise={action_noise!r} is not allowed; allowed: None, an ActionNoise instance "
            f"or one of {list(ACTION_NOISE_TYPES)}"
        )


def make_action_noise(kind: str, action_dim: int, std: float, seed: Any = None) -> ActionNoise:
    """The noise named ``kind`` with zero mean and standard deviation ``std`` on each of ``action_dim`` actions."""
    check_action_noise(kind)
    mean, sigma = np.zeros(action_dim), std * np.ones(action_dim)
    if kind == "normal":
        return NormalActionNoise(mean, sigma, seed=seed)
    return OrnsteinUhlenbeckActionNoise(mean, sigma, seed=seed)


def prepare_action_noise(
    noise: ActionNoise | None, spec: Any, action_space: spaces.Space, n_envs: int, std: float, seed: Any, reset: bool
) -> ActionNoise | None:
    """Exploration noise as SB3's learn(): built once the action dim is known (``spec`` a name), one copy per env.

    ``reset``: start every copy afresh (not when a checkpoint restores the noise's state).
    """
    if spec is None:
        return None
    if not isinstance(action_space, spaces.Box):
        raise ValueError(f"action_noise={spec!r} needs a Box action space; got {action_space}; allowed: action_noise=None")
    if noise is None:
        noise = make_action_noise(spec, int(np.prod(action_space.shape)), std, seed)
    if n_envs > 1 and not isinstance(noise, VectorizedActionNoise):
        noise = VectorizedActionNoise(noise, n_envs)
    if isinstance(noise, VectorizedActionNoise) and noise.n_envs != n_envs:
        raise ValueError(f"action_noise holds {noise.n_envs} env copies but the env has n_envs={n_envs}")
    if reset:
        noise.reset()
    return noise
