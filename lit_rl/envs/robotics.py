"""gymnasium-robotics (Fetch, Shadow hand, mazes, Adroit, Franka kitchen) as lit_rl imports it.

Importing this module imports ``gymnasium_robotics`` (which registers its env ids) with two adjustments:

- its import-time notice (a farama-notifications banner about AdroitHand reward functions, printed to stderr)
  goes to lit_rl's debug log instead of the user's terminal;
- its joint-type checks work with MuJoCo 4 (:func:`fix_joint_type_checks`).
"""

from __future__ import annotations

import enum
import logging
import types
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np

log = logging.getLogger(__name__)

NOTICE_KEY = "gymnasium_robotics"  # its entry in farama_notifications.notifications ({version: text})


def joint_types_match_model_arrays() -> bool:
    """Whether ``np.int32 in (mujoco.mjtJoint members...)`` holds for an equal value, as gymnasium-robotics assumes.

    ``x in (a, b)`` calls ``a == x``. Under MuJoCo 4 the ``mjtJoint`` members' ``__eq__`` answers False for the
    ``numpy.int32`` values of ``model.jnt_type`` (``jnt_type[i] == member`` still holds: numpy's side answers).
    """
    slide = mujoco.mjtJoint.mjJNT_SLIDE
    return np.int32(int(slide)) in (slide,)


class _MujocoWithIntJointTypes(types.ModuleType):
    """``mujoco`` as gymnasium-robotics' ``mujoco_utils`` sees it: the real module, except that ``mjtJoint``'s
    members are ``IntEnum`` members (same names and values), which compare equal to numpy ints from either side."""

    def __init__(self) -> None:
        super().__init__(mujoco.__name__, mujoco.__doc__)
        members = {name: int(member) for name, member in mujoco.mjtJoint.__members__.items()}
        self.mjtJoint = enum.IntEnum("mjtJoint", members)  # type: ignore[misc]

    def __getattr__(self, name: str) -> Any:
        return getattr(mujoco, name)


def fix_joint_type_checks() -> bool:
    """Make gymnasium-robotics' joint helpers work with MuJoCo 4; True when the fix was needed (and is applied).

    ``set_joint_qpos``, ``set_joint_qvel``, ``get_joint_qpos`` and ``get_joint_qvel`` (every function of
    gymnasium-robotics that compares joint types, all in ``gymnasium_robotics.utils.mujoco_utils``) end with
    ``assert joint_type in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)``, which fails under
    MuJoCo 4 (see :func:`joint_types_match_model_arrays`): every Fetch env fails in its constructor. The least
    invasive fix is to change what that one module's ``mujoco`` name means, not its functions: it gets the real
    module with int-valued joint types, so its code runs unchanged and nothing outside it is affected. Applied
    only where the mismatch is present, so a MuJoCo or gymnasium-robotics release that fixes it runs untouched.
    """
    from gymnasium_robotics.utils import mujoco_utils  # type: ignore[import-untyped]

    if isinstance(mujoco_utils.mujoco, _MujocoWithIntJointTypes):
        return True
    if joint_types_match_model_arrays():
        return False
    mujoco_utils.mujoco = _MujocoWithIntJointTypes()
    log.debug("gymnasium-robotics: joint types compared as ints (MuJoCo %s enums)", mujoco.__version__)
    return True


def import_gymnasium_robotics() -> types.ModuleType:
    """``gymnasium_robotics``, imported (its envs registered) with its notice in the debug log and the MuJoCo fix.

    Raises ImportError (``ModuleNotFoundError`` named ``gymnasium_robotics``) when the package is not installed.
    """
    notifications: dict[str, dict[str, str]] = {}
    try:
        from farama_notifications import notifications  # type: ignore[import-untyped,no-redef]
    except ImportError:  # gymnasium-robotics then prints nothing either
        pass
    held = notifications.pop(NOTICE_KEY, None)  # it prints notifications[NOTICE_KEY][its version] on import
    try:
        import gymnasium_robotics  # type: ignore[import-untyped]
    finally:
        if held is not None:
            notifications[NOTICE_KEY] = held
    notice = (held or {}).get(str(getattr(gymnasium_robotics, "__version__", "")))
    if notice:
        log.debug("gymnasium-robotics notice: %s", notice.strip())
    fix_joint_type_checks()
    gym.register_envs(gymnasium_robotics)
    return gymnasium_robotics


import_gymnasium_robotics()
