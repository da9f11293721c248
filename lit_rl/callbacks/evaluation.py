"""Periodic evaluation with best/last checkpointing, as a Lightning callback."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
from gymnasium.vector import VectorEnv

from lit_rl.data.trainer_fields import trainer_datamodule
from lit_rl.envs.sb3_view import episode_targets, records_episodes
from lit_rl.utils.io import log_to_files_only, write_atomically
from lit_rl.utils.moved import renamed

log = logging.getLogger(__name__)


def evaluate_episodes(
    predict: Callable[[np.ndarray], np.ndarray], env: VectorEnv, n_episodes: int, seed: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``n_episodes`` complete episodes on a same-step-autoreset vector env.

    ``predict`` maps a batch of observations to env actions. Returns the
    episode returns and lengths. Each env contributes a fixed share of the
    episodes, so short episodes are not over-represented (SB3's scheme).
    Where the env writes ``info["episode"]`` records (RecordEpisodeStatistics),
    an episode ends with its record and counts the record's return and length,
    as SB3's ``evaluate_policy`` reads its ``Monitor``: an Atari game is one
    episode of all its lives, with its raw score.
    """
    obs, _ = env.reset(seed=seed)
    n = env.num_envs
    targets = episode_targets(n_episodes, n)
    counts = np.zeros(n, dtype=int)
    current_ret, current_len = np.zeros(n), np.zeros(n, dtype=int)
    returns, lengths = [], []
    recorded = records_episodes(env)
    no_record = np.zeros(n, dtype=bool)
    while (counts < targets).any():
        obs, reward, terminated, truncated, infos = env.step(predict(obs))
        current_ret += reward
        current_len += 1
        dones = terminated | truncated
        if recorded:  # RecordEpisodeStatistics sums the same rewards; an Atari life lost has no record
            ended = np.flatnonzero(infos.get("_episode", no_record))
            ends = [(i, infos["episode"]["r"][i], infos["episode"]["l"][i]) for i in ended]
        else:
            ends = [(i, current_ret[i], current_len[i]) for i in np.flatnonzero(dones)]
        for i, episode_return, length in ends:
            if counts[i] < targets[i]:
                returns.append(episode_return)
                lengths.append(length)
                counts[i] += 1
        current_ret[dones], current_len[dones] = 0.0, 0
    return np.array(returns), np.array(lengths)


def previous_checkpoint(last: str | Path) -> Path:
    """Where the checkpoint before ``last`` is kept (``previous.ckpt`` beside it): a resume falls back to it when
    ``last`` is found damaged."""
    return Path(last).with_name("previous.ckpt")


def save_checkpoint_atomically(
    trainer: L.Trainer, path: Path, include_replay_buffer: bool = True, keep_previous: bool = False
) -> None:
    """Write a Lightning checkpoint to a temporary name, flush it to disk, then rename it over ``path``.

    A crash or kill during the write leaves the previous checkpoint intact.
    ``include_replay_buffer=False`` leaves the buffer out (weights-only uses
    such as ``best.ckpt``); ``keep_previous`` keeps the file ``path`` held as
    :func:`previous_checkpoint`.
    """
    module: Any = trainer.lightning_module  # the algorithm (typed Any like pl_module in the hooks below)
    module.check_finite_parameters()  # never replace a good checkpoint with a broken model
    previous = module.resume.include_replay_buffer
    module.resume.include_replay_buffer = include_replay_buffer
    try:
        write_atomically(
            path,
            lambda tmp: trainer.save_checkpoint(tmp, weights_only=False),
            previous=previous_checkpoint(path) if keep_previous else None,
        )
    finally:
        module.resume.include_replay_buffer = previous


