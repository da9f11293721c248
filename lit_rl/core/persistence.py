"""Model files: one format for ``model.save``, ``Algo.load`` and the launcher's Lightning checkpoints.

A file is a ``torch.save``'d dict with Lightning's checkpoint keys
(``state_dict``, ``hyper_parameters``, ``optimizer_states``) and ``rl_state``
(the algorithm's class, the env's spaces, counters and, in launcher
checkpoints, the replay buffer, RNG and env state for an exact resume). So a
checkpoint written by ``python -m lit_rl.train`` loads with ``CrossQ.load``
and a file written by ``model.save`` carries what ``learn`` needs to continue.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.plugins import TorchCheckpointIO

from lit_rl.utils.checks import resolve_device  # noqa: F401  (re-exported: callers import it from here)
from lit_rl.utils.io import write_atomically

# 2: networks under ``policy.`` (policy modules); format 1 (no "format" key) held them at the top level
# and still loads (exact_resume.upgrade_state_dict).
CHECKPOINT_FORMAT = 2


def class_path(cls: type) -> str:
    """``module.QualName`` of a class, as stored in model files."""
    return f"{cls.__module__}.{cls.__qualname__}"


def resolve_class(path: str) -> type:
    """The class named by :func:`class_path`."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def read_model_file(path: str | Path | Any, device: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a model file or launcher checkpoint onto ``device``; clear errors for missing or foreign files."""
    if not hasattr(path, "read"):  # a file object (io.BytesIO) is read as it is
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"ckpt_path={str(path)!r} does not exist (or is not a file)")
    try:
        # weights_only=False: the file carries gymnasium spaces and RNG states (files this project wrote).
        checkpoint = torch.load(path, map_location=resolve_device(device), weights_only=False)
    except Exception as err:
        raise ValueError(
            f"ckpt_path={str(path)!r} cannot be read as a checkpoint (truncated or not a torch file): "
            f"{type(err).__name__}: {err}"
        ) from err
    if not isinstance(checkpoint, dict) or "rl_state" not in checkpoint or "state_dict" not in checkpoint:
        raise ValueError(
            f"ckpt_path={str(path)!r} is not a lit_rl checkpoint (no 'rl_state'); allowed: files written by "
            "model.save() or by python -m lit_rl.train (checkpoints/last.ckpt, best.ckpt)"
        )
    written = checkpoint["rl_state"].get("format", 1)
    if written > CHECKPOINT_FORMAT:
        raise ValueError(
            f"ckpt_path={str(path)!r} has checkpoint format {written}, newer than this lit_rl reads "
            f"(format {CHECKPOINT_FORMAT}); allowed: files of format <= {CHECKPOINT_FORMAT} (upgrade lit_rl)"
        )
    return checkpoint


def write_model_file(checkpoint: dict[str, Any], path: str | Path) -> Path:
    """``torch.save`` atomically: an interrupted or failed save never destroys ``path``."""
    return write_atomically(path, lambda tmp: torch.save(checkpoint, tmp))


def load_algorithm(path: str | Path, device: str | torch.device = "auto", **overrides: Any):
    """Load any lit_rl model file (class read from the file); ``overrides`` replace saved hyperparameters."""
    state = read_model_file(path, "cpu")["rl_state"]
    if "algorithm" not in state:
        raise ValueError(f"{str(path)!r} does not name its algorithm; load it with <Algorithm>.load")
    algo_class: Any = resolve_class(state["algorithm"])  # an algorithm class (its load is typed there)
    return algo_class.load(path, device=device, **overrides)


class StreamedCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint writer, with ``torch.save`` writing straight to a local file (atomically).

    Lightning's own serialises the whole checkpoint into memory and writes a copy of those bytes: with a replay
    buffer of gigabytes inside, each save would need twice the buffer's size in extra memory. Written to the
    file, each tensor streams from its storage. Remote URLs (``s3://``) and storage options go Lightning's way.
    """

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None) -> None:
        if storage_options is not None or "://" in str(path):
            super().save_checkpoint(checkpoint, path, storage_options)
            return
        write_model_file(checkpoint, path)
