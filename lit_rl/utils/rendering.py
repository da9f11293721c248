"""MuJoCo's offscreen OpenGL backend: chosen before MuJoCo or dm_control bind one, and explained where it fails.

MuJoCo renders through the backend named by ``MUJOCO_GL``. dm_control reads it once, when it is imported;
gymnasium's MuJoCo envs read it at their first render. Without it, both try GLFW first, which needs a display.
``import lit_rl`` therefore sets ``MUJOCO_GL`` on a Linux machine without a display, where it is unset: ``egl``
where EGL initialises a device, else ``osmesa`` where OSMesa creates a context. The probes call the system
libraries through ctypes (a few milliseconds) and load nothing of MuJoCo or PyOpenGL.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys
from typing import Any

BACKENDS = ("egl", "osmesa")
# The system packages each backend needs (Debian and Ubuntu names; an NVIDIA driver brings its own EGL).
PACKAGES = {"egl": "libegl1 libegl-mesa0", "osmesa": "libosmesa6"}
MISSING = (
    "neither EGL nor OSMesa can render offscreen on this machine: install EGL "
    f"(Debian/Ubuntu: apt install {PACKAGES['egl']}) or OSMesa (apt install {PACKAGES['osmesa']})"
)

_EGL_PLATFORM_DEVICE_EXT = 0x313F
_OSMESA_RGBA = 0x1908


def headless_linux() -> bool:
    """Linux without an X or Wayland display: where GLFW, MuJoCo's default backend, cannot open a context."""
    return sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def choose_mujoco_gl() -> str | None:
    """Set ``MUJOCO_GL`` where nothing chose it and return the backend in effect.

    A value already set (by the user, or inherited from a parent process) is kept. With a display, or off
    Linux, nothing is set and MuJoCo's own default applies (None). On a headless Linux machine it becomes the
    first of :data:`BACKENDS` that works; None when neither does (rendering then fails with :data:`MISSING`).
    """
    chosen = os.environ.get("MUJOCO_GL")
    if chosen:
        return chosen
    if not headless_linux():
        return None
    backend = usable_backend()
    if backend is not None:
        os.environ["MUJOCO_GL"] = backend
    return backend


@functools.cache
def usable_backend() -> str | None:
    """The first offscreen backend that works here (``PYOPENGL_PLATFORM``'s, when it names one), or None."""
    pinned = os.environ.get("PYOPENGL_PLATFORM", "").lower()  # MuJoCo's EGL refuses any other PyOpenGL platform
    candidates = (pinned,) if pinned in BACKENDS else BACKENDS
    return next((name for name in candidates if _PROBES[name]()), None)


def egl_works() -> bool:
    """Whether EGL initialises a device display, as MuJoCo's EGL context does (EGL_EXT_platform_device)."""
    try:
        egl = ctypes.CDLL("libEGL.so.1")
    except OSError:
        return False
    egl.eglGetProcAddress.restype = ctypes.c_void_p
    egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]
    query_address = egl.eglGetProcAddress(b"eglQueryDevicesEXT")
    display_address = egl.eglGetProcAddress(b"eglGetPlatformDisplayEXT")
    if not query_address or not display_address:
        return False
    query_devices = ctypes.CFUNCTYPE(
        ctypes.c_uint, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int)
    )(query_address)
    platform_display = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p)(
        display_address
    )
    egl.eglInitialize.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
    egl.eglTerminate.argtypes = [ctypes.c_void_p]
    devices, count = (ctypes.c_void_p * 16)(), ctypes.c_int(0)
    if not query_devices(len(devices), devices, ctypes.byref(count)):
        return False
    for device in devices[: count.value]:
        display = platform_display(_EGL_PLATFORM_DEVICE_EXT, device, None)
        major, minor = ctypes.c_int(), ctypes.c_int()
        if display and egl.eglInitialize(display, ctypes.byref(major), ctypes.byref(minor)):
            egl.eglTerminate(display)
            return True
    return False


def osmesa_works() -> bool:
    """Whether OSMesa (Mesa's software renderer without a display) creates a context."""
    name = ctypes.util.find_library("OSMesa")
    try:
        osmesa = ctypes.CDLL(name or "libOSMesa.so.8")
    except OSError:
        return False
    osmesa.OSMesaCreateContextExt.restype = ctypes.c_void_p
    osmesa.OSMesaCreateContextExt.argtypes = [ctypes.c_uint, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    osmesa.OSMesaDestroyContext.argtypes = [ctypes.c_void_p]
    context = osmesa.OSMesaCreateContextExt(_OSMESA_RGBA, 24, 0, 0, None)
    if not context:
        return False
    osmesa.OSMesaDestroyContext(context)
    return True


_PROBES = {"egl": egl_works, "osmesa": osmesa_works}


def bound_backend() -> str | None:
    """A backend that a module imported earlier has fixed and ``MUJOCO_GL`` can no longer change, or None.

    dm_control chooses its renderer when ``dm_control._render`` is imported (GLFW first when ``MUJOCO_GL`` was
    unset then); PyOpenGL fixes its platform when ``OpenGL.platform`` is imported.
    """
    wanted = os.environ.get("MUJOCO_GL")
    dm_render: Any = sys.modules.get("dm_control._render")
    if dm_render is not None and dm_render.BACKEND != wanted:
        return f"dm_control's {dm_render.BACKEND or 'missing'} backend (dm_control was imported before MUJOCO_GL was set)"
    opengl: Any = sys.modules.get("OpenGL.platform")
    platform = type(getattr(opengl, "PLATFORM", None)).__name__.lower()
    if opengl is not None and wanted in BACKENDS and not platform.startswith(wanted):
        return f"PyOpenGL's {platform} (OpenGL was imported before MUJOCO_GL was set)"
    return None


def rendering_advice() -> str:
    """What to do where rendering failed: the variable to export, or the system package to install."""
    if not sys.platform.startswith("linux"):
        return "MuJoCo needs a display (GLFW) on this system"
    backend = usable_backend()
    if backend is None:
        return MISSING
    bound = bound_backend()
    if bound is not None:
        return f"rendering is bound to {bound}: export MUJOCO_GL={backend} before Python starts, or import lit_rl first"
    return f"export MUJOCO_GL={backend} before Python starts"


def check_offscreen_rendering(env: Any, what: str) -> None:
    """Render one frame of ``env`` now, so that a missing backend fails here with the fix, not in a later step."""
    try:
        env.render()
    except Exception as err:  # the OpenGL backends fail in their own ways (GLFWError, RuntimeError, FatalError)
        backend = os.environ.get("MUJOCO_GL", "unset")
        raise RuntimeError(
            f"{what} needs offscreen rendering, which failed with MUJOCO_GL={backend} "
            f"({type(err).__name__}: {err}); {rendering_advice()}"
        ) from err
