"""The entrypoint: ``python -m lit_rl.train algo=crossq env=HalfCheetah-v4 [key=value ...]``.

Composes the Hydra config, builds algorithm, datamodule, loggers and callbacks
from it, runs ``Trainer.fit`` and returns the final evaluation return (the
objective sweepers optimise).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import hydra
import lightning as L
from hydra.core.hydra_config import HydraConfig
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig, OmegaConf

from lit_rl.callbacks import EnvStepProgressBar, EvalCallback, RunSummary
from lit_rl.config import register_configs
from lit_rl.data import RLDataModule
from lit_rl.envs import check_env_id

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
    algo = instantiate(
        cfg.algo,
        _convert_="all",
        seed=cfg.seed,
        buffer_size=buffer_size,
        replay_buffer_class=buffer_class,
        replay_buffer_kwargs=buffer_kwargs,
    )
    algo.configure_run(cfg.total_timesteps, log_freq=cfg.log_freq)
    return algo


def train(cfg: DictConfig, callbacks: list[L.Callback] | None = None) -> float:
    """Run one training job described by ``cfg``; return its final evaluation return.

    ``callbacks`` are added after the run's own (evaluation, summary), e.g. Optuna pruning by ``lit_rl.tune``.
    """
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    check_env_id(cfg.env.id)
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
    summary = RunSummary(
        run_dir / "summary.json", {"algo": algo_name, "env": cfg.env.id, "seed": cfg.seed, "run_dir": str(run_dir)}
    )
    callbacks = [evaluation, summary, *(callbacks or [])]
    trainer_kwargs = OmegaConf.to_container(cfg.trainer, resolve=True)
    if trainer_kwargs["enable_progress_bar"]:
        callbacks.append(EnvStepProgressBar())
    trainer = L.Trainer(
        **trainer_kwargs,
        max_epochs=-1,  # the algorithm stops the run at total_timesteps env steps
        logger=[instantiate(c) for c in cfg.logger.values()],
        callbacks=callbacks,
        default_root_dir=run_dir,
        enable_checkpointing=False,  # EvalCallback writes last.ckpt and best.ckpt
        num_sanity_val_steps=0,
    )
    try:
        # weights_only=False: our checkpoints carry the env's gymnasium spaces (own files, trusted).
        trainer.fit(algo, datamodule=datamodule, ckpt_path=cfg.ckpt_path, weights_only=False)
    finally:
        datamodule.close()
    final = summary.summary.get("final_eval_return")
    return final if final is not None else -math.inf


@hydra.main(version_base="1.3", config_path="../conf", config_name="train")
def main(cfg: DictConfig) -> float:
    return train(cfg)


if __name__ == "__main__":
    main()
