"""DDPG (Lillicrap et al., 2016), as Stable-Baselines3 defines it: TD3 without its three tricks."""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces

from lit_rl.buffers.replay import ReplayBuffer
from lit_rl.collect.noise import ActionNoise
from lit_rl.core.deterministic import DeterministicActorCritic
from lit_rl.core.hyperparameters import NO_SDE_HINT, GymEnv, Schedule
from lit_rl.policies.td3 import TD3Policy
from lit_rl.utils.declared import bound_arguments


class DDPG(DeterministicActorCritic):
    """Deep Deterministic Policy Gradient: one critic, no policy delay, no target smoothing.

    As in Stable-Baselines3 2.x: ``policy_delay=1``, no target policy noise,
    ``policy_kwargs.n_critics`` 1 unless given; the critic loss is the plain
    MSE to ``r + (1 - terminated) * gamma * Q'(s', pi'(s'))`` and the targets
    move by ``tau`` after every gradient step (the shared update:
    :mod:`lit_rl.core.deterministic`). Exploration comes from
    ``action_noise`` (default none, as SB3).
    """

    pinned = {"policy_delay": 1, "target_policy_noise": 0.0, "target_noise_clip": 0.0}
    pinned_hint = f"policy delay and target policy smoothing are TD3's (use TD3 for them); {NO_SDE_HINT}"
    policy_defaults = {"n_critics": 1}

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
        *,
        steps_per_batch: int | None = None,
        compile: bool | str = False,
        precision: str = "32-true",
    ) -> None:
        """DDPG with Stable-Baselines3's arguments and defaults: TD3's without its three tricks, no gSDE."""
        self.init_algorithm(bound_arguments(locals()))

    def set_hyperparameters(self, hp: dict[str, Any]) -> None:
        hp["policy_kwargs"] = {**self.policy_defaults, **(hp["policy_kwargs"] or {})}
        super().set_hyperparameters(hp)
