"""The run's log: Lightning's info lines into the job's handlers, and the composed config in a few lines."""

from __future__ import annotations

import logging
from pathlib import Path

import lightning as L
from omegaconf import DictConfig

log = logging.getLogger("lit_rl.train")  # the launcher's records, whoever writes them


def route_lightning_logs() -> None:
    """Lightning's info lines (devices, checkpoint restore) into the job's handlers: console and ``train.log``.

    Lightning gives its logger its own stderr handler and stops propagation when imported before
    logging is configured; under Hydra the root logger has the job's handlers, so hand the records to them.
    Only the launcher does this: ``model.learn()`` leaves Lightning's logging as Lightning sets it.
    """
    if not logging.getLogger().handlers:
        return
    for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            if type(handler) is logging.StreamHandler:  # Lightning's own console handlers
                logger.removeHandler(handler)
        logger.propagate = True
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropTips) for f in logger.filters):
            logger.addFilter(_DropTips())


class _DropTips(logging.Filter):
    """Drops Lightning's advertisements (``💡 Tip: ...``): not part of a run's record."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Tip:" not in str(record.msg)


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
