"""The run's log: Lightning's info lines into the job's handlers, and the composed config in a few lines."""

from __future__ import annotations

import logging
from pathlib import Path

import lightning as L
import torch
from omegaconf import DictConfig

from lit_rl.core.precision import check_precision, resolve_precision

log = logging.getLogger("lit_rl.train")  # the launcher's records, whoever writes them


# Loggers whose info lines the console shows; every other library's go to train.log only (warnings show everywhere).
CONSOLE_LOGGERS = ("lit_rl", "hydra", "__main__")


def route_third_party_logs() -> None:
    """The console shows lit_rl's lines; other libraries' info lines (Lightning's devices, PyOpenGL's notices) go to
    ``train.log`` only, and their warnings to both.

    Lightning gives its logger its own stderr handler and stops propagation when imported before
    logging is configured: under Hydra its records are handed to the job's handlers instead.
    Advertisements (``💡 Tip: ...``) go nowhere. Only the launcher does this: ``model.learn()``
    holds Lightning's info lines back (:func:`lit_rl.core.trainer.quiet_lightning`).
    """
    root = logging.getLogger()
    if not root.handlers:
        return
    for handler in root.handlers:
        console = not isinstance(handler, logging.FileHandler)
        if console and not any(isinstance(f, ConsoleFilter) for f in handler.filters):
            handler.addFilter(ConsoleFilter())
    for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            if type(handler) is logging.StreamHandler or isinstance(handler, _ToJobHandlers):
                logger.removeHandler(handler)  # Lightning's own console handlers, or ours from an earlier job
        logger.propagate = False
    lightning = logging.getLogger("lightning")
    lightning.addHandler(_ToJobHandlers())
    for name in ("lightning.pytorch", "lightning.fabric"):  # their records reach "lightning"'s handler
        logging.getLogger(name).propagate = True


class ConsoleFilter(logging.Filter):
    """Passes warnings and errors, and info lines only from :data:`CONSOLE_LOGGERS`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or record.name.partition(".")[0] in CONSOLE_LOGGERS


class _ToJobHandlers(logging.Handler):
    """Hands Lightning's records to the root logger's handlers as they are when a record comes.

    A sweep's jobs change the root handlers (each job its own ``train.log``), so they are looked up per record.
    """

    def emit(self, record: logging.LogRecord) -> None:
        if "Tip:" in record.getMessage():  # Lightning's advertisements: not part of a run's record
            return
        for handler in logging.getLogger().handlers:
            if record.levelno >= handler.level:
                handler.handle(record)  # the console's ConsoleFilter keeps Lightning's info lines off it


def log_run_config(cfg: DictConfig, algo_name: str, run_dir: Path, trainer: L.Trainer) -> None:
    """The composed config in a few lines (``.hydra/config.yaml`` holds all of it)."""
    log.info(
        "%s on %s, seed %s: total_timesteps=%d, n_envs=%d (%s); eval every %d env steps, %d episode(s)",
        algo_name,
        cfg.env.id,
        cfg.seed,
        cfg.total_timesteps,
        cfg.env.n_envs,
        cfg.env.vectorization,
        cfg.eval.freq,
        cfg.eval.episodes,
    )
    log.info(
        "Trainer: accelerator=%s devices=%s precision=%s -> device %s",
        cfg.trainer.accelerator,
        cfg.trainer.devices,
        describe_precision(cfg.trainer.precision, trainer.strategy.root_device),
        trainer.strategy.root_device,
    )
    log.info("Run folder: %s", run_dir)


def describe_precision(setting: str, device: torch.device) -> str:
    """The precision setting, and what ``auto`` chose on ``device``."""
    precision = check_precision(setting, "trainer.precision")
    return f"auto ({resolve_precision(precision, device)} on {device.type})" if precision == "auto" else precision
