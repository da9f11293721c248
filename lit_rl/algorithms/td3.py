"""TD3 (Fujimoto et al., 2018): twin delayed DDPG with target policy smoothing."""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces

from lit_rl.buffers.replay import ReplayBuffer
from lit_rl.collect.noise import ActionNoise
from lit_rl.core.deterministic import DeterministicActorCritic
from lit_rl.core.hyperparameters import GymEnv, Schedule
from lit_rl.policies.td3 import TD3Policy
from lit_rl.utils.declared import bound_arguments


class TD3(DeterministicActorCritic):
    """Twin Delayed DDPG as in Stable-Baselines3 2.x (``policy_kwargs``: see :class:`~lit_rl.policies.td3.TD3Policy`).

    Its three tricks over DDPG, with SB3's defaults: twin critics (the target
    is the minimum of both target critics), delayed actor and target updates
    (every ``policy_delay`` critic steps) and target policy smoothing
    (clipped Gaussian noise on the target action). The update itself is
    :mod:`lit_rl.core.deterministic`: critic step against
    ``r + (1 - terminated) * gamma * min_i Q'_i(s', clip(pi'(s') + clip(eps, -c, c), -1, 1))``
    with ``eps ~ N(0, target_policy_noise^2)`` and ``c = target_noise_clip``;
    every ``policy_delay`` steps an actor step on ``-Q_0(s, pi(s))`` (the first
    critic only) followed by Polyak updates of the target actor and critics.
    Exploration comes from ``action_noise`` (default none, as SB3).
    """

    def __init__(
        self,
        policy: str | type[TD3Policy] = "MlpPolicy",
        env: GymEnv | str | None = None,
        learning_rate: float | Schedule = 1e-3,
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
        support_multi_env: bool = True,
        monitor_wrapper: bool = True,
        seed: int | None = None,
        supported_action_spaces: tuple[type[spaces.Space], ...] | None = None,
        action_noise_std: float = 0.1,
        normalize_obs: bool = False,
        normalize_reward: bool = False,
        normalize_kwargs: dict[str, Any] | None = None,
        _init_setup_model: bool = True,
        policy_delay: int = 2,  # critic updates per actor (and target) update
        target_policy_noise: float = 0.2,  # smoothing noise on the target action ...
        target_noise_clip: float = 0.5,  # ... clipped to this range
        *,
        steps_per_batch: int | None = None,
        compile: bool | str = False,
        precision: str = "32-true",
    ) -> None:
        """TD3 with Stable-Baselines3's arguments and defaults; no gSDE (a deterministic policy)."""
        self.init_algorithm(bound_arguments(locals()))
