"""run_info.json: what produced a run (package versions, project commit) and every seed it used."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from lit_rl.utils.io import write_json_atomically

PACKAGES = ("lit_rl", "torch", "lightning", "gymnasium", "mujoco", "numpy", "hydra-core", "omegaconf", "wandb")
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that decide a run's numbers (None when absent)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_commit(root: Path = PROJECT_ROOT) -> dict[str, Any] | None:
    """The project's git commit and whether the working tree had changes (None outside a git checkout)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def run_seeds(seed: int) -> dict[str, int]:
    """Every random stream of a launcher run, derived from ``seed`` (as train.py and the datamodule use them)."""
    return {
        "global (python, numpy, torch)": seed,
        "network init (torch)": seed,
        "train envs reset": seed,
        "train action space (warm-up actions)": seed,
        "eval envs reset (seed + index of the evaluation)": seed,
        "eval action space": seed + 10_000,
        "replay buffer sampler": seed,
        "action noise": seed,
    }


def slurm_job() -> dict[str, str] | None:
    """The SLURM job this run is part of (id, array task, CPUs), or None outside SLURM."""
    keys = {"id": "SLURM_JOB_ID", "array_job_id": "SLURM_ARRAY_JOB_ID", "array_task_id": "SLURM_ARRAY_TASK_ID",
            "cpus_per_task": "SLURM_CPUS_PER_TASK", "restart_count": "SLURM_RESTART_COUNT"}  # fmt: skip
    job = {name: os.environ[var] for name, var in keys.items() if var in os.environ}
    return job or None


def write_run_info(path: str | Path, seed: int) -> dict[str, Any]:
    """Write ``run_info.json``; returns what was written."""
    info = {
        "command": sys.argv,
        "versions": package_versions(),
        "git": git_commit(),
        "seeds": run_seeds(seed),
        # Threads the run computes with (inside a SLURM job: its CPUs, lit_rl.core.trainer.use_allocated_cpus).
        "torch_threads": torch.get_num_threads(),
        "slurm_job": slurm_job(),
    }
    write_json_atomically(Path(path), info)
    return info
