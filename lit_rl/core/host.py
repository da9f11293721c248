"""What the algorithm's method-only mixins use of the class they are mixed into, declared for type checkers.

:class:`~lit_rl.core.off_policy.OffPolicyAlgorithm` takes its SB3 methods
(:mod:`lit_rl.core.sb3_api`), its optimizer calls (:mod:`lit_rl.core.plain_optimization`)
and the entropy coefficient of SAC/CrossQ/TQC (:mod:`lit_rl.core.entropy`) from mixins
that read the algorithm's attributes. For a type checker each mixin derives from
:class:`AlgorithmHost`, which declares those attributes and methods with their types;
at run time it is ``object``, so the MRO is unchanged. The attributes are assigned in
``OffPolicyAlgorithm.init_algorithm`` (and its setup methods) and checked against these
declarations there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    import gymnasium as gym
    import lightning as L
    import numpy as np
    import torch
    from gymnasium import spaces

    from lit_rl.buffers.observations import DictObservationFlattener
    from lit_rl.buffers.replay import ReplayBuffer
    from lit_rl.collect.collector import Collector, RunClock
    from lit_rl.core.arguments import TrainFreq
    from lit_rl.core.buffer_setup import ReplayBufferSetup
    from lit_rl.core.exact_resume import ResumeState
    from lit_rl.core.hyperparameters import Schedule
    from lit_rl.core.precision import LossScaling
    from lit_rl.core.run_metrics import RunMetrics
    from lit_rl.core.sb3_logger import SB3Logger
    from lit_rl.nets.normalization import Normalization
    from lit_rl.policies.base import BasePolicy

    class AlgorithmHost(L.LightningModule):
        """The host's attributes and the methods one mixin calls on another."""

        # The algorithm's own policy class (SACPolicy, CrossQPolicy, ...): each reads its own networks.
        policy: Any
        policy_class: type[BasePolicy]
        policy_kwargs: dict[str, Any]
        observation_space: spaces.Space | None
        action_space: spaces.Space | None
        replay_buffer: ReplayBuffer | None  # a property of buffer_setup.buffer
        buffer_setup: ReplayBufferSetup
        clock: RunClock
        metrics: RunMetrics
        resume: ResumeState
        sb3_logger: SB3Logger
        _learn_datamodule: Any
        _plain_optimization: bool
        precision: str  # "32-true" | "bf16-mixed" | "16-mixed" | "auto" (core/precision.py)
        loss_scaling: LossScaling
        obs_flattener: DictObservationFlattener | None  # set for Dict observation spaces
        normalizer: Normalization | None  # set with normalize_obs / normalize_reward
        collector: Collector
        learning_rate: float | Schedule
        buffer_size: int
        batch_size: int
        learning_starts: int
        gamma: float
        tau: float
        train_freq: TrainFreq
        gradient_steps: int
        n_steps: int
        optimize_memory_usage: bool
        support_multi_env: bool
        supported_action_spaces: tuple[type[spaces.Space], ...]
        normalize_obs: bool
        normalize_reward: bool
        normalize_kwargs: dict[str, Any]
        seed: int | None
        verbose: int
        device_name: str
        tensorboard_log: str | None
        steps_per_batch: int | None
        num_timesteps: int
        total_timesteps: int
        _n_updates: int
        _n_envs: int

        @property
        def train_env(self) -> Any: ...
        @property
        def ep_returns(self) -> Any: ...
        @property
        def ep_lengths(self) -> Any: ...
        def act(self, obs: np.ndarray | dict[str, np.ndarray], deterministic: bool = False) -> np.ndarray: ...
        def rollout_act(self, obs: np.ndarray | dict[str, np.ndarray]) -> np.ndarray: ...
        def set_hyperparameters(self, hp: dict[str, Any]) -> None: ...
        def policy_action(self, obs: torch.Tensor, deterministic: bool) -> torch.Tensor: ...
        def set_policy_training(self, mode: bool) -> None: ...
        def build_networks(self, observation_space: spaces.Space, action_space: spaces.Space) -> None: ...
        def on_env_step(self) -> None: ...
        def setup_networks(self, env: gym.vector.VectorEnv) -> None: ...
        def setup_for_env(self, env: Any) -> None: ...
        def use_env(self, datamodule: Any) -> None: ...
        def restore_counters(self, state: dict[str, Any]) -> None: ...
        def build_networks_for(self, observation_space: spaces.Space, action_space: spaces.Space) -> None: ...
        def make_replay_buffer(
            self, env: gym.vector.VectorEnv | None, device: torch.device, n_envs: int | None = None
        ) -> ReplayBuffer: ...
        def run_gradient_steps(self, n_updates: int, batch_size: int) -> None: ...
        def dump_logs(self) -> None: ...
        def start_episodes(self, env: Any) -> None: ...
        def rl_state(self, with_training_state: bool) -> dict[str, Any]: ...
        def initial_learning_rate(self) -> float: ...
        def actor_critic_optimizers(self, batch_norm_betas: bool = False) -> list[torch.optim.Optimizer]: ...
        configure_run: Callable[..., None]  # (total_timesteps, log_freq, ...): see OffPolicyAlgorithm
else:
    AlgorithmHost = object
