"""The datamodule: owns the training and evaluation envs, streams tokens to the Trainer."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import lightning as L
import torch
from gymnasium.vector import VectorEnv
from torch.utils.data import DataLoader, IterableDataset

from lit_rl.envs.make import as_vector_env


class TokenStream(IterableDataset):
    """An endless stream of integers: each one drives one ``training_step``.

    The tokens carry no data; the algorithm collects its own experience. The
    run ends when the algorithm reaches its env-step budget.
    """

    def __iter__(self) -> Iterator[int]:
        return itertools.count()


def token_loader() -> DataLoader:
    """An endless loader of tokens: one Lightning batch per token, no data in it."""
    # batch_size=None: tokens pass through uncollated (no per-batch tensor work). Its own generator:
    # creating the loader's iterator must not draw from the global torch RNG (exact resume restores it).
    return DataLoader(TokenStream(), batch_size=None, num_workers=0, generator=torch.Generator())


class RLDataModule(L.LightningDataModule):
    """Builds the training env (and an evaluation env) and feeds the token stream.

    ``env`` is an env id, a gymnasium ``Env`` or a ``VectorEnv``. Ids are
    built with :func:`lit_rl.envs.make_vec_env`; a single ``Env`` is wrapped in
    a one-env vector env.
    """

    def __init__(
        self,
        env: str | gym.Env | VectorEnv,
        n_envs: int = 1,
        vectorization: str = "sync",
        env_kwargs: dict[str, Any] | None = None,
        max_episode_steps: int | None = None,
        seed: int | None = None,
        eval_env: bool = True,
    ) -> None:
        super().__init__()
        self.env_spec = env
        self.n_envs, self.vectorization = n_envs, vectorization
        self.env_kwargs, self.max_episode_steps = env_kwargs or {}, max_episode_steps
        self.seed = seed
        self.want_eval_env = eval_env
        self.train_env: VectorEnv | None = None
        self.eval_env: VectorEnv | None = None

    @property
    def env_id(self) -> str:
        """The env's registered id, or its class name for a user-built env."""
        if isinstance(self.env_spec, str):
            return self.env_spec
        spec = getattr(self.env_spec, "spec", None)
        return spec.id if spec is not None else type(self.env_spec).__name__

    def _make(self, n_envs: int, seed: int | None) -> VectorEnv:
        return as_vector_env(
            self.env_spec, n_envs, seed, self.vectorization, self.env_kwargs, self.max_episode_steps
        )

    def setup(self, stage: str) -> None:
        # A later fit keeps the envs (learn(..., reset_num_timesteps=False)); it may add evaluation.
        if self.train_env is None:
            self.train_env = self._make(self.n_envs, self.seed)
        if self.eval_env is None and isinstance(self.env_spec, str) and self.want_eval_env:
            # A different seed stream from training so evaluation episodes are fresh ones.
            self.eval_env = self._make(1, None if self.seed is None else self.seed + 10_000)

    def train_dataloader(self) -> DataLoader:
        return token_loader()

    def teardown(self, stage: str) -> None:
        # Envs stay open for a following fit (learn(..., reset_num_timesteps=False)); close() ends them.
        pass

    def close(self) -> None:
        """Close the envs this datamodule built."""
        for env in (self.train_env, self.eval_env):
            if env is not None:
                env.close()
        self.train_env = self.eval_env = None
