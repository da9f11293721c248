"""Observation and reward normalisation inside the model, computed as Stable-Baselines3's ``VecNormalize``.

The statistics are torch buffers of the model, so ``save``/``load``, launcher
checkpoints and an exact resume carry them, and ``predict`` / evaluation use
the training statistics without updating them. The replay buffer keeps raw
observations and rewards; a sampled batch is normalised with the current
statistics (as SB3's ``replay_buffer.sample(batch_size, env=vec_normalize)``).

Formulas are SB3's (``running_mean_std.py``, ``vec_normalize.py``), in float64:
``obs -> clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)``;
``reward -> clip(reward / sqrt(ret_var + epsilon), -clip_reward, clip_reward)``
where ``ret_var`` is the running variance of each env's discounted return
``R <- gamma * R + r`` (reset to 0 when its episode ends). Observation
statistics are updated with the reset observations and every step's
observations (after autoreset, as the wrapper sees them), reward statistics
with every step's rewards.

Dict observations: one statistic per Box key (SB3's per-key ``obs_rms``);
other keys (one-hot Discrete, MultiBinary) pass unchanged. A goal env's
``achieved_goal`` and ``desired_goal`` share one statistic, updated with both
keys' values: a goal that HER relabels from an achieved goal is then
normalised exactly as that achieved goal (SB3 keeps two statistics, so a
relabelled desired goal is normalised with the env's desired-goal statistics).
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from lit_rl.nets.preprocessing import is_image_space
from lit_rl.utils.checks import check_bool, check_float

# SB3's VecNormalize defaults; gamma None: the algorithm's gamma (as rl-zoo passes it to VecNormalize).
NORMALIZE_DEFAULTS: dict[str, Any] = {"clip_obs": 10.0, "clip_reward": 10.0, "epsilon": 1e-8, "gamma": None, "training": True}
GOAL_KEYS = ("achieved_goal", "desired_goal")


def check_normalize_kwargs(normalize_kwargs: dict[str, Any] | None, name: str = "normalize_kwargs") -> dict[str, Any]:
    """``normalize_kwargs`` merged with the defaults; unknown keys and bad values raise naming them (``name``: the key)."""
    if normalize_kwargs is None:
        normalize_kwargs = {}
    if not isinstance(normalize_kwargs, dict):
        raise TypeError(f"{name}={normalize_kwargs!r} must be a dict; allowed keys: {list(NORMALIZE_DEFAULTS)}")
    unknown = sorted(set(normalize_kwargs) - set(NORMALIZE_DEFAULTS))
    if unknown:
        raise ValueError(f"{name} has unknown keys {unknown}; allowed: {list(NORMALIZE_DEFAULTS)}")
    kwargs = {**NORMALIZE_DEFAULTS, **normalize_kwargs}
    for key in ("clip_obs", "clip_reward", "epsilon"):
        kwargs[key] = check_float(f"{name}.{key}", kwargs[key], 0.0, math.inf)
    if kwargs["gamma"] is not None:
        kwargs["gamma"] = check_float(f"{name}.gamma", kwargs["gamma"], 0.0, 1.0, low_open=False)
    check_bool(f"{name}.training", kwargs["training"])
    return kwargs


def _as_float64(values: Any, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values), device=device).to(torch.float64)


class RunningMeanStd(nn.Module):
    """Running mean and variance of a stream of batches (SB3's ``RunningMeanStd``, parallel algorithm, float64)."""

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, shape: tuple[int, ...] = (), epsilon: float = 1e-4) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.tensor(epsilon, dtype=torch.float64))

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        """Add a batch ``(n, *shape)``: numpy's ``mean`` and (population) ``var`` over the first dimension.

        All in float64: numpy computes the moments of float32 observations in float32 (in its own summation
        order, which torch's does not follow), so SB3's statistics differ from these by float32 rounding (~1e-7).
        """
        n = float(batch.shape[0])
        batch = batch.to(torch.float64)
        batch_mean = batch.mean(dim=0)
        batch_var = torch.square(batch - batch_mean).mean(dim=0)
        delta = batch_mean - self.mean
        total = self.count + n
        # Same operations in the same order as SB3's update_from_moments.
        new_mean = self.mean + delta * n / total
        m_2 = self.var * self.count + batch_var * n + torch.square(delta) * self.count * n / (self.count + n)
        self.mean.copy_(new_mean)
        self.var.copy_(m_2 / (self.count + n))
        self.count.copy_(n + self.count)


