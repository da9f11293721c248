"""MuJoCo's offscreen backend: chosen by ``import lit_rl`` on a headless machine, and a failure that says the fix.

Each case runs a user's script in a fresh Python with a newcomer's environment: no ``MUJOCO_GL``, no display.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from lit_rl.utils.rendering import PACKAGES, osmesa_works
from tests.helpers import ROOT, needs_rendering

pytest.importorskip("dm_control")


def run_script(code: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env={**base, **env}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


@needs_rendering
def test_import_chooses_a_backend_that_renders_even_a_mujoco_env_made_before_it():
    """gymnasium reads MUJOCO_GL at the first render: lit_rl, imported after gym.make and reset, still chooses, and
    both a gymnasium MuJoCo env and DMC pixels render real images with its choice."""
    result = run_script("""
        import os
        import gymnasium as gym
        import mujoco
        env = gym.make("HalfCheetah-v4", render_mode="rgb_array", width=64, height=48)
        env.reset(seed=0)
        import lit_rl
        from lit_rl.envs.dmc import make_dmc_env
        from lit_rl.utils.rendering import usable_backend
        frame = env.render()
        obs, _ = make_dmc_env("cheetah-run", pixels=True, image_size=32, frame_stack=1).reset(seed=0)
        print(os.environ["MUJOCO_GL"], usable_backend(), frame.shape, frame.std() > 0, obs.shape, obs.std() > 0)
    """)
    assert result.returncode == 0, result.stderr
    chosen, usable, *rest = result.stdout.split()
    assert chosen == usable and chosen in ("egl", "osmesa")
    assert " ".join(rest) == "(48, 64, 3) True (3, 32, 32) True"  # real images, not blank ones


@needs_rendering
def test_dm_control_imported_first_fails_at_the_env_saying_what_to_export():
    """dm_control fixes its backend at import (GLFW without MUJOCO_GL): lit_rl cannot change it, so it says how."""
    result = run_script("""
        import dm_control.suite
        import lit_rl
        from lit_rl.envs.dmc import make_dmc_env
        make_dmc_env("cheetah-run", pixels=True, image_size=32, frame_stack=1)
    """)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert "RuntimeError: env.kwargs.pixels=true (lit_rl/DMC-v0, task 'cheetah-run') needs offscreen rendering" in last
    assert "dm_control's glfw backend" in last and "export MUJOCO_GL=" in last, last


def test_a_chosen_backend_or_a_display_is_left_alone():
    code = "import os, lit_rl; print(os.environ.get('MUJOCO_GL', 'unset'))"
    assert run_script(code, MUJOCO_GL="glfw").stdout.strip() == "glfw"
    assert run_script(code, DISPLAY=":1").stdout.strip() == "unset"  # with a display, MuJoCo's default: GLFW


@pytest.mark.skipif(osmesa_works(), reason="OSMesa is installed here: a machine without EGL still renders")
def test_without_egl_or_osmesa_pixels_fail_naming_the_packages_to_install():
    """No EGL vendor library (a container without libegl-mesa0) and no OSMesa: nothing is chosen, and the error
    names the system packages."""
    result = run_script(
        """
        import os
        import lit_rl
        from lit_rl.envs.dmc import make_dmc_env
        print(os.environ.get("MUJOCO_GL", "unset"))
        make_dmc_env("cheetah-run", pixels=True, image_size=32, frame_stack=1)
        """,
        __EGL_VENDOR_LIBRARY_FILENAMES="/nonexistent/egl_vendor.json",  # glvnd then finds no EGL driver
    )
    assert result.returncode != 0 and result.stdout.strip() == "unset"
    last = result.stderr.strip().splitlines()[-1]
    assert f"apt install {PACKAGES['egl']}" in last and f"apt install {PACKAGES['osmesa']}" in last, last
