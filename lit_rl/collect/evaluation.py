"""SB3's ``evaluate_policy`` (``stable_baselines3.common.evaluation``): a model's episode returns on an env.

The env is stepped through SB3's VecEnv API (``reset() -> obs``, ``step -> obs, rewards, dones, infos``): an SB3
VecEnv as it is, any other env through :class:`~lit_rl.envs.sb3_view.VecEnvView`, so the episodes counted, their
order and their returns are SB3's. stable_baselines3 is imported only when the caller passes one of its VecEnvs.
"""

from __future__ import annotations

import inspect
import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv
from gymnasium.wrappers import RecordEpisodeStatistics

from lit_rl.envs.make import ResetWithoutOptions
from lit_rl.envs.sb3_vec_env import is_sb3_vec_env
from lit_rl.envs.sb3_view import VecEnvView, episode_targets, records_episodes

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv

NOT_MONITORED = (  # SB3's words
    "Evaluation environment is not wrapped with a ``Monitor`` wrapper. This may result in reporting modified "
    "episode lengths and rewards, if other wrappers happen to modify these. Consider wrapping environment first "
    "with ``Monitor`` wrapper."
)


class PolicyPredictor(Protocol):
    """What :func:`evaluate_policy` needs of a model: SB3's ``predict`` (a lit_rl or SB3 algorithm or policy)."""

    def predict(
        self,
        observation: Any,  # a batch: an array, a dict of arrays (Dict spaces) or a tuple of arrays (Tuple spaces)
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]: ...


def evaluate_policy(
    model: PolicyPredictor,
    env: gym.Env[Any, Any] | VectorEnv[Any, Any, Any] | VecEnv | VecEnvView,
    n_eval_episodes: int = 10,
    deterministic: bool = True,
    render: bool = False,
    callback: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
    reward_threshold: float | None = None,
    return_episode_rewards: bool = False,
    warn: bool = True,
) -> tuple[float, float] | tuple[list[float], list[int]]:
    """Run ``model.predict`` for ``n_eval_episodes`` episodes on ``env``: mean and std of the returns (SB3's).

    ``env``: a gymnasium Env, a same-step-autoreset gymnasium VectorEnv, an SB3 VecEnv or ``model.get_env()``.
    Env ``i`` of ``n`` contributes its first ``(n_eval_episodes + i) // n`` episodes. Returns and lengths are the
    envs' ``info["episode"]`` records where every env keeps them (SB3's ``Monitor``, gymnasium's
    ``RecordEpisodeStatistics``), else sums of the rewards ``step`` gives, with SB3's warning unless ``warn=False``.
    ``callback(locals(), globals())`` runs after each step for each env still short of its episodes (SB3's local
    names: ``rewards``, ``dones``, ``infos``, ``i``, ``info``, ``done``, ``episode_counts`` ...).
    ``reward_threshold``: AssertionError unless the mean return is above it. ``return_episode_rewards``: the lists
    of episode returns and lengths instead of ``(mean, std)``.
    """
    if n_eval_episodes < 1:
        raise ValueError(f"n_eval_episodes={n_eval_episodes!r}: must be >= 1")
    if not callable(getattr(model, "predict", None)):
        raise TypeError(
            f"model={type(model).__name__}: has no predict(observation, state, episode_start, deterministic); "
            "pass an algorithm or a policy"
        )
    # The names below are SB3's: callbacks read them from locals().
    env, is_monitor_wrapped = as_sb3_vec_env(env)
    if not is_monitor_wrapped and warn:
        warnings.warn(NOT_MONITORED, UserWarning, stacklevel=2)

    n_envs = env.num_envs
    episode_rewards: list[float] = []
    episode_lengths: list[int] = []
    episode_counts = np.zeros(n_envs, dtype="int")
    episode_count_targets = episode_targets(n_eval_episodes, n_envs)
    current_rewards = np.zeros(n_envs)
    current_lengths = np.zeros(n_envs, dtype="int")
    observations = env.reset()
    states = None
    episode_starts = np.ones((n_envs,), dtype=bool)
    while (episode_counts < episode_count_targets).any():
        actions, states = model.predict(
            observations, state=states, episode_start=episode_starts, deterministic=deterministic
        )
        new_observations, rewards, dones, infos = env.step(actions)
        current_rewards += rewards
        current_lengths += 1
        for i in range(n_envs):
            if episode_counts[i] >= episode_count_targets[i]:
                continue
            reward, done, info = rewards[i], dones[i], infos[i]  # reward: for the callback's locals
            episode_starts[i] = done
            if callback is not None:
                callback(locals(), globals())
            if not done:
                continue
            if not is_monitor_wrapped:
                episode_rewards.append(float(current_rewards[i]))
                episode_lengths.append(int(current_lengths[i]))
                episode_counts[i] += 1
            elif "episode" in info:  # a done without a record (e.g. an Atari life lost) ends no episode
                episode_rewards.append(float(info["episode"]["r"]))
                episode_lengths.append(int(info["episode"]["l"]))
                episode_counts[i] += 1
            current_rewards[i] = 0
            current_lengths[i] = 0
        observations = new_observations
        if render:
            env.render()

    mean_reward, std_reward = float(np.mean(episode_rewards)), float(np.std(episode_rewards))
    if reward_threshold is not None and not mean_reward > reward_threshold:
        raise AssertionError(f"Mean reward below threshold: {mean_reward:.2f} < {reward_threshold:.2f}")
    if return_episode_rewards:
        return episode_rewards, episode_lengths
    return mean_reward, std_reward


