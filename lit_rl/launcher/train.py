"""The entrypoint: ``python -m lit_rl.train algo=crossq env=HalfCheetah-v4 [key=value ...]``.

A recipe: compose the config, build algorithm, envs, callbacks, loggers and
Trainer (:mod:`lit_rl.launcher`), fit, and return the final evaluation return
(the objective sweepers optimise).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import hydra
import lightning as L
from omegaconf import DictConfig

from lit_rl.callbacks import PeriodicEvaluation, Preempted, PreemptionCheckpoint, RunSummary
from lit_rl.callbacks.time_limit import CheckpointIntervalCheck
from lit_rl.core.trainer import ignore_irrelevant_warnings, make_trainer
from lit_rl.envs import check_env_id
from lit_rl.launcher.build import build_algorithm, build_datamodule, build_loggers, seed_run
from lit_rl.launcher.config import CONF_DIR, register_configs
from lit_rl.launcher.job_context import hydra_job, job_callbacks
from lit_rl.launcher.plain import config_dict
from lit_rl.launcher.resume import (
    completed_run,
    exit_preempted,
    register_resolvers,
    resolve_checkpoint,
    resume_history,
)
from lit_rl.launcher.run_info import write_run_info
from lit_rl.launcher.run_log import log, log_run_config, route_third_party_logs
from lit_rl.launcher.sweep_job import run_job
from lit_rl.utils.checks import check_accelerator

register_resolvers()
register_configs()
ignore_irrelevant_warnings()


def train(cfg: DictConfig, callbacks: Sequence[L.Callback] | None = None) -> float:
    """Run one training job described by ``cfg``; return its final evaluation return.

    ``callbacks`` are added after the run's own (evaluation, summary), e.g. Optuna pruning by ``lit_rl.tune``.
    """
    run_dir, choices = Path(hydra_job().runtime.output_dir), hydra_job().runtime.choices
    route_third_party_logs()
    check_env_id(cfg.env.id)
    check_accelerator(cfg.trainer.accelerator)
    ckpt_path, ckpt_step = resolve_checkpoint(cfg, run_dir)  # bad checkpoints fail here, before any env exists
    if cfg.resume == "auto" and (done := completed_run(run_dir, ckpt_step, cfg.total_timesteps)) is not None:
        return done  # a requeue that came after the run ended: nothing to train, nothing rewritten
    seed_run(cfg.seed)
    algo, datamodule = build_algorithm(cfg), build_datamodule(cfg)
    algo_name = choices.get("algo") or type(algo).__name__.lower()
    info = {"algo": algo_name, "env": cfg.env.id, "env_name": cfg.env.name, "seed": cfg.seed, "run_dir": str(run_dir)}
    if ckpt_path is not None and ckpt_step is not None:  # resolve_checkpoint gives both or neither
        info.update(resumed_from=ckpt_path, resumes=resume_history(run_dir, ckpt_path, ckpt_step))
    summary = RunSummary(run_dir / "summary.json", info)
    evaluation = PeriodicEvaluation(
        cfg.eval.freq, cfg.eval.episodes, cfg.eval.deterministic, checkpoint_dir=run_dir / "checkpoints", seed=cfg.seed
    )
    trainer_kwargs = config_dict(cfg.trainer)
    for key in ("steps_per_batch", "compile", "precision"):  # the algorithm's settings (build_algorithm)
        trainer_kwargs.pop(key)
    trainer = make_trainer(
        evaluation=evaluation,
        # Preemption after evaluation, so a signal during an evaluation still checkpoints its result.
        callbacks=[PreemptionCheckpoint(run_dir / "checkpoints" / "last.ckpt"), summary, *(callbacks or [])]
        + [*job_callbacks(), CheckpointIntervalCheck(cfg.eval.freq)],  # warns where a SLURM time limit is shorter than eval.freq
        progress_bar=trainer_kwargs.pop("enable_progress_bar"),
        logger=build_loggers(cfg, ckpt_step),
        default_root_dir=run_dir,
        **trainer_kwargs,
    )
    log_run_config(cfg, algo_name, run_dir, trainer)
    if ckpt_path is not None:
        log.info("Resuming from %s at env step %d", ckpt_path, ckpt_step)
    write_run_info(run_dir / "run_info.json", cfg.seed)
    try:
        # weights_only=False: our checkpoints carry the env's gymnasium spaces (own files, trusted).
        trainer.fit(algo, datamodule=datamodule, ckpt_path=ckpt_path, weights_only=False)
    except Preempted as stop:
        exit_preempted(stop, algo.num_timesteps, datamodule, run_dir)
    finally:
        datamodule.close()
    final = summary.summary.get("final_eval_return")
    return final if final is not None else -math.inf


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="train")
def main(cfg: DictConfig) -> float:
    return run_job(train, cfg)


if __name__ == "__main__":
    main()
