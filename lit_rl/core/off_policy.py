"""OffPolicyAlgorithm: the thin LightningModule every off-policy algorithm builds on.

It wires the policy module, the collector, the replay buffer, the optimizers and the algorithm's
gradient step, and speaks Lightning (manual optimisation, the token stream, checkpoint hooks). One
``training_step`` = ``steps_per_batch`` rounds of "collect ``train_freq`` env steps -> ``gradient_steps``
updates" with Stable-Baselines3's semantics, until ``total_timesteps`` env steps. The SB3 API is the
:class:`~lit_rl.core.sb3_api.StableBaselinesAPI` layer.
"""

from __future__ import annotations

import inspect
import math
import time
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

import lightning as L
import torch
from gymnasium import spaces

from lit_rl.buffers.observations import DictObservationFlattener
from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer
from lit_rl.collect.collector import Collector, RunClock
from lit_rl.collect.noise import ActionNoise, check_action_noise, prepare_action_noise
from lit_rl.core import precision as mixed_precision
from lit_rl.core.arguments import check_spaces, parse_train_freq, resolve_policy_class
from lit_rl.core.batching import batch_end_step
from lit_rl.core.buffer_setup import ReplayBufferSetup
from lit_rl.core.compiled import check_compile, compiled, report_compilation
from lit_rl.core.exact_resume import (
    ResumeState,
    apply_pending_state,
    check_checkpoint_fits,
    rl_state,
    upgrade_state_dict,
)
from lit_rl.core.hyperparameters import GymEnv, Schedule
from lit_rl.core.network_setup import (
    PolicyModes,
    check_env_fits,
    make_normalizer,
    observation_flattener,
    seeded_initialisation,
)
from lit_rl.core.plain_optimization import OptimizerCalls, lightning_wrappers_needed
from lit_rl.core.run_metrics import RunMetrics, check_finite_parameters, log_row
from lit_rl.core.sb3_api import StableBaselinesAPI
from lit_rl.core.sb3_logger import SB3Logger
from lit_rl.envs.make import vector_env_name
from lit_rl.nets.normalization import Normalization, check_normalize_kwargs
from lit_rl.policies.base import BasePolicy, check_policy_kwargs
from lit_rl.utils.checks import check_bool, check_float, check_int, resolve_device
from lit_rl.utils.declared import SignatureArguments, bound_arguments


