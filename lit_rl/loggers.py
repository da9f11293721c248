"""Logger factories that need more than a constructor call."""

from __future__ import annotations

import netrc
import os
import sys
import warnings
from pathlib import Path
from typing import Any

WANDB_MODES = ("auto", "online", "offline", "disabled")


def wandb_credentials_present() -> bool:
    """True when W&B can authenticate without a prompt (env var or ~/.netrc entry)."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        hosts = netrc.netrc().hosts
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False
    return any("wandb" in host for host in hosts)


def make_wandb_logger(
    project: str = "lit_rl",
    entity: str | None = None,
    group: str | None = None,
    tags: list[str] | None = None,
    mode: str = "auto",
    save_dir: str = ".",
    **kwargs: Any,
):
    """A ``WandbLogger`` that never blocks on a login prompt.

    ``mode="auto"`` runs online when credentials exist and offline otherwise
    (the run folder then holds a ``wandb/`` directory that ``wandb sync``
    uploads later).
    """
    from lightning.pytorch.loggers import WandbLogger

    if mode not in WANDB_MODES:
        raise ValueError(f"logger.wandb.mode={mode!r} is not allowed; allowed: {list(WANDB_MODES)}")
    if mode == "auto":
        mode = "online" if wandb_credentials_present() else "offline"
        if mode == "offline":
            warnings.warn(
                "W&B: no credentials found, logging offline (run `wandb sync` on the run's wandb/ folder to upload)",
                stacklevel=2,
            )
    os.makedirs(save_dir, exist_ok=True)
    return WandbLogger(
        project=project, entity=entity, group=group, tags=list(tags or []), save_dir=save_dir, mode=mode, **kwargs
    )


def finish_wandb_run(failed: bool = False) -> None:
    """Finish the active W&B run, if any, so the next job in this process starts its own."""
    wandb = sys.modules.get("wandb")  # never import wandb just to find out that no run exists
    if wandb is not None and getattr(wandb, "run", None) is not None:
        wandb.finish(exit_code=1 if failed else 0)


def wandb_sweep_group(mode: object, sweep_dir: str) -> str | None:
    """The default W&B group: the sweep folder's last two parts (``<date>/<time>``) in a multirun, else None."""
    if not str(mode).endswith("MULTIRUN"):
        return None
    return "/".join(Path(str(sweep_dir)).parts[-2:])
