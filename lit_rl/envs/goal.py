"""Access to a goal-conditioned vector env's ``compute_reward`` (what HER relabelling needs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv


def goal_compute_reward(env: VectorEnv) -> Callable[[np.ndarray, np.ndarray, Any], np.ndarray]:
    """The ``compute_reward(achieved_goal, desired_goal, info)`` of the sub-envs of ``env``.

    The function is the same for every sub-env (it depends on goals only), so
    the first one answers: directly in a sync vector env, through ``call`` (one
    round trip per batch) in an async one.
    """
    base = env.unwrapped
    if hasattr(base, "envs"):
        try:
            return base.envs[0].get_wrapper_attr("compute_reward")
        except AttributeError:
            raise ValueError(
                f"the env {base.envs[0].spec.id if base.envs[0].spec else base.envs[0]} has no compute_reward"
                "(achieved_goal, desired_goal, info); buffer=her needs a goal-conditioned env"
            ) from None

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
