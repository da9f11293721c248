"""OffPolicyAlgorithm: the LightningModule every off-policy algorithm builds on.

One Lightning ``training_step`` = ``steps_per_batch`` iterations of
"collect ``train_freq`` env steps -> do ``gradient_steps`` updates", with
Stable-Baselines3's semantics for ``train_freq``, ``gradient_steps``,
``learning_starts`` and ``n_envs``. The Trainer stops when the algorithm has
collected ``total_timesteps`` env steps.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

import gymnasium as gym
import lightning as L
import numpy as np
import torch
from gymnasium import spaces

from lit_rl.algorithms.noise import ActionNoise, VectorizedActionNoise, check_action_noise, make_action_noise
from lit_rl.algorithms.plain_optimization import lightning_wrappers_needed
from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer
from lit_rl.checks import check_float, check_int

TRAIN_FREQ_UNITS = ("step", "episode")


class TrainFreq(NamedTuple):
    """How much to collect between two rounds of gradient steps."""

    frequency: int
    unit: str  # "step" or "episode"


def parse_train_freq(train_freq: Any) -> TrainFreq:
    """Accept ``4``, ``(4, "step")``, ``[2, "episode"]``; raise naming the value otherwise."""
    if isinstance(train_freq, TrainFreq):
        return train_freq
    if isinstance(train_freq, (list, tuple)):
        if len(train_freq) != 2:
            raise ValueError(f"train_freq={train_freq!r} must be an integer or a pair (frequency, unit)")
        frequency, unit = train_freq
    else:
        frequency, unit = train_freq, "step"
    if unit not in TRAIN_FREQ_UNITS:
        raise ValueError(f"train_freq unit {unit!r} is not allowed; allowed: {list(TRAIN_FREQ_UNITS)}")
    return TrainFreq(check_int("train_freq", frequency, minimum=1), unit)


class OffPolicyAlgorithm(L.LightningModule):
    """Base class of CrossQ, SAC, TD3, DDPG and DQN (Stable-Baselines3 semantics).

    Subclasses implement :meth:`build_networks` (given the env's spaces),
    :meth:`configure_optimizers`, :meth:`update` (one gradient step on a
    sampled batch) and :meth:`policy_action` (actions for observations).
    The networks are built in ``setup`` once the datamodule's env exists, so
    a model can be created before it sees an env, as in Stable-Baselines3.
    """

    automatic_optimization = False
    supported_action_spaces: tuple[type[spaces.Space], ...] = (spaces.Box,)

    def __init__(
        self,
        policy: str = "MlpPolicy",
        learning_rate: float | Callable[[float], float] = 3e-4,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        steps_per_batch: int = 1,
        seed: int | None = None,
        verbose: int = 0,
        action_noise: ActionNoise | str | None = None,
        action_noise_std: float = 0.1,
    ) -> None:
        super().__init__()
        if policy != "MlpPolicy":
            raise ValueError(f"policy={policy!r} is not available; allowed: ['MlpPolicy']")
        if not callable(learning_rate):
            check_float("learning_rate", learning_rate, 0.0, math.inf)
        self.learning_rate = learning_rate
        self.buffer_size = check_int("buffer_size", buffer_size, minimum=1)
        self.batch_size = check_int("batch_size", batch_size, minimum=1)
        if self.batch_size > self.buffer_size:
            raise ValueError(
                f"batch_size={batch_size} is larger than buffer_size={buffer_size}; allowed: batch_size <= buffer_size"
            )
        self.learning_starts = check_int("learning_starts", learning_starts, minimum=0)
        self.tau = check_float("tau", tau, 0.0, 1.0)
        self.gamma = check_float("gamma", gamma, 0.0, 1.0)
        self.train_freq = parse_train_freq(train_freq)
        self.gradient_steps = check_int("gradient_steps", gradient_steps, minimum=0, allowed_extra=(-1,))
        self.steps_per_batch = check_int("steps_per_batch", steps_per_batch, minimum=1)
        self.stats_window_size = check_int("stats_window_size", stats_window_size, minimum=1)
        self.replay_buffer_class = replay_buffer_class or ReplayBuffer
        self.replay_buffer_kwargs = dict(replay_buffer_kwargs or {})
        self.policy_kwargs = dict(policy_kwargs or {})
        self.seed, self.verbose = seed, verbose
        # Exploration noise on policy actions (Box only): an ActionNoise, or a name built in on_fit_start
        # once the action dimension is known ("normal" | "ornstein-uhlenbeck", std action_noise_std).
        check_action_noise(action_noise)
        self.action_noise_std = check_float("action_noise_std", action_noise_std, 0.0, math.inf, low_open=False)
        self.action_noise_spec = action_noise
        self.action_noise: ActionNoise | None = action_noise if isinstance(action_noise, ActionNoise) else None

        self.observation_space: spaces.Space | None = None
        self.action_space: spaces.Space | None = None
        self.replay_buffer: ReplayBuffer | None = None
        # RL counters: they live on the algorithm and travel in checkpoints.
        self.num_timesteps = 0
        self.total_timesteps = 0
        self.log_freq = 1_000
        self._n_updates = 0
        self._episode_num = 0
        self._last_obs: np.ndarray | None = None
        self.ep_returns: deque[float] = deque(maxlen=self.stats_window_size)
        self.ep_lengths: deque[int] = deque(maxlen=self.stats_window_size)
        self._metric_sums: dict[str, torch.Tensor] = {}
        self._metric_counts: dict[str, int] = {}
        self.latest_metrics: dict[str, float] = {}
        self._next_log = 0
        self._learning_seconds = 0.0
        self._learning_steps = 0
        self._fit_start_time = time.perf_counter()
        self._fit_start_steps = 0

    # ------------------------------------------------------------------ subclass API
    def build_networks(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        """Create the networks for these spaces (called once, before device placement)."""
        raise NotImplementedError

    def update(self, batch: ReplayBatch) -> None:
        """One gradient step on ``batch``; record losses with :meth:`record`."""
        raise NotImplementedError

    def policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """Actions for a batch of observations, in the algorithm's action scale ([-1, 1] for Box)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ optimizer calls in update()
    def on_train_start(self) -> None:
        self._plain_optimization = not lightning_wrappers_needed(self.trainer, self)

    def optimizers(self, use_pl_optimizer: bool = True):
        """The optimizers; the plain torch ones when Lightning's wrappers would add nothing but cost."""
        if getattr(self, "_plain_optimization", False) and self._trainer is not None:
            optimizers = self._trainer.optimizers
            return optimizers[0] if len(optimizers) == 1 else optimizers
        return super().optimizers(use_pl_optimizer)

    def manual_backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """``loss.backward()``; through Lightning's strategy unless the plain path applies."""
        if getattr(self, "_plain_optimization", False) and self._trainer is not None:
            loss.backward(*args, **kwargs)
        else:
            super().manual_backward(loss, *args, **kwargs)

    # ------------------------------------------------------------------ run configuration
    def configure_run(self, total_timesteps: int, log_freq: int = 1_000, reset_num_timesteps: bool = True) -> None:
        """Set the env-step budget of the next ``Trainer.fit`` (``learn`` and ``train.py`` call this)."""
        check_int("total_timesteps", total_timesteps, minimum=1)
        self.log_freq = check_int("log_freq", log_freq, minimum=1)
        if reset_num_timesteps:
            self.num_timesteps, self._episode_num = 0, 0
            self._last_obs = None
            self.total_timesteps = total_timesteps
        else:
            self.total_timesteps = self.num_timesteps + total_timesteps

    def check_spaces(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        """Raise a ValueError when this algorithm cannot handle these spaces."""
        name = type(self).__name__
        if not isinstance(action_space, self.supported_action_spaces):
            allowed = [s.__name__ for s in self.supported_action_spaces]
            raise ValueError(
                f"{name} does not support {type(action_space).__name__} action spaces ({action_space}); allowed: {allowed}"
            )
        if isinstance(action_space, spaces.Box) and not (
            np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))
        ):
            raise ValueError(f"{name} needs a Box action space with finite bounds; got {action_space}")
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
            raise ValueError(
                f"{name} with policy='MlpPolicy' needs a flat Box observation space; got {observation_space}"
            )

    # ------------------------------------------------------------------ Lightning hooks
    @property
    def env(self) -> gym.vector.VectorEnv:
        """The training vector env (owned by the datamodule)."""
        return self.trainer.datamodule.train_env

    def setup(self, stage: str) -> None:
        env = self.env
        obs_space, act_space = env.single_observation_space, env.single_action_space
        if self.observation_space is None:
            self.check_spaces(obs_space, act_space)
            self.observation_space, self.action_space = obs_space, act_space
            if self.seed is not None:
                torch.manual_seed(self.seed)  # network initialisation follows the model's seed, as in SB3
            self.build_networks(obs_space, act_space)
        elif obs_space != self.observation_space or act_space != self.action_space:
            raise ValueError(
                f"{type(self).__name__} was built for observation space {self.observation_space} and action space "
                f"{self.action_space}; the env has {obs_space} and {act_space}"
            )
        if self.train_freq.unit == "episode" and env.num_envs > 1:
            raise ValueError(
                f"train_freq={tuple(self.train_freq)} counts episodes, which needs n_envs=1; got n_envs={env.num_envs}"
            )

    def on_fit_start(self) -> None:
        if self.total_timesteps == 0:
            raise RuntimeError("call configure_run(total_timesteps) (or learn()) before Trainer.fit")
        if self.total_timesteps <= self.num_timesteps:
            raise ValueError(
                f"total_timesteps={self.total_timesteps} is already reached: the model has {self.num_timesteps} env steps "
                "(restored from ckpt_path); raise total_timesteps to continue training"
            )
        env = self.env
        self._env = env
        self._n_envs = env.num_envs
        if self.replay_buffer is None:
            self.replay_buffer = self.replay_buffer_class(
                buffer_size=self.buffer_size,
                observation_space=self.observation_space,
                action_space=self.action_space,
                n_envs=env.num_envs,
                device=self.device,
                seed=self.seed,
                **self.replay_buffer_kwargs,
            )
        if self._last_obs is None:
            self._last_obs, _ = env.reset(seed=self.seed)
        # Exploration noise, as SB3's learn(): built once the action dim is known, one copy per env,
        # reset at the start of every fit.
        if self.action_noise_spec is not None:
            if not isinstance(self.action_space, spaces.Box):
                raise ValueError(
                    f"action_noise={self.action_noise_spec!r} needs a Box action space; got {self.action_space}; "
                    "allowed: action_noise=None"
                )
            if self.action_noise is None:
                action_dim = int(np.prod(self.action_space.shape))
                self.action_noise = make_action_noise(
                    self.action_noise_spec, action_dim, self.action_noise_std, self.seed
                )
            if self._n_envs > 1 and not isinstance(self.action_noise, VectorizedActionNoise):
                self.action_noise = VectorizedActionNoise(self.action_noise, self._n_envs)
            if isinstance(self.action_noise, VectorizedActionNoise) and self.action_noise.n_envs != self._n_envs:
                raise ValueError(
                    f"action_noise holds {self.action_noise.n_envs} env copies but the env has n_envs={self._n_envs}"
                )
            self.action_noise.reset()
        self._fit_start_time, self._fit_start_steps = time.perf_counter(), self.num_timesteps
        self._next_log = self.num_timesteps + self.log_freq

    def training_step(self, batch: Any, batch_idx: int) -> None:
        for _ in range(self.steps_per_batch):
            learning = self.num_timesteps > self.learning_starts
            start = time.perf_counter()
            collected = self.collect_rollouts()
            if self.num_timesteps > self.learning_starts:
                n_updates = self.gradient_steps if self.gradient_steps >= 0 else collected
                self.update_learning_rate()
                for _ in range(n_updates):
                    self.update(self.replay_buffer.sample(self.batch_size))
            if learning:
                self._learning_seconds += time.perf_counter() - start
                self._learning_steps += collected
            if self.num_timesteps >= self.total_timesteps:
                break
        if self.num_timesteps >= self._next_log:
            self.dump_logs()
            self._next_log = self.num_timesteps + self.log_freq

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.num_timesteps >= self.total_timesteps:
            self.trainer.should_stop = True

    def on_train_end(self) -> None:
        self.dump_logs()

    # ------------------------------------------------------------------ collection
    def collect_rollouts(self) -> int:
        """Collect ``train_freq`` steps (or episodes) into the buffer; return the transitions added."""
        env, buffer = self._env, self.replay_buffer
        steps = episodes = 0
        freq, per_episode = self.train_freq.frequency, self.train_freq.unit == "episode"
        while (episodes if per_episode else steps) < freq and self.num_timesteps < self.total_timesteps:
            actions, buffer_actions = self.sample_action()
            next_obs, rewards, terminated, truncated, infos = env.step(actions)
            self.num_timesteps += self._n_envs
            steps += 1
            dones = terminated | truncated
            real_next_obs = next_obs
            if dones.any():
                # Same-step autoreset: next_obs holds the new episode's first observation
                # for finished envs; the transition needs the true last one.
                real_next_obs = next_obs.copy()
                for i in np.flatnonzero(dones):
                    real_next_obs[i] = infos["final_obs"][i]
                episodes += int(dones.sum())
                self._record_episodes(infos)
                if self.action_noise is not None:
                    ended = np.flatnonzero(dones)
                    if isinstance(self.action_noise, VectorizedActionNoise):
                        self.action_noise.reset(ended)
                    else:
                        self.action_noise.reset()
            buffer.add(self._last_obs, real_next_obs, buffer_actions, rewards, terminated, truncated)
            self._last_obs = next_obs
            self.on_env_step()
        return steps * self._n_envs

    def sample_action(self) -> tuple[np.ndarray, np.ndarray]:
        """Actions for the env (its own scale) and for the buffer (the algorithm's scale)."""
        if self.num_timesteps < self.learning_starts:
            env_actions = self._env.action_space.sample()
            return env_actions, self.scale_action(env_actions)
        scaled = self.act(self._last_obs, deterministic=False)
        if self.action_noise is not None:
            scaled = np.clip(scaled + self.action_noise(), -1.0, 1.0).astype(np.float32)
        return self.unscale_action(scaled), scaled

    @torch.no_grad()
    def act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        """Policy actions in the algorithm's scale for a batch of numpy observations."""
        obs_t = torch.as_tensor(obs, dtype=torch.float32, device=self.device)
        return self.policy_action(obs_t, deterministic).cpu().numpy()

    def predict(self, observation: np.ndarray, deterministic: bool = False) -> np.ndarray:
        """Env actions for one observation or a batch (Stable-Baselines3's ``predict``, without state)."""
        obs = np.asarray(observation, dtype=np.float32)
        single = obs.shape == self.observation_space.shape
        batch = obs[None] if single else obs
        actions = self.unscale_action(self.act(batch, deterministic))
        return actions[0] if single else actions

    def scale_action(self, action: np.ndarray) -> np.ndarray:
        """Map env actions from ``[low, high]`` to ``[-1, 1]`` (identity for non-Box spaces)."""
        if not isinstance(self.action_space, spaces.Box):
            return action
        low, high = self.action_space.low, self.action_space.high
        return (2.0 * (action - low) / (high - low) - 1.0).astype(np.float32)

    def unscale_action(self, scaled: np.ndarray) -> np.ndarray:
        """Map ``[-1, 1]`` actions to the env's ``[low, high]``, clipped (identity for non-Box spaces)."""
        if not isinstance(self.action_space, spaces.Box):
            return scaled
        low, high = self.action_space.low, self.action_space.high
        return np.clip(low + 0.5 * (scaled + 1.0) * (high - low), low, high).astype(self.action_space.dtype)

    def on_env_step(self) -> None:
        """Called after every vector-env step (DQN's target update and exploration schedule use it)."""

    def _record_episodes(self, infos: dict[str, Any]) -> None:
        if "episode" not in infos:
            return
        ended = np.flatnonzero(infos["_episode"])
        self.ep_returns.extend(float(r) for r in infos["episode"]["r"][ended])
        self.ep_lengths.extend(int(n) for n in infos["episode"]["l"][ended])
        self._episode_num += len(ended)

    # ------------------------------------------------------------------ schedules
    def progress_remaining(self) -> float:
        """1 at the start of the run, 0 at ``total_timesteps`` (SB3's schedule argument)."""
        return 1.0 - self.num_timesteps / max(self.total_timesteps, 1)

    def update_learning_rate(self) -> None:
        """Apply a learning-rate schedule (a callable of progress remaining) to every optimizer."""
        if not callable(self.learning_rate):
            return
        lr = self.learning_rate(self.progress_remaining())
        for opt in self.trainer.optimizers:
            for group in opt.param_groups:
                group["lr"] = lr

    def initial_learning_rate(self) -> float:
        """The learning rate the optimizers start with."""
        return self.learning_rate(1.0) if callable(self.learning_rate) else self.learning_rate

    # ------------------------------------------------------------------ logging
    def record(self, name: str, value: torch.Tensor | float) -> None:
        """Accumulate a metric; it is averaged and written at the next log (no host sync here)."""
        value = value.detach() if isinstance(value, torch.Tensor) else torch.tensor(float(value))
        if name in self._metric_sums:
            self._metric_sums[name] += value
            self._metric_counts[name] += 1
        else:
            self._metric_sums[name] = value.clone()
            self._metric_counts[name] = 1

    def dump_logs(self) -> None:
        """Write rollout, time and averaged train metrics to every logger at step ``num_timesteps``."""
        elapsed = max(time.perf_counter() - self._fit_start_time, 1e-9)
        metrics: dict[str, float] = {"time/fps": (self.num_timesteps - self._fit_start_steps) / elapsed}
        if self.ep_returns:
            metrics["rollout/ep_rew_mean"] = float(np.mean(self.ep_returns))
            metrics["rollout/ep_len_mean"] = float(np.mean(self.ep_lengths))
        for name, total in self._metric_sums.items():
            metrics[name] = float(total) / self._metric_counts[name]
        metrics["train/n_updates"] = self._n_updates
        self._metric_sums, self._metric_counts = {}, {}
        self.log_metrics(metrics)

    def log_metrics(self, metrics: dict[str, float]) -> None:
        """Send metrics to the loggers with env steps as the x-axis, and expose them to callbacks."""
        self.latest_metrics.update(metrics)
        if self._trainer is None:
            return
        for logger in self.loggers:
            logger.log_metrics(metrics, step=self.num_timesteps)
        self.trainer.callback_metrics.update({k: torch.tensor(v) for k, v in metrics.items()})

    @property
    def learning_phase_fps(self) -> float:
        """Env steps per second of training-step time after ``learning_starts`` (excludes evaluation)."""
        return self._learning_steps / self._learning_seconds if self._learning_seconds > 0 else float("nan")

    # ------------------------------------------------------------------ Stable-Baselines3 API
    def learn(
        self,
        total_timesteps: int,
        env: str | gym.Env | gym.vector.VectorEnv | None = None,
        callbacks: list[L.Callback] | None = None,
        progress_bar: bool = False,
        reset_num_timesteps: bool = True,
        log_freq: int = 1_000,
        accelerator: str = "auto",
        logger: Any = False,
    ) -> OffPolicyAlgorithm:
        """Train for ``total_timesteps`` env steps on ``env`` (an id, an Env or a VectorEnv).

        Wraps ``Trainer.fit`` exactly as ``python -m lit_rl.train`` does; a
        second call with ``reset_num_timesteps=False`` continues the same env
        and counters.
        """
        from lit_rl.callbacks.progress import EnvStepProgressBar
        from lit_rl.data.datamodule import RLDataModule

        datamodule = getattr(self, "_learn_datamodule", None)
        if env is not None:
            datamodule = RLDataModule(env, seed=self.seed, eval_env=False)
        if datamodule is None:
            raise TypeError("learn() needs an env: an env id (str), a gymnasium.Env or a gymnasium VectorEnv")
        self._learn_datamodule = datamodule
        self.configure_run(total_timesteps, log_freq=log_freq, reset_num_timesteps=reset_num_timesteps)
        all_callbacks = list(callbacks or []) + ([EnvStepProgressBar()] if progress_bar else [])
        trainer = L.Trainer(
            accelerator=accelerator,
            devices=1,
            max_epochs=-1,
            logger=logger,
            callbacks=all_callbacks,
            enable_progress_bar=progress_bar,
            enable_checkpointing=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
        )
        trainer.fit(self, datamodule=datamodule)
        return self

    # ------------------------------------------------------------------ checkpoints
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["rl_state"] = {
            "num_timesteps": self.num_timesteps,
            "total_timesteps": self.total_timesteps,
            "n_updates": self._n_updates,
            "episode_num": self._episode_num,
            "observation_space": self.observation_space,
            "action_space": self.action_space,
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        state = checkpoint.get("rl_state", {})
        self.num_timesteps = state.get("num_timesteps", 0)
        self._n_updates = state.get("n_updates", 0)
        self._episode_num = state.get("episode_num", 0)
