"""The run's objects from the composed config: algorithm, datamodule, loggers."""

from __future__ import annotations

import lightning as L
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig, OmegaConf

from lit_rl.core.compiled import check_compile
from lit_rl.core.network_setup import global_rng_lock
from lit_rl.core.precision import check_precision
from lit_rl.data import RLDataModule
from lit_rl.launcher.loggers import RunCSVLogger
from lit_rl.launcher.plain import config_dict
from lit_rl.launcher.validation import check_net_options
from lit_rl.nets.normalization import check_normalize_kwargs


def seed_run(seed: int) -> None:
    """Lightning's ``seed_everything``, never inside another thread's seeded initialisation (a pack's members)."""
    with global_rng_lock():
        L.seed_everything(seed, workers=True, verbose=False)


def build_algorithm(cfg: DictConfig):
    """The algorithm from ``cfg.algo``, with the replay buffer from ``cfg.buffer``."""
    check_net_options(cfg)  # again here: sweep jobs and tune trials do not pass through ConfigValidation
    buffer_kwargs = config_dict(cfg.buffer)
    buffer_class = get_class(buffer_kwargs.pop("_target_"))
    buffer_size = buffer_kwargs.pop("buffer_size")
    if cfg.algo.get("steps_per_batch") is not None:
        raise ValueError(
            f"algo.steps_per_batch={cfg.algo.steps_per_batch}: steps_per_batch is a run setting of the trainer group, "
            f"not a hyperparameter; allowed: trainer.steps_per_batch={cfg.algo.steps_per_batch}"
        )
    algo_kwargs = config_dict(cfg.algo)
    # Checked here so that a bad value names the env group's key (the algorithm names its own argument).
    normalize_kwargs = check_normalize_kwargs(config_dict(cfg.env.normalize_kwargs), "env.normalize_kwargs")
    algo_kwargs.pop("steps_per_batch", None)
    algo = instantiate(
        algo_kwargs,
        _convert_="all",
        seed=cfg.seed,
        buffer_size=buffer_size,
        replay_buffer_class=buffer_class,
        replay_buffer_kwargs=buffer_kwargs,
        normalize_obs=cfg.env.normalize_obs,  # the env group's switches; the statistics live in the model
        normalize_reward=cfg.env.normalize_reward,
        normalize_kwargs=normalize_kwargs,
    )
    compile_setting = check_compile(cfg.trainer.compile, "trainer.compile")
    # Mixed precision is the algorithm's (core/precision.py): the Trainer itself stays at 32-true.
    precision = check_precision(cfg.trainer.precision, "trainer.precision")
    algo.configure_run(cfg.total_timesteps, log_freq=cfg.log_freq, steps_per_batch=cfg.trainer.steps_per_batch,
                       compile=compile_setting, precision=precision)  # fmt: skip
    return algo


def build_datamodule(cfg: DictConfig) -> RLDataModule:
    """The training (and evaluation) envs from ``cfg.env``."""
    return RLDataModule(
        cfg.env.id,
        n_envs=cfg.env.n_envs,
        vectorization=cfg.env.vectorization,
        env_kwargs=config_dict(cfg.env.kwargs),
        max_episode_steps=cfg.env.max_episode_steps,
        seed=cfg.seed,
    )


def build_loggers(cfg: DictConfig, resumed_step: int | None) -> list[L.pytorch.loggers.Logger]:
    """Lightning loggers from ``cfg.logger``, each given the full composed config.

    On a resume, ``metrics.csv`` keeps the rows the checkpoint covers and the run appends.
    """
    loggers = [instantiate(c) for c in cfg.logger.values()]
    for logger in loggers:
        if resumed_step is not None and isinstance(logger, RunCSVLogger):
            logger.continue_from(resumed_step)
        logger.log_hyperparams(OmegaConf.to_container(cfg, resolve=True))  # W&B: the run's config; CSV: hparams
    return loggers
