"""Hydra's entry to lit_rl's packed launcher (Hydra finds launchers in the ``hydra_plugins`` package only)."""

from __future__ import annotations

from collections.abc import Sequence

from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class PackedLauncher(Launcher):
    """``hydra/launcher=packed``: see :mod:`lit_rl.launcher.packed_launcher`."""

    def __init__(self, pack_size: int = 8, compile: bool = False) -> None:
        from lit_rl.launcher.packed_launcher import check_pack_size

        self.pack_size, self.compile = check_pack_size(pack_size), compile
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from lit_rl.launcher.packed_launcher import launch_packed

        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        return launch_packed(self.hydra_context, self.task_function, self.config, job_overrides, initial_job_idx,
                             self.pack_size, self.compile)  # fmt: skip
