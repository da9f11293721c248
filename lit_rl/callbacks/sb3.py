"""Stable-Baselines3-style callbacks for ``learn(callback=...)``, fired after every vector-env step.

Same API as ``stable_baselines3.common.callbacks``: ``_on_step`` returning
False stops training at that step (before any further gradient step).
:class:`SB3CallbackAdapter` runs them inside a Lightning fit, alongside
ordinary Lightning callbacks.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from lit_rl.callbacks.evaluation import evaluate_policy
from lit_rl.envs.make import as_vector_env
from lit_rl.envs.sb3_vec_env import SB3VecEnvAdapter, sb3_vec_normalize
from lit_rl.io import write_atomically


class BaseCallback:
    """Base class: override ``_on_step`` (and optionally the other ``_on_*`` hooks)."""

    def __init__(self, verbose: int = 0) -> None:
        self.verbose = verbose
        self.model: Any = None
        self.n_calls = 0  # vector-env steps seen
        self.num_timesteps = 0  # env steps (n_envs per call)
        self.locals: dict[str, Any] = {}
        self.globals: dict[str, Any] = {}
        self.parent: BaseCallback | None = None

    @property
    def logger(self) -> Any:
        """The model's SB3-style logger (``self.logger.record(key, value)``)."""
        return self.model.logger

    @property
    def training_env(self) -> Any:
        """The env the model trains on: ``model.get_env()`` (a user's SB3 VecEnv stays one), as in SB3."""
        get_env = getattr(self.model, "get_env", None)
        env = get_env() if get_env is not None else None
        return env if env is not None else self.model.env

    def init_callback(self, model: Any) -> None:
        self.model = model
        self._init_callback()

    def _init_callback(self) -> None:
        pass

    def on_training_start(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        self.locals, self.globals = locals_, globals_
        self.num_timesteps = self.model.num_timesteps
        self._on_training_start()

    def _on_training_start(self) -> None:
        pass

    def on_rollout_start(self) -> None:
        self._on_rollout_start()

    def _on_rollout_start(self) -> None:
        pass

    def on_step(self) -> bool:
        """Called after each vector-env step; False stops training."""
        self.n_calls += 1
        self.num_timesteps = self.model.num_timesteps
        return self._on_step()

    def _on_step(self) -> bool:
        return True

    def on_rollout_end(self) -> None:
        self._on_rollout_end()

    def _on_rollout_end(self) -> None:
        pass

    def on_training_end(self) -> None:
        self._on_training_end()

    def _on_training_end(self) -> None:
        pass

    def update_locals(self, locals_: dict[str, Any]) -> None:
        self.locals.update(locals_)
        self.update_child_locals(locals_)

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        pass


class EventCallback(BaseCallback):
    """A callback that triggers a child callback on an event (its return value is the child's)."""

    def __init__(self, callback: BaseCallback | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.callback = callback
        if callback is not None:
            callback.parent = self

    def init_callback(self, model: Any) -> None:
        super().init_callback(model)
        if self.callback is not None:
            self.callback.init_callback(model)

    def _on_training_start(self) -> None:
        if self.callback is not None:
            self.callback.on_training_start(self.locals, self.globals)

    def _on_event(self) -> bool:
        return self.callback.on_step() if self.callback is not None else True

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        if self.callback is not None:
            self.callback.update_locals(locals_)


class CallbackList(BaseCallback):
    """Several callbacks in order; training stops if any returns False (all still run)."""

    def __init__(self, callbacks: list[BaseCallback | Callable[..., bool]]) -> None:
        super().__init__()
        self.callbacks = [as_sb3_callback(cb) for cb in callbacks]

    def _init_callback(self) -> None:
        for cb in self.callbacks:
            cb.init_callback(self.model)

    def _on_training_start(self) -> None:
        for cb in self.callbacks:
            cb.on_training_start(self.locals, self.globals)

    def _on_rollout_start(self) -> None:
        for cb in self.callbacks:
            cb.on_rollout_start()

    def _on_step(self) -> bool:
        return all([cb.on_step() for cb in self.callbacks])  # a list: every callback runs

    def _on_rollout_end(self) -> None:
        for cb in self.callbacks:
            cb.on_rollout_end()

    def _on_training_end(self) -> None:
        for cb in self.callbacks:
            cb.on_training_end()

    def update_child_locals(self, locals_: dict[str, Any]) -> None:
        for cb in self.callbacks:
            cb.update_locals(locals_)


class ConvertCallback(BaseCallback):
    """A function ``(locals, globals) -> bool`` as a callback."""

    def __init__(self, callback: Callable[[dict[str, Any], dict[str, Any]], bool], verbose: int = 0) -> None:
        super().__init__(verbose)
        self.callback = callback

    def _on_step(self) -> bool:
        return bool(self.callback(self.locals, self.globals))


class EveryNTimesteps(EventCallback):
    """Trigger ``callback`` every ``n_steps`` env steps."""

    def __init__(self, n_steps: int, callback: BaseCallback) -> None:
        super().__init__(callback)
        if n_steps < 1:
            raise ValueError(f"n_steps={n_steps} must be >= 1")
        self.n_steps, self.last_time_trigger = n_steps, 0

    def _on_step(self) -> bool:
        if self.num_timesteps - self.last_time_trigger >= self.n_steps:
            self.last_time_trigger = self.num_timesteps
            return self._on_event()
        return True


class LogEveryNTimesteps(EveryNTimesteps):
    """Write the model's logs (:meth:`dump_logs`) every ``n_steps`` env steps."""

    def __init__(self, n_steps: int) -> None:
        super().__init__(n_steps, ConvertCallback(self._log_data))

    def _log_data(self, _locals: dict[str, Any], _globals: dict[str, Any]) -> bool:
        self.model.dump_logs()
        return True


class StopTrainingOnMaxEpisodes(BaseCallback):
    """Stop once every env has played ``max_episodes`` episodes on average (``max_episodes * n_envs`` in all)."""

    def __init__(self, max_episodes: int, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.max_episodes, self._total_max_episodes, self.n_episodes = max_episodes, max_episodes, 0

    def _init_callback(self) -> None:
        self._total_max_episodes = self.max_episodes * self.training_env.num_envs

    def _on_step(self) -> bool:
        self.n_episodes += int(np.sum(self.locals["dones"]))
        continue_training = self.n_episodes < self._total_max_episodes
        if self.verbose and not continue_training:
            print(f"Stopping training at {self.num_timesteps} steps: {self.n_episodes} episodes played "
                  f"(max_episodes={self.max_episodes} per env)")  # fmt: skip
        return continue_training


class CheckpointCallback(BaseCallback):
    """Save the model every ``save_freq`` calls to ``save_path/<name_prefix>_<steps>_steps.zip`` (SB3's names).

    ``save_replay_buffer=True`` also writes ``<name_prefix>_replay_buffer_<steps>_steps.pkl``,
    ``save_vecnormalize=True`` the statistics of an SB3 ``VecNormalize`` training env to
    ``<name_prefix>_vecnormalize_<steps>_steps.pkl`` (``VecNormalize.load`` reads it).
    Model and buffer files are written atomically.
    """

    def __init__(
        self,
        save_freq: int,
        save_path: str | Path,
        name_prefix: str = "rl_model",
        save_replay_buffer: bool = False,
        save_vecnormalize: bool = False,
        verbose: int = 0,
    ) -> None:
        super().__init__(verbose)
        if save_freq < 1:
            raise ValueError(f"save_freq={save_freq} must be >= 1")
        self.save_freq, self.save_path, self.name_prefix = save_freq, Path(save_path), name_prefix
        self.save_replay_buffer, self.save_vecnormalize = save_replay_buffer, save_vecnormalize

    def _init_callback(self) -> None:
        self.save_path.mkdir(parents=True, exist_ok=True)

    def _checkpoint_path(self, checkpoint_type: str = "", extension: str = "zip") -> Path:
        return self.save_path / f"{self.name_prefix}_{checkpoint_type}{self.num_timesteps}_steps.{extension}"

    def _on_step(self) -> bool:
        if self.n_calls % self.save_freq == 0:
            path = self.model.save(self._checkpoint_path())
            if self.verbose >= 2:
                print(f"Saving model checkpoint to {path}")
            if self.save_replay_buffer and self.model.replay_buffer is not None:
                path = self.model.save_replay_buffer(self._checkpoint_path("replay_buffer_", "pkl"))
                if self.verbose >= 2:
                    print(f"Saving model replay buffer checkpoint to {path}")
            vec_normalize = sb3_vec_normalize(self.training_env) if self.save_vecnormalize else None
            if vec_normalize is not None:
                path = self._checkpoint_path("vecnormalize_", "pkl")
                vec_normalize.save(path)
                if self.verbose >= 2:
                    print(f"Saving model VecNormalize to {path}")
        return True


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
        returns, lengths = evaluate_policy(self._predict, recorder, self.n_eval_episodes, seed)
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
    """Records ``info["is_success"]`` of the episodes :func:`evaluate_policy` counts (SB3's ``_is_success_buffer``).

    Those are the first ``(n_episodes + i) // num_envs`` episodes of env ``i``, as evaluate_policy counts them.
    """

    def __init__(self, env: VectorEnv, n_episodes: int) -> None:
        super().__init__(env)
        n = env.num_envs
        self.targets = np.array([(n_episodes + i) // n for i in range(n)])
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


class StopTrainingOnRewardThreshold(BaseCallback):
    """Use as ``callback_on_new_best``: stop once the best mean return reaches ``reward_threshold``."""

    def __init__(self, reward_threshold: float, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.reward_threshold = reward_threshold

    def _on_step(self) -> bool:
        if not isinstance(self.parent, EvalCallback):
            raise TypeError("StopTrainingOnRewardThreshold must be used as EvalCallback(callback_on_new_best=...)")
        return not self.parent.best_mean_reward >= self.reward_threshold


class StopTrainingOnNoModelImprovement(BaseCallback):
    """Use as ``callback_after_eval``: stop after ``max_no_improvement_evals`` evaluations without a new best.

    The first ``min_evals`` evaluations never stop training.
    """

    def __init__(self, max_no_improvement_evals: int, min_evals: int = 0, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.max_no_improvement_evals, self.min_evals = max_no_improvement_evals, min_evals
        self.last_best_mean_reward, self.no_improvement_evals = -np.inf, 0

    def _on_step(self) -> bool:
        if not isinstance(self.parent, EvalCallback):
            raise TypeError("StopTrainingOnNoModelImprovement must be used as EvalCallback(callback_after_eval=...)")
        if self.n_calls > self.min_evals:
            if self.parent.best_mean_reward > self.last_best_mean_reward:
                self.no_improvement_evals = 0
            else:
                self.no_improvement_evals += 1
        self.last_best_mean_reward = self.parent.best_mean_reward
        return self.no_improvement_evals <= self.max_no_improvement_evals


def _savez(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as f:  # a file object: np.savez would append ".npz" to a temporary name
        np.savez(f, **arrays)


def as_sb3_callback(callback: Any) -> BaseCallback | None:
    """``None``, a callback, a list of callbacks or a function -> one :class:`BaseCallback` (or None)."""
    if callback is None or isinstance(callback, BaseCallback):
        return callback
    if isinstance(callback, (list, tuple)):
        return CallbackList([as_sb3_callback(cb) for cb in callback])
    if callable(callback):
        return ConvertCallback(callback)
    raise TypeError(f"callback={callback!r} is not a BaseCallback, a list of them or a function (locals, globals)")


class SB3CallbackAdapter(L.Callback):
    """Runs an SB3-style callback inside a Lightning fit: the algorithm calls it after every env step."""

    def __init__(self, callback: BaseCallback) -> None:
        super().__init__()
        self.callback = callback

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        self.callback.init_callback(pl_module)
        self.callback.on_training_start({}, {})
        pl_module.step_callback = self.callback

    def on_train_end(self, trainer: L.Trainer, pl_module: Any) -> None:
        self.callback.on_training_end()

    def teardown(self, trainer: L.Trainer, pl_module: Any, stage: str) -> None:
        pl_module.step_callback = None
