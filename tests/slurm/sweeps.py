"""Sweeps on the test cluster (scripts/slurm.sh): started as a user types them, waited for, their logs read."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import ROOT


def job_env(**extra: str) -> dict[str, str]:
    """The submitting shell's environment, without a thread count (the job must set its own)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    return {**env, "WANDB_MODE": "offline", "HYDRA_FULL_ERROR": "1", **extra}


def slurm_sweep(
    sweep_dir: Path,
    partition: str,
    *overrides: str,
    timeout_min: int,
    signal_delay_s: int = 40,
    launcher: str = "slurm",
):
    """``python -m lit_rl.train -m hydra/launcher=<launcher> ... resume=auto`` as a user types it, in the background."""
    cmd = [
        sys.executable, "-m", "lit_rl.train", "-m", f"hydra/launcher={launcher}",
        f"hydra.launcher.partition={partition}", "hydra.launcher.gpus_per_node=0", "hydra.launcher.cpus_per_task=1",
        "hydra.launcher.mem_gb=1", f"hydra.launcher.timeout_min={timeout_min}",
        f"hydra.launcher.signal_delay_s={signal_delay_s}", "hydra.launcher.max_num_timeout=30",
        f"hydra.sweep.dir={sweep_dir}", "resume=auto", *overrides,
    ]  # fmt: skip
    log = open(sweep_dir.with_suffix(".log"), "w")  # noqa: SIM115 (closed with the process by the caller's wait)
    return subprocess.Popen(cmd, cwd=ROOT, env=job_env(), stdout=log, stderr=subprocess.STDOUT, text=True)


def finish(process: subprocess.Popen, sweep_dir: Path, timeout: float = 900) -> None:
    try:
        process.wait(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            subprocess.run(["scancel", "--name=train"], check=False)
    log = sweep_dir.with_suffix(".log").read_text()
    assert process.returncode == 0, f"sweep failed:\n{log[-4000:]}\n{submitit_logs(sweep_dir)[-4000:]}"


def submitit_logs(sweep_dir: Path) -> str:
    return "\n".join(p.read_text() for p in sorted((sweep_dir / ".submitit").rglob("*_log.*")))


def wait_for(path: Path, text: str, process: subprocess.Popen, count: int = 1, timeout: float = 600) -> None:
    """Until ``text`` appears ``count`` times in ``path``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().count(text) >= count:
            return
        assert process.poll() is None, f"sweep ended before {text!r} appeared in {path}"
        time.sleep(0.5)
    raise AssertionError(f"{text!r} did not appear {count} times in {path} within {timeout} s")
