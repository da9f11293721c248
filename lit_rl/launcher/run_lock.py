"""One process at a time writes a run folder: an exclusive lock on ``<run>/.lock`` while the run trains.

A requeued cluster job whose first instance is still alive (a node that lost contact but not its process), or two
sweep jobs pointed at one folder, would otherwise interleave checkpoints, metrics and summaries. The lock is an
``flock``: the kernel releases it when its process ends in any way (``kill -9``, OOM killer), so a dead run never
blocks its own requeue. On NFS, Linux maps it onto NFS byte-range locks, which hold across nodes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Iterator
from pathlib import Path

LOCK_NAME = ".lock"


class RunFolderInUse(RuntimeError):
    """Another live process holds the run folder's lock."""


def _holder() -> str:
    job = os.environ.get("SLURM_JOB_ID")
    return f"pid {os.getpid()} on {socket.gethostname()}" + (f", SLURM job {job}" if job else "")


@contextlib.contextmanager
def run_folder_lock(run_dir: str | Path) -> Iterator[None]:
    """Hold ``run_dir``'s lock for the ``with`` block; :class:`RunFolderInUse` (naming the holder) if it is taken."""
    path = Path(run_dir) / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = path.read_text().strip() or "a process that has not written its name yet"
            raise RunFolderInUse(
                f"run folder {run_dir} is being written by another process ({holder}); allowed: one process per "
                "run folder: wait for that one to end or stop it, or give this run a folder of its own"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, (_holder() + "\n").encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
