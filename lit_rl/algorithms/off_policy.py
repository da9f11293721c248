"""OffPolicyAlgorithm: the LightningModule every off-policy algorithm builds on.

One Lightning ``training_step`` = ``steps_per_batch`` iterations of
"collect ``train_freq`` env steps -> do ``gradient_steps`` updates", with
Stable-Baselines3's semantics for ``train_freq``, ``gradient_steps``,
``learning_starts`` and ``n_envs``. The Trainer stops when the algorithm has
collected ``total_timesteps`` env steps.
"""

from __future__ import annotations

import logging
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

from lit_rl.algorithms.exact_resume import ExactResume
from lit_rl.algorithms.noise import ActionNoise, VectorizedActionNoise, check_action_noise, make_action_noise
from lit_rl.algorithms.plain_optimization import lightning_wrappers_needed
from lit_rl.algorithms.sb3_api import StableBaselinesAPI
from lit_rl.buffers.observations import DictObservationFlattener
from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer
from lit_rl.checks import NonFiniteError, check_float, check_int
from lit_rl.envs.make import vector_env_name

log = logging.getLogger(__name__)

TRAIN_FREQ_UNITS = ("step", "episode")
# MultiInputPolicy (SB3's name for Dict observations) is MlpPolicy over the concatenated keys; either name
# accepts either kind of observation space.
POLICIES = ("MlpPolicy", "MultiInputPolicy")


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