class Normalization(nn.Module):
    """Running observation statistics and a return-based reward scale for one model (VecNormalize's state).

    ``key_slices``: for Dict spaces, where each key sits in the flat observations the buffer and networks use.
    ``update_stats`` (SB3's ``training``): whether collected data updates the statistics; ``predict`` never does.
    """

    returns: torch.Tensor

    def __init__(
        self,
        observation_space: spaces.Space,
        normalize_obs: bool,
        normalize_reward: bool,
        gamma: float,
        clip_obs: float = 10.0,
        clip_reward: float = 10.0,
        epsilon: float = 1e-8,
        training: bool = True,
        key_slices: dict[str, slice] | None = None,
    ) -> None:
        super().__init__()
        self.norm_obs, self.norm_reward = normalize_obs, normalize_reward
        self.clip_obs, self.clip_reward, self.epsilon, self.gamma = clip_obs, clip_reward, epsilon, gamma
        self.update_stats = training
        self.obs_stats = nn.ModuleDict()
        # statistic name -> the Dict keys it normalises (None: the whole, non-Dict observation)
        self.stat_keys: dict[str, list[str] | None] = {}
        self.key_slices = key_slices
        if normalize_obs:
            self._build_obs_stats(observation_space)
        self.ret_stats = RunningMeanStd(()) if normalize_reward else None
        # Each env's running discounted return: resized to n_envs at the first reset (and by a loaded state).
        self.register_buffer("returns", torch.zeros(0, dtype=torch.float64))

    def _build_obs_stats(self, space: spaces.Space) -> None:
        if isinstance(space, spaces.Dict):
            sub = space.spaces
            shared_goal = all(k in sub and isinstance(sub[k], spaces.Box) for k in GOAL_KEYS) and (
                sub[GOAL_KEYS[0]].shape == sub[GOAL_KEYS[1]].shape
            )
            for key, key_space in sub.items():
                if not isinstance(key_space, spaces.Box):
                    continue  # one-hot and binary keys are already in [0, 1]
                if is_image_space(key_space):
                    raise ValueError(f"normalize_obs=True: observation key {key!r} is an image ({key_space}); allowed: "
                                     "normalize_obs=False (the policy scales images by 1/255)")  # fmt: skip
                name = "goal" if shared_goal and key in GOAL_KEYS else f"key_{key}".replace(".", "_")
                if name not in self.obs_stats:
                    self.obs_stats[name] = RunningMeanStd(tuple(key_space.shape))
                    self.stat_keys[name] = []
                keys = self.stat_keys[name]
                assert keys is not None  # a Dict key's statistic always lists its keys
                keys.append(key)
            if not self.obs_stats:
                raise ValueError(f"normalize_obs=True needs a Box key in the Dict observation space; got {space}; "
                                 "allowed: normalize_obs=False")  # fmt: skip
            if self.key_slices is None:
                raise ValueError("Normalization of a Dict observation space needs key_slices (the flat layout)")
        elif isinstance(space, spaces.Box):
            if is_image_space(space):
                raise ValueError(f"normalize_obs=True with image observations ({space}); allowed: normalize_obs=False "
                                 "(the policy scales images by 1/255)")  # fmt: skip
            self.obs_stats["obs"] = RunningMeanStd(tuple(space.shape))
            self.stat_keys["obs"] = None
        else:
            raise ValueError(f"normalize_obs=True needs a Box or Dict observation space; got {space}; "
                             "allowed: normalize_obs=False")  # fmt: skip

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any) -> None:
        saved = state_dict.get(prefix + "returns")
        if saved is not None and saved.shape != self.returns.shape:  # saved with another number of envs
            self.returns = torch.zeros(saved.shape, dtype=torch.float64, device=self.returns.device)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    # ------------------------------------------------------------------ statistics (collected data only)
    @property
    def device(self) -> torch.device:
        return self.returns.device

    def _update_obs(self, obs: Any) -> None:
        for name, keys in self.stat_keys.items():
            if keys is None:
                batch = _as_float64(obs, self.device)
            else:  # a shared goal statistic sees both goal keys as one batch of 2 * n_envs
                batch = torch.cat([_as_float64(obs[key], self.device) for key in keys])
            self._obs_stat(name).update(batch)

    def _obs_stat(self, name: str) -> RunningMeanStd:
        return cast(RunningMeanStd, self.obs_stats[name])

    @torch.no_grad()
    def observe_reset(self, obs: Any) -> None:
        """The first observations of a reset vector env (VecNormalize's ``reset``)."""
        n_envs = len(next(iter(obs.values()))) if isinstance(obs, dict) else len(obs)
        self.returns = torch.zeros(n_envs, dtype=torch.float64, device=self.device)
        if self.update_stats and self.norm_obs:
            self._update_obs(obs)

    @torch.no_grad()
    def observe_step(self, obs: Any, rewards: np.ndarray, dones: np.ndarray) -> None:
        """One vector-env step as the env returned it (``obs`` after autoreset): VecNormalize's ``step_wait``."""
        if self.returns.shape != (len(rewards),):  # a model loaded for an env with another n_envs
            self.returns = torch.zeros(len(rewards), dtype=torch.float64, device=self.device)
        if self.update_stats and self.norm_obs:
            self._update_obs(obs)
        if self.update_stats and self.norm_reward:
            self.returns = self.returns * self.gamma + _as_float64(rewards, self.device)
            assert self.ret_stats is not None  # built when norm_reward
            self.ret_stats.update(self.returns)
        self.returns[torch.as_tensor(np.asarray(dones), device=self.device)] = 0.0

    # ------------------------------------------------------------------ normalising (no update)
    def normalize_obs(self, obs: torch.Tensor) -> torch.Tensor:
        """Observations as the buffer and networks hold them (flat for Dict spaces) -> normalised float32."""
        if not self.norm_obs:
            return obs
        x = obs.to(torch.float64)
        if self.key_slices is None:
            stats = self._obs_stat("obs")
            return self._normalized(x, stats.mean, stats.var)
        out = x.clone()
        for name, keys in self.stat_keys.items():
            stats = self._obs_stat(name)
            assert keys is not None  # Dict observations: every statistic lists its keys
            for key in keys:
                cols = self.key_slices[key]
                out[..., cols] = self._normalized(x[..., cols], stats.mean.reshape(-1), stats.var.reshape(-1))
        return out.to(torch.float32)

    def _normalized(self, x: torch.Tensor, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
        return torch.clamp((x - mean) / torch.sqrt(var + self.epsilon), -self.clip_obs, self.clip_obs).to(torch.float32)

    def normalize_reward(self, rewards: torch.Tensor) -> torch.Tensor:
        """Raw rewards -> scaled by the return's standard deviation and clipped, float32."""
        if not self.norm_reward:
            return rewards
        assert self.ret_stats is not None  # built when norm_reward
        scale = torch.sqrt(self.ret_stats.var + self.epsilon)
        return torch.clamp(rewards.to(torch.float64) / scale, -self.clip_reward, self.clip_reward).to(torch.float32)

    def extra_repr(self) -> str:
        return (f"norm_obs={self.norm_obs}, norm_reward={self.norm_reward}, clip_obs={self.clip_obs}, "
                f"clip_reward={self.clip_reward}, epsilon={self.epsilon}, gamma={self.gamma}")  # fmt: skip
