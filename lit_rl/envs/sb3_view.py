"""A gymnasium vector env seen through Stable-Baselines3's VecEnv API (what ``model.get_env()`` returns).

SB3 code does ``obs = env.reset()`` and ``obs, rewards, dones, infos = env.step(actions)``, with
``infos[i]["terminal_observation"]`` at episode ends, and passes the env to SB3's ``evaluate_policy``.
The view steps the training env itself (as SB3's ``get_env()`` does). When SB3 is installed it is an
SB3 ``VecEnv``, so ``isinstance`` checks in SB3's helpers hold; lit_rl never needs SB3 for it.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper
from gymnasium.wrappers.vector import RecordEpisodeStatistics


def env_info(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s info dict from gymnasium's vector infos (a mask ``_key`` says which envs have ``key``)."""
    info = {}
    for key, value in infos.items():
        mask = infos.get(f"_{key}")
        if mask is None or not mask[i]:
            continue
        if isinstance(value, dict):
            # gymnasium's nested infos carry masks; RecordEpisodeStatistics' "episode" ({"r", "l", "t"}) does not
            masked = any(k.startswith("_") for k in value)
            info[key] = env_info(value, i) if masked else {k: v[i] for k, v in value.items()}
        else:
            info[key] = value[i]
    return info


def sb3_infos(infos: dict[str, Any], terminated: np.ndarray, truncated: np.ndarray) -> list[dict[str, Any]]:
    """The step's infos as SB3's VecEnv gives them: one dict per env; an ended episode's holds its last step's
    info, ``terminal_observation`` and ``TimeLimit.truncated``."""
    result = []
    for i in range(len(terminated)):
        if terminated[i] or truncated[i]:
            info = env_info(infos.get("final_info", {}), i)
            if "episode" not in info and "episode" in infos and infos["_episode"][i]:  # as Monitor's, at the end
                episode = env_info(infos, i)["episode"]
                t = float(episode.get("t", 0.0))
                info["episode"] = {"r": float(episode["r"]), "l": int(episode["l"]), "t": t}  # Monitor's types
            info["terminal_observation"] = infos["final_obs"][i]
            info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        else:
            info = env_info(infos, i)
        result.append(info)
    return result


def is_sb3_monitor(wrapper_class: type) -> bool:
    """Whether ``wrapper_class`` is SB3's ``Monitor`` (imported by whoever passes it; never imported here)."""
    monitor = sys.modules.get("stable_baselines3.common.monitor")
    return monitor is not None and wrapper_class is monitor.Monitor


def records_episodes(env: VectorEnv) -> bool:
    """Whether a RecordEpisodeStatistics in ``env``'s wrappers writes the ``episode`` info."""
    while isinstance(env, VectorWrapper):
        if isinstance(env, RecordEpisodeStatistics) and getattr(env, "_stats_key", "episode") == "episode":
            return True
        env = env.env
    return False


class VecEnvView:
    """SB3's VecEnv protocol over a same-step-autoreset gymnasium ``VectorEnv``."""

    def __init__(self, env: VectorEnv) -> None:
        self.env = env
        self.num_envs = env.num_envs
        self.observation_space, self.action_space = env.single_observation_space, env.single_action_space
        self.render_mode = getattr(env, "render_mode", None)
        self.reset_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        self._seed: int | None = None
        self._actions: np.ndarray | None = None

    def reset(self) -> Any:
        obs, infos = self.env.reset(seed=self._seed)
        self._seed = None  # a seed applies to the next reset only, as in SB3
        self.reset_infos = [env_info(infos, i) for i in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, terminated, truncated, infos = self.env.step(self._actions)
        dones = np.logical_or(terminated, truncated)
        return obs, np.asarray(rewards, dtype=np.float32), dones, sb3_infos(infos, terminated, truncated)

    def step(self, actions: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        self.step_async(actions)
        return self.step_wait()

    def seed(self, seed: int | None = None) -> list[int | None]:
        self._seed = seed
        return [None if seed is None else seed + i for i in range(self.num_envs)]

    def close(self) -> None:
        self.env.close()

    def _envs(self, indices: Any) -> list[Any]:
        envs = getattr(self.env.unwrapped, "envs", None)
        if envs is None:
            raise AttributeError(f"{type(self.env.unwrapped).__name__} runs its envs in other processes")
        if indices is None:
            return list(envs)
        return [envs[i] for i in ([indices] if isinstance(indices, int) else indices)]

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(e.unwrapped, attr_name) for e in self._envs(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        for e in self._envs(indices):
            setattr(e.unwrapped, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        return [getattr(e.unwrapped, method_name)(*args, **kwargs) for e in self._envs(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        """Whether each env is wrapped in ``wrapper_class``; SB3's ``Monitor`` counts where episodes are recorded.

        RecordEpisodeStatistics on the vector env puts Monitor's ``{"r", "l", "t"}`` record of each ended
        episode (return and length of the rewards ``step`` gives) in its info, which SB3's ``evaluate_policy`` reads.
        """
        if is_sb3_monitor(wrapper_class) and records_episodes(self.env):
            return [True] * len(self._indices(indices))

        def wrapped(env: Any) -> bool:
            while env is not None:
                if isinstance(env, wrapper_class):
                    return True
                env = getattr(env, "env", None)
            return False

        return [wrapped(e) for e in self._envs(indices)]

    def _indices(self, indices: Any) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        return [indices] if isinstance(indices, int) else list(indices)

    def render(self, mode: str | None = None) -> Any:
        return self.env.render()

    def get_images(self) -> list[Any]:
        return [e.render() for e in self._envs(None)]


def sb3_view(env: VectorEnv) -> Any:
    """``env`` with SB3's VecEnv API: an SB3 ``VecEnv`` subclass when SB3 is installed, else :class:`VecEnvView`."""
    if importlib.util.find_spec("stable_baselines3") is None:
        return VecEnvView(env)
    from stable_baselines3.common.vec_env import VecEnv

    view_class = _sb3_view_class()
    view = view_class.__new__(view_class)
    assert isinstance(view, VecEnv)  # View subclasses both VecEnvView and SB3's VecEnv
    VecEnvView.__init__(view, env)
    VecEnv.__init__(view, env.num_envs, env.single_observation_space, env.single_action_space)
    return view


@functools.cache
def _sb3_view_class() -> type[VecEnvView]:
    from stable_baselines3.common.vec_env import VecEnv

    class View(VecEnvView, VecEnv):
        __doc__ = VecEnvView.__doc__

    View.__name__ = View.__qualname__ = "VecEnvView"  # as type("VecEnvView", ...) names it
    return View


def episode_targets(n_episodes: int, n_envs: int) -> np.ndarray:
    """SB3's evaluation share: env ``i`` of ``n_envs`` contributes its first ``(n_episodes + i) // n_envs`` episodes,
    so envs with short episodes are not over-represented."""
    return np.array([(n_episodes + i) // n_envs for i in range(n_envs)], dtype=int)
