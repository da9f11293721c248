"""DeepMind Control Suite tasks as gymnasium envs (``lit_rl/DMC-v0``): flat float32 states or stacked pixels.

``gymnasium.make("lit_rl/DMC-v0", task="walker-walk", action_repeat=2)``; the launcher's
``env=dmc env.kwargs.task=walker-walk``. Episodes keep the suite's length (1000 simulation
steps, ``ceil(1000 / action_repeat)`` agent steps) and end truncated, never terminated, as
dm_env's time limit is a truncation. Needs ``dm_control`` and ``shimmy`` (``pip install 'lit_rl[envs]'``).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import importlib
import logging
from collections.abc import Iterator
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.wrappers import (
    AddRenderObservation,
    FlattenObservation,
    FrameStackObservation,
    TransformObservation,
)

from lit_rl.utils.rendering import check_offscreen_rendering

log = logging.getLogger(__name__)

DMC_ID = "lit_rl/DMC-v0"
INSTALL_HINT = "pip install 'lit_rl[envs]' (or pip install \"shimmy[dm-control]\")"
# Camera of pixel observations as in the papers' code (DrQ, CURL, DrQ-v2): the quadruped is filmed by camera 2.
DOMAIN_CAMERAS = {"quadruped": 2}
_MUJOCO_ROUTED = False


def make_dmc_env(
    task: str = "cheetah-run",
    action_repeat: int = 1,
    pixels: bool = False,
    image_size: int = 84,
    frame_stack: int = 3,
    camera_id: int | None = None,
    render_mode: str | None = None,
) -> gym.Env:
    """One DeepMind Control Suite task as a gymnasium ``Env`` (the entry point of ``lit_rl/DMC-v0``).

    Args:
        task: ``"domain-task"`` as the suite names it (``cheetah-run``, ``walker-walk``, ``ball_in_cup-catch``).
        action_repeat: each action is applied this many times, rewards summed; an episode ends early within it.
        pixels: observations are rendered frames, ``(3 * frame_stack, image_size, image_size)`` uint8 channels
            first (oldest frame first), instead of the flattened float32 state.
        camera_id: the camera of pixel observations (and of ``render_mode`` frames); default 2 for quadruped, else 0.
        render_mode: ``"rgb_array"`` for ``render()`` (videos), as gymnasium's ``render_mode``.
    """
    _check_positive_int("action_repeat", action_repeat)
    if pixels:
        _check_positive_int("image_size", image_size)
        _check_positive_int("frame_stack", frame_stack)
    if render_mode not in (None, "rgb_array"):
        raise ValueError(f"render_mode={render_mode!r} is not supported by {DMC_ID}; allowed: [None, 'rgb_array']")
    suite, compatibility = _import_dm_control()
    domain, task_name = parse_task(task, suite.ALL_TASKS)
    if camera_id is None:
        camera_id = DOMAIN_CAMERAS.get(domain, 0)
    render_kwargs: dict[str, Any] = {"camera_id": camera_id}
    if pixels:
        render_kwargs.update(height=image_size, width=image_size)
    rendered = pixels or render_mode is not None
    with _absl_root_untouched():  # dm_control logs when it loads a model and creates its OpenGL context
        dm_env = suite.load(domain, task_name)
        n_cameras = int(dm_env.physics.model.ncam)
        if isinstance(camera_id, bool) or not isinstance(camera_id, int) or not -1 <= camera_id < n_cameras:
            raise ValueError(
                f"env.kwargs.camera_id={camera_id!r}: task {task!r} has cameras 0 to {n_cameras - 1} "
                "(-1: the free camera)"
            )
        env: gym.Env = compatibility(dm_env, render_mode="rgb_array" if rendered else None, render_kwargs=render_kwargs)
        if rendered:
            how = "env.kwargs.pixels=true" if pixels else f"render_mode={render_mode!r}"
            check_offscreen_rendering(env, f"{how} ({DMC_ID}, task {task!r})")
    if action_repeat > 1:
        env = ActionRepeat(env, action_repeat)
    return stacked_frames(env, frame_stack) if pixels else flat_float32(env)


def parse_task(task: Any, all_tasks: Any) -> tuple[str, str]:
    """``"domain-task"`` -> ``(domain, task)`` of the suite; a ValueError naming the valid tasks otherwise."""
    names = {f"{domain}-{name}": (domain, name) for domain, name in all_tasks}
    if isinstance(task, str) and task in names:
        return names[task]
    close = difflib.get_close_matches(str(task), list(names), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise ValueError(
        f"env.kwargs.task={task!r} is not a DeepMind Control Suite task{hint}; valid tasks: {sorted(names)}"
    )


class ActionRepeat(gym.Wrapper):
    """Applies each action ``repeat`` times and sums the rewards; stops at the step that ends the episode."""

    def __init__(self, env: gym.Env, repeat: int) -> None:
        super().__init__(env)
        self.repeat = repeat

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        total = 0.0
        for _ in range(self.repeat):
            obs, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            if terminated or truncated:
                break
        return obs, total, terminated, truncated, info


def flat_float32(env: gym.Env) -> gym.Env:
    """The Dict of state arrays as one flat float32 vector (gymnasium's flattening, in the space's key order)."""
    flat = FlattenObservation(env)
    low, high = flat.observation_space.low, flat.observation_space.high  # type: ignore[attr-defined]
    space = spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)  # no precision notice
    return TransformObservation(flat, functools.partial(np.asarray, dtype=np.float32), space)


def stacked_frames(env: gym.Env, frame_stack: int) -> gym.Env:
    """Rendered ``(H, W, 3)`` frames of ``env``, the last ``frame_stack`` as one ``(3 * frame_stack, H, W)`` image."""
    frames = FrameStackObservation(AddRenderObservation(env, render_only=True), frame_stack)  # (k, H, W, 3)
    k, height, width, channels = cast(tuple[int, int, int, int], frames.observation_space.shape)
    space = spaces.Box(0, 255, (k * channels, height, width), np.uint8)
    return TransformObservation(frames, functools.partial(_channels_first, shape=space.shape), space)


def _channels_first(frames: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return np.ascontiguousarray(frames.transpose(0, 3, 1, 2)).reshape(shape)


def _check_positive_int(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"env.kwargs.{key}={value!r} must be a positive integer")


def _import_dm_control() -> tuple[Any, Any]:
    """``dm_control.suite`` and shimmy's ``DmControlCompatibilityV0``, or an ImportError saying what to install."""
    # dm_control picks its OpenGL backend at import: MUJOCO_GL is set by then (lit_rl.utils.rendering, at import).
    try:
        with _absl_root_untouched():
            suite = importlib.import_module("dm_control.suite")
            compatibility = importlib.import_module("shimmy.dm_control_compatibility")
    except ImportError as err:
        raise ImportError(f"{DMC_ID} needs dm_control and shimmy: {INSTALL_HINT} ({err})") from err
    _route_mujoco_warnings()
    return suite, compatibility.DmControlCompatibilityV0


