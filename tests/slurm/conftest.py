"""A real single-node SLURM (``scripts/slurm.sh``) for the tests of this folder.

The fixture starts it once per test session (as root, installing Debian's slurm-wlm and munge
when they are missing) and skips the tests, saying why, where that cannot be done.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.helpers import ROOT

SLURM_SCRIPT = ROOT / "scripts" / "slurm.sh"


def start_slurm() -> str | None:
    """Start the cluster; None when it runs, else the reason it cannot."""
    if os.geteuid() != 0:
        return "SLURM tests need root (scripts/slurm.sh starts slurmctld/slurmd and installs them with apt)"
    if shutil.which("slurmctld") is None and shutil.which("apt-get") is None:
        return "SLURM is not installed and there is no apt-get to install slurm-wlm and munge"
    result = subprocess.run(["bash", str(SLURM_SCRIPT), "start"], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        return f"scripts/slurm.sh start failed: {result.stderr.strip() or result.stdout.strip()}"
    return None


@pytest.fixture(scope="session")
def slurm_cluster() -> str:
    """The partition to submit to (``debug``) of a running single-node SLURM."""
    reason = start_slurm()
    if reason is not None:
        pytest.skip(reason)
    return "debug"
