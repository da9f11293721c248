"""Access to a goal-conditioned vector env's ``compute_reward`` (what HER relabelling needs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import VectorEnv

from lit_rl.envs.make import make_vec_env, vector_env_name

GOAL_OBSERVATION_KEYS = ("observation", "achieved_goal", "desired_goal")
GOAL_CONDITIONED = (
    f"a Dict observation space with keys {list(GOAL_OBSERVATION_KEYS)} and a "
    "compute_reward(achieved_goal, desired_goal, info) method"
)
GOAL_ENV_EXAMPLES = "env=FetchReach-v4, FetchPush-v4, FetchPickAndPlace-v4 (gymnasium-robotics) or env=BitFlipping"


def not_goal_conditioned(env_name: str, problem: str) -> ValueError:
    """The error for HER on an env that is not goal-conditioned: the env, what it lacks, what is needed."""
    return ValueError(
        f"buffer=her (HerReplayBuffer) needs a goal-conditioned env, {GOAL_CONDITIONED}; the env {env_name} "
        f"{problem}. Goal-conditioned envs: {GOAL_ENV_EXAMPLES}; other envs: buffer=replay"
    )


def check_goal_observation_space(env_name: str, space: spaces.Space) -> None:
    """Raise :func:`not_goal_conditioned`'s ValueError unless ``space`` is a Dict with the three goal keys."""
    if not isinstance(space, spaces.Dict):
        raise not_goal_conditioned(env_name, f"has observation space {space}")
    missing = [k for k in GOAL_OBSERVATION_KEYS if k not in space.spaces]
    if missing:
        raise not_goal_conditioned(env_name, f"has a Dict observation space without the keys {missing}: {space}")


def check_goal_env(env_id: str, env_kwargs: dict[str, Any] | None = None, max_episode_steps: int | None = None) -> None:
    """Raise :func:`not_goal_conditioned`'s ValueError unless ``env_id`` (one env, made and closed) suits HER."""
    env = make_vec_env(env_id, env_kwargs=env_kwargs, max_episode_steps=max_episode_steps, record_stats=False)
    try:
        goal_compute_reward(env)
    finally:
        env.close()


def goal_compute_reward(env: VectorEnv) -> Callable[[np.ndarray, np.ndarray, Any], np.ndarray]:
    """The ``compute_reward(achieved_goal, desired_goal, info)`` of the sub-envs of ``env``.

    The function is the same for every sub-env (it depends on goals only), so
    the first one answers: directly in a sync vector env, through ``call`` (one
    round trip per batch) in an async one. A ValueError names the env when it is
    not goal-conditioned (Dict goal observations and ``compute_reward``).
    """
    check_goal_observation_space(vector_env_name(env), env.single_observation_space)
    base = env.unwrapped
    if hasattr(base, "envs"):
        try:
            return base.envs[0].get_wrapper_attr("compute_reward")
        except AttributeError:
            raise not_goal_conditioned(vector_env_name(env), "has no compute_reward method") from None

    venv = getattr(base, "venv", None)  # an SB3 VecEnv (SB3VecEnvAdapter): ask its first env only, as SB3 does
    if venv is not None:

        def venv_compute_reward(achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
            return venv.env_method("compute_reward", achieved_goal, desired_goal, info, indices=[0])[0]

        return venv_compute_reward

    call: Callable[..., Any] | None = getattr(base, "call", None)  # an async vector env's (VectorEnv declares none)

    def compute_reward(achieved_goal: np.ndarray, desired_goal: np.ndarray, info: Any) -> np.ndarray:
        if call is None:
            raise AttributeError(f"{type(base).__name__} has no compute_reward access (envs, venv or call)")
        return call("compute_reward", achieved_goal, desired_goal, info)[0]

    return compute_reward
