"""``python -m lit_rl.doctor``: one line per part of the machine, and the fix for each missing part."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lit_rl.utils.rendering import PACKAGES, osmesa_works, usable_backend
from tests.helpers import ROOT

PARTS = ("torch", "GPU", "CPU", "MuJoCo", "DeepMind Control", "gymnasium-robotics", "Atari (ale-py)", "SLURM",
         "PostgreSQL", "W&B", "docs browser")  # fmt: skip


def doctor(**env: str) -> dict[str, tuple[str, str, str]]:
    """Run the doctor as a newcomer would (no MUJOCO_GL, no display): part -> (state, found, fix)."""
    base = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY")}
    result = subprocess.run(
        [sys.executable, "-m", "lit_rl.doctor"], cwd=ROOT, env={**base, **env}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 0 and not result.stderr, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("lit_rl ") and "what this machine offers lit_rl" in lines[0]
    parts: dict[str, tuple[str, str, str]] = {}
    last = ""
    for line in lines[1:-1]:
        if line.lstrip().startswith("fix: "):
            state, found, _ = parts[last]
            parts[last] = (state, found, line.strip().removeprefix("fix: "))
            continue
        last = next(p for p in PARTS if line[9:].startswith(p + " "))
        parts[last] = (line[:8].strip(), line[9 + len(last) :].strip(), "")
    assert tuple(parts) == PARTS, result.stdout
    missing = [p for p, (state, _, _) in parts.items() if state == "missing"]
    assert lines[-1] == (f"missing: {', '.join(missing)} (each line above says the fix)" if missing else "nothing missing")
    assert all(fix for state, _, fix in parts.values() if state == "missing"), result.stdout
    return parts


def test_the_doctor_reports_this_machine():
    parts = doctor()
    assert parts["torch"][0] == "ok" and parts["torch"][1].startswith(torch.__version__)
    assert parts["GPU"][0] == ("ok" if torch.cuda.is_available() else "--")
    flags = Path("/proc/cpuinfo").read_text().split()
    assert f"avx512_bf16 {'yes' if 'avx512_bf16' in flags else 'no'}" in parts["CPU"][1]
    backend = usable_backend()
    if backend is None:
        assert parts["MuJoCo"][0] == "missing" and PACKAGES["egl"] in parts["MuJoCo"][2]
    else:  # it rendered a frame with the backend lit_rl chose
        assert parts["MuJoCo"][:2] == ("ok", parts["MuJoCo"][1]) and f"MUJOCO_GL={backend} (chosen by lit_rl)" in parts[
            "MuJoCo"][1] and "rendered a 32x32 frame" in parts["MuJoCo"][1]  # fmt: skip


def test_missing_parts_get_their_fix():
    """No SLURM on PATH and no EGL driver (nor OSMesa): each is missing, with the command that fixes it."""
    if osmesa_works():
        pytest.skip("OSMesa is installed here: MuJoCo still renders without EGL")
    no_egl = "/nonexistent/egl_vendor.json"  # glvnd then finds no EGL driver
    parts = doctor(PATH=str(Path(sys.executable).parent), __EGL_VENDOR_LIBRARY_FILENAMES=no_egl)  # no sbatch
    assert parts["SLURM"][0] == "missing" and "scripts/slurm.sh start" in parts["SLURM"][2]
    state, found, fix = parts["MuJoCo"]
    assert state == "missing" and "MUJOCO_GL=glfw" in found
    assert f"apt install {PACKAGES['egl']}" in fix and f"apt install {PACKAGES['osmesa']}" in fix
