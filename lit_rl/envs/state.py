"""Capture and restore a vector env mid-episode, so a resumed run continues the same trajectories.

Works for synchronous vector envs whose sub-envs pickle with their state
(classic control, toy text, the project's own envs) and for MuJoCo envs
(gymnasium pickles those by re-running the constructor, so the simulator
state and the RNG are carried separately). Anything else (Box2D, async
workers) returns ``None``: the caller restarts the episodes and says so.
"""

from __future__ import annotations

import copy
import pickle
from typing import TYPE_CHECKING, Any, TypeGuard

import gymnasium as gym
from gymnasium.utils import EzPickle
from gymnasium.vector import SyncVectorEnv, VectorEnv, VectorWrapper

if TYPE_CHECKING:  # mujoco is optional at run time
    from gymnasium.envs.mujoco.mujoco_env import MujocoEnv

_SYNC_STATE = ("_autoreset_envs", "_env_obs", "_observations", "_rewards", "_terminations", "_truncations")


def _is_mujoco(env: gym.Env) -> TypeGuard[MujocoEnv]:
    try:
        from gymnasium.envs.mujoco.mujoco_env import MujocoEnv
    except ImportError:  # mujoco not installed
        return False
    return isinstance(env, MujocoEnv)


def _capture_single(env: gym.Env) -> dict[str, Any] | None:
    inner = env.unwrapped
    mujoco = _is_mujoco(inner)
    if isinstance(inner, EzPickle) and not mujoco:
        return None  # pickling rebuilds it from its constructor: the episode state would be lost
    state = {"env": pickle.dumps(env), "np_random": copy.deepcopy(inner.np_random)}
    if _is_mujoco(inner):  # again, so that the type checker knows ``inner`` is a MujocoEnv
        state["mj_data"] = pickle.dumps(inner.data)
    return state


def _restore_single(state: dict[str, Any]) -> gym.Env:
    env = pickle.loads(state["env"])
    inner = env.unwrapped
    inner._np_random = state["np_random"]
    if "mj_data" in state:
        import mujoco

        mujoco.mj_copyData(inner.data, inner.model, pickle.loads(state["mj_data"]))
    return env


def _wrappers(env: VectorEnv) -> list[VectorWrapper]:
    chain = []
    while isinstance(env, VectorWrapper):
        chain.append(env)
        env = env.env
    return chain


def capture_vector_env_state(env: VectorEnv) -> dict[str, Any] | None:
    """Everything needed to continue ``env`` exactly, or ``None`` when it cannot be captured."""
    base = env.unwrapped
    if not isinstance(base, SyncVectorEnv):
        return None
    envs = [_capture_single(e) for e in base.envs]
    if any(s is None for s in envs):
        return None
    return {
        "envs": envs,
        "vector": {k: copy.deepcopy(getattr(base, k)) for k in _SYNC_STATE},
        "action_space_rng": copy.deepcopy(base.action_space.np_random),
        "wrappers": [{k: copy.deepcopy(v) for k, v in vars(w).items() if k != "env"} for w in _wrappers(env)],
    }


def restore_vector_env_state(env: VectorEnv, state: dict[str, Any]) -> None:
    """Put ``env`` (built from the same config) back into the captured state."""
    base = env.unwrapped
    wrappers = _wrappers(env)
    if not isinstance(base, SyncVectorEnv) or len(state["envs"]) != base.num_envs or len(wrappers) != len(
        state["wrappers"]
    ):
        raise ValueError(
            f"the env state in the checkpoint was captured from {len(state['envs'])} sync envs; this env is "
            f"{type(base).__name__} with num_envs={base.num_envs}"
        )
    for old in base.envs:
        old.close()
    base.envs = [_restore_single(s) for s in state["envs"]]
    for key, value in state["vector"].items():
        setattr(base, key, copy.deepcopy(value))
    base.action_space._np_random = copy.deepcopy(state["action_space_rng"])
    for wrapper, attrs in zip(wrappers, state["wrappers"], strict=True):
        for key, value in attrs.items():
            setattr(wrapper, key, copy.deepcopy(value))