class OffPolicyAlgorithm(ExactResume, StableBaselinesAPI, L.LightningModule):
    """Base class of CrossQ, SAC, TD3, DDPG and DQN (Stable-Baselines3 semantics).

    Subclasses implement :meth:`build_networks` (given the env's spaces),
    :meth:`configure_optimizers`, :meth:`update` (one gradient step on a
    sampled batch) and :meth:`policy_action` (actions for observations).
    The networks are built in ``setup`` once the datamodule's env exists, so
    a model can be created before it sees an env, as in Stable-Baselines3.

    Dict observation spaces (``policy="MultiInputPolicy"``, or ``"MlpPolicy"``:
    both names accept both kinds) are flattened where numpy observations enter
    torch, in :meth:`act` and in the buffer's ``add``: the networks are MLPs
    over the concatenated keys (Discrete keys one-hot), as SB3's
    ``CombinedExtractor`` without a CNN. A buffer class may list what it needs
    from the algorithm in ``algorithm_kwargs`` (``gamma``, ``compute_reward``).
    """

    automatic_optimization = False
    supported_action_spaces: tuple[type[spaces.Space], ...] = (spaces.Box,)
    # Act with the policy, not uniformly at random, before learning_starts (gSDE's use_sde_at_warmup).
    policy_acts_at_warmup = False

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
        if policy not in POLICIES:
            raise ValueError(f"policy={policy!r} is not available; allowed: {list(POLICIES)}")
        self.policy = policy
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
        self.obs_flattener: DictObservationFlattener | None = None  # set for Dict observation spaces
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
        # Restored state waiting for the next fit (the buffer and env exist only once fit starts).
        self._pending: dict[str, Any] = {}
        # Launcher checkpoints carry the replay buffer; best.ckpt and model.save() do not.
        self.checkpoint_replay_buffer = True
        # An SB3-style callback called after every env step (set by SB3CallbackAdapter); False from it stops training.
        self.step_callback: Any = None
        self.continue_training = True

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
        if isinstance(observation_space, spaces.Dict):
            try:
                DictObservationFlattener(observation_space)
            except TypeError as err:
                raise ValueError(f"{name} cannot use the Dict observation space {observation_space}: {err}") from None
        elif not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
            raise ValueError(
                f"{name} with policy={self.policy!r} needs a flat Box or a Dict observation space; "
                f"got {observation_space}"
            )

    def build_networks_for(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        """:meth:`build_networks` for the env's spaces; a Dict observation space becomes the flat Box of its keys."""
        if isinstance(observation_space, spaces.Dict):
            self.obs_flattener = DictObservationFlattener(observation_space)
            observation_space = self.obs_flattener.flat_space
        self.build_networks(observation_space, action_space)

    def discounts(self, batch: ReplayBatch) -> torch.Tensor | float:
        """The bootstrap discount of each sample: the batch's (n-step buffers) or ``gamma``."""
        return self.gamma if batch.discounts is None else batch.discounts

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
            self.build_networks_for(obs_space, act_space)
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
        self._env_name = vector_env_name(env)
        if self.replay_buffer is None:
            self.replay_buffer = self.replay_buffer_class(
                buffer_size=self.buffer_size,
                observation_space=self.observation_space,
                action_space=self.action_space,
                n_envs=env.num_envs,
                device=self.device,
                seed=self.seed,
                **self.replay_buffer_kwargs,
                **self.buffer_algorithm_kwargs(env),
            )
            # Once per run, in train.log and on the launcher's console; learn() at verbose=0 stays silent.
            log.info(self.replay_buffer.describe())
        if self._last_obs is None and "env" not in self._pending:
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
            if "action_noise" not in self._pending:
                self.action_noise.reset()
        self._apply_pending_state()
        self.continue_training = True
        self._fit_start_time, self._fit_start_steps = time.perf_counter(), self.num_timesteps
        self._next_log = self.num_timesteps + self.log_freq

    def buffer_algorithm_kwargs(self, env: gym.vector.VectorEnv) -> dict[str, Any]:
        """What the buffer class asks of the algorithm (its ``algorithm_kwargs``): ``gamma``, ``compute_reward``."""
        from lit_rl.envs.goal import goal_compute_reward

        providers = {"gamma": lambda: self.gamma, "compute_reward": lambda: goal_compute_reward(env)}
        needs = getattr(self.replay_buffer_class, "algorithm_kwargs", ())
        unknown = [n for n in needs if n not in providers]
        if unknown:
            raise ValueError(
                f"{self.replay_buffer_class.__name__}.algorithm_kwargs asks for {unknown}; allowed: {list(providers)}"
            )
        return {n: providers[n]() for n in needs if n not in self.replay_buffer_kwargs}

    def training_step(self, batch: Any, batch_idx: int) -> None:
        for _ in range(self.steps_per_batch):
            learning = self.num_timesteps > self.learning_starts
            start = time.perf_counter()
            collected = self.collect_rollouts()
            if not self.continue_training:
                break
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
        if self.num_timesteps >= self.total_timesteps or not self.continue_training:
            self.trainer.should_stop = True

    def on_train_end(self) -> None:
        self.dump_logs()

    # ------------------------------------------------------------------ collection
    def collect_rollouts(self) -> int:
        """Collect ``train_freq`` steps (or episodes) into the buffer; return the transitions added."""
        env, buffer = self._env, self.replay_buffer
        steps = episodes = 0
        freq, per_episode = self.train_freq.frequency, self.train_freq.unit == "episode"
        callback = self.step_callback
        if callback is not None:
            callback.on_rollout_start()
        while (episodes if per_episode else steps) < freq and self.num_timesteps < self.total_timesteps:
            self.on_rollout_step(steps)
            actions, buffer_actions = self.sample_action()
            try:
                next_obs, rewards, terminated, truncated, infos = env.step(actions)
            except Exception as err:  # a crashing simulator or a dead async worker: say which env and when
                raise RuntimeError(
                    f"env {self._env_name} raised during step at env step {self.num_timesteps}: "
                    f"{type(err).__name__}: {err}"
                ) from err
            self.num_timesteps += self._n_envs
            steps += 1
            dones = terminated | truncated
            if callback is not None:
                # SB3's order: the callback sees the step before it is stored; False stops without storing it.
                callback.update_locals(
                    {"actions": actions, "new_obs": next_obs, "rewards": rewards, "dones": dones, "infos": infos}
                )
                if not callback.on_step():
                    self.continue_training = False
                    self._last_obs = next_obs  # unlike SB3: a later learn() must not pair this obs with a stale one
                    break
            real_next_obs = next_obs
            if dones.any():
                # Same-step autoreset: next_obs holds the new episode's first observation
                # for finished envs; the transition needs the true last one.
                real_next_obs = self._with_final_obs(next_obs, infos["final_obs"], dones)
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
        if callback is not None:
            callback.on_rollout_end()
        return steps * self._n_envs

    @staticmethod
    def _with_final_obs(next_obs: Any, final_obs: np.ndarray, dones: np.ndarray) -> Any:
        """``next_obs`` with the true last observations of the finished envs (arrays or dicts of arrays)."""
        ended = np.flatnonzero(dones)
        if isinstance(next_obs, dict):
            real = {key: value.copy() for key, value in next_obs.items()}
            for i in ended:
                for key in real:
                    real[key][i] = final_obs[i][key]
            return real
        real = next_obs.copy()
        for i in ended:
            real[i] = final_obs[i]
        return real

    def sample_action(self) -> tuple[np.ndarray, np.ndarray]:
        """Actions for the env (its own scale) and for the buffer (the algorithm's scale)."""
        if self.num_timesteps < self.learning_starts and not self.policy_acts_at_warmup:
            env_actions = self._env.action_space.sample()
            return env_actions, self.scale_action(env_actions)
        scaled = self.act(self._last_obs, deterministic=False)
        if self.action_noise is not None:
            scaled = np.clip(scaled + self.action_noise(), -1.0, 1.0).astype(np.float32)
        return self.unscale_action(scaled), scaled

    @torch.no_grad()
    def act(self, obs: np.ndarray, deterministic: bool) -> np.ndarray:
        """Policy actions in the algorithm's scale for a batch of numpy observations."""
        if self.obs_flattener is not None:
            obs = self.obs_flattener.flatten(obs)
        obs_t = torch.as_tensor(obs, dtype=torch.float32, device=self.device)
        return self.policy_action(obs_t, deterministic).cpu().numpy()

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """Env actions for one observation or a batch, and the (unused, recurrent-only) ``state``: SB3's ``predict``."""
        if self.observation_space is None:
            raise RuntimeError(f"{type(self).__name__}.predict needs a trained or loaded model (call learn() or load())")
        if isinstance(observation, dict):
            single = self.obs_flattener.is_single(observation)
            batch = {k: np.asarray(v)[None] for k, v in observation.items()} if single else observation
        else:
            obs = np.asarray(observation, dtype=np.float32)
            single = obs.shape == self.observation_space.shape
            if not single and obs.shape[1:] != self.observation_space.shape:
                raise ValueError(
                    f"predict: observation shape {obs.shape} does not fit the model's observation space "
                    f"{self.observation_space}; allowed: {self.observation_space.shape} or "
                    f"(n, *{self.observation_space.shape})"
                )
            batch = obs[None] if single else obs
        actions = self.unscale_action(self.act(batch, deterministic))
        return (actions[0] if single else actions), state

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

    def on_rollout_step(self, step: int) -> None:
        """Called before each vector-env step of ``collect_rollouts``, ``step`` counting from 0 in that call.

        gSDE resamples its exploration matrix here.
        """

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
        bad = {k: v for k, v in metrics.items() if k.startswith("train/") and not math.isfinite(v)}
        if bad:
            raise NonFiniteError(
                f"non-finite training metrics {bad} at env step {self.num_timesteps} (update {self._n_updates}); "
                "training stops and the last good checkpoint is kept; lower the learning rate or check rewards"
            )
        self.log_metrics(metrics)

    def check_finite_parameters(self) -> None:
        """Raise :class:`NonFiniteError` naming the first NaN/inf parameter (checked before every checkpoint)."""
        for name, tensor in self.state_dict().items():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                raise NonFiniteError(
                    f"parameter {name} is not finite at env step {self.num_timesteps}; not saving it over the last "
                    "good checkpoint"
                )

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
