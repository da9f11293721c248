"""SB3's ``EvalCallback``: periodic evaluation, the best model, ``evaluations.npz``."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from lit_rl.callbacks.evaluation import evaluate_episodes
from lit_rl.callbacks.sb3.base import BaseCallback, EventCallback
from lit_rl.envs.make import as_vector_env
from lit_rl.envs.sb3_vec_env import SB3VecEnvAdapter, sb3_vec_normalize
from lit_rl.envs.sb3_view import episode_targets
from lit_rl.utils.io import write_atomically


class EvalCallback(EventCallback):
    """Evaluate every ``eval_freq`` calls on ``eval_env``; keep the best model and the history.

    ``eval_env``: an env id, a gymnasium Env or VectorEnv, or an SB3 VecEnv
    (whose ``VecNormalize`` statistics are synced from the training env's
    before each evaluation, as SB3 does). ``best_model_save_path``:
    ``best_model.zip`` written when the mean return improves; ``log_path``:
    ``evaluations.npz`` (timesteps, results, ep_lengths).
    ``callback_on_new_best`` fires on improvement, ``callback_after_eval``
    after every evaluation; either stops training by returning False.
    ``warn``: warn when an SB3 VecEnv's envs lack a ``Monitor`` (SB3's
    warning; lit_rl counts rewards itself). ``render``: render each step.
    """

    def __init__(
        self,
        eval_env: str | Any,
        callback_on_new_best: BaseCallback | None = None,
        callback_after_eval: BaseCallback | None = None,
        n_eval_episodes: int = 5,
        eval_freq: int = 10_000,
        log_path: str | Path | None = None,
        best_model_save_path: str | Path | None = None,
        deterministic: bool = True,
        render: bool = False,
        verbose: int = 1,
        warn: bool = True,
        seed: int | None = None,
    ) -> None:
        super().__init__(callback_after_eval, verbose)
        self.callback_on_new_best = callback_on_new_best
        if callback_on_new_best is not None:
            callback_on_new_best.parent = self
        if eval_freq < 1 or n_eval_episodes < 1:
            raise ValueError(f"eval_freq={eval_freq} and n_eval_episodes={n_eval_episodes} must both be >= 1")
        self.eval_env: VectorEnv = as_vector_env(eval_env)
        self.render, self.warn = render, warn
        self.n_eval_episodes, self.eval_freq, self.deterministic = n_eval_episodes, eval_freq, deterministic
        self.log_path = Path(log_path) / "evaluations.npz" if log_path is not None else None
        self.best_model_save_path = Path(best_model_save_path) if best_model_save_path is not None else None
        self.seed = seed
        self.best_mean_reward, self.last_mean_reward = -np.inf, -np.inf
        self.evaluations_timesteps: list[int] = []
        self.evaluations_results: list[np.ndarray] = []
        self.evaluations_length: list[np.ndarray] = []
        self.evaluations_successes: list[list[bool]] = []
        self._is_success_buffer: list[bool] = []  # info["is_success"] of the last evaluation's episodes (SB3's name)

    def _init_callback(self) -> None:
        super()._init_callback()
        if self.callback_on_new_best is not None:
            self.callback_on_new_best.init_callback(self.model)
        for folder in (self.best_model_save_path, self.log_path.parent if self.log_path else None):
            if folder is not None:
                folder.mkdir(parents=True, exist_ok=True)
        base = self.eval_env.unwrapped
        if self.warn and isinstance(base, SB3VecEnvAdapter) and not base.has_monitor:
            warnings.warn(  # SB3's words
                "Evaluation environment is not wrapped with a ``Monitor`` wrapper. This may result in reporting "
                "modified episode lengths and rewards, if other wrappers happen to modify these. Consider wrapping "
                "environment first with ``Monitor`` wrapper.",
                UserWarning,
                stacklevel=2,
            )

    def _sync_normalization(self) -> None:
        """Copy the training env's ``VecNormalize`` statistics into the eval env's (SB3's sync_envs_normalization)."""
        eval_norm = sb3_vec_normalize(self.eval_env)
        train_norm = sb3_vec_normalize(self.training_env) if eval_norm is not None else None
        if train_norm is not None:
            from stable_baselines3.common.vec_env import sync_envs_normalization

            sync_envs_normalization(train_norm, eval_norm)

    def _predict(self, obs: Any) -> np.ndarray:
        if self.render:
            self.eval_env.render()
        return self.model.predict(obs, deterministic=self.deterministic)[0]

    def _on_step(self) -> bool:
        if self.n_calls % self.eval_freq != 0:
            return True
        seed = None if self.seed is None else self.seed + len(self.evaluations_timesteps)
        self._sync_normalization()
        recorder = EpisodeSuccesses(self.eval_env, self.n_eval_episodes)
        returns, lengths = evaluate_episodes(self._predict, recorder, self.n_eval_episodes, seed)
        self._is_success_buffer = recorder.successes
        self.evaluations_timesteps.append(self.num_timesteps)
        self.evaluations_results.append(returns)
        self.evaluations_length.append(lengths)
        if self._is_success_buffer:
            self.evaluations_successes.append(self._is_success_buffer)
        if self.log_path is not None:
            history = {
                "timesteps": np.array(self.evaluations_timesteps),
                "results": np.array(self.evaluations_results),
                "ep_lengths": np.array(self.evaluations_length),
            }
            if self.evaluations_successes:
                history["successes"] = np.array(self.evaluations_successes)
            write_atomically(self.log_path, lambda tmp: _savez(tmp, history))
        self.last_mean_reward = float(np.mean(returns))
        metrics = {"eval/mean_reward": self.last_mean_reward, "eval/std_reward": float(np.std(returns)),
                   "eval/mean_ep_length": float(np.mean(lengths))}  # fmt: skip
        if self._is_success_buffer:
            metrics["eval/success_rate"] = float(np.mean(self._is_success_buffer))
        self.model.log_metrics(metrics)
        if self.verbose:
            print(f"Eval num_timesteps={self.num_timesteps}, episode_reward={self.last_mean_reward:.2f} +/- {np.std(returns):.2f}")
        continue_training = True
        if self.last_mean_reward > self.best_mean_reward:
            self.best_mean_reward = self.last_mean_reward
            if self.best_model_save_path is not None:
                self.model.save(self.best_model_save_path / "best_model.zip")
            if self.callback_on_new_best is not None:
                continue_training = self.callback_on_new_best.on_step()
        if self.callback is not None:
            continue_training = self._on_event() and continue_training
        return continue_training


class EpisodeSuccesses(VectorWrapper):
    """Records ``info["is_success"]`` of the episodes :func:`evaluate_episodes` counts (SB3's ``_is_success_buffer``).

    Those are the first ``(n_episodes + i) // num_envs`` episodes of env ``i``, as evaluate_episodes counts them.
    """

    def __init__(self, env: VectorEnv, n_episodes: int) -> None:
        super().__init__(env)
        n = env.num_envs
        self.targets = episode_targets(n_episodes, n)
        self.counts = np.zeros(n, dtype=int)
        self.successes: list[bool] = []

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        final_info = infos.get("final_info", {})
        for i in np.flatnonzero(terminated | truncated):
            if self.counts[i] < self.targets[i]:
                self.counts[i] += 1
                if "is_success" in final_info and final_info["_is_success"][i]:
                    self.successes.append(bool(final_info["is_success"][i]))
        return obs, rewards, terminated, truncated, infos


def _savez(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as f:  # a file object: np.savez would append ".npz" to a temporary name
        np.savez(f, allow_pickle=True, **arrays)  # numpy's default, named so that ``arrays`` maps onto **kwds only
