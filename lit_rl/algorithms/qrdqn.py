"""QR-DQN (Dabney et al., 2018) with sb3-contrib 2.x's defaults and update rule."""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces

from lit_rl.buffers.replay import ReplayBatch, ReplayBuffer
from lit_rl.collect.noise import ActionNoise
from lit_rl.core.hyperparameters import GymEnv, Schedule
from lit_rl.core.q_learning import QLearning
from lit_rl.core.quantile_regression import quantile_huber_loss
from lit_rl.core.sb3_api import delegated
from lit_rl.policies.qrdqn import QRDQNPolicy
from lit_rl.utils.declared import bound_arguments


def quantile_q_loss(
    policy: QRDQNPolicy, batch: ReplayBatch, discount: torch.Tensor | float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Quantile Huber loss, summed over quantiles, between Z(s, a) and ``r + (1 - terminated) * discount * Z_target(s', a*)``.

    ``a* = argmax_a' mean_k Z_target,k(s', a')``: the target network's greedy action (no double Q-learning);
    its ``n_quantiles`` quantiles form the target distribution.
    """
    n_quantiles = policy.n_quantiles
    with torch.no_grad():
        next_quantiles = policy.q_net_target(batch.next_observations)  # (batch, n_quantiles, n_actions)
        greedy = next_quantiles.mean(dim=1).argmax(dim=1)
        next_z = next_quantiles.gather(2, greedy[:, None, None].expand(-1, n_quantiles, 1)).squeeze(2)
        discount = discount[:, None] if isinstance(discount, torch.Tensor) and discount.dim() == 1 else discount
        target = batch.rewards[:, None] + (1.0 - batch.terminated[:, None]) * discount * next_z
    action_index = (batch.actions.reshape(-1, 1, 1) - policy.action_start).long().expand(-1, n_quantiles, 1)
    quantiles = policy.q_net(batch.observations).gather(2, action_index).squeeze(2)
    loss = quantile_huber_loss(quantiles, target, sum_over_quantiles=True)
    return loss, {"train/loss": loss.detach()}


class QRDQN(QLearning):
    """Quantile Regression DQN as in sb3-contrib 2.x (Dabney et al., 2018, arXiv:1710.10044).

    DQN's loop (epsilon-greedy acting, target copies every ``target_update_interval`` env steps) with a
    distributional Q-network: ``n_quantiles`` quantiles of the return per action, trained by the quantile
    Huber loss against the target network's quantiles of its greedy action (greedy: the largest mean over
    quantiles). Defaults are sb3-contrib's (the paper's Atari settings, but ``learning_starts``); Adam's
    ``eps`` is ``0.01 / batch_size`` unless ``policy_kwargs`` names an ``optimizer_class``; gradients are
    not clipped unless ``max_grad_norm`` is set.

    ``policy_kwargs``: ``n_quantiles`` (200), ``net_arch`` (default [64, 64]; a list, or a dict whose ``qf``
    entry is used) and ``activation_fn`` ("relu").
    """

    default_policy_class = QRDQNPolicy

    def __init__(
        self,
        policy: str | type[QRDQNPolicy] = "MlpPolicy",
        env: GymEnv | str | None = None,
        learning_rate: float | Schedule = 5e-5,
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
        exploration_fraction: float = 0.005,  # fraction of total_timesteps over which epsilon decays ...
        exploration_initial_eps: float = 1.0,  # ... from this ...
        exploration_final_eps: float = 0.01,  # ... to this, then stays there
        max_grad_norm: float | None = None,  # gradient clipping (global norm); None: none
        *,
        steps_per_batch: int | None = None,
        compile: bool | str = False,
        precision: str = "32-true",
    ) -> None:
        """QR-DQN with sb3-contrib's arguments and defaults; no gSDE (a greedy policy)."""
        self.init_algorithm(bound_arguments(locals()))

    loss = staticmethod(quantile_q_loss)
    # sb3-contrib's names of the policy's networks and quantile count.
    quantile_net = delegated("policy.quantile_net", "The policy's quantile network.", writable=False)
    quantile_net_target = delegated("policy.quantile_net_target", "The policy's target quantile network.",
                                    writable=False)  # fmt: skip
    n_quantiles = delegated("policy.n_quantiles", "Quantiles per action.", writable=False)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        # sb3-contrib: Adam with the paper's eps = 0.01 / batch_size unless policy_kwargs names the optimizer class.
        defaults = {} if "optimizer_class" in self.policy_kwargs else {"eps": 0.01 / self.batch_size}
        return self.policy_optimizer(self.q_net.parameters(), **defaults)
