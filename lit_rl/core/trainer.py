"""The one Trainer of every run: ``python -m lit_rl.train`` and ``model.learn()`` both build it here.

Same loop settings (no epochs: the algorithm stops at ``total_timesteps``), the
same evaluation (:class:`~lit_rl.callbacks.PeriodicEvaluation`, which also writes
``last.ckpt``/``best.ckpt``), the same env-step progress bar. Only what the two
entrypoints add around it differs (the launcher's summary and preemption
handling; the SB3 callbacks of ``learn``).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.fabric.plugins import CheckpointIO
from lightning.fabric.plugins.environments import ClusterEnvironment, LightningEnvironment
from lightning.fabric.utilities.warnings import PossibleUserWarning

from lit_rl.callbacks.evaluation import PeriodicEvaluation
from lit_rl.callbacks.progress import EnvStepProgressBar
from lit_rl.core.persistence import StreamedCheckpointIO

# Lightning's loggers whose info lines ("GPU available: ...", tips) stay unprinted in learn().
LIGHTNING_LOGGERS = ("lightning.pytorch", "lightning.fabric", "lightning")
# Lightning's notices that do not apply to a token-stream RL run.
IRRELEVANT_WARNINGS = (
    ".*does not have many workers.*",  # the token stream has no data to load in parallel
    ".*exists and is not empty.*",  # the CSV logger shares the run folder with Hydra's files
    ".*GPU available but not used.*",  # the device is the user's choice (device= / trainer=), said in lit_rl's terms
    # An RL run is one process; Lightning asks at every fit (its checkpoint connector), whatever the plugins.
    ".*The `srun` command is available on your system but is not used.*",
    # A packed member resumed alone: its pack state (noise generator) has no use outside a pack.
    r".*callbacks used to create the checkpoint need to be provided.*\['PackMember'\]\.",
)
# Modules whose deprecation notices are theirs to act on, not the user's (torch's treespec API inside Lightning).
THIRD_PARTY_MODULES = r"(lightning|lightning_fabric|pytorch_lightning|torch|tensorboard|tensorboardX)(\..*)?$"


def make_trainer(
    *,
    callbacks: Sequence[L.Callback] = (),
    evaluation: PeriodicEvaluation | None = None,
    progress_bar: bool = False,
    logger: Any = False,
    default_root_dir: str | Path | None = None,
    **trainer_kwargs: Any,
) -> L.Trainer:
    """A Lightning Trainer for one RL run.

    ``evaluation`` runs first among the callbacks (a preemption handler after
    it still checkpoints an evaluation's result); ``trainer_kwargs`` are
    Lightning's (``accelerator``, ``devices``, ``precision``, ...).
    """
    callbacks = [*([evaluation] if evaluation is not None else []), *callbacks]
    if progress_bar:
        callbacks.append(EnvStepProgressBar())
    trainer_kwargs.setdefault("enable_model_summary", False)
    use_allocated_cpus()
    trainer_kwargs["plugins"] = streamed_checkpoints(single_process_environment(trainer_kwargs.get("plugins")))
    return L.Trainer(
        max_epochs=-1,  # the algorithm stops the run at total_timesteps env steps
        logger=logger,
        callbacks=callbacks,
        enable_progress_bar=progress_bar,
        enable_checkpointing=False,  # PeriodicEvaluation writes last.ckpt and best.ckpt
        num_sanity_val_steps=0,
        default_root_dir=default_root_dir,
        **trainer_kwargs,
    )


# Thread-count variables a user may set; when one is set, lit_rl leaves the thread counts alone.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def use_allocated_cpus() -> int | None:
    """Inside a SLURM job, run torch and OpenMP on the CPUs the job was given (``SLURM_CPUS_PER_TASK``).

    Without CPU binding, torch would start a thread per core of the node and jobs sharing a node
    slow each other down several times over. A thread count the user set wins. Returns the count set.
    """
    cpus = os.environ.get("SLURM_CPUS_PER_TASK", "")
    if not cpus.isdigit() or int(cpus) < 1 or any(os.environ.get(v) for v in THREAD_VARIABLES):
        return None
    for variable in THREAD_VARIABLES:
        os.environ[variable] = cpus  # for the processes it starts (async env workers)
    torch.set_num_threads(int(cpus))
    return int(cpus)


def single_process_environment(plugins: Any) -> list[Any]:
    """Lightning's plugins with a plain single-process cluster environment unless one is given.

    An RL run is one process: inside a SLURM job Lightning would otherwise pick its SLURM
    environment, install its own requeue handlers (submitit owns the requeue: one authority,
    see :mod:`lit_rl.callbacks.preemption`) and print its "`srun` is available" hint.
    """
    plugins = list(plugins) if isinstance(plugins, (list, tuple)) else [] if plugins is None else [plugins]
    if not any(isinstance(p, ClusterEnvironment) for p in plugins):
        plugins.append(LightningEnvironment())
    return plugins


def streamed_checkpoints(plugins: list[Any]) -> list[Any]:
    """Lightning's plugins with :class:`~lit_rl.core.persistence.StreamedCheckpointIO` unless a checkpoint
    writer is given: checkpoints carry the replay buffer, which must not be copied whole in memory to be written."""
    if not any(isinstance(p, CheckpointIO) for p in plugins):
        plugins.append(StreamedCheckpointIO())
    return plugins


def trainer_device(device: str) -> tuple[str, Any]:
    """Lightning's ``accelerator`` and ``devices`` for a torch device name (``"auto"``, ``"cpu"``, ``"cuda:1"``)."""
    if device == "auto":
        return "auto", 1
    kind, _, index = device.partition(":")
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device={device!r} is not available; allowed: 'auto', 'cpu', 'cuda', 'cuda:<index>'")
    if kind == "cpu":
        return "cpu", 1
    return "gpu", [int(index)] if index else 1


def ignore_irrelevant_warnings() -> None:
    """Hide Lightning's notices that never apply to an RL run and third-party deprecations (process-wide: the launcher).

    Deprecations raised from lit_rl's own code, or from the user's, still show.
    """
    for pattern in IRRELEVANT_WARNINGS:
        warnings.filterwarnings("ignore", pattern)
    for category in (DeprecationWarning, FutureWarning):
        warnings.filterwarnings("ignore", category=category, module=THIRD_PARTY_MODULES)


@contextmanager
def quiet_lightning() -> Iterator[None]:
    """Within ``learn()``: no Lightning banner, hint, advertisement or third-party deprecation on the terminal.

    Lightning's info lines are held back (its warnings and errors still show) and the warning
    filters of :func:`ignore_irrelevant_warnings` apply; the caller's filters and levels come back after.
    Lightning's hints speak of its Trainer, which a ``learn()`` user does not build: all of them are held back.
    """
    loggers = [logging.getLogger(name) for name in LIGHTNING_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            ignore_irrelevant_warnings()
            warnings.filterwarnings("ignore", category=PossibleUserWarning)
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