class OffPolicyAlgorithm(SignatureArguments, OptimizerCalls, StableBaselinesAPI, L.LightningModule):
    """Base class of CrossQ, SAC, TD3, DDPG and DQN (Stable-Baselines3's arguments and semantics).

    A subclass names its policy class (``default_policy_class``), declares its
    hyperparameters in a typed ``__init__`` (passing ``bound_arguments(locals())`` to
    :meth:`init_algorithm`), and implements :meth:`configure_optimizers` and
    :meth:`gradient_step` (one update on a sampled batch -> metrics). With an
    ``env`` the networks and the buffer are built in the constructor (SB3);
    without one, in ``setup`` once ``learn``'s or the launcher's env exists.
    Dict observations are flattened where numpy observations enter torch
    (:meth:`act`, the buffer's ``add``): the networks are MLPs over the
    concatenated keys, so ``"MlpPolicy"`` and ``"MultiInputPolicy"`` name the same policy.
    """

    automatic_optimization = False
    supported_action_spaces: tuple[type[spaces.Space], ...] = (spaces.Box,)
    default_policy_class: ClassVar[type[BasePolicy]] = BasePolicy

    def __init__(
        self,
        policy: str | type[BasePolicy] = "MlpPolicy",
        env: GymEnv | str | None = None,
        learning_rate: float | Schedule = 3e-4,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        action_noise: ActionNoise | str | None = None,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        n_steps: int = 1,
        policy_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        verbose: int = 0,
        tensorboard_log: str | None = None,
        device: torch.device | str = "auto",
        support_multi_env: bool = False,
        monitor_wrapper: bool = True,
        seed: int | None = None,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        use_sde_at_warmup: bool = False,
        sde_support: bool = True,
        supported_action_spaces: tuple[type[spaces.Space], ...] | None = None,
        action_noise_std: float = 0.1,
        normalize_obs: bool = False,
        normalize_reward: bool = False,
        normalize_kwargs: dict[str, Any] | None = None,
        _init_setup_model: bool = True,
        *,
        steps_per_batch: int | None = None,
        compile: bool | str = False,
        precision: str = "32-true",
    ) -> None:
        """Stable-Baselines3's ``OffPolicyAlgorithm`` arguments and defaults, and lit_rl's.

        ``action_noise``: an ActionNoise, or ``"normal"`` / ``"ornstein-uhlenbeck"`` of std
        ``action_noise_std`` (in [-1, 1] action units), built once the env is known.
        ``tensorboard_log``: a folder ``learn()`` logs to with TensorBoard (SB3's).
        ``support_multi_env``: the algorithms that handle several envs set True (as SB3's do).
        ``normalize_obs`` / ``normalize_reward`` / ``normalize_kwargs`` (clip_obs, clip_reward,
        epsilon, gamma, training): SB3's VecNormalize inside the model (:mod:`lit_rl.nets.normalization`).
        ``steps_per_batch``, ``compile`` and ``precision`` (``"32-true"``, ``"bf16-mixed"``, ``"16-mixed"``,
        ``"auto"``: :mod:`lit_rl.core.precision`) are run settings, not saved with the model.
        """
        self.init_algorithm(bound_arguments(locals()))

    def init_algorithm(self, hp: dict[str, Any]) -> None:
        """The constructor's work on its bound arguments (each algorithm's ``__init__`` passes its own).

        Every attribute of the algorithm is assigned here or in the setup methods below; state that changes
        during a run lives in named parts (``clock``, ``collector``, ``buffer_setup``, ``metrics``, ``resume``).
        """
        super().__init__()  # LightningModule's
        hp = {**hp, **self.pinned_values}
        steps_per_batch, compile, precision = hp.pop("steps_per_batch"), hp.pop("compile"), hp.pop("precision")
        env, setup_now = hp.pop("env"), hp.pop("_init_setup_model")
        skip = {"replay_buffer_class", *self.pinned_values}
        self.save_hyperparameters({k: v for k, v in hp.items() if k not in skip})
        self.set_hyperparameters(hp)
        # A run setting, not a hyperparameter (the launcher's trainer.steps_per_batch): not saved with the model.
        # None: one round per training_step in a Trainer of your own (the seed's contract), 16 in learn().
        self.steps_per_batch = (
            None if steps_per_batch is None else check_int("steps_per_batch", steps_per_batch, minimum=1)
        )
        self.rounds_per_batch = self.steps_per_batch or 1  # of the coming fit (configure_run)
        self.compile_updates = check_compile(compile)  # also a run setting: compiled losses and acting (compiled.py)
        self.precision = mixed_precision.check_precision(precision)  # also a run setting: bf16/fp16 matmuls
        self.loss_scaling = mixed_precision.LossScaling()  # 16-mixed's gradient scalers
        # The networks and what comes with the env's spaces: set by build_networks_for.
        self.policy: Any = None
        self.observation_space: spaces.Space | None = None
        self.action_space: spaces.Space | None = None
        self.obs_flattener: DictObservationFlattener | None = None  # set for Dict observation spaces
        self.normalizer: Normalization | None = None  # set with normalize_obs / normalize_reward (statistics as buffers)
        self.policy_modes = PolicyModes()
        # The run's parts. The counters travel in checkpoints; the collector advances num_timesteps.
        self.clock = RunClock()
        self.log_freq = 1_000  # env steps between log rows
        # Hooks looked up at call time, so a subclass or a test may replace them on the instance.
        self.collector = Collector(
            self.clock, self.stats_window_size, lambda s: self.on_rollout_step(s), lambda: self.on_env_step()
        )
        self.collector.policy_acts_at_warmup = self.use_sde and self.use_sde_at_warmup
        self.metrics = RunMetrics()
        self.resume = ResumeState()
        self.sb3_logger = SB3Logger(self)
        self._learn_datamodule: Any = None  # the env of learn() / set_env (an RLDataModule); None: the Trainer's
        self._plain_optimization = False  # torch's optimizers directly (on_train_start decides, plain_optimization.py)
        if self.verbose >= 1:  # SB3's constructor says it, with or without an env
            print(f"Using {resolve_device(self.device_name)} device")
        if env is not None and setup_now:
            self.setup_for_env(env)

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        """Check and store the bound hyperparameters (subclasses add theirs, then call this)."""
        self.policy_class = resolve_policy_class(type(self).__name__, hp["policy"], self.default_policy_class)
        if not callable(hp["learning_rate"]):
            check_float("learning_rate", hp["learning_rate"], 0.0, math.inf)
        self.learning_rate = hp["learning_rate"]
        self.buffer_size = check_int("buffer_size", hp["buffer_size"], minimum=1)
        self.batch_size = check_int("batch_size", hp["batch_size"], minimum=1)
        # batch_size > buffer_size is allowed, as in SB3: batches sample stored transitions with replacement.
        self.learning_starts = check_int("learning_starts", hp["learning_starts"], minimum=0)
        # tau=0: frozen targets (SB3 allows it; the targets' BatchNorm statistics are still copied)
        self.tau = check_float("tau", hp["tau"], 0.0, 1.0, low_open=False)
        self.gamma = check_float("gamma", hp["gamma"], 0.0, 1.0)
        self.train_freq = parse_train_freq(hp["train_freq"])
        self.gradient_steps = check_int("gradient_steps", hp["gradient_steps"], minimum=0, allowed_extra=(-1,))
        self.stats_window_size = check_int("stats_window_size", hp["stats_window_size"], minimum=1)
        self.tensorboard_log = hp["tensorboard_log"]
        self.n_steps = check_int("n_steps", hp["n_steps"], minimum=1)
        self.optimize_memory_usage = check_bool("optimize_memory_usage", hp["optimize_memory_usage"])
        self.buffer_setup = ReplayBufferSetup(hp["replay_buffer_class"], hp["replay_buffer_kwargs"], self.n_steps,
                                         self.optimize_memory_usage)  # fmt: skip
        self.use_sde = check_bool("use_sde", hp["use_sde"])
        self.sde_sample_freq = check_int("sde_sample_freq", hp["sde_sample_freq"], minimum=1, allowed_extra=(-1,))
        self.use_sde_at_warmup = check_bool("use_sde_at_warmup", hp["use_sde_at_warmup"])
        self.policy_kwargs = dict(hp["policy_kwargs"] or {})
        if hp["sde_support"] and "use_sde" in inspect.signature(self.policy_class).parameters:
            self.policy_kwargs["use_sde"] = self.use_sde
        check_policy_kwargs(self.policy_class, self.policy_kwargs)
        self.seed, self.verbose, self.device_name = hp["seed"], hp["verbose"], str(hp["device"])
        self.support_multi_env, self.monitor_wrapper = hp["support_multi_env"], hp["monitor_wrapper"]
        if hp["supported_action_spaces"] is not None:
            self.supported_action_spaces = tuple(hp["supported_action_spaces"])
        check_action_noise(hp["action_noise"])
        self.action_noise_std = check_float("action_noise_std", hp["action_noise_std"], 0.0, math.inf, low_open=False)
        self.action_noise_spec = hp["action_noise"]
        self.action_noise: ActionNoise | None = (
            self.action_noise_spec if isinstance(hp["action_noise"], ActionNoise) else None
        )
        self.normalize_obs = check_bool("normalize_obs", hp["normalize_obs"])
        self.normalize_reward = check_bool("normalize_reward", hp["normalize_reward"])
        self.normalize_kwargs = check_normalize_kwargs(hp["normalize_kwargs"])

    @property
    def lr_schedule(self) -> Any:
        """SB3's learning-rate schedule (progress remaining -> lr); setting it replaces ``learning_rate``."""
        return self.learning_rate if callable(self.learning_rate) else (lambda _: self.learning_rate)

    @lr_schedule.setter
    def lr_schedule(self, schedule: Any) -> None:
        self.learning_rate = schedule

    # ------------------------------------------------------------------ the algorithm's part
    def gradient_step(self, batch: ReplayBatch) -> dict[str, torch.Tensor]:
        """One gradient step on ``batch``: losses and optimizer steps -> metrics (tensors, not synced).

        It counts itself in ``self.clock.n_updates`` first (``policy_delay`` reads the count).
        """
        raise NotImplementedError

    def update(self, batch: ReplayBatch) -> None:
        """:meth:`gradient_step`, its metrics recorded for the next log."""
        for name, value in self.gradient_step(batch).items():
            self.record(name, value)

    def record(self, name: str, value: torch.Tensor | float) -> None:
        self.metrics.record(name, value)  # a metric for the next log row (no host sync here)

    def policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor:
        """Actions for a batch of flat observations, in the algorithm's scale ([-1, 1] for Box)."""
        return compiled(self, self.policy, key=deterministic, acting=True)(obs, deterministic)

    def on_rollout_step(self, step: int) -> None:
        """Before each vector-env step of a rollout (``step`` from 0): gSDE draws its exploration matrices."""
        if self.use_sde and (step == 0 or (self.sde_sample_freq > 0 and step % self.sde_sample_freq == 0)):
            with torch.no_grad():  # rollout noise needs no graph back to log_std
                self.policy.reset_noise(self._n_envs)

    def on_env_step(self) -> None:
        """After every stored vector-env step (DQN's target update and exploration schedule)."""

    def discounts(self, batch: ReplayBatch) -> torch.Tensor | float:
        """The bootstrap discount of each sample: the batch's (n-step buffers) or ``gamma``."""
        return self.gamma if batch.discounts is None else batch.discounts

    # ------------------------------------------------------------------ setup: networks and buffer
    def build_networks(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        """The policy module for these (flat) spaces; subclasses add what is not a network (entropy coefficient)."""
        lr = self.learning_rate if callable(self.learning_rate) else (lambda _: self.learning_rate)
        self.policy = self.policy_class(observation_space, action_space, lr, **self.policy_kwargs)

    def build_networks_for(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        """:meth:`build_networks` for the env's spaces; Dict observations reach the policy as one vector of their keys."""
        self.observation_space, self.action_space = observation_space, action_space
        self.obs_flattener = observation_flattener(observation_space)
        self.normalizer = make_normalizer(self, observation_space, self.obs_flattener)
        if self.normalizer is not None:
            self.collector.observe = self.normalizer.observe_step  # statistics from collected steps only
        self.build_networks(observation_space, action_space)
        self.rng_after_init = torch.get_rng_state()  # where its noise starts (a packed run's member generator)

    def setup_networks(self, env: Any) -> None:
        """Build the policy for the env's spaces (once, seeded), then check that the env fits it."""
        if self.observation_space is None:
            self.check_spaces(env.single_observation_space, env.single_action_space)
            with seeded_initialisation(self.seed):
                self.build_networks_for(env.single_observation_space, env.single_action_space)
        check_env_fits(self, env)

    def check_spaces(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        check_spaces(type(self).__name__, self.supported_action_spaces, observation_space, action_space)  # or raise

    def setup_for_env(self, env: Any) -> None:
        """What SB3's constructor does with an env: build it, the networks and the replay buffer now."""
        device = resolve_device(self.device_name)
        if self.verbose >= 1 and isinstance(env, str):  # SB3's line, printed by its constructor
            print(f"Creating environment from the given name '{env}'")
        datamodule = self.make_datamodule(env)
        datamodule.setup("fit")
        self._learn_datamodule = datamodule
        self.setup_networks(datamodule.train_env)
        self.to(device)
        self.buffer_setup.buffer = self.make_replay_buffer(datamodule.train_env, device)

    def use_env(self, datamodule: Any) -> None:
        """Train on ``datamodule``'s env from the next ``learn`` (``set_env``): the collector resets it then."""
        self._learn_datamodule = datamodule
        self.collector.last_obs = None

    def start_episodes(self, env: Any) -> None:
        """Reset ``env`` with the model's seed for the collector; the normalizer counts the first observations."""
        self.collector.last_obs, _ = env.reset(seed=self.seed)
        if self.normalizer is not None:
            self.normalizer.observe_reset(self.collector.last_obs)

    def make_replay_buffer(self, env: Any, device: torch.device, n_envs: int | None = None) -> ReplayBuffer:
        """An empty replay buffer for ``env`` (None: ``n_envs`` envs per row) on ``device``."""
        return self.buffer_setup.make(self, env, device, n_envs)

    def buffer_algorithm_kwargs(self, env: Any) -> dict[str, Any]:
        """What the buffer class asks of the algorithm (``gamma``, ``compute_reward``)."""
        return self.buffer_setup.algorithm_kwargs(self, env)

    def set_policy_training(self, mode: bool) -> None:
        """The policy in train (updates) or eval mode (acting), as SB3 sets them (see :class:`PolicyModes`)."""
        self.policy_modes.set(self.policy, mode)

    # ------------------------------------------------------------------ setup: the run
    def configure_run(
        self,
        total_timesteps: int,
        log_freq: int = 1_000,
        reset_num_timesteps: bool = True,
        steps_per_batch: int = 0,
        compile: bool | str | None = None,
        precision: str | None = None,
    ) -> None:
        """Set the env-step budget of the next ``Trainer.fit`` (``learn`` and the launcher call this).

        ``steps_per_batch`` packs that many collect/update rounds into one Lightning batch (0: the
        constructor's ``steps_per_batch``, or one round: each ``training_step`` one iteration, as the seed's);
        ``compile`` and ``precision`` (None: keep) are the constructor's run settings.
        """
        check_int("total_timesteps", total_timesteps, minimum=1)
        self.log_freq = check_int("log_freq", log_freq, minimum=1)
        self.rounds_per_batch = check_int("steps_per_batch", steps_per_batch or self.steps_per_batch or 1, minimum=1)
        if compile is not None:
            self.compile_updates = check_compile(compile)
        self.precision = self.precision if precision is None else mixed_precision.check_precision(precision)
        buffer = self.replay_buffer
        if reset_num_timesteps and self.optimize_memory_usage and buffer is not None and len(buffer):
            # The new episode's first observation would become the last stored transition's next one (SB3 #46).
            warnings.warn("The last trajectory in the replay buffer will be truncated (optimize_memory_usage with "
                          "reset_num_timesteps=True): it is stored as ended", stacklevel=3)  # fmt: skip
            buffer.end_last_transition()
        clock = self.clock
        if reset_num_timesteps:
            clock.num_timesteps, self.collector.episode_num, self.collector.last_obs = 0, 0, None
            clock.total_timesteps = total_timesteps
        else:
            clock.total_timesteps = clock.num_timesteps + total_timesteps

    def setup(self, stage: str) -> None:
        self.setup_networks(self.train_env)

    def on_fit_start(self) -> None:
        if self.total_timesteps == 0:
            raise RuntimeError("call configure_run(total_timesteps) (or learn()) before Trainer.fit")
        if self.total_timesteps <= self.num_timesteps:
            raise ValueError(
                f"total_timesteps={self.total_timesteps} is already reached: the model has {self.num_timesteps} env steps "
                "(restored from ckpt_path); raise total_timesteps to continue training"
            )
        mixed_precision.check_trainer_precision(str(self.trainer.precision), type(self).__name__)
        env, collector, pending = self.train_env, self.collector, self.resume.pending
        self.clock.n_envs = env.num_envs
        if self.replay_buffer is None:
            self.buffer_setup.buffer = self.make_replay_buffer(env, self.device)
        collector.attach(env, self.replay_buffer, vector_env_name(env))
        if collector.last_obs is None and "env" not in pending:
            self.start_episodes(env)
        if self.action_space is None:  # set with the networks, which setup() builds before any fit starts
            raise RuntimeError(f"{type(self).__name__}: Trainer.fit started before the networks were built")
        self.action_noise = prepare_action_noise(self.action_noise, self.action_noise_spec, self.action_space,
                                                 self._n_envs, self.action_noise_std, self.seed,
                                                 reset="action_noise" not in pending)  # fmt: skip
        self.resume.pending = {}
        restored_noise = apply_pending_state(self, pending)
        if restored_noise is not None:
            self.action_noise = restored_noise
        collector.action_noise = self.action_noise
        self.clock.continue_training = True
        self.clock.next_log = self.num_timesteps + self.log_freq
        self.metrics.start_fit(self.num_timesteps)

    def on_train_start(self) -> None:
        self._plain_optimization = not lightning_wrappers_needed(self.trainer, self)

    # ------------------------------------------------------------------ the loop
    def training_step(self, batch: Any, batch_idx: int) -> None:
        clock = self.clock
        for _ in range(self.rounds_per_batch):
            learning = self.num_timesteps > self.learning_starts
            start = time.perf_counter()
            collected = self.collect_rollouts(learning_starts=self.learning_starts).episode_timesteps
            if not clock.continue_training:
                break
            if self.num_timesteps > self.learning_starts:
                n_updates = self.gradient_steps if self.gradient_steps >= 0 else collected
                self.run_gradient_steps(n_updates, self.batch_size)
            if learning:
                self.metrics.add_learning(time.perf_counter() - start, collected)
            if self.num_timesteps >= batch_end_step(self):  # a log or a callback event is due: end the batch
                break
        if clock.num_timesteps >= clock.next_log:
            self.dump_logs()
            clock.next_log = clock.num_timesteps + self.log_freq

    def run_gradient_steps(self, n_updates: int, batch_size: int) -> None:
        """``n_updates`` updates on sampled batches: one collection round's, or SB3's ``train(gradient_steps)``."""
        self.update_learning_rate()
        self.set_policy_training(True)  # as SB3's train(); the updates set BatchRenorm modes themselves
        for i in range(n_updates):
            self.clock.round_gradient_step = i  # SB3's loop index within one train() call (SAC's targets)
            self.update(self.sample_batch(batch_size))

    def sample_batch(self, batch_size: int) -> ReplayBatch:
        """A batch from the replay buffer as an update sees it: normalized (SB3's ``sample(env=)``), augmented."""
        if self.replay_buffer is None:
            raise RuntimeError("gradient steps need a replay buffer: call learn() or Trainer.fit first")
        sample_kwargs = {} if self.normalizer is None else {"env": self.normalizer}  # SB3's sample(env=)
        return self.buffer_setup.augment(self.replay_buffer.sample(batch_size, **sample_kwargs))

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.num_timesteps >= self.total_timesteps or not self.clock.continue_training:
            self.trainer.should_stop = True

    def on_train_end(self) -> None:
        report_compilation(self)
        self.dump_logs()

    # ------------------------------------------------------------------ logs
    def dump_logs(self) -> None:
        """Write rollout, time and averaged train metrics to every logger at step ``num_timesteps``."""
        row = log_row(self)
        # SB3-style records (model.logger.record) join this row; those excluded from some format go separately.
        records = self.sb3_logger.take_records()
        row.update({k: v for k, (v, excluded) in records.items() if not excluded})
        self.log_metrics(row)
        self.sb3_logger.write({k: r for k, r in records.items() if r[1]}, self.num_timesteps)
        self.sb3_logger.written(row)

    def log_metrics(self, metrics: dict[str, float]) -> None:
        """Send metrics to the loggers with env steps as the x-axis, and expose them to callbacks."""
        self.metrics.latest.update(metrics)
        if self._trainer is None:
            return
        for logger in self.loggers:
            logger.log_metrics(metrics, step=self.num_timesteps)
        self.trainer.callback_metrics.update({k: torch.tensor(v) for k, v in metrics.items()})

    def check_finite_parameters(self) -> None:
        """Raise :class:`~lit_rl.utils.checks.NonFiniteError` naming the first NaN/inf parameter."""
        check_finite_parameters(self)

    # ------------------------------------------------------------------ checkpoints (exact resume)
    def rl_state(self, with_training_state: bool) -> dict[str, Any]:
        """What a checkpoint holds besides weights and optimizers (:func:`~lit_rl.core.exact_resume.rl_state`)."""
        return rl_state(self, with_training_state)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """``nn.Module.load_state_dict``, also for checkpoints of format 1 (see ``upgrade_state_dict``)."""
        return super().load_state_dict(upgrade_state_dict(state_dict), strict, assign=assign)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["rl_state"] = self.rl_state(with_training_state=True)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        state = checkpoint.get("rl_state", {})
        check_checkpoint_fits(self, state)
        self.restore_counters(state)
        training = state.get("training")
        if training is not None:
            self.resume.pending.update({k: v for k, v in training.items() if v is not None})

    def restore_counters(self, state: dict[str, Any]) -> None:
        """Env steps, updates and episodes from a checkpoint's or a model file's ``rl_state``."""
        self.clock.num_timesteps = state.get("num_timesteps", 0)
        self.clock.n_updates = state.get("n_updates", 0)
        self.collector.episode_num = state.get("episode_num", 0)
