"""File writing that never leaves a half-written file behind."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_atomically(path: str | Path, write: Callable[[Path], object]) -> Path:
    """``write(tmp)`` to a temporary name beside ``path``, then rename it over ``path``.

    A crash, a kill or a full disk during the write leaves the previous file
    intact; a failed write removes the temporary file and raises an ``OSError``
    naming ``path``.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as err:  # torch.save reports a full disk as a RuntimeError
        raise OSError(
            f"could not write {path} ({type(err).__name__}: {err}); is the disk full or the folder not writable? "
            "The previous file, if any, is unchanged"
        ) from err
    finally:
        with contextlib.suppress(OSError):  # nothing to remove, or a folder that could not be created
            tmp.unlink(missing_ok=True)
    return path


def write_json_atomically(path: str | Path, data: Any) -> Path:
    """Write ``data`` as JSON to ``path`` atomically (fsynced before the rename)."""

    def write(tmp: Path) -> None:
        with open(tmp, "w") as f:
            json.dump(data, f, indent=2, default=str)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())

    return write_atomically(path, write)