def as_sb3_vec_env(env: Any) -> tuple[VecEnv | VecEnvView, bool]:
    """``env`` with SB3's VecEnv API, and whether each of its episodes ends with an ``info["episode"]`` record.

    An SB3 VecEnv records them when SB3 says so (``VecMonitor``, or ``Monitor`` around its envs); a gymnasium env
    when a ``RecordEpisodeStatistics`` wraps the vector env, or a ``Monitor`` or ``RecordEpisodeStatistics`` each
    of its envs. A single Env is stepped as SB3's ``DummyVecEnv`` steps it (reset without a seed).
    """
    if isinstance(env, VecEnvView):  # model.get_env(), an SB3 VecEnv too when SB3 is installed
        return env, vector_env_records_episodes(env.env)
    if is_sb3_vec_env(env):
        from stable_baselines3.common.monitor import Monitor
        from stable_baselines3.common.vec_env import VecMonitor, is_vecenv_wrapped

        return env, bool(is_vecenv_wrapped(env, VecMonitor) or env.env_is_wrapped(Monitor)[0])
    if isinstance(env, VectorEnv):
        mode = env.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:  # other modes step a reset env with the old episode's action
            raise ValueError(
                f"env: a VectorEnv needs autoreset_mode=AutoresetMode.SAME_STEP, got {mode}; build it with "
                "vector_kwargs={'autoreset_mode': AutoresetMode.SAME_STEP} or pass a gymnasium Env"
            )
        return VecEnvView(env), vector_env_records_episodes(env)
    if isinstance(env, gym.Env):
        single = ResetWithoutOptions(env) if "options" not in inspect.signature(env.reset).parameters else env
        vector_env = SyncVectorEnv([lambda: single], autoreset_mode=AutoresetMode.SAME_STEP)
        return VecEnvView(vector_env), vector_env_records_episodes(vector_env)
    raise TypeError(
        f"env={env!r} is not usable; pass a gymnasium Env, a gymnasium VectorEnv (same-step autoreset), "
        "a stable_baselines3 VecEnv or model.get_env()"
    )


def vector_env_records_episodes(env: VectorEnv) -> bool:
    """Whether every episode of ``env`` ends with an ``info["episode"]`` record (see :func:`as_sb3_vec_env`)."""
    if records_episodes(env):
        return True
    envs = getattr(env.unwrapped, "envs", None)  # None: the envs run in other processes
    return envs is not None and all(env_records_episodes(e) for e in envs)


def env_records_episodes(env: gym.Env[Any, Any]) -> bool:
    """Whether SB3's ``Monitor`` or gymnasium's ``RecordEpisodeStatistics`` is among ``env``'s wrappers."""
    monitor_module = sys.modules.get("stable_baselines3.common.monitor")  # loaded whenever a Monitor exists
    recorders: tuple[type, ...] = (RecordEpisodeStatistics,)
    if monitor_module is not None:
        recorders += (monitor_module.Monitor,)
    while isinstance(env, gym.Wrapper):
        if isinstance(env, recorders):
            return True
        env = env.env
    return False
