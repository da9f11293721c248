"""A sweep folder belongs to one sweep: a second sweep with another config is refused before any job starts.

Rerunning a sweep's own command into its folder (a resubmitted cluster sweep, ``resume=auto``) is allowed: its
jobs continue their runs. A different config there would mix two experiments in one ``sweep_summary`` and resume
jobs from checkpoints of another config, so it is refused, naming the keys that differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        flat: dict[str, Any] = {}
        for key, value in node.items():
            flat.update(_flat(value, f"{prefix}{key}."))
        return flat or {prefix.rstrip("."): {}}
    return {prefix.rstrip("."): node}


def _what(config: DictConfig | ListConfig) -> tuple[dict[str, Any], list[str]]:
    """The sweep's config without Hydra's node, flattened, and its command-line overrides (swept ones included)."""
    task = OmegaConf.to_container(config, resolve=False)
    assert isinstance(task, dict)
    task.pop("hydra", None)
    overrides = OmegaConf.select(config, "hydra.overrides.task", default=None)
    return _flat(task), sorted(str(o) for o in (overrides or []))


def check_sweep_folder(config: DictConfig) -> None:
    """``ValueError`` naming the differing keys if ``hydra.sweep.dir`` holds a sweep of another config."""
    sweep_dir = Path(str(config.hydra.sweep.dir))
    saved_file = sweep_dir / "multirun.yaml"
    if not saved_file.is_file():
        return
    (saved, saved_overrides), (new, new_overrides) = _what(OmegaConf.load(saved_file)), _what(config)
    keys = sorted(k for k in saved.keys() | new.keys() if saved.get(k, "<unset>") != new.get(k, "<unset>"))
    if not keys and saved_overrides == new_overrides:
        return
    differences = [f"{k}: {saved.get(k, '<unset>')!r} there, {new.get(k, '<unset>')!r} here" for k in keys]
    if saved_overrides != new_overrides:
        differences.append(f"overrides: {saved_overrides} there, {new_overrides} here")
    raise ValueError(
        f"hydra.sweep.dir={str(sweep_dir)!r} holds a sweep of another config ({'; '.join(differences)}); allowed: "
        "the same command as the sweep there (it continues that sweep), or another hydra.sweep.dir"
    )
