"""Hydra's entry to packs on SLURM: ``hydra/launcher=packed_slurm``, one SLURM array task per pack
(:mod:`lit_rl.launcher.packed_launcher` packs the jobs; hydra-submitit-launcher's executor submits them)."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, setup_globals
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf, SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
from omegaconf import OmegaConf


@dataclass
class PackedSlurmQueueConf(SlurmQueueConf):
    """hydra-submitit-launcher's SLURM settings, and the pack's."""

    _target_: str = "hydra_plugins.lit_rl_launchers.packed_slurm_launcher.PackedSlurmLauncher"
    pack_size: int = 8  # jobs trained together in one SLURM task at most
    compile: bool = False  # torch.compile each packed loss and Adam step


ConfigStore.instance().store(group="hydra/launcher", name="packed_slurm_schema", node=PackedSlurmQueueConf,
                             provider="lit_rl")  # fmt: skip


class PackedSlurmLauncher(SlurmLauncher):
    """``hydra/launcher=packed_slurm``: the sweep's packs as one SLURM job array, a pack per task. A task cut by its
    time limit saves every member and is requeued whole (``resume=auto`` continues each member exactly)."""

    def __init__(self, pack_size: int = 8, compile: bool = False, **params: Any) -> None:
        from lit_rl.launcher.packed_launcher import check_pack_size

        super().__init__(**params)
        self.pack_size, self.compile = check_pack_size(pack_size), compile

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from lit_rl.launcher.packed_launcher import plan_packs

        assert self.config is not None and self.hydra_context is not None
        packs = plan_packs(self.hydra_context, self.config, job_overrides, initial_job_idx, self.pack_size)
        tasks = [[(job.index, list(job.overrides)) for job in pack] for pack in packs]
        submitted = self.executor().map_array(self, tasks, [Singleton.get_state()] * len(tasks))
        returns = [ret for task in submitted for ret in task.results()[0]]
        return sorted(returns, key=lambda ret: int(ret.hydra_cfg.hydra.job.num))

    def executor(self) -> Any:
        """A submitit executor set up as hydra-submitit-launcher sets up its own, and the sweep folder."""
        import submitit

        assert self.config is not None
        init_keys = {"submitit_folder", "max_num_timeout"}
        executor = submitit.AutoExecutor(cluster=self._EXECUTOR, folder=self.params["submitit_folder"],
                                         slurm_max_num_timeout=self.params["max_num_timeout"])  # fmt: skip
        queue_keys = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(**{key if key in queue_keys else f"{self._EXECUTOR}_{key}": value
                                      for key, value in self.params.items() if key not in init_keys})  # fmt: skip
        return executor

    def __call__(self, pack: list[tuple[int, list[str]]], singleton_state: dict[type, Singleton]) -> list[JobReturn]:
        """One pack, inside its SLURM task."""
        import submitit

        from lit_rl.launcher.packed_launcher import load_job, run_pack

        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        Singleton.set_state(singleton_state)
        setup_globals()
        task_id = submitit.JobEnvironment().job_id
        jobs = [load_job(self.hydra_context, self.config, overrides, index, task_id) for index, overrides in pack]
        return run_pack(jobs, self.hydra_context, self.task_function, self.compile)