class PeriodicEvaluation(L.Callback):
    """Evaluates every ``eval_freq`` env steps and at the end of training (the launcher's and ``learn(eval_freq=)``'s).

    Logs ``eval/mean_reward`` and ``eval/std_reward`` (deterministic policy,
    ``n_eval_episodes`` episodes on the datamodule's eval env) and, with
    ``checkpoint_dir``, saves ``last.ckpt`` after every evaluation (the one
    before it kept as ``previous.ckpt``) and ``best.ckpt`` when the mean
    return improves.
    """

    def __init__(
        self,
        eval_freq: int = 10_000,
        n_eval_episodes: int = 10,
        deterministic: bool = True,
        checkpoint_dir: str | Path | None = None,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        if eval_freq < 1 or n_eval_episodes < 1:
            raise ValueError(f"eval.freq={eval_freq} and eval.episodes={n_eval_episodes} must both be >= 1")
        self.eval_freq, self.n_eval_episodes, self.deterministic = eval_freq, n_eval_episodes, deterministic
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self.seed = seed
        self.best_mean_reward = -np.inf
        self.last_mean_reward = np.nan
        self.last_eval_step = -1
        self.evaluations: list[dict[str, float]] = []
        self._next_eval = eval_freq
        self.eval_seconds = 0.0

    def on_fit_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        self._next_eval = (pl_module.num_timesteps // self.eval_freq + 1) * self.eval_freq

    def next_batch_end(self, pl_module: Any) -> int:
        """The env step of the next evaluation: the algorithm ends its Lightning batch there."""
        return self._next_eval

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if pl_module.num_timesteps >= self._next_eval:
            self.evaluate(trainer, pl_module)
            self._next_eval = (pl_module.num_timesteps // self.eval_freq + 1) * self.eval_freq

    def on_train_end(self, trainer: L.Trainer, pl_module: Any) -> None:
        if pl_module.num_timesteps != self.last_eval_step:
            self.evaluate(trainer, pl_module)

    def evaluate(self, trainer: L.Trainer, pl_module: Any) -> float:
        """Evaluate now, log, checkpoint; return the mean return."""
        env = trainer_datamodule(trainer).eval_env
        if env is None:
            return float("nan")
        start = time.perf_counter()
        seed = None if self.seed is None else self.seed + len(self.evaluations)
        returns, lengths = evaluate_episodes(
            lambda obs: pl_module.predict(obs, deterministic=self.deterministic)[0], env, self.n_eval_episodes, seed
        )
        self.eval_seconds += time.perf_counter() - start
        mean, std = float(returns.mean()), float(returns.std())
        self.last_mean_reward, self.last_eval_step = mean, pl_module.num_timesteps
        self.evaluations.append({"step": pl_module.num_timesteps, "mean_reward": mean, "std_reward": std})
        pl_module.log_metrics(
            {"eval/mean_reward": mean, "eval/std_reward": std, "eval/mean_ep_length": float(lengths.mean())}
        )
        improved = mean > self.best_mean_reward
        self.best_mean_reward = max(self.best_mean_reward, mean)
        log.info(
            "Eval at env step %d: return %.2f ± %.2f over %d episodes (mean length %.0f, %.1f s)%s",
            pl_module.num_timesteps,
            mean,
            std,
            len(returns),
            float(lengths.mean()),
            time.perf_counter() - start,
            ", new best" if improved else f", best {self.best_mean_reward:.2f}",
        )
        if self.checkpoint_dir is not None:
            save_checkpoint_atomically(trainer, self.checkpoint_dir / "last.ckpt", keep_previous=True)
            # train.log only: which step a requeued job's last.ckpt holds, when reading the log after a crash
            log_to_files_only(log, logging.INFO, "Checkpoint last.ckpt written at env step %d", pl_module.num_timesteps)
            if improved:
                save_checkpoint_atomically(trainer, self.checkpoint_dir / "best.ckpt", include_replay_buffer=False)
        return mean

    @property
    def state_key(self) -> str:
        # The class was called EvalCallback; checkpoints keep that key so runs saved before the rename resume.
        return "EvalCallback"

    def state_dict(self) -> dict[str, Any]:
        return {
            "best_mean_reward": self.best_mean_reward,
            "evaluations": self.evaluations,
            "last_eval_step": self.last_eval_step,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.best_mean_reward = state_dict["best_mean_reward"]
        self.evaluations = list(state_dict["evaluations"])
        self.last_eval_step = state_dict["last_eval_step"]


def __getattr__(name: str) -> Any:
    # The Lightning callback was ``EvalCallback`` here; that name now means SB3's (lit_rl.callbacks.EvalCallback).
    return renamed(__name__, name, {"EvalCallback": (PeriodicEvaluation, (
        "lit_rl.callbacks.evaluation.EvalCallback is renamed lit_rl.callbacks.PeriodicEvaluation "
        "(lit_rl.callbacks.EvalCallback is now SB3's EvalCallback)"))})
