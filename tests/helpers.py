"""Shared test helpers: run the launcher as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


def run_launcher(run_dir: Path, *overrides: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m lit_rl.train`` with ``overrides`` writing into ``run_dir``; returns the finished process."""
    env = dict(os.environ, WANDB_MODE="offline", HYDRA_FULL_ERROR="0")
    cmd = [
        sys.executable,
        "-m",
        "lit_rl.train",
        *overrides,
        f"hydra.run.dir={run_dir}",
        "trainer.enable_progress_bar=false",
    ]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def read_summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())
