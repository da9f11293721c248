"""The entrypoint: ``python -m lit_rl.train algo=crossq env=HalfCheetah-v4 [key=value ...]``.

Composes the Hydra config, builds algorithm, datamodule, loggers and callbacks
from it, runs ``Trainer.fit`` and returns the final evaluation return (the
objective sweepers optimise).
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time
import warnings
from pathlib import Path

import hydra
import lightning as L
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig, OmegaConf

from lit_rl.algorithms.persistence import read_model_file, resolve_class
from lit_rl.callbacks import EnvStepProgressBar, EvalCallback, Preempted, PreemptionCheckpoint, RunSummary
from lit_rl.config import register_configs
from lit_rl.data import RLDataModule
from lit_rl.envs import check_env_id
from lit_rl.loggers import RunCSVLogger
from lit_rl.run_info import write_run_info
from lit_rl.sweep_job import log_to_files_only, run_job

log = logging.getLogger("lit_rl.train")  # not __main__ under python -m


def resume_run_dir(resume: str | None, new_run_dir: str) -> str:
    """``hydra.run.dir``: the folder named by ``resume=<run folder>`` (the run continues in it), else ``new_run_dir``.

    ``resume=auto`` (this run folder's own checkpoint) and a ``resume`` that is no run folder with a
    ``checkpoints/last.ckpt`` (rejected by ``resolve_checkpoint`` with a clear error) keep the new folder,
    so a typo never creates a folder of that name and a foreign folder gets no files.
    """
    if resume is None or resume == "auto" or not (Path(str(resume)) / "checkpoints" / "last.ckpt").is_file():
        return new_run_dir
    return str(resume)


def resume_output_subdir(resume: str | None, output_dir: str, stamp: str) -> str:
    """``hydra.output_subdir``: ``.hydra``, or ``.hydra/resume_<stamp>`` when a resumed run continues in a folder
    that already holds a run's config, so the run's original ``.hydra/`` record (what was typed first) is kept."""
    if resume is not None and (Path(output_dir) / ".hydra" / "config.yaml").is_file():
        return f".hydra/resume_{stamp}"
    return ".hydra"


OmegaConf.register_new_resolver("resume_run_dir", resume_run_dir, replace=True)
OmegaConf.register_new_resolver("resume_output_subdir", resume_output_subdir, replace=True)
register_configs()

# The token stream has no data to load in parallel; Lightning's hint does not apply.
warnings.filterwarnings("ignore", ".*does not have many workers.*")
# The CSV logger shares the run folder with Hydra's files; it only ever replaces its own metrics.csv.
warnings.filterwarnings("ignore", ".*exists and is not empty.*")


def build_algorithm(cfg: DictConfig):
    """The algorithm from ``cfg.algo``, with the replay buffer from ``cfg.buffer``."""
    buffer_kwargs = OmegaConf.to_container(cfg.buffer, resolve=True)
    buffer_class = get_class(buffer_kwargs.pop("_target_"))
    buffer_size = buffer_kwargs.pop("buffer_size")
    if cfg.algo.get("steps_per_batch") is not None:
        raise ValueError(
            f"algo.steps_per_batch={cfg.algo.steps_per_batch} is a run setting now; allowed: "
            f"trainer.steps_per_batch={cfg.algo.steps_per_batch}"
        )
    algo_kwargs = OmegaConf.to_container(cfg.algo, resolve=True)
    algo_kwargs.pop("steps_per_batch", None)
    algo = instantiate(
        algo_kwargs,
        _convert_="all",
        seed=cfg.seed,
        buffer_size=buffer_size,
        replay_buffer_class=buffer_class,
        replay_buffer_kwargs=buffer_kwargs,
    )
    algo.configure_run(cfg.total_timesteps, log_freq=cfg.log_freq, steps_per_batch=cfg.trainer.steps_per_batch)
    return algo


def resolve_checkpoint(cfg: DictConfig, run_dir: Path) -> tuple[str | None, int | None]:
    """The checkpoint to continue from and its env step, checked before any env exists.

    ``ckpt_path=<file>``, ``resume=<run folder>`` (its ``checkpoints/last.ckpt``)
    or ``resume=auto``: this run folder's own ``last.ckpt`` if there is one
    (a requeued cluster job continues where it was preempted), else a fresh start.
    """
    if cfg.resume is not None and cfg.ckpt_path is not None:
        raise ValueError(f"resume={cfg.resume!r} and ckpt_path={cfg.ckpt_path!r} are both set; allowed: one of them")
    ckpt_path = cfg.ckpt_path
    if cfg.resume == "auto":
        own = run_dir / "checkpoints" / "last.ckpt"
        ckpt_path = str(own) if own.exists() else None
    elif cfg.resume is not None:
        if not Path(cfg.resume).is_dir():
            raise ValueError(
                f"resume={cfg.resume!r} is not a run folder; allowed: a folder written by lit_rl.train, or 'auto'"
            )
        ckpt_path = str(Path(cfg.resume) / "checkpoints" / "last.ckpt")
    if ckpt_path is None:
        return None, None
    # Missing, truncated, foreign or other-algorithm files fail here, in seconds, before any env exists.
    rl_state = read_model_file(ckpt_path)["rl_state"]
    saved, wanted = rl_state.get("algorithm"), cfg.algo._target_
    if saved is not None and resolve_class(saved) is not get_class(wanted):
        raise ValueError(
            f"ckpt_path={ckpt_path!r} holds a {saved.rpartition('.')[2]} model but algo builds "
            f"{wanted.rpartition('.')[2]}; allowed: a checkpoint of the same algorithm"
        )
    return ckpt_path, int(rl_state.get("num_timesteps", 0))


def resume_history(run_dir: Path, ckpt_path: str, env_step: int) -> list[dict]:
    """``summary.json``'s ``resumes``: the folder's earlier resumes plus this one (when it continues in its folder)."""
    previous: dict = {}
    path = run_dir / "summary.json"
    if path.is_file():
        try:
            previous = json.loads(path.read_text())
        except (OSError, ValueError):  # an unreadable summary only loses the history, never the run
            previous = {}
    record = {
        "checkpoint": ckpt_path,
        "env_step": env_step,
        "previous_status": previous.get("status"),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    return [*previous.get("resumes", []), record]


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


def check_accelerator(accelerator: str) -> None:
    """``trainer=gpu`` on a machine without a CUDA GPU fails here, naming the key."""
    if accelerator in ("gpu", "cuda") and not torch.cuda.is_available():
        raise ValueError(
            f"trainer.accelerator={accelerator!r} but this machine has no CUDA GPU; allowed here: 'cpu', 'auto'"
        )


def train(cfg: DictConfig, callbacks: list[L.Callback] | None = None) -> float:
    """Run one training job described by ``cfg``; return its final evaluation return.

    ``callbacks`` are added after the run's own (evaluation, summary), e.g. Optuna pruning by ``lit_rl.tune``.
    """
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    route_lightning_logs()
    check_env_id(cfg.env.id)
    check_accelerator(cfg.trainer.accelerator)
    ckpt_path, ckpt_step = resolve_checkpoint(cfg, run_dir)
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    algo = build_algorithm(cfg)
    datamodule = RLDataModule(
        cfg.env.id,
        n_envs=cfg.env.n_envs,
        vectorization=cfg.env.vectorization,
        env_kwargs=OmegaConf.to_container(cfg.env.kwargs, resolve=True),
        max_episode_steps=cfg.env.max_episode_steps,
        seed=cfg.seed,
    )
    evaluation = EvalCallback(
        cfg.eval.freq, cfg.eval.episodes, cfg.eval.deterministic, checkpoint_dir=run_dir / "checkpoints", seed=cfg.seed
    )
    algo_name = HydraConfig.get().runtime.choices.get("algo") or type(algo).__name__.lower()
    info = {"algo": algo_name, "env": cfg.env.id, "seed": cfg.seed, "run_dir": str(run_dir)}
    if ckpt_path is not None:
        info["resumed_from"] = ckpt_path
        info["resumes"] = resume_history(run_dir, ckpt_path, ckpt_step)
    summary = RunSummary(run_dir / "summary.json", info)
    # After evaluation, so a signal during an evaluation still checkpoints its result.
    preemption = PreemptionCheckpoint(run_dir / "checkpoints" / "last.ckpt")
    callbacks = [evaluation, preemption, summary, *(callbacks or [])]
    trainer_kwargs = OmegaConf.to_container(cfg.trainer, resolve=True)
    trainer_kwargs.pop("steps_per_batch")  # the algorithm's loop setting (build_algorithm), not a Trainer argument
    if trainer_kwargs["enable_progress_bar"]:
        callbacks.append(EnvStepProgressBar())
    loggers = [instantiate(c) for c in cfg.logger.values()]
    if ckpt_path is not None:
        for logger in loggers:  # metrics.csv keeps the rows the checkpoint covers; the run appends
            if isinstance(logger, RunCSVLogger):
                logger.continue_from(ckpt_step)
    for logger in loggers:  # the full composed config (W&B: the run's config; CSV: hparams.yaml)
        logger.log_hyperparams(OmegaConf.to_container(cfg, resolve=True))
    trainer = L.Trainer(
        **trainer_kwargs,
        max_epochs=-1,  # the algorithm stops the run at total_timesteps env steps
        logger=loggers,
        callbacks=callbacks,
        default_root_dir=run_dir,
        enable_checkpointing=False,  # EvalCallback writes last.ckpt and best.ckpt
        num_sanity_val_steps=0,
    )
    log_run_config(cfg, algo_name, run_dir, trainer)
    if ckpt_path is not None:
        log.info("Resuming from %s at env step %d", ckpt_path, ckpt_step)
    write_run_info(run_dir / "run_info.json", cfg.seed)
    try:
        # weights_only=False: our checkpoints carry the env's gymnasium spaces (own files, trusted).
        trainer.fit(algo, datamodule=datamodule, ckpt_path=ckpt_path, weights_only=False)
    except Preempted as stop:
        message = f"{stop}; env steps done: {algo.num_timesteps}; continue with: resume={run_dir}"
        print(message, file=sys.stderr)
        log_to_files_only(log, logging.WARNING, message)
        raise SystemExit(128 + stop.signum) from None
    finally:
        datamodule.close()
    final = summary.summary.get("final_eval_return")
    return final if final is not None else -math.inf


@hydra.main(version_base="1.3", config_path="../conf", config_name="train")
def main(cfg: DictConfig) -> float:
    return run_job(train, cfg)


if __name__ == "__main__":
    main()
