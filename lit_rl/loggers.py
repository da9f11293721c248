"""Logger factories that need more than a constructor call."""

from __future__ import annotations

import netrc
import os
import socket
import sys
import urllib.parse
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


def wandb_reachable(timeout: float = 3.0) -> bool:
    """True when W&B's server (``WANDB_BASE_URL`` or api.wandb.ai) accepts a connection within ``timeout`` s."""
    url = urllib.parse.urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai"))
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=timeout).close()
    except OSError:
        return False
    return True


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
    uploads later). ``auto`` and ``online`` fall back to offline, with one
    warning, when the W&B server cannot be reached.
    """
    from lightning.pytorch.loggers import WandbLogger

    if mode not in WANDB_MODES:
        raise ValueError(f"logger.wandb.mode={mode!r} is not allowed; allowed: {list(WANDB_MODES)}")
    if mode == "auto" and not wandb_credentials_present():
        mode = "offline"
        warnings.warn(
            "W&B: no credentials found, logging offline (run `wandb sync` on the run's wandb/ folder to upload)",
            stacklevel=2,
        )
    if mode in ("auto", "online") and not wandb_reachable():
        # An unreachable server must not stall or kill a run: log locally and say so once.
        mode = "offline"
        warnings.warn(
            f"W&B: {os.environ.get('WANDB_BASE_URL', 'https://api.wandb.ai')} is unreachable, logging offline "
            "(run `wandb sync` on the run's wandb/ folder to upload later)",
            stacklevel=2,
        )
    mode = "online" if mode == "auto" else mode
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
