"""``python -m lit_rl.doctor``: what this machine offers lit_rl, and the fix for what is missing.

One line per part: the compute (torch build, GPU, the CPU's bf16 units), MuJoCo and its offscreen rendering,
the optional env families (DeepMind Control, gymnasium-robotics, Atari), and the engines a sweep can scale out to
(SLURM, PostgreSQL), the W&B login and the browser of the documentation test. A few seconds: it imports torch and
MuJoCo and renders one small frame, nothing more.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from lit_rl.utils import rendering
from lit_rl.utils.machine import BF16_FLAGS, cpu_model_and_flags

OK, NOTE, MISSING = "ok", "--", "missing"
ENVS_EXTRA = "pip install 'lit_rl[envs]'"
# Where a fix runs one of the repository's scripts: the checkout this package was installed from.
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@dataclass
class Check:
    """One part of the machine: its state (:data:`OK`, :data:`NOTE` or :data:`MISSING`), what was found, the fix."""

    name: str
    state: str
    found: str
    fix: str = ""


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _script(name: str, command: str) -> str:
    root = "" if os.geteuid() == 0 else "sudo "
    return f"{root}bash {SCRIPTS / name} {command}"


def check_torch() -> list[Check]:
    import torch

    from lit_rl.core.precision import resolve_precision

    cuda = torch.version.cuda
    build = f"CUDA {cuda} build" if cuda else "CPU build"
    checks = [Check("torch", OK, f"{torch.__version__} ({build}, {torch.get_num_threads()} threads)")]
    if torch.cuda.is_available():
        names = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
        auto = resolve_precision("auto", torch.device("cuda", 0))
        checks.append(Check("GPU", OK, f"{names}; bf16 {torch.cuda.is_bf16_supported()}; precision=auto -> {auto}"))
    elif shutil.which("nvidia-smi"):
        fix = "install torch's CUDA build: pip install --force-reinstall 'torch>=2.4' (PyPI's Linux wheels are CUDA builds)"
        checks.append(Check("GPU", MISSING, "an NVIDIA driver is here, but this torch cannot use it", fix))
    else:
        checks.append(Check("GPU", NOTE, "none: runs on the CPU (trainer=gpu needs a CUDA GPU)"))
    model, flags = cpu_model_and_flags()
    units = ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in BF16_FLAGS)
    auto = resolve_precision("auto", torch.device("cpu"))
    checks.append(Check("CPU", OK, f"{model} ({os.cpu_count()} CPUs); {units}; precision=auto -> {auto}"))
    return checks


def check_mujoco() -> list[Check]:
    version = _version("mujoco")
    if version is None:
        return [Check("MuJoCo", MISSING, "not installed", "pip install 'gymnasium[mujoco]'")]
    backend = os.environ.get("MUJOCO_GL")
    how = "chosen by lit_rl" if backend and backend == rendering.usable_backend() else "from the environment"
    if backend is None:
        how, backend = "MuJoCo's default (a display)", "glfw"
    try:
        with warnings.catch_warnings():  # GLFW warns before it fails without a display: the line below says it
            warnings.simplefilter("ignore")
            frame = _render_one_frame()
    except Exception as err:  # the OpenGL backends fail in their own ways
        found = f"{version}; MUJOCO_GL={backend} ({how}) cannot render: {type(err).__name__}: {err}"
        return [Check("MuJoCo", MISSING, found, rendering.rendering_advice())]
    return [Check("MuJoCo", OK, f"{version}; renders offscreen with MUJOCO_GL={backend} ({how}), {frame}")]


def _render_one_frame() -> str:
    import mujoco

    model = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><light pos='0 0 2'/><geom type='sphere' size='0.2' rgba='1 0 0 1'/></worldbody></mujoco>"
    )
    renderer = mujoco.Renderer(model, 32, 32)
    try:
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        renderer.update_scene(data)
        pixels = renderer.render()
    finally:
        renderer.close()
    if pixels.std() == 0:
        raise RuntimeError("the frame came back blank")
    return f"rendered a {pixels.shape[1]}x{pixels.shape[0]} frame"


DISTRIBUTIONS = {"cv2": "opencv-python-headless"}  # modules whose distribution is named otherwise


def check_env_families() -> list[Check]:
    families = (
        ("DeepMind Control", ("dm_control", "shimmy"), "env=dmc", ENVS_EXTRA),
        ("gymnasium-robotics", ("gymnasium_robotics",), "Fetch tasks with HER", ENVS_EXTRA),
        ("Atari (ale-py)", ("ale_py", "cv2"), "env=atari", ENVS_EXTRA),
    )
    checks = []
    for name, modules, what, fix in families:
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        if missing:
            checks.append(Check(name, MISSING, f"{what}: {', '.join(missing)} not installed", fix))
        else:
            versions = ", ".join(f"{m} {_version(DISTRIBUTIONS.get(m, m.replace('_', '-'))) or '?'}" for m in modules)
            checks.append(Check(name, OK, f"{what}: {versions}"))
    return checks


def check_scaling_out() -> list[Check]:
    checks = []
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        fix = f"on a cluster, load its SLURM module; on this machine (tests): {_script('slurm.sh', 'start')}"
        checks.append(Check("SLURM", MISSING, "no sbatch on PATH (hydra/launcher=slurm)", fix))
    else:
        answer = _partitions() or "no answer"
        state = OK if answer != "no answer" else NOTE
        fix = "" if state == OK else f"start the controller; on this machine: {_script('slurm.sh', 'start')}"
        checks.append(Check("SLURM", state, f"{sbatch}; partitions: {answer}", fix))
    server = postgres_server()
    driver = _version("psycopg")
    if server is None and driver is None:
        fix = f"pip install 'lit_rl[postgres]' and a server: {_script('postgres.sh', 'install')}, or your site's"
        checks.append(Check("PostgreSQL", MISSING, "no server and no driver (studies on storage=postgresql://...)", fix))
    elif driver is None:
        checks.append(Check("PostgreSQL", MISSING, f"server {server}; no driver", "pip install 'lit_rl[postgres]'"))
    else:
        where = f"server {server}" if server else "no local server (a remote one works)"
        checks.append(Check("PostgreSQL", OK, f"driver psycopg {driver}; {where}"))
    from lit_rl.launcher.loggers import wandb_credentials_present

    if wandb_credentials_present():
        checks.append(Check("W&B", OK, f"wandb {_version('wandb')}; logged in: logger=wandb logs online"))
    else:
        found = f"wandb {_version('wandb')}; not logged in: logger=wandb logs offline (wandb sync uploads later)"
        checks.append(Check("W&B", NOTE, found, "wandb login"))
    browser = [path for path in ("/usr/bin/chromium", "/usr/bin/chromedriver") if not os.access(path, os.X_OK)]
    if browser or _version("selenium") is None:
        what = ", ".join(browser) or "selenium"
        fix = f"{_script('browser.sh', 'install')}; pip install 'lit_rl[docs]'"
        checks.append(Check("docs browser", MISSING, f"{what} missing: the documentation's browser test skips", fix))
    else:
        checks.append(Check("docs browser", OK, f"chromium, chromedriver, selenium {_version('selenium')}"))
    return checks


def postgres_server() -> str | None:
    """The PostgreSQL server's ``pg_ctl`` (on PATH or Debian's versioned folder), or None where none is installed."""
    found = shutil.which("pg_ctl") or next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))), None)
    return None if found is None else str(found)


def _partitions() -> str | None:
    """SLURM's partitions and their states, or None where the controller does not answer in 3 s."""
    try:
        info = subprocess.run(["sinfo", "-h", "-o", "%P %t"], capture_output=True, text=True, timeout=3)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return " ".join(info.stdout.split()) if info.returncode == 0 and info.stdout.strip() else None


def diagnose() -> list[Check]:
    """Every check, in the order printed."""
    return [*check_torch(), *check_mujoco(), *check_env_families(), *check_scaling_out()]


def format_checks(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        lines.append(f"{c.state:<8} {c.name:<{width}}  {c.found}")
        if c.fix:
            lines.append(f"{'':<8} {'':<{width}}  fix: {c.fix}")
    return "\n".join(lines)


def main() -> None:
    version = _version("lit_rl") or "(not installed)"
    print(f"lit_rl {version} on Python {sys.version.split()[0]}, {sys.platform}: what this machine offers lit_rl")
    checks = diagnose()
    print(format_checks(checks))
    missing = [c.name for c in checks if c.state == MISSING]
    print(f"missing: {', '.join(missing)} (each line above says the fix)" if missing else "nothing missing")
