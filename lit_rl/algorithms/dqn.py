"""DQN (Mnih et al., 2015) with Stable-Baselines3 2.x's defaults and update rule."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from gymnasium import spaces

from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer
from lit_rl.collect.noise import ActionNoise
from lit_rl.core.hyperparameters import GymEnv, Schedule
from lit_rl.core.q_learning import QLearning
from lit_rl.policies.dqn import DQNPolicy
from lit_rl.utils.declared import bound_arguments


def q_loss(
    policy: DQNPolicy, batch: ReplayBatch, discount: torch.Tensor | float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Huber (smooth L1) loss between ``Q(s, a)`` and ``r + (1 - terminated) * discount * max_a' Q_target(s', a')``."""
    with torch.no_grad():
        next_q = policy.q_net_target(batch.next_observations).max(dim=1).values
        target = batch.rewards + (1.0 - batch.terminated) * discount * next_q
    action_index = (batch.actions.reshape(-1, 1) - policy.action_start).long()
    q = policy.q_net(batch.observations).gather(1, action_index).squeeze(1)
    loss = F.smooth_l1_loss(q, target)
    return loss, {"train/loss": loss.detach()}


class DQN(QLearning):
    """Deep Q-Network as in Stable-Baselines3 2.x.

    Q(s, .) is an MLP over flat observations, one output per discrete action.
    The loss is Huber (smooth L1) between Q(s, a) and
    ``r + (1 - terminated) * gamma * max_a' Q_target(s', a')``; gradients are
    clipped to ``max_grad_norm``. The target network is updated with Polyak
    ``tau`` (1.0: a hard copy) every ``target_update_interval`` env steps,
    counted as vector-env steps: every ``max(target_update_interval // n_envs, 1)``
    calls of :meth:`on_env_step`, as SB3 does. Exploration is epsilon-greedy
    with one coin per vector-env step (SB3's), epsilon decaying linearly from ``exploration_initial_eps`` to
    ``exploration_final_eps`` over the first ``exploration_fraction`` of the run.

    ``policy_kwargs``: ``net_arch`` (default [64, 64]; a list, or a dict whose
    ``qf`` entry is used) and ``activation_fn`` ("relu").
    """

    default_policy_class = DQNPolicy

    def __init__(
        self,
        policy: str | type[DQNPolicy] = "MlpPolicy",
        env: GymEnv | str | None = None,
        learning_rate: float | Schedule = 1e-4,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 32,
        tau: float = 1.0,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 4,
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
        target_update_interval: int = 10_000,  # env steps between target-network updates
        exploration_fraction: float = 0.1,  # fraction of total_timesteps over which epsilon decays ...
        exploration_initial_eps: float = 1.0,  # ... from this ...
        exploration_final_eps: float = 0.05,  # ... to this, then stays there
        max_grad_norm: float = 10.0,  # gradient clipping (global norm)
        *,
        steps_per_batch: int | None = None,
        compile: bool | str = False,
        precision: str = "32-true",
    ) -> None:
        """DQN with Stable-Baselines3's arguments and defaults; no gSDE (a greedy policy)."""
        self.init_algorithm(bound_arguments(locals()))

    loss = staticmethod(q_loss)
