"""The Hydra job a thread runs: the process's own (Hydra's one job at a time), or one member of a packed launcher's
pack (:mod:`lit_rl.launcher.packed_launcher`), whose members run at once, each in its own thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

_local = threading.local()


@dataclass
class MemberJob:
    """A job that runs in a thread of its own: its ``hydra`` node, and Lightning callbacks its run adds."""

    hydra: DictConfig
    callbacks: list[Any] = field(default_factory=list)


def hydra_job() -> Any:
    """The running job's ``hydra`` node (``HydraConfig.get()`` of a job alone in its process)."""
    job = getattr(_local, "job", None)
    return job.hydra if job is not None else HydraConfig.get()


def job_callbacks() -> list[Any]:
    """The Lightning callbacks the job's launcher adds to its run (a pack member's place in the pack)."""
    job = getattr(_local, "job", None)
    return list(job.callbacks) if job is not None else []


@contextmanager
def member_job(job: MemberJob) -> Iterator[None]:
    """Inside the block, this thread runs ``job``."""
    _local.job = job
    try:
        yield
    finally:
        _local.job = None
