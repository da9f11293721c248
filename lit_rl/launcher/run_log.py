"""The run's log: Lightning's info lines into the job's handlers, and the composed config in a few lines."""

from __future__ import annotations

import logging
from pathlib import Path

import lightning as L
from omegaconf import DictConfig

log = logging.getLogger("lit_rl.train")  # the launcher's records, whoever writes them


def route_lightning_logs() -> None:
    """Lightning's info lines (devices, checkpoint restore) into ``train.log`` only; its warnings also on the console.

    Lightning gives its logger its own stderr handler and stops propagation when imported before
    logging is configured. Under Hydra the root logger has the job's handlers: Lightning's records
    go to its file handlers, and to the others (the console) from WARNING up, so the console shows
    lit_rl's lines and not Lightning's banners. Advertisements (``💡 Tip: ...``) go nowhere.
    Only the launcher does this: ``model.learn()`` holds Lightning's info lines back (:func:`lit_rl.trainer.quiet_lightning`).
    """
    if not logging.getLogger().handlers:
        return
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


class _ToJobHandlers(logging.Handler):
    """Hands Lightning's records to the root logger's handlers as they are when a record comes.

    A sweep's jobs change the root handlers (each job its own ``train.log``), so they are looked up per record.
    """

    def emit(self, record: logging.LogRecord) -> None:
        if "Tip:" in record.getMessage():  # Lightning's advertisements: not part of a run's record
            return
        for handler in logging.getLogger().handlers:
            to_file = isinstance(handler, logging.FileHandler)
            if (to_file or record.levelno >= logging.WARNING) and record.levelno >= handler.level:
                handler.handle(record)


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
        cfg.trainer.precision,
        trainer.strategy.root_device,
    )
    log.info("Run folder: %s", run_dir)
