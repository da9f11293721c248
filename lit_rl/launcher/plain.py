"""Plain Python values from Hydra/OmegaConf config nodes, typed for the code that reads them."""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf


def config_dict(cfg: Any, resolve: bool = True) -> dict[str, Any]:
    """``OmegaConf.to_container(cfg)`` of a mapping node, as a ``dict``; a list or scalar node is a TypeError."""
    container = OmegaConf.to_container(cfg, resolve=resolve)
    if not isinstance(container, dict):
        raise TypeError(f"expected a mapping config node, got {type(container).__name__}: {container!r}")
    return {str(key): value for key, value in container.items()}