@contextlib.contextmanager
def _absl_root_untouched() -> Iterator[None]:
    """absl configures the root logger (``logging.basicConfig``) on its first record when it has no handler;
    dm_control logs on import and model load, and that must not change how the user's logging prints."""
    root = logging.getLogger()
    placeholder = None if root.handlers else logging.NullHandler()
    if placeholder is not None:
        root.addHandler(placeholder)
    try:
        yield
    finally:
        if placeholder is not None:
            root.removeHandler(placeholder)


def _route_mujoco_warnings() -> None:
    """MuJoCo's warnings into lit_rl's log (once per process), not absl's ``WARNING:absl:`` lines.

    dm_control hands MuJoCo's C-level warnings to absl; the suite's XML files use compiler attributes that
    MuJoCo >= 3.3 calls deprecated ("compiler attribute 'settotalmass' is deprecated"), a notice about
    dm_control's files on every model load, so those go to the debug log. Other MuJoCo warnings (an unstable
    simulation) stay warnings, in lit_rl's words.
    """
    global _MUJOCO_ROUTED
    if _MUJOCO_ROUTED:
        return
    import mujoco

    def warning(message: str) -> None:
        level = logging.DEBUG if "deprecated" in message else logging.WARNING
        log.log(level, "MuJoCo (DeepMind Control Suite): %s", message.strip())

    mujoco.set_mju_user_warning(warning)
    _MUJOCO_ROUTED = True
