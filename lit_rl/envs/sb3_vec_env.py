"""Stable-Baselines3 VecEnvs (DummyVecEnv, SubprocVecEnv, VecNormalize, ...) as gymnasium vector envs.

SB3's VecEnv auto-resets in the step that ends an episode, as gymnasium's
same-step autoreset does, but says so differently: ``dones`` merges
termination and truncation, ``infos[i]["TimeLimit.truncated"]`` marks a time
limit, and ``infos[i]["terminal_observation"]`` holds the true last
observation. :class:`SB3VecEnvAdapter` translates that into gymnasium's
``terminated``/``truncated`` and ``final_obs``/``final_info`` infos, which the
collector reads. stable_baselines3 is an optional dependency: it is never
imported here unless the caller already did (an SB3 VecEnv exists only then).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space


def is_sb3_vec_env(env: Any) -> bool:
    """Whether ``env`` is a ``stable_baselines3`` VecEnv (without importing SB3 when nobody has)."""
    if "stable_baselines3.common.vec_env" not in sys.modules:
        return False
    from stable_baselines3.common.vec_env import VecEnv

    return isinstance(env, VecEnv)


def sb3_vec_normalize(env: Any) -> Any:
    """The ``VecNormalize`` inside ``env`` (an SB3 VecEnv, an adapter or a gymnasium wrapper of one), or None."""
    venv = env
    while venv is not None and not is_sb3_vec_env(venv):
        inner = getattr(venv, "unwrapped", None)
        venv = inner.venv if isinstance(inner, SB3VecEnvAdapter) else None
    if venv is None:
        return None
    from stable_baselines3.common.vec_env import unwrap_vec_normalize

    return unwrap_vec_normalize(venv)


class SB3VecEnvAdapter(VectorEnv):
    """An SB3 ``VecEnv`` seen as a same-step-autoreset gymnasium ``VectorEnv``.

    ``reset(seed=s)`` seeds sub-env ``i`` with ``s + i`` (SB3's ``VecEnv.seed``
    and gymnasium agree on this). In ``step``, an env whose ``done`` comes with
    ``TimeLimit.truncated`` is truncated, any other ``done`` terminated; for
    ended envs ``infos["final_obs"][i]`` is SB3's ``terminal_observation``,
    ``infos["final_info"]`` holds the rest of that step's info, and the
    top-level infos hold the new episode's reset info, as gymnasium's
    ``SyncVectorEnv`` does; Monitor's ``episode`` records also go to the
    top level (RecordEpisodeStatistics' layout). Observations and rewards are
    the VecEnv's own (normalised ones under ``VecNormalize``).
    """

    def __init__(self, venv: Any) -> None:
        self.venv = venv
        self.num_envs = venv.num_envs
        self.single_observation_space = venv.observation_space
        self.single_action_space = venv.action_space
        self.observation_space = batch_space(venv.observation_space, self.num_envs)
        self.action_space = batch_space(venv.action_space, self.num_envs)
        self.metadata = {**(getattr(venv, "metadata", None) or {}), "autoreset_mode": AutoresetMode.SAME_STEP}
        self.render_mode = getattr(venv, "render_mode", None)
        try:
            self.spec = venv.get_attr("spec", [0])[0]
        except (AttributeError, IndexError):
            self.spec = None
        from stable_baselines3.common.monitor import Monitor

        # Monitor's episode records hold the raw rewards (VecNormalize scales the ones step returns), so when every
        # sub-env has one they are the episode statistics, as in SB3; otherwise RecordEpisodeStatistics counts.
        self.has_monitor = bool(all(venv.env_is_wrapped(Monitor)))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            self.venv.seed(seed)
        if options is not None:
            self.venv.set_options(options)
        obs = self.venv.reset()
        infos: dict[str, Any] = {}
        for i, info in enumerate(self._reset_infos()):
            infos = self._add_info(infos, info, i)
        return obs, infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, rewards, dones, step_infos = self.venv.step(actions)
        dones = np.asarray(dones, dtype=bool)
        truncated = np.array(
            [
                bool(done and info.get("TimeLimit.truncated", False))
                for done, info in zip(dones, step_infos, strict=True)
            ]
        )
        terminated = dones & ~truncated
        reset_infos = self._reset_infos()
        infos: dict[str, Any] = {}
        for i, info in enumerate(step_infos):
            if dones[i]:
                final_info = {k: v for k, v in info.items() if k != "terminal_observation"}
                if "terminal_observation" not in info:
                    raise ValueError(
                        f"SB3 VecEnv {type(self.venv).__name__}: env {i} ended an episode without "
                        "infos[i]['terminal_observation']; allowed: a VecEnv that auto-resets as SB3's do"
                    )
                infos = self._add_info(infos, {"final_obs": info["terminal_observation"], "final_info": final_info}, i)
                if self.has_monitor and "episode" in final_info:
                    infos = self._add_info(infos, {"episode": final_info["episode"]}, i)
                info = reset_infos[i]
            infos = self._add_info(infos, info, i)
        return obs, np.asarray(rewards), terminated, truncated, infos

    def _reset_infos(self) -> list[dict[str, Any]]:
        """The reset infos of the base VecEnv (wrappers keep an unused list of their own)."""
        reset_infos = getattr(self.venv.unwrapped, "reset_infos", None)
        return list(reset_infos) if reset_infos is not None else [{} for _ in range(self.num_envs)]

    def render(self) -> Any:
        return self.venv.render()

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every sub-env (SB3's ``env_method``)."""
        return tuple(self.venv.env_method(name, *args, **kwargs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return tuple(self.venv.get_attr(name))

    def set_attr(self, name: str, values: Any) -> None:
        self.venv.set_attr(name, values)

    def close_extras(self, **kwargs: Any) -> None:
        self.venv.close()

    def __repr__(self) -> str:
        return f"SB3VecEnvAdapter({self.venv!r}, num_envs={self.num_envs})"
