"""File writing that never leaves a half-written file behind, and records for the run's log files only."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_atomically(path: str | Path, write: Callable[[Path], object], previous: str | Path | None = None) -> Path:
    """``write(tmp)`` to a temporary name beside ``path``, flush it to disk, then rename it over ``path``.

    A crash, a kill or a full disk during the write leaves the previous file
    intact; a failed write removes the temporary file and raises an ``OSError``
    naming ``path``. With ``previous``, the file ``path`` held is kept under
    that name (the one before the last, for when the last is found damaged).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)  # on disk before the rename: a power cut never leaves a renamed, empty file
        finally:
            os.close(fd)
        if previous is not None and path.exists():
            # A second name for the current file first, then the rename over it: at every moment ``path``
            # exists and is whole, whenever the process is killed.
            keep = Path(previous).with_name(f".{Path(previous).name}.tmp")
            keep.unlink(missing_ok=True)
            try:
                os.link(path, keep)
            except OSError:  # a file system without hard links
                shutil.copy2(path, keep)
            os.replace(keep, previous)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:  # torch.save reports a full disk as a RuntimeError
        error = OSError(
            f"could not write {path} ({type(err).__name__}: {err}); is the disk full or the folder not writable? "
            "The previous file, if any, is unchanged"
        )
        error.errno = getattr(err, "errno", None)  # ENOSPC stays recognisable to a caller that waits for room
        raise error from err
    finally:
        with contextlib.suppress(OSError):  # nothing to remove, or a folder that could not be created
            tmp.unlink(missing_ok=True)
    return path


def unwritable_reason(folder: str | Path) -> str | None:
    """Why ``folder`` (or the nearest existing folder above it, where it would be made) cannot be written, or None.

    Checked before a run makes its folder, so a read-only or foreign location fails at once, leaving nothing behind.
    """
    path = Path(folder).absolute()
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):  # also false on a read-only file system, for root too
        statvfs = os.statvfs(existing)
        read_only = bool(statvfs.f_flag & os.ST_RDONLY)
        return f"{existing} is on a read-only file system" if read_only else f"{existing} is not writable by this user"
    return None


def write_json_atomically(path: str | Path, data: Any) -> Path:
    """Write ``data`` as JSON to ``path`` atomically (fsynced before the rename)."""

    def write(tmp: Path) -> None:
        with open(tmp, "w") as f:
            json.dump(data, f, indent=2, default=str)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())

    return write_atomically(path, write)


def log_to_files_only(logger: logging.Logger, level: int, msg: str, *args: object, exc_info: bool = False) -> None:
    """Log a record to the root logger's file handlers (``train.log``) only, not to the console.

    For what the console already shows in its own way (Hydra prints a failed run's error on stderr;
    a preempted run prints its ``resume=`` line), so the console does not show it twice.
    """
    if not logger.isEnabledFor(level):
        return
    record = logger.makeRecord(logger.name, level, "(unknown file)", 0, msg, args, sys.exc_info() if exc_info else None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler) and record.levelno >= handler.level:
            handler.handle(record)
